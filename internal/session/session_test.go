package session

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/openai"
	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/media"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/textcall"
	"github.com/voicebench/humanaudit/internal/trace"
	"github.com/voicebench/humanaudit/internal/tts"
)

// fliteVoice speaks plans rendered by textcall with Flite (the shared tts package).
type fliteVoice struct {
	t     *task.Task
	speak tts.Flite
}

func (v *fliteVoice) Speak(ctx context.Context, p trace.Plan) (string, string, []int16, error) {
	text := textcall.RenderPlan(v.t, p)
	pcm, err := v.speak.Speak(ctx, "slt", text)
	return text, "flite", pcm, err
}

func loadTask(t *testing.T, id string) *task.Task {
	t.Helper()
	tk, err := task.LoadFile(filepath.Join("..", "grade", "testdata", "tasks", id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func typesOf(events []trace.Event) string {
	var b strings.Builder
	for _, e := range events {
		if e.Type == trace.AgentRaw {
			continue
		}
		b.WriteString(string(e.Type))
		if e.Plan != nil {
			b.WriteString("(" + e.Plan.ID + ")")
		}
		if e.Act != "" {
			b.WriteString("(" + e.Act + ")")
		}
		b.WriteString(" ")
	}
	return b.String()
}

// TestSyntheticCallAgainstProtocolFake runs the whole pipeline with a scripted OpenAI-protocol
// agent: the synthetic caller speaks Flite audio on the media clock, the matched endpointer ends
// turns, tool calls reach the workspace, and the trace, recording and grade come out.
func TestSyntheticCallAgainstProtocolFake(t *testing.T) {
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed (scripts/deps.sh installs it)")
	}
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // runs after the fake's own cleanup
	tk := loadTask(t, "it-vpn-incident")
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: []agenttest.Reply{
		{Calls: []agenttest.Call{{Name: "record_incident", Arguments: `{"caller_name":"Priya Venkataraman"}`}}},
		{Text: "Thanks Priya. What's your employee ID?", AudioMS: 1200},
		{Calls: []agenttest.Call{{Name: "record_incident", Arguments: `{"employee_id":"417"}`}}},
		{Text: "Got it. Goodbye!", AudioMS: 800},
	}})
	adapter := openai.New(openai.Options{URL: fake.URL(), Model: "gpt-realtime", Dialect: openai.GA})
	rec := filepath.Join(t.TempDir(), "call.wav")
	s, err := Start(context.Background(), Config{ID: "s1", Task: tk, Mode: Synthetic, Seed: 1, System: "fake-ga",
		Adapter: adapter, Voice: "marin", Caller: &fliteVoice{t: tk}, RecordingPath: rec, TimeLimit: 60 * time.Second})
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
	seq := typesOf(res.Events)
	t.Logf("reason %s; trace: %s", res.Reason, seq)
	if res.Reason != EndCallerHungUp {
		t.Errorf("reason = %s, want %s", res.Reason, EndCallerHungUp)
	}
	for _, want := range []string{"session.start", "caller.audio_start", "caller.plan(open)", "caller.speech_start", "caller.speech_end",
		"tool.call", "artifact.update", "agent.transcript", "agent.act(ask:employee_id)", "caller.plan(answer:employee_id)",
		"agent.act(close)", "caller.plan(close)", "media.stats", "session.end"} {
		if !strings.Contains(seq, want) {
			t.Errorf("trace lacks %s", want)
		}
	}
	// Media times never go backwards in the order events were recorded within each family that the
	// clock stamps (speech events carry their own onset times).
	if res.Grade == nil {
		t.Fatalf("not graded: %v", res.GradeErr)
	}
	fields := map[string]bool{}
	for _, f := range res.Grade.Fields {
		fields[f.Field] = f.Pass
	}
	if !fields["caller_name"] || !fields["employee_id"] {
		t.Errorf("grade fields %+v", res.Grade.Fields)
	}
	// The agent heard matched turns: one commit per caller turn, never server VAD.
	if n := fake.Count("input_audio_buffer.commit"); n < 2 {
		t.Errorf("commits = %d", n)
	}
	st, err := os.Stat(rec)
	if err != nil || st.Size() < 44+4*24000 {
		t.Fatalf("recording: %v %v", st, err)
	}
	left, right := channelEnergy(t, rec)
	if left < -60 || right < -60 {
		t.Errorf("recording channels energy caller=%v agent=%v, want both non-zero", left, right)
	}
}

func channelEnergy(t *testing.T, path string) (float64, float64) {
	w, err := audio.ReadWAV(path)
	if err != nil {
		t.Fatal(err)
	}
	return audio.RMSDBFS(w.Channel(0)), audio.RMSDBFS(w.Channel(1))
}

