package gemini_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/gemini"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	wait  = 5 * time.Second
	model = "gemini-2.5-flash-native-audio-preview-12-2025"
)

var lookupTool = agent.Tool{Name: "lookup_patient", Description: "Find a patient record by name.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}

type harness struct {
	a   *gemini.Adapter
	f   *agenttest.GeminiFake
	rec *agenttest.Recorder
}

func connect(t *testing.T, script agenttest.Script, cfg agent.Config) harness {
	t.Helper()
	return connectWith(t, script, cfg, gemini.Options{})
}

func connectWith(t *testing.T, script agenttest.Script, cfg agent.Config, o gemini.Options) harness {
	t.Helper()
	f := agenttest.NewGeminiFake(t, script)
	o.URL, o.Model, o.Key, o.Timeouts = f.URL(), model, script.Key, gemini.Timeouts{Handshake: 3 * time.Second}
	a := gemini.New(o)
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

func speak(t *testing.T, a agent.Adapter, ms, silenceMS int) {
	t.Helper()
	send := func(pcm []int16) {
		for len(pcm) > 0 {
			n := min(len(pcm), 640) // 40 ms at 16 kHz
			if err := a.SendAudio(pcm[:n]); err != nil {
				t.Fatalf("send audio: %v", err)
			}
			pcm = pcm[n:]
		}
	}
	send(agenttest.Speech(ms, gemini.InputRate))
	send(agenttest.Silence(silenceMS, gemini.InputRate))
}

// turn is one matched turn: activity start, speech, activity end.
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

func get(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, _ := v.(map[string]any)
		v = mm[k]
	}
	return v
}

func clean(t *testing.T, f *agenttest.GeminiFake) {
	t.Helper()
	if v := f.Violations(); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
	if c := f.Closes(); len(c) > 0 {
		t.Errorf("fake closed the connection: %v", c)
	}
}

func TestFullCallAudioBothWays(t *testing.T) {
	reply := "Good morning, this is the clinic."
	h := connect(t, agenttest.Script{Key: "AIza-test", CallerTranscripts: []string{"Hi, I need an appointment."},
		Replies: []agenttest.Reply{{Text: reply, AudioMS: 600}}},
		agent.Config{Instructions: "You are a clinic receptionist.", Tools: []agent.Tool{lookupTool}, Voice: "Kore"})
	if f := h.a.Format(); f != (agent.Format{InputRate: 16000, OutputRate: 24000}) {
		t.Fatalf("format %+v", f)
	}
	turn(t, h.a, 400)
	if d := h.rec.WaitType(t, wait, agent.EventResponseDone); d.Status != agent.StatusCompleted || d.ResponseID != "turn_1" {
		t.Fatalf("done %+v", d)
	}
	// The provider's last event: the resumption handle that covers the turn.
	h.rec.WaitFor(t, wait, "the handle after the turn", func(e agent.Event) bool { return e.RawType == "sessionResumptionUpdate" })
	if got := h.rec.AudioSamples(); got != 600*24 {
		t.Errorf("agent audio samples %d, want %d", got, 600*24)
	}
	if td := h.rec.Of(agent.EventTranscriptDone); len(td) != 1 || td[0].Text != reply {
		t.Errorf("transcript done %+v", td)
	}
	if ct := h.rec.Of(agent.EventCallerTranscript); len(ct) != 1 || ct[0].Text != "Hi, I need an appointment." {
		t.Errorf("caller transcript %+v", ct)
	}
	us := h.rec.Of(agent.EventUsage)
	if len(us) != 1 || us[0].Usage.InputTokens != 180 || us[0].Usage.OutputAudioTokens != 15 || us[0].Usage.InputAudioSeconds != 0.4 || us[0].Usage.OutputAudioSeconds != 0.6 {
		t.Errorf("usage %+v", us)
	}

	want := []string{"setup", "realtimeInput.activityStart", "realtimeInput.audio", "realtimeInput.activityEnd"}
	if got := h.f.Types(); !slices.Equal(got, want) {
		t.Errorf("client messages %v, want %v", got, want)
	}
	if n := h.f.Count("realtimeInput.audio"); n != 10 {
		t.Errorf("audio chunks %d, want 10", n)
	}
	s := h.f.Setups()[0]
	checks := map[string][2]any{
		"model":    {get(s, "model"), "models/" + model},
		"voice":    {get(s, "generationConfig", "speechConfig", "voiceConfig", "prebuiltVoiceConfig", "voiceName"), "Kore"},
		"vad off":  {get(s, "realtimeInputConfig", "automaticActivityDetection", "disabled"), true},
		"handling": {get(s, "realtimeInputConfig", "activityHandling"), "START_OF_ACTIVITY_INTERRUPTS"},
		"system":   {get(s, "systemInstruction", "parts").([]any)[0].(map[string]any)["text"], "You are a clinic receptionist."},
		"tool":     {get(s, "tools").([]any)[0].(map[string]any)["functionDeclarations"].([]any)[0].(map[string]any)["name"], "lookup_patient"},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("setup %s = %v, want %v", name, c[0], c[1])
		}
	}
	if hs := h.f.Handshakes()[0]; !hs.Auth {
		t.Errorf("no API key header: %+v", hs)
	}
	clean(t, h.f)

	var inbound []string
	for _, e := range h.rec.Events() {
		if e.RawType != "" && !e.Outbound {
			inbound = append(inbound, e.RawType)
			if e.RawType == "serverContent.modelTurn" && !bytes.Contains(e.Raw, []byte(`"data":4800`)) {
				t.Errorf("audio not elided: %s", e.Raw)
			}
		}
	}
	if sent := h.f.Sent(); !slices.Equal(inbound, sent) {
		t.Errorf("raw inbound %v\nwant %v", inbound, sent)
	}
}

