package gptlive_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/gptlive"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const wait = 5 * time.Second

var lookupTool = agent.Tool{Name: "lookup_patient", Description: "Find a patient record by name.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`)}

type harness struct {
	a   *gptlive.Adapter
	f   *agenttest.GPTLiveFake
	rec *agenttest.Recorder
}

func connect(t *testing.T, s agenttest.Script, o agenttest.GPTLiveOptions, cfg agent.Config) harness {
	t.Helper()
	f := agenttest.NewGPTLiveFake(t, s, o)
	a := gptlive.New(gptlive.Options{URL: f.URL(), Model: "gpt-live-1", Key: s.Key, QuietMS: 200, Timeouts: gptlive.Timeouts{Handshake: 3 * time.Second}})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := a.Connect(ctx, cfg); err != nil {
		a.Close()
		t.Fatalf("connect: %v", err)
	}
	rec := agenttest.Record(a)
	t.Cleanup(func() {
		a.Close()
		<-rec.Done()
	})
	return harness{a, f, rec}
}

// say streams ms of caller speech and then silence (the live model answers after 500 ms quiet).
func say(t *testing.T, a agent.Adapter, ms int) {
	t.Helper()
	send := func(pcm []int16) {
		for len(pcm) > 0 {
			n := min(len(pcm), 960)
			if err := a.SendAudio(pcm[:n]); err != nil {
				t.Fatalf("send audio: %v", err)
			}
			pcm = pcm[n:]
		}
	}
	send(agenttest.Speech(ms, gptlive.SampleRate))
	send(agenttest.Silence(600, gptlive.SampleRate))
}

func get(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, _ := v.(map[string]any)
		v = mm[k]
	}
	return v
}

func TestCallAgainstThePublishedAPI(t *testing.T) {
	h := connect(t, agenttest.Script{Key: "sk-live-test", CallerTranscripts: []string{"Hi there."},
		Replies: []agenttest.Reply{{Text: "Hello, this is the clinic.", AudioMS: 600}}},
		agenttest.GPTLiveOptions{}, agent.Config{Instructions: "You are a clinic receptionist.", Tools: []agent.Tool{lookupTool}})
	hs := h.f.Handshakes()[0]
	if hs.Path != "/v1/live/sessions" || hs.Model != "" || !hs.Auth {
		t.Errorf("handshake %+v: want /v1/live/sessions, no query, a key", hs)
	}
	s := h.f.Starts()[0]
	checks := map[string][2]any{
		"model":         {get(s, "model"), "gpt-live-1"},
		"instructions":  {get(s, "instructions"), "You are a clinic receptionist."},
		"format type":   {get(s, "audio", "format", "type"), "audio/pcm"},
		"format rate":   {get(s, "audio", "format", "rate"), json.Number("24000")},
		"voice":         {get(s, "audio", "output", "voice"), "marin"},
		"delegation":    {get(s, "delegation", "type"), "responses"},
		"backend model": {get(s, "delegation", "responses", "model"), gptlive.DefaultBackendModel},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("session.start %s = %v, want %v", name, c[0], c[1])
		}
	}
	if tools, _ := get(s, "delegation", "responses", "tools").([]any); len(tools) != 1 || get(tools[0].(map[string]any), "name") != "lookup_patient" {
		t.Errorf("delegated tools %v", tools)
	}
	if ap := h.a.Applied(); !ap.Echoed || !slices.Equal(ap.Tools, []string{"lookup_patient"}) || ap.Voice != "marin" || ap.InputRate != 24000 || ap.TurnDetection != "full_duplex" {
		t.Errorf("applied %+v", ap)
	}

	say(t, h.a, 400)
	end := h.rec.WaitType(t, wait, agent.EventTurnEnd)
	if end.Status != agent.StatusCompleted {
		t.Errorf("turn end %+v", end)
	}
	if got := h.rec.AudioSamples(); got != 600*24 {
		t.Errorf("agent audio %d samples, want %d", got, 600*24)
	}
	if td := h.rec.Of(agent.EventTranscriptDone); len(td) != 1 || td[0].Text != "Hello, this is the clinic." || td[0].ItemID != "speech_1" {
		t.Errorf("transcript %+v", td)
	}
	if ct := h.rec.Of(agent.EventCallerTranscript); len(ct) != 1 || ct[0].Text != "Hi there." {
		t.Errorf("caller transcript %+v", ct)
	}
	if rd := h.rec.Of(agent.EventResponseDone); len(rd) != 1 || rd[0].ResponseID != "speech_1" {
		t.Errorf("responses %+v", rd)
	}
	if v := h.f.Violations(); len(v) > 0 {
		t.Errorf("violations %v", v)
	}
	if n := len(h.rec.Of(agent.EventError)); n != 0 {
		t.Errorf("errors: %s", h.rec.Summary())
	}
}