// A dropped agent connection ends the call as platform_lost: an exclusion, never a silent zero.
func TestLostAgentConnectionIsExclusion(t *testing.T) {
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed")
	}
	tk := loadTask(t, "it-vpn-incident")
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: []agenttest.Reply{
		{Text: "Hello, one moment", AudioMS: 2000, Drop: true, DropAfter: 2},
	}})
	adapter := openai.New(openai.Options{URL: fake.URL(), Model: "gpt-realtime", Dialect: openai.GA})
	s, err := Start(context.Background(), Config{ID: "s2", Task: tk, Mode: Synthetic, Adapter: adapter, Caller: &fliteVoice{t: tk},
		RecordingPath: filepath.Join(t.TempDir(), "c.wav"), TimeLimit: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res := s.Result()
	if res.Reason != EndPlatformLost || res.Exclusion != ExclusionPlatformLost {
		t.Fatalf("reason %q exclusion %q", res.Reason, res.Exclusion)
	}
	last := res.Events[len(res.Events)-2]
	if last.Type != trace.Exclusion || last.Text != ExclusionPlatformLost {
		t.Errorf("exclusion event missing: %+v", last)
	}
}

// spanRecorder is a Transcriber that answers each span with a fixed text and remembers the calls.
type spanRecorder struct {
	mu    sync.Mutex
	calls map[int][]Span
}

func (r *spanRecorder) TranscribeChannel(ctx context.Context, path string, channel int, spans []Span) ([]Transcript, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[int][]Span{}
	}
	r.calls[channel] = append(r.calls[channel], spans...)
	out := make([]Transcript, len(spans))
	for i, s := range spans {
		out[i] = Transcript{Span: s, Text: fmt.Sprintf("heard on channel %d", channel)}
	}
	return out, nil
}

// With no provider transcript of the agent, the recording's agent channel is transcribed after the
// call, each segment at its own media time and marked with its source.
func TestPostCallTranscriptionFillsMissingSide(t *testing.T) {
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed")
	}
	tk := loadTask(t, "it-vpn-incident")
	var silent []agenttest.Reply // audio with no transcript, more than the call can use
	for range 30 {
		silent = append(silent, agenttest.Reply{AudioMS: 1000})
	}
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: silent})
	rec := &spanRecorder{}
	s, err := Start(context.Background(), Config{ID: "s3", Task: tk, Mode: Synthetic, Adapter: openai.New(openai.Options{URL: fake.URL(), Model: "m", Dialect: openai.GA}),
		Caller: &fliteVoice{t: tk}, RecordingPath: filepath.Join(t.TempDir(), "c.wav"), TimeLimit: 25 * time.Second, Transcriber: rec})
	if err != nil {
		t.Fatal(err)
	}
	res := s.Result()
	var asr []trace.Event
	for _, e := range res.Events {
		if e.Type == trace.AgentTranscript {
			if e.Source != "asr" {
				t.Errorf("agent transcript from %q (%q), want asr", e.Source, e.Text)
			}
			asr = append(asr, e)
		}
	}
	if len(asr) == 0 || len(rec.calls[channelAgent]) != len(asr) {
		t.Fatalf("agent transcripts %d for %d spans", len(asr), len(rec.calls[channelAgent]))
	}
	if len(rec.calls[channelCaller]) != 0 {
		t.Errorf("the synthetic caller's words are known; its channel must not be transcribed")
	}
	first := rec.calls[channelAgent][0]
	if asr[0].T != first.Start.Milliseconds() || asr[0].T <= 0 {
		t.Errorf("transcript at %d ms, span starts %v", asr[0].T, first.Start)
	}
}

// One media clock: an authored event anchored to media time fires at exactly its media time, even
// when the agent never answers (the clock here is driven tick by tick, faster than real time).
func TestMediaTimeEventFiresOnTimeWithASilentAgent(t *testing.T) {
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed")
	}
	tk := loadTask(t, "it-vpn-incident") // teams_down fires 30 s after the first caller audio
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: []agenttest.Reply{{Hang: true}, {Hang: true}, {Hang: true}}})
	clock := media.NewManualClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	s, err := Start(context.Background(), Config{ID: "s4", Task: tk, Mode: Synthetic, Clock: clock,
		Adapter: openai.New(openai.Options{URL: fake.URL(), Model: "m", Dialect: openai.GA}), Caller: &fliteVoice{t: tk},
		RecordingPath: filepath.Join(t.TempDir(), "c.wav"), TimeLimit: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	clock.AdvanceN(800) // 32 s of media time
	time.Sleep(500 * time.Millisecond)
	s.Stop(EndCancelled, "")
	go clock.AdvanceN(10) // let the engine see its close
	res := s.Result()
	var anchor, issued int64 = -1, -1
	for _, e := range res.Events {
		switch {
		case e.Type == trace.CallerAudioStart:
			anchor = e.T
		case e.Type == trace.CueIssued && e.CueID == "teams_down":
			issued = e.T
		case e.Type == trace.AgentTranscript:
			t.Errorf("the agent was meant to stay silent: %q", e.Text)
		}
	}
	if anchor < 0 || issued != anchor+30000 {
		t.Fatalf("cue issued at %d ms, first caller audio at %d ms: want exactly 30000 ms later", issued, anchor)
	}
}