func TestToolCallAndResult(t *testing.T) {
	h := connect(t, agenttest.Script{Replies: []agenttest.Reply{
		{Calls: []agenttest.Call{{Name: "lookup_patient", Arguments: `{"name":"Ada Lovelace","first_name":"Ada"}`}}},
		{Text: "I found your record.", AudioMS: 300},
	}}, agent.Config{Tools: []agent.Tool{lookupTool}})
	turn(t, h.a, 200)
	call := h.rec.WaitType(t, wait, agent.EventToolCall)
	var args map[string]string
	if err := json.Unmarshal(call.Arguments, &args); err != nil || args["name"] != "Ada Lovelace" || args["first_name"] != "Ada" || call.Name != "lookup_patient" {
		t.Fatalf("tool call %+v (%v)", call, err)
	}
	if err := h.a.SendToolResult(call.CallID, call.Name, json.RawMessage(`{"found":true}`)); err != nil {
		t.Fatal(err)
	}
	h.rec.WaitFor(t, wait, "follow-up", func(e agent.Event) bool {
		return e.Type == agent.EventTranscriptDone && e.Text == "I found your record."
	})
	h.rec.WaitType(t, wait, agent.EventResponseDone)
	trs := h.f.Find("toolResponse")
	if len(trs) != 1 {
		t.Fatalf("toolResponse messages %d", len(trs))
	}
	fr := get(trs[0], "toolResponse", "functionResponses").([]any)[0].(map[string]any)
	if fr["id"] != call.CallID || fr["name"] != "lookup_patient" || get(fr, "response", "found") != true {
		t.Errorf("function response %v", fr)
	}
	if err := h.a.SendToolResult(call.CallID, call.Name, json.RawMessage(`{}`)); !errors.Is(err, agent.ErrUnknownCall) {
		t.Errorf("second result: %v", err)
	}
	clean(t, h.f)
}