// Tools run by the backend model: each output goes back with response.item.create, one
// response.create follows, and the agent's turn ends only after the live model has spoken the
// result.
func TestDelegatedToolCallEndsTheTurnAfterTheAnswer(t *testing.T) {
	h := connect(t, agenttest.Script{Replies: []agenttest.Reply{
		{Text: "Let me check.", AudioMS: 200, Calls: []agenttest.Call{
			{Name: "lookup_patient", Arguments: `{"name":"Ada"}`}, {Name: "lookup_patient", Arguments: `{"name":"Grace"}`}}},
		{Text: "Both records are here.", AudioMS: 300},
	}}, agenttest.GPTLiveOptions{}, agent.Config{Tools: []agent.Tool{lookupTool}})
	say(t, h.a, 300)
	c1 := h.rec.WaitType(t, wait, agent.EventToolCall)
	c2 := h.rec.WaitType(t, wait, agent.EventToolCall)
	time.Sleep(400 * time.Millisecond) // longer than the quiet gap
	if n := len(h.rec.Of(agent.EventTurnEnd)); n != 0 {
		t.Fatalf("turn ended with delegated work open: %s", h.rec.Summary())
	}
	if err := h.a.SendToolResult(c1.CallID, c1.Name, json.RawMessage(`{"found":true}`)); err != nil {
		t.Fatal(err)
	}
	if n := h.f.Count(gptlive.ResponseCreate); n != 0 {
		t.Fatalf("response.create before every output")
	}
	if err := h.a.SendToolResult(c2.CallID, c2.Name, json.RawMessage(`"found"`)); err != nil {
		t.Fatal(err)
	}
	h.rec.WaitType(t, wait, agent.EventTurnEnd)
	var last, end int
	for i, e := range h.rec.Events() {
		if e.Type == agent.EventTranscriptDone && e.Text == "Both records are here." {
			last = i
		}
		if e.Type == agent.EventTurnEnd {
			end = i
		}
	}
	if last == 0 || end < last || len(h.rec.Of(agent.EventTurnEnd)) != 1 {
		t.Errorf("turn end before the spoken result: %s", h.rec.Summary())
	}
	outs := h.f.Find(gptlive.ResponseItemCreate)
	if len(outs) != 2 || get(outs[0], "item", "type") != "function_call_output" || get(outs[1], "item", "output") != "found" || h.f.Count(gptlive.ResponseCreate) != 1 {
		t.Errorf("outputs %v, response.create %d", outs, h.f.Count(gptlive.ResponseCreate))
	}
	if err := h.a.SendToolResult(c1.CallID, c1.Name, json.RawMessage(`{}`)); !errors.Is(err, agent.ErrUnknownCall) {
		t.Errorf("second output: %v", err)
	}
	if v := h.f.Violations(); len(v) > 0 {
		t.Errorf("violations %v", v)
	}
}

// Only session.started acknowledges session.start: a server that greets with a tool-less
// session.created first does not make the call fail as tools_dropped.
func TestGreetingBeforeTheAcknowledgement(t *testing.T) {
	h := connect(t, agenttest.Script{}, agenttest.GPTLiveOptions{GreetFirst: true}, agent.Config{Tools: []agent.Tool{lookupTool}})
	if sent := h.f.Sent(); len(sent) < 2 || sent[0] != "session.created" || sent[1] != gptlive.SessionStarted {
		t.Fatalf("server sent %v", sent)
	}
	if ap := h.a.Applied(); !slices.Equal(ap.Tools, []string{"lookup_patient"}) {
		t.Errorf("applied tools %v", ap.Tools)
	}
}

