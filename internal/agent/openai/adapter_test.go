package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/openai"
	"github.com/voicebench/humanaudit/internal/agent/openai/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const wait = 5 * time.Second

type family struct {
	name  string
	d     openai.Dialect
	p     agenttest.Provider
	model string
	voice string // a voice the provider offers
}

var families = []family{
	{"ga", openai.GA, agenttest.OpenAIGA, "gpt-realtime", "cedar"},
	{"beta", openai.Beta, agenttest.OpenAIBeta, "gpt-4o-realtime-preview", "sage"},
	{"grok", openai.Grok, agenttest.XAIGrok, "grok-voice-latest", "Rex"},
	{"stepfun", openai.StepFun, agenttest.StepFunRealtime, "step-audio-2", "wenrounansheng"},
}

var lookupTool = agent.Tool{Name: "lookup_patient", Description: "Find a patient record by name.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}

func testTimeouts() openai.Timeouts {
	return openai.Timeouts{Handshake: 3 * time.Second, ResponseStart: 3 * time.Second, Idle: 10 * time.Second}
}

type harness struct {
	a   *openai.Adapter
	f   *agenttest.OpenAIFake
	rec *agenttest.Recorder
}

func connect(t *testing.T, fam family, script agenttest.Script, cfg agent.Config) harness {
	t.Helper()
	f := agenttest.NewOpenAIFake(t, fam.p, script)
	a := openai.New(openai.Options{URL: f.URL(), Model: fam.model, Key: script.Key, Dialect: fam.d, Timeouts: testTimeouts()})
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

// speak sends ms of caller speech then silenceMS of silence, in 40 ms frames.
func speak(t *testing.T, a agent.Adapter, ms, silenceMS int) {
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
	send(agenttest.Speech(ms, 24000))
	send(agenttest.Silence(silenceMS, 24000))
}

// eventually polls cond (state the fake reaches after the client's messages arrive) for a while.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(wait); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not reached within %s: %s", wait, what)
		}
	}
}

// turn is one matched caller turn: StartTurn, ms of speech, EndTurn.
func turn(t *testing.T, a agent.Adapter, ms int) {
	t.Helper()
	if err := a.StartTurn(); err != nil {
		t.Fatal(err)
	}
	speak(t, a, ms, 0)
	if err := a.EndTurn(); err != nil {
		t.Fatal(err)
	}
}

func isRaw(typ string) func(agent.Event) bool {
	return func(e agent.Event) bool { return e.RawType == typ && !e.Outbound }
}

func firstSession(t *testing.T, f *agenttest.OpenAIFake) map[string]any {
	t.Helper()
	if evs := f.Find(wire.SessionUpdate); len(evs) > 0 {
		return evs[0]["session"].(map[string]any)
	}
	t.Fatal("no session.update received")
	return nil
}