func TestParallelToolBatchOneResponse(t *testing.T) {
	h := connect(t, agenttest.Script{Replies: []agenttest.Reply{
		{Text: "Checking both.", AudioMS: 200, Calls: []agenttest.Call{
			{Name: "lookup_patient", Arguments: `{"name":"Ada"}`}, {Name: "lookup_patient", Arguments: `{"name":"Grace"}`}}},
		{Text: "Both found.", AudioMS: 200},
	}}, agent.Config{Tools: []agent.Tool{lookupTool}})
	turn(t, h.a, 200)
	c1 := h.rec.WaitType(t, wait, agent.EventToolCall)
	c2 := h.rec.WaitType(t, wait, agent.EventToolCall)
	if err := h.a.SendToolResult(c1.CallID, c1.Name, json.RawMessage(`"Ada: found"`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := h.f.Count("toolResponse"); n != 0 {
		t.Fatalf("toolResponse sent before the batch was complete")
	}
	if err := h.a.SendToolResult(c2.CallID, c2.Name, json.RawMessage(`{"found":true}`)); err != nil {
		t.Fatal(err)
	}
	h.rec.WaitFor(t, wait, "follow-up", func(e agent.Event) bool {
		return e.Type == agent.EventTranscriptDone && strings.HasSuffix(e.Text, "Both found.")
	})
	trs := h.f.Find("toolResponse")
	if len(trs) != 1 {
		t.Fatalf("toolResponse messages %d, want 1", len(trs))
	}
	frs := get(trs[0], "toolResponse", "functionResponses").([]any)
	if len(frs) != 2 || get(frs[0].(map[string]any), "response", "result") != "Ada: found" {
		t.Errorf("function responses %v", frs)
	}
	clean(t, h.f)
}

func TestBargeInMatched(t *testing.T) {
	h := connect(t, agenttest.Script{Replies: []agenttest.Reply{
		{Text: "A very long policy explanation.", AudioMS: 3000, Pace: 15 * time.Millisecond},
		{Text: "Yes?", AudioMS: 200},
	}}, agent.Config{})
	turn(t, h.a, 200)
	for i := 0; i < 3; i++ {
		h.rec.WaitType(t, wait, agent.EventAudioDelta)
	}
	if err := h.a.Interrupt(150); err != nil {
		t.Fatal(err)
	}
	h.rec.WaitType(t, wait, agent.EventInterrupted)
	if d := h.rec.WaitType(t, wait, agent.EventResponseDone); d.Status != agent.StatusCancelled {
		t.Fatalf("status %q", d.Status)
	}
	if ms := h.rec.AudioSamples() / 24; ms >= 3000 {
		t.Errorf("%d ms of audio delivered from an interrupted 3000 ms turn", ms)
	}
	speak(t, h.a, 200, 0)
	h.a.EndTurn()
	h.rec.WaitFor(t, wait, "reply after barge-in", func(e agent.Event) bool { return e.Type == agent.EventTranscriptDone && e.Text == "Yes?" })
	if n := h.f.Count("realtimeInput.activityStart"); n != 2 {
		t.Errorf("activityStart %d, want 2 (turn, barge-in)", n)
	}
	clean(t, h.f)
}

func TestBargeInServerVAD(t *testing.T) {
	h := connect(t, agenttest.Script{Replies: []agenttest.Reply{
		{Text: "A very long policy explanation.", AudioMS: 3000, Pace: 15 * time.Millisecond},
		{Text: "Go ahead.", AudioMS: 200},
	}}, agent.Config{ServerTurnDetection: true})
	speak(t, h.a, 300, 600)
	h.rec.WaitType(t, wait, agent.EventAudioDelta)
	speak(t, h.a, 200, 0)
	h.rec.WaitType(t, wait, agent.EventInterrupted)
	if d := h.rec.WaitType(t, wait, agent.EventResponseDone); d.Status != agent.StatusCancelled {
		t.Fatalf("status %q", d.Status)
	}
	h.a.Interrupt(100) // nothing to send under server VAD
	h.a.StartTurn()
	h.a.EndTurn()
	speak(t, h.a, 0, 600)
	h.rec.WaitFor(t, wait, "reply", func(e agent.Event) bool { return e.Type == agent.EventTranscriptDone && e.Text == "Go ahead." })
	if got := h.f.Types(); slices.Contains(got, "realtimeInput.activityStart") || slices.Contains(got, "realtimeInput.activityEnd") {
		t.Errorf("explicit activity sent with automatic detection on: %v", got)
	}
	clean(t, h.f)
}

func TestInvalidVoiceClamped(t *testing.T) {
	var logs bytes.Buffer
	h := connect(t, agenttest.Script{}, agent.Config{Voice: "alloy", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if v := get(h.f.Setups()[0], "generationConfig", "speechConfig", "voiceConfig", "prebuiltVoiceConfig", "voiceName"); v != gemini.DefaultVoice {
		t.Errorf("voice %v", v)
	}
	if !strings.Contains(logs.String(), "requested=alloy") {
		t.Errorf("substitution not logged: %s", logs.String())
	}
}

// rawClient talks to the fake directly, to prove the fake rejects what the real API rejects.
func rawClient(t *testing.T, f *agenttest.GeminiFake) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(f.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

func readClose(t *testing.T, ws *websocket.Conn) *websocket.CloseError {
	t.Helper()
	ws.SetReadDeadline(time.Now().Add(wait))
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) {
				t.Fatalf("read: %v", err)
			}
			return ce
		}
	}
}

func TestFakeRejectsWhatTheAPIRejects(t *testing.T) {
	setup := map[string]any{"model": "models/" + model, "generationConfig": map[string]any{"responseModalities": []any{"AUDIO"}}}
	t.Run("two top-level fields", func(t *testing.T) {
		ws := rawClient(t, agenttest.NewGeminiFake(t, agenttest.Script{}))
		ws.WriteJSON(map[string]any{"setup": setup, "toolResponse": map[string]any{}})
		if ce := readClose(t, ws); ce.Code != 1007 || !strings.Contains(ce.Text, "Oneof") {
			t.Fatalf("close %v", ce)
		}
	})
	t.Run("unknown voice", func(t *testing.T) {
		ws := rawClient(t, agenttest.NewGeminiFake(t, agenttest.Script{}))
		ws.WriteJSON(map[string]any{"setup": map[string]any{"model": "models/" + model, "generationConfig": map[string]any{
			"speechConfig": map[string]any{"voiceConfig": map[string]any{"prebuiltVoiceConfig": map[string]any{"voiceName": "alloy"}}}}}})
		if ce := readClose(t, ws); ce.Code != 1007 {
			t.Fatalf("close %v", ce)
		}
	})
	t.Run("activity control with automatic detection", func(t *testing.T) {
		ws := rawClient(t, agenttest.NewGeminiFake(t, agenttest.Script{}))
		ws.WriteJSON(map[string]any{"setup": setup})
		ws.SetReadDeadline(time.Now().Add(wait))
		if op, data, err := ws.ReadMessage(); err != nil || op != websocket.BinaryMessage || !bytes.Contains(data, []byte("setupComplete")) {
			t.Fatalf("setupComplete: op %d %s %v", op, data, err)
		}
		ws.WriteJSON(map[string]any{"realtimeInput": map[string]any{"activityStart": map[string]any{}}})
		if ce := readClose(t, ws); ce.Code != 1007 {
			t.Fatalf("close %v", ce)
		}
	})
	t.Run("snake_case accepted", func(t *testing.T) {
		ws := rawClient(t, agenttest.NewGeminiFake(t, agenttest.Script{}))
		ws.WriteJSON(map[string]any{"setup": map[string]any{"model": "models/" + model, "generation_config": map[string]any{"response_modalities": []any{"AUDIO"}}}})
		ws.SetReadDeadline(time.Now().Add(wait))
		if _, data, err := ws.ReadMessage(); err != nil || !bytes.Contains(data, []byte("setupComplete")) {
			t.Fatalf("setupComplete: %s %v", data, err)
		}
	})
}

func TestProviderFailuresClassified(t *testing.T) {
	tests := []struct {
		name  string
		reply agenttest.Reply
		class agent.ErrorClass
	}{
		{"internal error", agenttest.Reply{CloseCode: 1011, CloseReason: "Internal error encountered."}, agent.ClassProvider},
		{"quota", agenttest.Reply{CloseCode: 1011, CloseReason: "You exceeded your current quota, please check your plan and billing details."}, agent.ClassRateLimit},
		{"invalid argument", agenttest.Reply{CloseCode: 1007, CloseReason: "Request contains an invalid argument."}, agent.ClassProtocol},
		{"policy", agenttest.Reply{CloseCode: 1008, CloseReason: "Operation is not implemented, or supported, or enabled."}, agent.ClassProtocol},
		// A refused key can also come as a close frame (the Live API's only error channel once
		// upgraded): its words, not its 1007, make it an auth error.
		{"key refused in a close frame", agenttest.Reply{CloseCode: 1007, CloseReason: "API key not valid. Please pass a valid API key."}, agent.ClassAuth},
		{"key expired", agenttest.Reply{CloseCode: 1008, CloseReason: "API key expired. Please renew the API key."}, agent.ClassAuth},
		{"dropped socket", agenttest.Reply{Text: "cut", AudioMS: 1000, Drop: true, DropAfter: 2}, agent.ClassLostConnection},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := connect(t, agenttest.Script{Replies: []agenttest.Reply{tt.reply}}, agent.Config{})
			turn(t, h.a, 200)
			e := h.rec.WaitType(t, wait, agent.EventError)
			if e.Err.Class != tt.class || !e.Err.Fatal {
				t.Fatalf("error %+v, want fatal %s", e.Err, tt.class)
			}
			h.rec.WaitClosed(t, wait)
			if err := h.a.SendAudio(make([]int16, 640)); !errors.Is(err, agent.ErrClosed) {
				t.Errorf("send after loss: %v", err)
			}
		})
	}
}

