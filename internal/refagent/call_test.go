package refagent

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/openai"
	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/session"
	"github.com/voicebench/humanaudit/internal/synth"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/textcall"
	"github.com/voicebench/humanaudit/internal/trace"
)

// fliteCaller speaks a synthetic caller's plans (textcall.RenderPlan) in the persona's Flite voice,
// at 24 kHz: the stand-in for the frozen bank's audio.
type fliteCaller struct {
	t     *task.Task
	mu    sync.Mutex
	cache map[string][]int16
}

func (v *fliteCaller) Speak(ctx context.Context, p trace.Plan) (string, string, []int16, error) {
	text := textcall.RenderPlan(v.t, p)
	v.mu.Lock()
	defer v.mu.Unlock()
	if pcm, ok := v.cache[text]; ok {
		return text, "flite", pcm, nil
	}
	voice := v.t.User.Persona.Voice
	if voice == "" {
		voice = "slt"
	}
	out, err := exec.CommandContext(ctx, "flite", "-voice", voice, "-t", text, "-o", "/dev/stdout").Output()
	if err != nil {
		return "", "", nil, fmt.Errorf("flite: %w", err)
	}
	pcm16k := make([]int16, (len(out)-44)/2)
	binary.Read(bytes.NewReader(out[44:]), binary.LittleEndian, pcm16k)
	r, err := audio.NewResampler(16000, 24000)
	if err != nil {
		return "", "", nil, err
	}
	pcm := r.Process(append(pcm16k, make([]int16, 1600)...), nil)
	if v.cache == nil {
		v.cache = map[string][]int16{}
	}
	v.cache[text] = pcm
	return text, "flite", pcm, nil
}

// loadTask loads a frozen task: the grader's copies, or this package's.
func loadTask(tb testing.TB, id string) *task.Task {
	tb.Helper()
	path := filepath.Join("..", "grade", "testdata", "tasks", id+".json")
	if _, err := os.Stat(path); err != nil {
		path = filepath.Join("testdata", "tasks", id+".json")
	}
	tk, err := task.LoadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return tk
}

// syntheticCall runs one synthetic call of task id against a reference agent through the OpenAI
// GA adapter, in real time, and returns its result. The caller says template renderings of its
// plans in its persona's Flite voice.
func syntheticCall(tb testing.TB, s *Server, id string, limit time.Duration) session.Result {
	tb.Helper()
	tk := loadTask(tb, id)
	return callWith(tb, s, tk, &fliteCaller{t: tk}, limit)
}