func path(m map[string]any, keys ...string) (any, bool) {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = mm[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func noProviderErrors(t *testing.T, f *agenttest.OpenAIFake, allowed ...string) {
	t.Helper()
	for _, c := range f.ErrorCodes() {
		if !slices.Contains(allowed, c) {
			t.Errorf("fake sent error %q; all errors: %v", c, f.ErrorsSent())
		}
	}
	if v := f.Violations(); len(v) > 0 {
		t.Errorf("protocol violations: %v", v)
	}
}

func TestFullCallAudioBothWays(t *testing.T) {
	for _, fam := range families {
		t.Run(fam.name, func(t *testing.T) {
			reply := "Hello, this is the clinic. How can I help you today?"
			h := connect(t, fam, agenttest.Script{Key: "sk-test-123", Replies: []agenttest.Reply{{Text: reply, AudioMS: 600}}},
				agent.Config{Instructions: "You are a clinic receptionist.", Tools: []agent.Tool{lookupTool}, Voice: fam.voice})
			if got := h.a.Format(); got != (agent.Format{InputRate: 24000, OutputRate: 24000}) {
				t.Fatalf("format %+v", got)
			}
			turn(t, h.a, 400)
			done := h.rec.WaitType(t, wait, agent.EventResponseDone)
			if done.Status != agent.StatusCompleted {
				t.Fatalf("response status %q", done.Status)
			}
			if fam.p.Schema != wire.SchemaGrok {
				h.rec.WaitFor(t, wait, "rate limits", isRaw(wire.RateLimitsUpdated)) // the provider's last event
			}

			if got, want := h.rec.AudioSamples(), 600*24; got != want {
				t.Errorf("agent audio samples = %d, want %d", got, want)
			}
			var deltas strings.Builder
			for _, e := range h.rec.Of(agent.EventTranscriptDelta) {
				deltas.WriteString(e.Text)
			}
			if deltas.String() != reply {
				t.Errorf("transcript deltas = %q, want %q", deltas.String(), reply)
			}
			if td := h.rec.Of(agent.EventTranscriptDone); len(td) != 1 || td[0].Text != reply {
				t.Errorf("transcript done = %+v", td)
			}
			us := h.rec.Of(agent.EventUsage)
			if len(us) != 1 || us[0].Usage.OutputTokens == 0 || us[0].Usage.OutputAudioSeconds != 0.6 || us[0].Usage.InputAudioSeconds != 0.4 {
				t.Errorf("usage = %+v", us)
			}

			// Wire: what the provider received.
			wantTypes := []string{wire.SessionUpdate, wire.InputAudioAppend, wire.InputAudioCommit, wire.ResponseCreate}
			if got := h.f.Types(); !slices.Equal(got, wantTypes) {
				t.Errorf("client events = %v, want %v", got, wantTypes)
			}
			if n := h.f.Count(wire.InputAudioAppend); n != 10 {
				t.Errorf("appends = %d, want 10", n)
			}
			s := firstSession(t, h.f)
			tc, hasTC := s["tool_choice"]
			if fam.d.ToolChoice && tc != "auto" || !fam.d.ToolChoice && hasTC {
				t.Errorf("tool_choice = %v (present %v)", tc, hasTC)
			}
			voicePath := []string{"voice"}
			turnPath := []string{"turn_detection"}
			if fam.d.Schema == wire.SchemaGA {
				voicePath = []string{"audio", "output", "voice"}
				turnPath = []string{"audio", "input", "turn_detection"}
			}
			if v, _ := path(s, voicePath...); v != fam.voice {
				t.Errorf("voice = %v, want %s", v, fam.voice)
			}
			if v, ok := path(s, turnPath...); !ok || v != nil {
				t.Errorf("turn_detection = %v (present %v), want null", v, ok)
			}
			hs := h.f.Handshakes()[0]
			if !hs.Auth || (hs.BetaHeader != "") != fam.d.BetaHeader || hs.Model != fam.model {
				t.Errorf("handshake %+v", hs)
			}
			noProviderErrors(t, h.f)

			// Raw: every provider event is kept exactly once, in order, with audio elided.
			var inbound []string
			for _, e := range h.rec.Events() {
				if e.RawType != "" && !e.Outbound {
					inbound = append(inbound, e.RawType)
					if strings.Contains(e.RawType, "audio.delta") && !regexp.MustCompile(`"delta":\d+`).Match(e.Raw) {
						t.Errorf("audio not elided in raw %s", e.Raw)
					}
					if !json.Valid(e.Raw) {
						t.Errorf("raw not JSON: %s", e.Raw)
					}
				}
			}
			if sent := h.f.Sent(); !slices.Equal(inbound, sent) {
				t.Errorf("raw inbound types\n%v\nwant (sent by fake)\n%v", inbound, sent)
			}
		})
	}
}

func TestToolCallAndResult(t *testing.T) {
	for _, fam := range families {
		t.Run(fam.name, func(t *testing.T) {
			h := connect(t, fam, agenttest.Script{Replies: []agenttest.Reply{
				{Calls: []agenttest.Call{{Name: "lookup_patient", Arguments: `{"name":"Ada Lovelace"}`}}},
				{Text: "I found your record.", AudioMS: 300},
			}}, agent.Config{Tools: []agent.Tool{lookupTool}})
			turn(t, h.a, 200)
			call := h.rec.WaitType(t, wait, agent.EventToolCall)
			if call.Name != "lookup_patient" || string(call.Arguments) != `{"name":"Ada Lovelace"}` || !strings.HasPrefix(call.CallID, "call_") {
				t.Fatalf("tool call %+v", call)
			}
			h.rec.WaitType(t, wait, agent.EventResponseDone)
			if err := h.a.SendToolResult(call.CallID, call.Name, json.RawMessage(`{"found":true,"mrn":"A-1"}`)); err != nil {
				t.Fatal(err)
			}
			h.rec.WaitFor(t, wait, "follow-up transcript", func(e agent.Event) bool {
				return e.Type == agent.EventTranscriptDone && e.Text == "I found your record."
			})
			h.rec.WaitType(t, wait, agent.EventResponseDone)
			if n := len(h.rec.Of(agent.EventToolCall)); n != 1 {
				t.Errorf("tool_call events = %d, want 1 (deduplicated by call id)", n)
			}
			outs := h.f.Find(wire.ItemCreate)
			if len(outs) != 1 {
				t.Fatalf("item creates = %d", len(outs))
			}
			item := outs[0]["item"].(map[string]any)
			if item["type"] != "function_call_output" || item["call_id"] != call.CallID || item["output"] != `{"found":true,"mrn":"A-1"}` {
				t.Errorf("function_call_output item %v", item)
			}
			if n := h.f.Count(wire.ResponseCreate); n != 2 {
				t.Errorf("response.create sent %d times, want 2", n)
			}
			if err := h.a.SendToolResult(call.CallID, call.Name, json.RawMessage(`{}`)); !errors.Is(err, agent.ErrUnknownCall) {
				t.Errorf("second result for the same call: %v, want ErrUnknownCall", err)
			}
			noProviderErrors(t, h.f)
		})
	}
}

func TestParallelToolBatchOneResponseCreate(t *testing.T) {
	for _, fam := range families {
		t.Run(fam.name, func(t *testing.T) {
			h := connect(t, fam, agenttest.Script{Replies: []agenttest.Reply{
				{Text: "Let me check both.", AudioMS: 200, Calls: []agenttest.Call{
					{Name: "lookup_patient", Arguments: `{"name":"Ada"}`},
					{Name: "lookup_patient", Arguments: `{"name":"Grace"}`},
				}},
				{Text: "Both records found.", AudioMS: 200},
			}}, agent.Config{Tools: []agent.Tool{lookupTool}})
			turn(t, h.a, 200)
			first := h.rec.WaitType(t, wait, agent.EventToolCall)
			// Answer the first call before the response is done, the second after.
			if err := h.a.SendToolResult(first.CallID, first.Name, json.RawMessage(`"Ada: found"`)); err != nil {
				t.Fatal(err)
			}
			second := h.rec.WaitType(t, wait, agent.EventToolCall)
			h.rec.WaitType(t, wait, agent.EventResponseDone)
			if n := h.f.Count(wire.ResponseCreate); n != 1 {
				t.Fatalf("response.create before the batch was answered: %d sent", n)
			}
			if err := h.a.SendToolResult(second.CallID, second.Name, json.RawMessage(`"Grace: found"`)); err != nil {
				t.Fatal(err)
			}
			h.rec.WaitFor(t, wait, "follow-up", func(e agent.Event) bool {
				return e.Type == agent.EventTranscriptDone && e.Text == "Both records found."
			})
			types := h.f.Types()
			tail := types[len(types)-3:]
			if !slices.Equal(tail, []string{wire.ItemCreate, wire.ItemCreate, wire.ResponseCreate}) {
				t.Errorf("client events end %v, want both outputs then one response.create", types)
			}
			if n := h.f.Count(wire.ResponseCreate); n != 2 {
				t.Errorf("response.create sent %d times, want 2", n)
			}
			outputs := h.f.Find(wire.ItemCreate)
			if outputs[0]["item"].(map[string]any)["output"] != "Ada: found" {
				t.Errorf("string output not sent verbatim: %v", outputs[0])
			}
			noProviderErrors(t, h.f)
		})
	}
}

func TestActiveResponseConflictAvoided(t *testing.T) {
	for _, fam := range families {
		t.Run(fam.name, func(t *testing.T) {
			h := connect(t, fam, agenttest.Script{Replies: []agenttest.Reply{
				{Text: "First answer.", AudioMS: 500, Pace: 20 * time.Millisecond},
				{Text: "Second answer.", AudioMS: 200},
			}}, agent.Config{})
			turn(t, h.a, 200) // response.create
			turn(t, h.a, 200) // requested while the first is awaited: queued
			h.rec.WaitType(t, wait, agent.EventAudioDelta)
			turn(t, h.a, 200) // while active: coalesced with the queued one
			h.rec.WaitFor(t, wait, "second answer", func(e agent.Event) bool {
				return e.Type == agent.EventTranscriptDone && e.Text == "Second answer."
			})
			h.rec.WaitType(t, wait, agent.EventResponseDone)
			if n := h.f.Count(wire.ResponseCreate); n != 2 {
				t.Errorf("response.create sent %d times, want 2", n)
			}
			if errs := h.rec.Of(agent.EventError); len(errs) > 0 {
				t.Errorf("error events: %+v", errs[0].Err)
			}
			noProviderErrors(t, h.f)
		})
	}
}

func TestConflictWithServerVADResponseRecovered(t *testing.T) {
	fam := families[0]
	h := connect(t, fam, agenttest.Script{Replies: []agenttest.Reply{
		{Calls: []agenttest.Call{{Name: "lookup_patient", Arguments: `{"name":"Ada"}`}}},
		{Text: "Sorry, go on.", AudioMS: 600, Pace: 20 * time.Millisecond},
		{Text: "Found it.", AudioMS: 200},
	}}, agent.Config{Tools: []agent.Tool{lookupTool}, ServerTurnDetection: true})
	speak(t, h.a, 400, 600) // server VAD ends the turn and responds on its own
	call := h.rec.WaitType(t, wait, agent.EventToolCall)
	h.rec.WaitType(t, wait, agent.EventResponseDone)
	// The caller speaks again; the tool result goes out right behind that audio, so the provider's
	// VAD response is usually created just before our response.create arrives.
	speak(t, h.a, 200, 600)
	if err := h.a.SendToolResult(call.CallID, call.Name, json.RawMessage(`{"found":true}`)); err != nil {
		t.Fatal(err)
	}
	h.rec.WaitFor(t, wait, "follow-up after the VAD response", func(e agent.Event) bool {
		return e.Type == agent.EventTranscriptDone && e.Text == "Found it."
	})
	if errs := h.rec.Of(agent.EventError); len(errs) > 0 {
		t.Errorf("conflict surfaced as error: %+v", errs[0].Err)
	}
	conflicts := 0
	for _, c := range h.f.ErrorCodes() {
		if c == wire.CodeActiveResponse {
			conflicts++
		}
	}
	if conflicts > 0 && h.f.Count(wire.ResponseCreate) != 2 {
		t.Errorf("after %d conflict(s) response.create sent %d times, want a single retry", conflicts, h.f.Count(wire.ResponseCreate))
	}
	t.Logf("provider conflicts: %d (the race went the provider's way when >0)", conflicts)
	noProviderErrors(t, h.f, wire.CodeActiveResponse)
}

func TestBargeInCancelAndTruncate(t *testing.T) {
	for _, fam := range families {
		t.Run(fam.name, func(t *testing.T) {
			h := connect(t, fam, agenttest.Script{Replies: []agenttest.Reply{
				{Text: "A long explanation of the visit policy.", AudioMS: 3000, Pace: 15 * time.Millisecond},
				{Text: "Another long answer.", AudioMS: 3000, Pace: 15 * time.Millisecond},
				{Text: "Short.", AudioMS: 200},
				{Text: "Slow to start.", AudioMS: 400, Pace: 400 * time.Millisecond},
			}}, agent.Config{})

			// 1: interrupt after 300 ms received, 150 ms played.
			turn(t, h.a, 200)
			var item string
			for i := 0; i < 3; i++ {
				item = h.rec.WaitType(t, wait, agent.EventAudioDelta).ItemID
			}
			if err := h.a.Interrupt(150); err != nil {
				t.Fatal(err)
			}
			done := h.rec.WaitType(t, wait, agent.EventResponseDone)
			if done.Status != agent.StatusCancelled {
				t.Fatalf("status %q, want cancelled", done.Status)
			}
			eventually(t, "truncate received", func() bool { return h.f.Count(wire.ItemTruncate) == 1 })
			cancels := h.f.Find(wire.ResponseCancel)
			if len(cancels) != 1 || cancels[0]["response_id"] != done.ResponseID {
				t.Errorf("response.cancel = %v, want one for %s", cancels, done.ResponseID)
			}
			truncs := h.f.Find(wire.ItemTruncate)
			if len(truncs) != 1 || truncs[0]["item_id"] != item || truncs[0]["audio_end_ms"] != 150.0 {
				t.Errorf("truncate = %v, want item %s at 150 ms", truncs, item)
			}
			if ms := h.rec.AudioSamples() / 24; ms >= 3000 {
				t.Errorf("received %d ms of a cancelled 3000 ms reply", ms)
			}

			// 2: played more than received: clamped to what was received.
			turn(t, h.a, 200)
			h.rec.WaitType(t, wait, agent.EventAudioDelta)
			h.rec.WaitType(t, wait, agent.EventAudioDelta)
			h.a.Interrupt(99999)
			h.rec.WaitType(t, wait, agent.EventResponseDone)

			// 3: a completed short reply, then a reply interrupted before its first audio: cancel only.
			turn(t, h.a, 200)
			h.rec.WaitType(t, wait, agent.EventResponseDone)
			turn(t, h.a, 200)
			h.rec.WaitFor(t, wait, "response.created", isRaw(wire.ResponseCreated))
			h.a.Interrupt(0)
			if d := h.rec.WaitType(t, wait, agent.EventResponseDone); d.Status != agent.StatusCancelled {
				t.Errorf("status %q, want cancelled", d.Status)
			}
			eventually(t, "cancels received", func() bool { return h.f.Count(wire.ResponseCancel) == 3 })
			if n := h.f.Count(wire.ItemTruncate); n != 2 {
				t.Errorf("truncates = %d, want 2 (none without audio of the active response)", n)
			}
			if n := h.f.Count(wire.ResponseCancel); n != 3 {
				t.Errorf("cancels = %d, want 3", n)
			}
			noProviderErrors(t, h.f) // truncations within the audio sent, cancels of active responses
		})
	}
}

func TestServerVADBargeIn(t *testing.T) {
	fam := families[0]
	h := connect(t, fam, agenttest.Script{Replies: []agenttest.Reply{
		{Text: "Let me read you the whole policy.", AudioMS: 3000, Pace: 15 * time.Millisecond},
		{Text: "Sure.", AudioMS: 200},
	}}, agent.Config{ServerTurnDetection: true})
	speak(t, h.a, 300, 600)
	h.rec.WaitType(t, wait, agent.EventAudioDelta)
	h.rec.WaitType(t, wait, agent.EventAudioDelta)
	speak(t, h.a, 200, 0) // the caller talks over the agent
	h.rec.WaitType(t, wait, agent.EventCallerSpeechStarted)
	h.rec.WaitType(t, wait, agent.EventInterrupted)
	if d := h.rec.WaitType(t, wait, agent.EventResponseDone); d.Status != agent.StatusCancelled {
		t.Fatalf("status %q", d.Status)
	}
	if err := h.a.Interrupt(120); err != nil {
		t.Fatal(err)
	}
	speak(t, h.a, 0, 600)
	h.rec.WaitFor(t, wait, "reply after barge-in", func(e agent.Event) bool {
		return e.Type == agent.EventTranscriptDone && e.Text == "Sure."
	})
	if n := h.f.Count(wire.ResponseCancel); n != 0 {
		t.Errorf("response.cancel sent %d times after the provider cancelled itself", n)
	}
	eventually(t, "truncate received", func() bool { return h.f.Count(wire.ItemTruncate) > 0 })
	if n := h.f.Count(wire.ItemTruncate); n != 1 {
		t.Errorf("truncates = %d, want 1", n)
	}
	if n := h.f.Count(wire.ResponseCreate); n != 0 {
		t.Errorf("response.create sent %d times under server VAD", n)
	}
	noProviderErrors(t, h.f)
}

func TestInvalidVoiceClamped(t *testing.T) {
	for _, fam := range families {
		t.Run(fam.name, func(t *testing.T) {
			var logs bytes.Buffer
			h := connect(t, fam, agenttest.Script{}, agent.Config{Voice: "nova", Tools: []agent.Tool{lookupTool},
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			s := firstSession(t, h.f)
			voice := s["voice"]
			if fam.d.Schema == wire.SchemaGA {
				voice, _ = path(s, "audio", "output", "voice")
			}
			if voice != fam.d.DefaultVoice {
				t.Errorf("voice sent %v, want default %s", voice, fam.d.DefaultVoice)
			}
			if !strings.Contains(logs.String(), "requested=nova") || !strings.Contains(logs.String(), "substituted") {
				t.Errorf("substitution not logged: %s", logs.String())
			}
			noProviderErrors(t, h.f) // so the tools were applied
		})
	}
	t.Run("grok voice case folded", func(t *testing.T) {
		h := connect(t, families[2], agenttest.Script{}, agent.Config{Voice: "leo"})
		if v := firstSession(t, h.f)["voice"]; v != "Leo" {
			t.Errorf("voice %v, want Leo", v)
		}
	})
}

// The fake must reject what the real API rejects: an unknown voice fails the whole update, tools
// included, which is why the client clamps.
func TestFakeRejectsUnknownVoiceAndKeepsToolsUnset(t *testing.T) {
	f := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{})
	ws, _, err := websocket.DefaultDialer.Dial(f.URL()+"?model=gpt-realtime", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	read := func() map[string]any {
		ws.SetReadDeadline(time.Now().Add(wait))
		var m map[string]any
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := read(); m["type"] != wire.SessionCreated {
		t.Fatalf("first event %v", m["type"])
	}
	ws.WriteJSON(map[string]any{"type": "session.update", "event_id": "e1", "session": map[string]any{
		"type": "realtime", "audio": map[string]any{"output": map[string]any{"voice": "nova"}},
		"tools": []any{map[string]any{"type": "function", "name": "x", "parameters": map[string]any{"type": "object"}}}}})
	m := read()
	e, _ := m["error"].(map[string]any)
	if m["type"] != "error" || e["code"] != "invalid_value" || e["param"] != "session.audio.output.voice" || e["event_id"] != "e1" {
		t.Fatalf("got %v", m)
	}
	ws.WriteJSON(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "instructions": "hi"}})
	m = read()
	if tools, _ := path(m, "session", "tools"); m["type"] != wire.SessionUpdated || len(tools.([]any)) != 0 {
		t.Fatalf("tools applied despite the rejected update: %v", m)
	}
	ws.WriteJSON(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "modalities": []any{"audio"}}})
	if e, _ := read()["error"].(map[string]any); e["code"] != wire.CodeUnknownParameter {
		t.Fatalf("beta field accepted by GA: %v", e)
	}
}

func TestProviderErrorsClassified(t *testing.T) {
	for _, fam := range families {
		t.Run(fam.name, func(t *testing.T) {
			h := connect(t, fam, agenttest.Script{Replies: []agenttest.Reply{
				{Error: agenttest.ErrServer},
				{Fail: agenttest.ErrRateLimit},
				{Text: "Back again.", AudioMS: 200},
			}}, agent.Config{})
			turn(t, h.a, 200)
			e := h.rec.WaitType(t, wait, agent.EventError)
			if e.Err.Class != agent.ClassProvider || e.Err.Fatal {
				t.Errorf("server error = %+v, want non-fatal provider", e.Err)
			}
			turn(t, h.a, 200)
			e = h.rec.WaitType(t, wait, agent.EventError)
			if e.Err.Class != agent.ClassRateLimit || e.Err.Code != "rate_limit_exceeded" {
				t.Errorf("rate limit = %+v", e.Err)
			}
			if d := h.rec.WaitType(t, wait, agent.EventResponseDone); d.Status != agent.StatusFailed {
				t.Errorf("status %q, want failed", d.Status)
			}
			turn(t, h.a, 200)
			if d := h.rec.WaitType(t, wait, agent.EventResponseDone); d.Status != agent.StatusCompleted {
				t.Errorf("call did not recover: %q", d.Status)
			}
		})
	}
}

func TestResponseStartDeadline(t *testing.T) {
	fam := families[2] // xAI hangs on a bad tool batch; any silent provider is handled the same
	f := agenttest.NewOpenAIFake(t, fam.p, agenttest.Script{Replies: []agenttest.Reply{{Hang: true}, {Text: "Here.", AudioMS: 200}}})
	to := testTimeouts()
	to.ResponseStart = 300 * time.Millisecond
	a := openai.New(openai.Options{URL: f.URL(), Model: fam.model, Dialect: fam.d, Timeouts: to})
	if err := a.Connect(context.Background(), agent.Config{}); err != nil {
		t.Fatal(err)
	}
	rec := agenttest.Record(a)
	defer func() { a.Close(); <-rec.Done() }()
	turn(t, a, 200)
	e := rec.WaitType(t, wait, agent.EventError)
	if e.Err.Code != "response_timeout" || e.Err.Fatal {
		t.Fatalf("error %+v", e.Err)
	}
	turn(t, a, 200)
	rec.WaitType(t, wait, agent.EventResponseDone)
}

func TestDroppedSocketIsLostConnection(t *testing.T) {
	for _, fam := range families {
		t.Run(fam.name, func(t *testing.T) {
			h := connect(t, fam, agenttest.Script{Replies: []agenttest.Reply{{Text: "Cut off mid", AudioMS: 1000, Drop: true, DropAfter: 2}}}, agent.Config{})
			turn(t, h.a, 200)
			e := h.rec.WaitType(t, wait, agent.EventError)
			if e.Err.Class != agent.ClassLostConnection || !e.Err.Fatal {
				t.Fatalf("error %+v, want fatal lost_connection", e.Err)
			}
			h.rec.WaitClosed(t, wait)
			if n := len(h.rec.Of(agent.EventAudioDelta)); n != 2 {
				t.Errorf("audio deltas before the drop = %d, want 2", n)
			}
			if err := h.a.SendAudio(make([]int16, 960)); !errors.Is(err, agent.ErrClosed) {
				t.Errorf("send after loss: %v", err)
			}
		})
	}
	t.Run("idle connection dropped", func(t *testing.T) {
		h := connect(t, families[0], agenttest.Script{}, agent.Config{})
		h.f.DropAll()
		if e := h.rec.WaitType(t, wait, agent.EventError); e.Err.Class != agent.ClassLostConnection {
			t.Fatalf("error %+v", e.Err)
		}
		h.rec.WaitClosed(t, wait)
	})
}

func TestConnectFailuresClassified(t *testing.T) {
	const key = "sk-secret-key-never-shown"
	ctx := context.Background()
	// Each family's refusal of a wrong key is an auth error, whatever its status: OpenAI's 401,
	// xAI's 400 "Incorrect API key provided".
	for _, fam := range families {
		t.Run("wrong key "+fam.name, func(t *testing.T) {
			f := agenttest.NewOpenAIFake(t, fam.p, agenttest.Script{Key: "sk-right"})
			a := openai.New(openai.Options{URL: f.URL(), Model: fam.model, Key: key, Dialect: fam.d, Timeouts: testTimeouts()})
			defer a.Close()
			err := a.Connect(ctx, agent.Config{})
			if agent.ClassOf(err) != agent.ClassAuth || strings.Contains(err.Error(), key) {
				t.Fatalf("err = %v", err)
			}
			t.Logf("%v", err)
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		addr := l.Addr().String()
		l.Close()
		a := openai.New(openai.Options{URL: "ws://" + addr + "/v1/realtime", Model: "m", Key: key, Dialect: openai.GA, Timeouts: testTimeouts()})
		defer a.Close()
		err := a.Connect(ctx, agent.Config{})
		if agent.ClassOf(err) != agent.ClassUnreachable {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("silent server times out", func(t *testing.T) {
		up := websocket.Upgrader{}
		stop := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ws, err := up.Upgrade(w, r, nil)
			if err == nil {
				<-stop
				ws.Close()
			}
		}))
		defer srv.Close()
		defer close(stop)
		to := testTimeouts()
		to.Handshake = 300 * time.Millisecond
		a := openai.New(openai.Options{URL: "ws" + strings.TrimPrefix(srv.URL, "http"), Model: "m", Dialect: openai.GA, Timeouts: to})
		defer a.Close()
		start := time.Now()
		err := a.Connect(ctx, agent.Config{})
		var ae *agent.Error
		if !errors.As(err, &ae) || ae.Code != "handshake_timeout" {
			t.Fatalf("err = %v", err)
		}
		if time.Since(start) > 3*time.Second {
			t.Fatalf("handshake wait not bounded: %s", time.Since(start))
		}
	})
	t.Run("rejected session update", func(t *testing.T) {
		f := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{})
		a := openai.New(openai.Options{URL: f.URL(), Model: "gpt-realtime", Dialect: openai.GA, Timeouts: testTimeouts()})
		defer a.Close()
		err := a.Connect(ctx, agent.Config{Tools: []agent.Tool{{Name: "bad", Parameters: json.RawMessage(`{"type":"string"}`)}}})
		if agent.ClassOf(err) != agent.ClassProtocol || !strings.Contains(err.Error(), "invalid_function_parameters") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestOverflowEndsStreamWithError(t *testing.T) {
	fam := families[0]
	f := agenttest.NewOpenAIFake(t, fam.p, agenttest.Script{Replies: []agenttest.Reply{{Text: "x", AudioMS: 60000, ChunkMS: 100}}})
	a := openai.New(openai.Options{URL: f.URL(), Model: fam.model, Dialect: fam.d, Timeouts: testTimeouts(), EventLimit: 32})
	defer a.Close()
	if err := a.Connect(context.Background(), agent.Config{}); err != nil {
		t.Fatal(err)
	}
	turn(t, a, 200)
	// Nobody reads until the provider has stopped sending (the adapter dropped it).
	for n, stable := -1, 0; stable < 5; time.Sleep(40 * time.Millisecond) {
		if m := len(f.Sent()); m == n {
			stable++
		} else {
			n, stable = m, 0
		}
	}
	deadline := time.After(wait)
	var last agent.Event
	for {
		select {
		case ev, ok := <-a.Events():
			if !ok {
				if last.Type != agent.EventError || last.Err.Class != agent.ClassOverflow || !last.Err.Fatal {
					t.Fatalf("last event %+v, want fatal overflow", last)
				}
				return
			}
			last = ev
		case <-deadline:
			t.Fatal("stream did not end")
		}
	}
}

// appendedMS sums the caller audio the fake received (raw events keep the byte count).
func appendedMS(t *testing.T, f *agenttest.OpenAIFake) int {
	t.Helper()
	bytes := 0
	for _, m := range f.Find(wire.InputAudioAppend) {
		n, ok := m["audio"].(float64) // the fake elides audio to its byte count
		if !ok {
			t.Fatalf("append %v", m)
		}
		bytes += int(n)
	}
	return bytes / 48 // 24 kHz PCM16: 48 bytes per ms
}

func TestMatchedTurnsSendOnlyTurnAudioWithPreRoll(t *testing.T) {
	h := connect(t, families[0], agenttest.Script{}, agent.Config{})
	speak(t, h.a, 0, 2000) // between turns: held back
	if err := h.a.StartTurn(); err != nil {
		t.Fatal(err)
	}
	speak(t, h.a, 200, 0)
	h.a.EndTurn()
	u := h.rec.WaitType(t, wait, agent.EventUsage)
	// 500 ms of pre-roll rounds up to 13 frames of 40 ms; then the 200 ms turn.
	if ms := appendedMS(t, h.f); ms != 720 {
		t.Errorf("caller audio sent %d ms, want 720 (520 pre-roll + 200)", ms)
	}
	if u.Usage.InputAudioSeconds != 0.72 {
		t.Errorf("input audio seconds %v", u.Usage.InputAudioSeconds)
	}
	speak(t, h.a, 0, 1000) // the agent's turn: nothing reaches the provider
	if ms := appendedMS(t, h.f); ms != 720 {
		t.Errorf("audio between turns sent: %d ms", ms)
	}
}

// Close releases everything even when nobody drains the events (goleak checks after the tests).
func TestCloseWithoutDraining(t *testing.T) {
	fam := families[0]
	f := agenttest.NewOpenAIFake(t, fam.p, agenttest.Script{Replies: []agenttest.Reply{{Text: "unread", AudioMS: 2000, ChunkMS: 20}}})
	a := openai.New(openai.Options{URL: f.URL(), Model: fam.model, Dialect: fam.d, Timeouts: testTimeouts()})
	if err := a.Connect(context.Background(), agent.Config{}); err != nil {
		t.Fatal(err)
	}
	turn(t, a, 200)
	eventually(t, "reply under way", func() bool { return len(f.Sent()) > 20 })
	a.Close()
	for range a.Events() { // closed promptly; at most the channel buffer remains
	}
	if err := a.SendAudio(make([]int16, 960)); !errors.Is(err, agent.ErrClosed) {
		t.Errorf("send after close: %v", err)
	}
	if err := a.Connect(context.Background(), agent.Config{}); !errors.Is(err, agent.ErrClosed) {
		t.Errorf("connect after close: %v", err)
	}
}

// The OpenAI tool-turn shape: a response with tool calls ends with response.done and the answer
// comes in a second response after the outputs and response.create. The agent's turn ends once,
// after that second response; a response the caller interrupted ends it as cancelled.
func TestTurnEndsAfterTheFollowUpResponse(t *testing.T) {
	for _, fam := range families {
		t.Run(fam.name, func(t *testing.T) {
			h := connect(t, fam, agenttest.Script{Replies: []agenttest.Reply{
				{Text: "One moment.", AudioMS: 200, Calls: []agenttest.Call{{Name: "lookup_patient", Arguments: `{"name":"Ada"}`}}},
				{Text: "I found your record.", AudioMS: 300},
				{Text: "This answer is cut short by the caller.", AudioMS: 3000, Pace: 20 * time.Millisecond},
			}}, agent.Config{Tools: []agent.Tool{lookupTool}})
			turn(t, h.a, 200)
			call := h.rec.WaitType(t, wait, agent.EventToolCall)
			h.rec.WaitType(t, wait, agent.EventResponseDone)
			time.Sleep(50 * time.Millisecond)
			if n := len(h.rec.Of(agent.EventTurnEnd)); n != 0 {
				t.Fatalf("turn ended with a tool call unanswered: %s", h.rec.Summary())
			}
			if err := h.a.SendToolResult(call.CallID, call.Name, json.RawMessage(`{"found":true}`)); err != nil {
				t.Fatal(err)
			}
			end := h.rec.WaitType(t, wait, agent.EventTurnEnd)
			dones := h.rec.Of(agent.EventResponseDone)
			if end.Status != agent.StatusCompleted || len(dones) != 2 || end.ResponseID != dones[1].ResponseID {
				t.Errorf("turn end %+v after responses %+v", end, dones)
			}
			turn(t, h.a, 200)
			h.rec.WaitType(t, wait, agent.EventAudioDelta)
			if err := h.a.Interrupt(100); err != nil {
				t.Fatal(err)
			}
			if end := h.rec.WaitType(t, wait, agent.EventTurnEnd); end.Status != agent.StatusCancelled {
				t.Errorf("interrupted turn end %+v", end)
			}
			if n := len(h.rec.Of(agent.EventTurnEnd)); n != 2 {
				t.Errorf("%d turn ends, want 2: %s", n, h.rec.Summary())
			}
			noProviderErrors(t, h.f)
		})
	}
}

// A provider that acknowledges the session without installing the tools fails the connect,
// naming them; Applied reports what session.updated said.
func TestDroppedToolsNamed(t *testing.T) {
	p := agenttest.OpenAIGA
	p.DropTools = true
	f := agenttest.NewOpenAIFake(t, p, agenttest.Script{})
	a := openai.New(openai.Options{URL: f.URL(), Model: "gpt-realtime", Dialect: openai.GA, Timeouts: testTimeouts()})
	defer a.Close()
	second := agent.Tool{Name: "book_visit", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}
	err := a.Connect(context.Background(), agent.Config{Tools: []agent.Tool{lookupTool, second}})
	want := "protocol error (tools_dropped): provider applied 0 of 2 tools; refused: lookup_patient, book_visit"
	if err == nil || err.Error() != want {
		t.Fatalf("err %v\nwant %s", err, want)
	}

	h := connect(t, families[0], agenttest.Script{}, agent.Config{Tools: []agent.Tool{lookupTool}, Voice: "cedar", ServerTurnDetection: true})
	ap := h.a.Applied()
	if !ap.Echoed || !slices.Equal(ap.Tools, []string{"lookup_patient"}) || ap.Voice != "cedar" || ap.InputRate != 24000 || ap.OutputRate != 24000 || ap.TurnDetection != "server_vad" {
		t.Errorf("applied %+v", ap)
	}
}

// StepFun's step-audio-2 models speak two voices only: another is replaced before the session.
func TestVoicesPerModel(t *testing.T) {
	if v := openai.StepFun.VoicesFor("step-audio-2-mini"); !slices.Equal(v, []string{"qingchunshaonv", "wenrounansheng"}) {
		t.Errorf("step-audio-2-mini voices %v", v)
	}
	if v := openai.StepFun.VoicesFor("step-1o-audio"); len(v) != 4 {
		t.Errorf("step-1o-audio voices %v", v)
	}
	h := connect(t, families[3], agenttest.Script{}, agent.Config{Voice: "elegantgentle-female"})
	if v, _ := path(firstSession(t, h.f), "voice"); v != "qingchunshaonv" {
		t.Errorf("voice sent %v", v)
	}
	noProviderErrors(t, h.f)
}

// The other tool-turn shape of the family: a server that starts the follow-up by itself once it
// has every output. The adapter's response.create then collides with that response, which it
// takes as the follow-up: no second follow-up, one end of the turn.
func TestServerContinuingByItselfAfterToolOutputs(t *testing.T) {
	p := agenttest.OpenAIGA
	p.AutoFollowUp = true
	h := connect(t, family{"ga", openai.GA, p, "gpt-realtime", "marin"}, agenttest.Script{Replies: []agenttest.Reply{
		{Calls: []agenttest.Call{{Name: "lookup_patient", Arguments: `{"name":"Ada"}`}}},
		{Text: "I found your record.", AudioMS: 300, Pace: 5 * time.Millisecond},
		{Text: "A duplicate answer.", AudioMS: 200},
	}}, agent.Config{Tools: []agent.Tool{lookupTool}})
	turn(t, h.a, 200)
	call := h.rec.WaitType(t, wait, agent.EventToolCall)
	h.rec.WaitType(t, wait, agent.EventResponseDone)
	if err := h.a.SendToolResult(call.CallID, call.Name, json.RawMessage(`{"found":true}`)); err != nil {
		t.Fatal(err)
	}
	h.rec.WaitType(t, wait, agent.EventTurnEnd)
	time.Sleep(300 * time.Millisecond)
	for _, e := range h.rec.Of(agent.EventTranscriptDone) {
		if e.Text == "A duplicate answer." {
			t.Errorf("a second follow-up was asked for: %s", h.rec.Summary())
		}
	}
	if n, m := len(h.rec.Of(agent.EventResponseDone)), len(h.rec.Of(agent.EventTurnEnd)); n != 2 || m != 1 {
		t.Errorf("%d responses, %d turn ends (want 2, 1): %s", n, m, h.rec.Summary())
	}
	if errs := h.rec.Of(agent.EventError); len(errs) > 0 {
		t.Errorf("the collision surfaced as an error: %+v", errs[0].Err)
	}
	if codes := h.f.ErrorCodes(); !slices.Equal(codes, []string{wire.CodeActiveResponse}) {
		t.Errorf("provider errors %v, want the one collision of the adapter's follow-up", codes)
	}
	noProviderErrors(t, h.f, wire.CodeActiveResponse)
}