// Without session resumption a goAway is reported and the call ends with the connection.
func TestGoAwayWithoutResumptionIsLostConnection(t *testing.T) {
	h := connectWith(t, agenttest.Script{Replies: []agenttest.Reply{{GoAway: 200 * time.Millisecond}}}, agent.Config{}, gemini.Options{NoResumption: true})
	if _, asked := h.f.Setups()[0]["sessionResumption"]; asked {
		t.Fatal("setup asked for resumption")
	}
	turn(t, h.a, 200)
	e := h.rec.WaitType(t, wait, agent.EventError)
	if e.Err.Class != agent.ClassLostConnection || e.Err.Code != "go_away" || e.Err.Fatal {
		t.Fatalf("goAway error %+v", e.Err)
	}
	e = h.rec.WaitType(t, wait, agent.EventError)
	if e.Err.Class != agent.ClassLostConnection || !e.Err.Fatal {
		t.Fatalf("close error %+v", e.Err)
	}
	h.rec.WaitClosed(t, wait)
}

func TestConnectFailures(t *testing.T) {
	t.Run("wrong key", func(t *testing.T) {
		f := agenttest.NewGeminiFake(t, agenttest.Script{Key: "AIza-right"})
		a := gemini.New(gemini.Options{URL: f.URL(), Model: model, Key: "AIza-wrong-secret"})
		defer a.Close()
		err := a.Connect(context.Background(), agent.Config{})
		if agent.ClassOf(err) != agent.ClassAuth || !strings.Contains(err.Error(), "http_400") || strings.Contains(err.Error(), "AIza-wrong-secret") {
			t.Fatalf("err %v, want an auth error for the HTTP 400 refusal", err)
		}
	})
	// A schema Gemini cannot express is refused before anything is sent, naming tool and keyword.
	t.Run("untranslatable schema refused", func(t *testing.T) {
		f := agenttest.NewGeminiFake(t, agenttest.Script{})
		a := gemini.New(gemini.Options{URL: f.URL(), Model: model})
		defer a.Close()
		err := a.Connect(context.Background(), agent.Config{Tools: []agent.Tool{lookupTool,
			{Name: "pick_slot", Parameters: json.RawMessage(`{"type":"object","properties":{"slot":{"not":{"type":"string"}}}}`)}}})
		want := `protocol error (unsupported_schema): tool "pick_slot": parameters.properties.slot.not: keyword "not" cannot be expressed in Gemini's function schema: negation has no equivalent`
		if agent.ClassOf(err) != agent.ClassProtocol || err.Error() != want {
			t.Fatalf("err %v\nwant %s", err, want)
		}
		if n := len(f.Handshakes()); n != 0 {
			t.Errorf("%d connections made for a refused setup", n)
		}
	})
	// What the translation does not catch, the service does: a 1007 close naming the field.
	t.Run("setup rejected by the service", func(t *testing.T) {
		f := agenttest.NewGeminiFake(t, agenttest.Script{})
		a := gemini.New(gemini.Options{URL: f.URL(), Model: model, ExtraVoices: []string{"Nova"}})
		defer a.Close()
		err := a.Connect(context.Background(), agent.Config{Voice: "Nova"})
		if agent.ClassOf(err) != agent.ClassProtocol || !strings.Contains(err.Error(), "1007") || !strings.Contains(err.Error(), `"Nova"`) {
			t.Fatalf("err %v", err)
		}
	})
}