// bankCall runs a synthetic call of a task of the audit suite (tasks/) whose caller speaks the
// frozen bank's utterances (synth.BankVoice; rendered with Flite in the persona's voice when the
// bank's audio has not been built).
func bankCall(tb testing.TB, s *Server, id string, limit time.Duration) session.Result {
	tb.Helper()
	tk, err := task.LoadFile(filepath.Join("..", "..", "tasks", id+".json"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(tk.Bank) == 0 {
		tb.Fatalf("task %s has no caller bank", id)
	}
	return callWith(tb, s, tk, &synth.BankVoice{Task: tk, Seed: 1, Render: &synth.Flite{}}, limit)
}

func callWith(tb testing.TB, s *Server, tk *task.Task, caller session.CallerVoice, limit time.Duration) session.Result {
	tb.Helper()
	id := tk.ID
	adapter := openai.New(openai.Options{URL: s.URL(), Model: "reference", Dialect: openai.GA})
	sess, err := session.Start(context.Background(), session.Config{ID: "ref-" + id, Task: tk, Mode: session.Synthetic, Seed: 1,
		System: "reference", Adapter: adapter, Voice: "marin", Caller: caller,
		RecordingPath: filepath.Join(tb.TempDir(), "call.wav"), TimeLimit: limit})
	if err != nil {
		tb.Fatal(err)
	}
	select {
	case <-sess.Done():
	case <-time.After(limit + 30*time.Second):
		tb.Fatal("session did not end")
	}
	return sess.Result()
}

// dialogue renders the call as lines: who said what, tool calls and their results.
func dialogue(events []trace.Event) string {
	var b strings.Builder
	for _, e := range events {
		switch e.Type {
		case trace.CallerUtterance:
			fmt.Fprintf(&b, "%6d caller[%s]: %s\n", e.T, e.Source, e.Text)
		case trace.AgentTranscript:
			fmt.Fprintf(&b, "%6d agent: %s\n", e.T, e.Text)
		case trace.ToolCall:
			fmt.Fprintf(&b, "%6d   tool %s %s\n", e.T, e.Tool, e.Args)
		case trace.ToolResult:
			if e.OK != nil && !*e.OK {
				fmt.Fprintf(&b, "%6d   tool %s failed: %s\n", e.T, e.Tool, e.Error)
			}
		case trace.ArtifactState:
			fmt.Fprintf(&b, "%6d   state %s\n", e.T, e.State)
		case trace.AgentError:
			fmt.Fprintf(&b, "%6d   agent error %s %s: %s\n", e.T, e.Source, e.Error, e.Text)
		case trace.SessionEnd:
			fmt.Fprintf(&b, "%6d end: %s\n", e.T, e.Text)
		}
	}
	return b.String()
}

// checkCall asserts what every completed reference call must show, and reports field accuracy.
func checkCall(t *testing.T, res session.Result) {
	t.Helper()
	t.Logf("dialogue:\n%s", dialogue(res.Events))
	if res.Grade == nil {
		t.Fatalf("not graded: %v", res.GradeErr)
	}
	g := res.Grade
	var lines []string
	for _, f := range g.Fields {
		lines = append(lines, fmt.Sprintf("%s=%v (pred %s, gold %s)", f.Field, f.Pass, f.Pred, f.Gold))
	}
	t.Logf("end %s; AFA %d/%d = %.2f; WS %d (TS %d PV %d AC %d AV %d); final state %s\n  %s", res.Reason,
		g.AFA.Correct, g.AFA.Total, g.AFA.Value, g.WS, g.TS, g.PV, g.AC, g.AV, g.FinalState, strings.Join(lines, "\n  "))
	if g.AFA.Correct == 0 {
		t.Errorf("field accuracy is zero")
	}
	ev := res.Events
	if len(ev) == 0 || ev[0].Type != trace.SessionStart || ev[len(ev)-1].Type != trace.SessionEnd {
		t.Fatalf("trace does not run from session.start to session.end")
	}
	count := map[string]int{}
	for _, e := range ev {
		k := string(e.Type)
		if e.Type == trace.CallerUtterance {
			k += "/" + map[bool]string{true: "provider", false: "caller"}[e.Source == "provider"]
		}
		if e.Type == trace.AgentAct && strings.HasPrefix(e.Act, "ask:") {
			k = "agent.act/ask"
		}
		count[k]++
	}
	for _, want := range []string{"caller.utterance/caller", "caller.utterance/provider", "agent.transcript", "agent.act/ask",
		"tool.call", "artifact.update", "caller.speech_end", "agent.speech_start"} {
		if count[want] == 0 {
			t.Errorf("trace has no %s", want)
		}
	}
	if res.Reason != session.EndCallerHungUp {
		t.Errorf("call ended %s, want the caller hanging up after the agent's goodbye", res.Reason)
	}
	var keys []string
	for k, n := range count {
		keys = append(keys, fmt.Sprintf("%s:%d", k, n))
	}
	sort.Strings(keys)
	t.Logf("trace: %s", strings.Join(keys, " "))
}

// callLimit bounds a test call. The caller refuses every wrong read-back, named or not, so a call
// with repairs runs about four minutes (241 s for fnol-auto-glass at load 1); the limit leaves room
// for a loaded machine and still ends a call that goes nowhere.
const callLimit = 6 * time.Minute

// TestSyntheticCallAutoGlass: verification, lookup, knowledge search, a correction, news the
// caller volunteers, and an approval-gated submission, with the frozen bank's caller.
func TestSyntheticCallAutoGlass(t *testing.T) {
	if testing.Short() {
		t.Skip("a call of a few minutes in real time")
	}
	s := startServer(t, Config{})
	checkCall(t, bankCall(t, s, "fnol-auto-glass", callLimit))
}

// TestSyntheticCallHomeWaterLeak: a prepare-only claim with enumerations, a yes/no field, and a
// correction that arrives once the claim is marked ready.
func TestSyntheticCallHomeWaterLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("a call of a few minutes in real time")
	}
	s := startServer(t, Config{})
	checkCall(t, syntheticCall(t, s, "fnol-home-water-leak", callLimit))
}
