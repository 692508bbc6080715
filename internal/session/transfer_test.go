package session

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/openai"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// TestTransferEndsTheCall: the agent hands the caller to a person; the call ends as transferred
// once the agent has said so, the trace records the transfer with its reason, and the grader
// applies the task's rule (forbidden here: Process Validity fails).
func TestTransferEndsTheCall(t *testing.T) {
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed (scripts/deps.sh installs it)")
	}
	tk, err := task.LoadFile(filepath.Join("..", "..", "tasks", "pharmacy-insurance-update.json"))
	if err != nil {
		t.Fatal(err)
	}
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: []agenttest.Reply{
		{Calls: []agenttest.Call{{Name: "transfer_to_person", Arguments: `{"reason":"the caller asked for a pharmacist"}`}}},
		{Text: "Sure, I'll put you through to a pharmacist now.", AudioMS: 1200},
		{Text: "Is there anything else?", AudioMS: 600},
	}})
	s, err := Start(context.Background(), Config{ID: "xfer", Task: tk, Mode: Synthetic, Seed: 1, System: "fake",
		Adapter: openai.New(openai.Options{URL: fake.URL(), Model: "gpt-realtime", Dialect: openai.GA}), Caller: &fliteVoice{t: tk},
		RecordingPath: filepath.Join(t.TempDir(), "x.wav"), TimeLimit: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	select {
	case <-s.Done():
		res = s.Result()
	case <-time.After(90 * time.Second):
		t.Fatal("session did not end")
	}
	if res.Reason != EndTransferred {
		t.Fatalf("reason %s, want %s; trace %s", res.Reason, EndTransferred, typesOf(res.Events))
	}
	var transferred, said, end int64 = -1, -1, -1
	for _, e := range res.Events {
		switch {
		case e.Type == trace.CallTransferred:
			transferred = e.T
			if e.Text != "the caller asked for a pharmacist" || e.Tool != "transfer_to_person" {
				t.Errorf("call.transferred %+v", e)
			}
		case e.Type == trace.AgentSpeechEnd && transferred >= 0:
			said = e.T
		case e.Type == trace.SessionEnd:
			end = e.T
		}
	}
	if transferred < 0 || said < transferred || end < said {
		t.Fatalf("transfer at %d ms, agent done speaking at %d ms, end at %d ms: the call must end after the agent said so", transferred, said, end)
	}
	if g := res.Grade; g == nil || g.PV != 0 || g.Transfer == nil || g.TransferRule != "forbidden" {
		t.Fatalf("grade %+v", res.Grade)
	}
}