// The Live API sends JSON in binary frames and Python-based servers may use snake_case; a text
// frame must work as well.
func TestBothOpcodesAndSnakeCase(t *testing.T) {
	audio := agent.EncodePCM(agenttest.Tone(2400, 24000, 0))
	msgs := []struct {
		op   int
		body string
	}{
		{websocket.TextMessage, `{"setup_complete":{}}`},
		{websocket.BinaryMessage, `{"server_content":{"model_turn":{"parts":[{"inline_data":{"mime_type":"audio/pcm;rate=24000","data":"` + audio + `"}}]}}}`},
		{websocket.TextMessage, `{"tool_call":{"function_calls":[{"id":"fc1","name":"lookup_patient","args":{"first_name":"Ada"}}]}}`},
		{websocket.BinaryMessage, `{"server_content":{"turn_complete":true},"usage_metadata":{"prompt_token_count":7}}`},
	}
	up := websocket.Upgrader{}
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		ws.ReadMessage() // setup
		for _, m := range msgs {
			ws.WriteMessage(m.op, []byte(m.body))
		}
		<-done
	}))
	defer srv.Close()
	defer close(done)
	a := gemini.New(gemini.Options{URL: "ws" + strings.TrimPrefix(srv.URL, "http"), Model: model})
	if err := a.Connect(context.Background(), agent.Config{}); err != nil {
		t.Fatal(err)
	}
	rec := agenttest.Record(a)
	defer func() { a.Close(); <-rec.Done() }()
	if e := rec.WaitType(t, wait, agent.EventAudioDelta); len(e.Audio) != 2400 {
		t.Errorf("audio %d samples", len(e.Audio))
	}
	if e := rec.WaitType(t, wait, agent.EventToolCall); string(e.Arguments) != `{"first_name":"Ada"}` {
		t.Errorf("args rewritten: %s", e.Arguments)
	}
	if e := rec.WaitType(t, wait, agent.EventUsage); e.Usage.InputTokens != 7 {
		t.Errorf("usage %+v", e.Usage)
	}
	rec.WaitType(t, wait, agent.EventResponseDone)
}