// The fake refuses what the published API refuses: unknown fields (Realtime's shape), a missing
// model, a URL with query parameters; the adapter reports them as classified errors.
func TestFakeRefusesWhatTheAPIRefuses(t *testing.T) {
	f := agenttest.NewGPTLiveFake(t, agenttest.Script{}, agenttest.GPTLiveOptions{})
	for name, c := range map[string]struct {
		session map[string]any
		code    string
	}{
		"realtime shape": {map[string]any{"model": "gpt-live-1", "type": "realtime", "output_modalities": []any{"audio"}, "tools": []any{}}, "unknown_parameter"},
		"no model":       {map[string]any{"instructions": "x"}, "missing_required_parameter"},
		"wrong format":   {map[string]any{"model": "gpt-live-1", "audio": map[string]any{"format": map[string]any{"type": "audio/pcm", "rate": 44100}}}, "invalid_value"},
		"unknown voice":  {map[string]any{"model": "gpt-live-1", "audio": map[string]any{"output": map[string]any{"voice": "nobody"}}}, "invalid_value"},
	} {
		t.Run(name, func(t *testing.T) {
			ws, _, err := websocket.DefaultDialer.Dial(f.URL(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			ws.WriteJSON(map[string]any{"type": "session.start", "session": c.session})
			ws.SetReadDeadline(time.Now().Add(wait))
			var ev map[string]any
			if err := ws.ReadJSON(&ev); err != nil || ev["type"] != "error" || get(ev, "error", "code") != c.code {
				t.Fatalf("got %v (%v), want error %s", ev, err, c.code)
			}
		})
	}
	a := gptlive.New(gptlive.Options{URL: f.URL() + "?model=gpt-live-1", Model: "gpt-live-1"})
	defer a.Close()
	if err := a.Connect(context.Background(), agent.Config{}); agent.ClassOf(err) != agent.ClassProtocol || !strings.Contains(err.Error(), "http_400") {
		t.Errorf("query parameters: %v", err)
	}
}

// Nor does the fake refuse what the API takes: PCM16 at 16 kHz is a documented WebSocket format.
func TestFakeTakesWhatTheAPITakes(t *testing.T) {
	f := agenttest.NewGPTLiveFake(t, agenttest.Script{}, agenttest.GPTLiveOptions{})
	ws, _, err := websocket.DefaultDialer.Dial(f.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.WriteJSON(map[string]any{"type": "session.start", "session": map[string]any{"model": "gpt-live-1",
		"audio": map[string]any{"format": map[string]any{"type": "audio/pcm", "rate": 16000}, "output": map[string]any{"voice": "cedar"}}}})
	ws.SetReadDeadline(time.Now().Add(wait))
	var ev map[string]any
	if err := ws.ReadJSON(&ev); err != nil || ev["type"] != gptlive.SessionStarted || fmt.Sprint(get(ev, "session", "audio", "format", "rate")) != "16000" {
		t.Fatalf("got %v (%v), want session.started at 16000 Hz", ev, err)
	}
}

func TestWrongKeyIsAuth(t *testing.T) {
	f := agenttest.NewGPTLiveFake(t, agenttest.Script{Key: "sk-right"}, agenttest.GPTLiveOptions{})
	a := gptlive.New(gptlive.Options{URL: f.URL(), Model: "gpt-live-1", Key: "sk-wrong-secret"})
	defer a.Close()
	err := a.Connect(context.Background(), agent.Config{})
	if agent.ClassOf(err) != agent.ClassAuth || strings.Contains(err.Error(), "sk-wrong-secret") {
		t.Fatalf("err %v", err)
	}
}

// Close asks the server to end the session and waits for session.closed: no error follows.
func TestCloseEndsTheSession(t *testing.T) {
	f := agenttest.NewGPTLiveFake(t, agenttest.Script{}, agenttest.GPTLiveOptions{})
	a := gptlive.New(gptlive.Options{URL: f.URL(), Model: "gpt-live-1"})
	if err := a.Connect(context.Background(), agent.Config{}); err != nil {
		t.Fatal(err)
	}
	rec := agenttest.Record(a)
	a.Close()
	rec.WaitClosed(t, wait)
	if f.Count(gptlive.SessionClose) != 1 || len(rec.Of(agent.EventError)) != 0 {
		t.Errorf("session.close %d, events %s", f.Count(gptlive.SessionClose), rec.Summary())
	}
}