func TestCamelKeys(t *testing.T) {
	in := `{"tool_response":{"function_responses":[{"id":"1","name":"n","response":{"snake_key":1}}]},"x":{"parameters":{"max_len":2}}}`
	out, err := gemini.CamelKeys([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"toolResponse":{"functionResponses":[{"id":"1","name":"n","response":{"snake_key":1}}]},"x":{"parameters":{"max_len":2}}}`
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	plain := []byte(`{"setupComplete":{}}`)
	if out, _ := gemini.CamelKeys(plain); &out[0] != &plain[0] {
		t.Error("message without underscores was copied")
	}
}

func TestMatchedTurnsSendOnlyTurnAudioWithPreRoll(t *testing.T) {
	h := connect(t, agenttest.Script{}, agent.Config{})
	speak(t, h.a, 0, 1000) // between turns: held back
	turn(t, h.a, 200)
	h.rec.WaitType(t, wait, agent.EventResponseDone)
	want := []string{"setup", "realtimeInput.activityStart", "realtimeInput.audio", "realtimeInput.activityEnd"}
	if got := h.f.Types(); !slices.Equal(got, want) {
		t.Fatalf("client messages %v, want %v", got, want)
	}
	// 500 ms of pre-roll rounds up to 13 chunks of 40 ms, sent after activityStart; then 5 more.
	if n := h.f.Count("realtimeInput.audio"); n != 18 {
		t.Errorf("audio chunks %d, want 18", n)
	}
	clean(t, h.f)
}

// Both tool-turn shapes end the agent's turn exactly once, after the model's answer to the tool
// results: the model continuing the same turn (one turnComplete), and the model closing the
// tool-call turn with turnComplete and answering in a new turn.
func TestToolTurnShapesEndTheTurnOnce(t *testing.T) {
	for _, split := range []bool{false, true} {
		name := map[bool]string{false: "same turn continues", true: "tool-call turn then a new turn"}[split]
		t.Run(name, func(t *testing.T) {
			h := connect(t, agenttest.Script{SplitToolTurns: split, Replies: []agenttest.Reply{
				{Text: "One moment.", AudioMS: 200, Calls: []agenttest.Call{{Name: "lookup_patient", Arguments: `{"name":"Ada"}`}}},
				{Text: "I found your record.", AudioMS: 300},
			}}, agent.Config{Tools: []agent.Tool{lookupTool}})
			turn(t, h.a, 200)
			call := h.rec.WaitType(t, wait, agent.EventToolCall)
			if split {
				h.rec.WaitType(t, wait, agent.EventResponseDone) // the tool-call turn's turnComplete
			}
			time.Sleep(100 * time.Millisecond)
			if n := len(h.rec.Of(agent.EventTurnEnd)); n != 0 {
				t.Fatalf("turn ended while a call waits for its result: %s", h.rec.Summary())
			}
			if err := h.a.SendToolResult(call.CallID, call.Name, json.RawMessage(`{"found":true}`)); err != nil {
				t.Fatal(err)
			}
			end := h.rec.WaitType(t, wait, agent.EventTurnEnd)
			if end.Status != agent.StatusCompleted {
				t.Errorf("turn end %+v", end)
			}
			time.Sleep(100 * time.Millisecond)
			evs := h.rec.Events()
			last := -1
			for i, e := range evs {
				if e.Type == agent.EventTranscriptDone && strings.HasSuffix(e.Text, "I found your record.") {
					last = i
				}
			}
			ends := 0
			for i, e := range evs {
				if e.Type == agent.EventTurnEnd {
					ends++
					if i < last {
						t.Errorf("turn ended before the answer to the tool result: %s", h.rec.Summary())
					}
				}
			}
			wantDone := map[bool]int{false: 1, true: 2}[split]
			if ends != 1 || len(h.rec.Of(agent.EventResponseDone)) != wantDone {
				t.Errorf("%d turn ends, %d responses (want 1, %d): %s", ends, len(h.rec.Of(agent.EventResponseDone)), wantDone, h.rec.Summary())
			}
			clean(t, h.f)
		})
	}
}

// On goAway the call moves to a session resumed from the latest handle and goes on there.
func TestGoAwayResumesTheSession(t *testing.T) {
	h := connect(t, agenttest.Script{Replies: []agenttest.Reply{{Text: "Hello.", AudioMS: 200}, {Text: "Still here.", AudioMS: 200}}}, agent.Config{Instructions: "hi"})
	s := h.f.Setups()[0]
	if get(s, "sessionResumption") == nil || get(s, "contextWindowCompression", "slidingWindow") == nil {
		t.Fatalf("setup asks for no resumption or compression: %v", s)
	}
	turn(t, h.a, 200)
	h.rec.WaitType(t, wait, agent.EventTurnEnd)
	h.rec.WaitFor(t, wait, "the handle after the turn", func(e agent.Event) bool { return e.RawType == "sessionResumptionUpdate" })
	h.f.GoAway(2 * time.Second)
	r := h.rec.WaitType(t, wait, agent.EventReconnect)
	if !strings.Contains(r.Text, "goAway (2s left)") || !strings.Contains(r.Text, "connection 2") {
		t.Errorf("reconnect %q", r.Text)
	}
	setups := h.f.Setups()
	resumed := h.f.Resumed()
	if len(setups) != 2 || len(resumed) != 1 || get(setups[1], "sessionResumption", "handle") != resumed[0] || resumed[0] != "resume-handle-2" {
		t.Fatalf("setups %d, resumed from %v (want the latest handle, resume-handle-2): %v", len(setups), resumed, get(setups[1], "sessionResumption"))
	}
	turn(t, h.a, 200)
	h.rec.WaitFor(t, wait, "the answer on the resumed session", func(e agent.Event) bool {
		return e.Type == agent.EventTranscriptDone && e.Text == "Still here."
	})
	for _, rc := range h.f.Received() {
		if rc.Type == "realtimeInput.activityEnd" && rc.Conn != 1 && rc.Conn != 2 {
			t.Errorf("message on connection %d", rc.Conn)
		}
	}
	if n := len(h.rec.Of(agent.EventError)); n != 0 {
		t.Errorf("errors: %s", h.rec.Summary())
	}
	if v := h.f.Violations(); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
}

// A goAway while the caller is speaking: the call moves shortly before the connection's end
// anyway, the caller's open activity is reopened on the new session, and the audio sent during
// the move arrives there.
func TestGoAwayDuringCallerTurnMovesBeforeTheEnd(t *testing.T) {
	h := connect(t, agenttest.Script{Replies: []agenttest.Reply{{Text: "Got it.", AudioMS: 200}}}, agent.Config{})
	h.rec.WaitFor(t, wait, "a resumption handle", func(e agent.Event) bool { return e.RawType == "sessionResumptionUpdate" })
	if err := h.a.StartTurn(); err != nil {
		t.Fatal(err)
	}
	h.f.GoAway(600 * time.Millisecond)
	stop := time.After(700 * time.Millisecond)
	for sending := true; sending; {
		select {
		case <-stop:
			sending = false
		default:
			if err := h.a.SendAudio(agenttest.Speech(40, gemini.InputRate)); err != nil {
				t.Fatalf("send audio: %v; events %s", err, h.rec.Summary())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	h.rec.WaitType(t, wait, agent.EventReconnect)
	if err := h.a.EndTurn(); err != nil {
		t.Fatal(err)
	}
	h.rec.WaitFor(t, wait, "the answer", func(e agent.Event) bool { return e.Type == agent.EventTranscriptDone && e.Text == "Got it." })
	var second []string
	for _, rc := range h.f.Received() {
		if rc.Conn == 2 && (len(second) == 0 || second[len(second)-1] != rc.Type) {
			second = append(second, rc.Type)
		}
	}
	want := []string{"setup", "realtimeInput.activityStart", "realtimeInput.audio", "realtimeInput.activityEnd"}
	if !slices.Equal(second, want) {
		t.Errorf("connection 2 received %v, want %v", second, want)
	}
	if v := h.f.Violations(); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
	if n := len(h.rec.Of(agent.EventError)); n != 0 {
		t.Errorf("errors: %s", h.rec.Summary())
	}
}

// A refused resumption ends the call as a lost connection that says so.
func TestRefusedResumptionIsLostConnection(t *testing.T) {
	h := connect(t, agenttest.Script{}, agent.Config{})
	h.rec.WaitFor(t, wait, "a resumption handle", func(e agent.Event) bool { return e.RawType == "sessionResumptionUpdate" })
	h.f.ForgetHandles()
	h.f.GoAway(2 * time.Second)
	e := h.rec.WaitType(t, wait, agent.EventError)
	if !e.Err.Fatal || !strings.Contains(e.Err.Message, "reconnect failed") || !strings.Contains(e.Err.Message, "session handle") {
		t.Fatalf("error %+v", e.Err)
	}
	h.rec.WaitClosed(t, wait)
}

// A long call outlives several connections: each goAway moves it to a session resumed from the
// handle of its last turn (a 15-minute call meets one about every ten minutes).
func TestCallSurvivesRepeatedGoAways(t *testing.T) {
	replies := []agenttest.Reply{{Text: "One.", AudioMS: 100}, {Text: "Two.", AudioMS: 100}, {Text: "Three.", AudioMS: 100}, {Text: "Four.", AudioMS: 100}}
	h := connect(t, agenttest.Script{Replies: replies}, agent.Config{})
	for i, r := range replies {
		turn(t, h.a, 100)
		h.rec.WaitFor(t, wait, r.Text, func(e agent.Event) bool { return e.Type == agent.EventTranscriptDone && e.Text == r.Text })
		h.rec.WaitType(t, wait, agent.EventTurnEnd)
		if i == len(replies)-1 {
			break
		}
		h.rec.WaitFor(t, wait, "the handle after the turn", func(e agent.Event) bool { return e.RawType == "sessionResumptionUpdate" })
		h.f.GoAway(time.Second)
		h.rec.WaitType(t, wait, agent.EventReconnect)
	}
	if got := h.f.Resumed(); len(got) != 3 || len(h.f.Setups()) != 4 {
		t.Errorf("resumed from %v over %d setups, want 3 moves", got, len(h.f.Setups()))
	}
	if n := len(h.rec.Of(agent.EventError)); n != 0 {
		t.Errorf("errors: %s", h.rec.Summary())
	}
	clean(t, h.f)
}
