package elevenlabs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/elevenlabs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	wait = 5 * time.Second
	key  = "sk_el_test_secret"
)

var lookupTool = agent.Tool{Name: "lookup_patient", Description: "Find a patient record by name.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}

// provisioned is the platform agent for lookupTool, set up as docs/systems.md says.
func provisioned(id string) agenttest.ElevenLabsAgent {
	return agenttest.ElevenLabsAgent{ID: id, Private: true, AllowPrompt: true, AllowFirstMessage: true,
		FirstMessage: "Hello! How can I help you today?",
		Tools: []elevenlabs.ToolConfig{{Type: "client", Name: lookupTool.Name, Description: lookupTool.Description,
			Parameters: lookupTool.Parameters, ExpectsResponse: true, ResponseTimeoutSecs: 20}}}
}

type harness struct {
	a   *elevenlabs.Adapter
	f   *agenttest.ElevenLabsFake
	rec *agenttest.Recorder
}

func connectWith(t *testing.T, opts agenttest.ElevenLabsOptions, script agenttest.Script, aopts elevenlabs.Options, cfg agent.Config) harness {
	t.Helper()
	f := agenttest.NewElevenLabsFake(t, opts, script)
	aopts.URL = f.URL()
	if aopts.AgentID == "" {
		aopts.AgentID = opts.Agents[0].ID
	}
	if aopts.Timeouts.Handshake == 0 {
		aopts.Timeouts.Handshake = 3 * time.Second
	}
	if aopts.ResponseIdle == 0 {
		aopts.ResponseIdle = 300 * time.Millisecond
	}
	a := elevenlabs.New(aopts)
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

func connect(t *testing.T, script agenttest.Script, cfg agent.Config) harness {
	t.Helper()
	return connectWith(t, agenttest.ElevenLabsOptions{Agents: []agenttest.ElevenLabsAgent{provisioned("agent_clinic")}, Key: key},
		script, elevenlabs.Options{Key: key}, cfg)
}

// speak sends ms of caller speech then silenceMS of silence in 40 ms frames at rate.
func speak(t *testing.T, a agent.Adapter, rate, ms, silenceMS int) {
	t.Helper()
	if err := sendSpeech(a, rate, ms, silenceMS); err != nil {
		t.Fatalf("send audio: %v", err)
	}
}

// speakUntilClosed is speak for a turn the provider answers by closing the
// socket: the close can land while the trailing silence is still being sent,
// and audio refused with ErrClosed then is the adapter being right.
func speakUntilClosed(t *testing.T, a agent.Adapter, rate, ms, silenceMS int) {
	t.Helper()
	if err := sendSpeech(a, rate, ms, silenceMS); err != nil && !errors.Is(err, agent.ErrClosed) {
		t.Fatalf("send audio: %v", err)
	}
}

func sendSpeech(a agent.Adapter, rate, ms, silenceMS int) error {
	for _, pcm := range [][]int16{agenttest.Speech(ms, rate), agenttest.Silence(silenceMS, rate)} {
		for len(pcm) > 0 {
			n := min(len(pcm), rate/25)
			if err := a.SendAudio(pcm[:n]); err != nil {
				return err
			}
			pcm = pcm[n:]
		}
	}
	return nil
}

func clean(t *testing.T, f *agenttest.ElevenLabsFake) {
	t.Helper()
	if v := f.Violations(); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
	if c := f.Closes(); len(c) > 0 {
		t.Errorf("fake closed the connection: %v", c)
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

func TestFullCallAudioBothWays(t *testing.T) {
	reply := "Good morning, this is the clinic."
	h := connect(t, agenttest.Script{CallerTranscripts: []string{"Hi, I need an appointment."},
		Replies: []agenttest.Reply{{Text: reply, AudioMS: 600}}},
		agent.Config{Instructions: "You are a clinic receptionist.", Tools: []agent.Tool{lookupTool}})
	if f := h.a.Format(); f != (agent.Format{InputRate: 16000, OutputRate: 16000}) {
		t.Fatalf("format %+v", f)
	}
	if id := h.a.ConversationID(); !strings.HasPrefix(id, "conv_") {
		t.Errorf("conversation id %q", id)
	}
	speak(t, h.a, 16000, 400, 700)
	if d := h.rec.WaitType(t, wait, agent.EventResponseDone); d.Status != agent.StatusCompleted || !strings.HasPrefix(d.ResponseID, "ev_") {
		t.Fatalf("done %+v", d)
	}
	if got := h.rec.AudioSamples(); got != 600*16 {
		t.Errorf("agent audio samples %d, want %d (the first message was overridden away)", got, 600*16)
	}
	if td := h.rec.Of(agent.EventTranscriptDone); len(td) != 1 || td[0].Text != reply {
		t.Errorf("transcript done %+v", td)
	}
	if ct := h.rec.Of(agent.EventCallerTranscript); len(ct) != 1 || ct[0].Text != "Hi, I need an appointment." {
		t.Errorf("caller transcript %+v", ct)
	}
	if us := h.rec.Of(agent.EventUsage); len(us) != 1 || us[0].Usage.OutputAudioSeconds != 0.6 || us[0].Usage.InputAudioSeconds < 1.0 {
		t.Errorf("usage %+v", us)
	}
	in := h.f.Initiations()
	if len(in) != 1 {
		t.Fatalf("initiations %v", in)
	}
	if p := get(in[0], "conversation_config_override", "agent", "prompt", "prompt"); p != "You are a clinic receptionist." {
		t.Errorf("prompt override %v", p)
	}
	if fm, ok := get(in[0], "conversation_config_override", "agent").(map[string]any)["first_message"]; !ok || fm != "" {
		t.Errorf("first message override %v (present %v), want \"\" so the agent waits for the caller", fm, ok)
	}
	// The REST calls went with the key, the socket without it (the signed URL carries the grant).
	for _, hs := range h.f.Handshakes() {
		if hs.Path == "/v1/convai/conversation" && hs.Auth {
			t.Errorf("key sent on the conversation socket")
		}
		if hs.Path != "/v1/convai/conversation" && !hs.Auth {
			t.Errorf("REST %s without the key", hs.Path)
		}
	}
	// Pings were answered with their event ids.
	time.Sleep(700 * time.Millisecond)
	sent, answered := h.f.Pings()
	if sent < 2 || answered < sent-1 {
		t.Errorf("pings sent %d, answered %d", sent, answered)
	}
	if n := h.f.Count("pong"); n != answered {
		t.Errorf("pongs received %d, answered %d", n, answered)
	}
	clean(t, h.f)
	// Every server event is kept once as a raw event, audio elided.
	var inbound []string
	for _, e := range h.rec.Events() {
		if e.RawType != "" && !e.Outbound {
			inbound = append(inbound, e.RawType)
			if e.RawType == "audio" && (bytes.Contains(e.Raw, []byte(`"audio_base_64":"`)) || !bytes.Contains(e.Raw, []byte(`"audio_base_64":`))) {
				t.Errorf("audio not elided: %s", e.Raw)
			}
		}
	}
	sentTypes := h.f.Sent()
	if len(inbound) > len(sentTypes) || strings.Join(inbound, " ") != strings.Join(sentTypes[:len(inbound)], " ") {
		t.Errorf("raw inbound %v\nwant a prefix of %v", inbound, sentTypes)
	}
}

func TestOutputFormatNegotiated(t *testing.T) {
	ag := provisioned("agent_24k")
	ag.OutputFormat = "pcm_24000"
	h := connectWith(t, agenttest.ElevenLabsOptions{Agents: []agenttest.ElevenLabsAgent{ag}, Key: key},
		agenttest.Script{Replies: []agenttest.Reply{{Text: "Hi.", AudioMS: 400}}}, elevenlabs.Options{Key: key}, agent.Config{Tools: []agent.Tool{lookupTool}})
	if f := h.a.Format(); f.OutputRate != 24000 || f.InputRate != 16000 {
		t.Fatalf("format %+v", f)
	}
	speak(t, h.a, 16000, 300, 700)
	h.rec.WaitType(t, wait, agent.EventResponseDone)
	if got := h.rec.AudioSamples(); got != 400*24 {
		t.Errorf("samples %d", got)
	}
}

func TestToolCallAndResult(t *testing.T) {
	h := connect(t, agenttest.Script{Replies: []agenttest.Reply{
		{Text: "Let me look that up.", AudioMS: 200, Calls: []agenttest.Call{{Name: "lookup_patient", Arguments: `{"name":"Ada Lovelace"}`}}},
		{Text: "I found your record.", AudioMS: 300},
	}}, agent.Config{Tools: []agent.Tool{lookupTool}})
	speak(t, h.a, 16000, 300, 700)
	call := h.rec.WaitType(t, wait, agent.EventToolCall)
	var args map[string]string
	if err := json.Unmarshal(call.Arguments, &args); err != nil || args["name"] != "Ada Lovelace" || call.Name != "lookup_patient" {
		t.Fatalf("tool call %+v (%v)", call, err)
	}
	// The spoken preamble ended as its own response, and the call as one that ends in the call.
	if d := h.rec.WaitType(t, wait, agent.EventResponseDone); d.ResponseID != "tool_"+call.CallID {
		t.Fatalf("response done after the call: %+v", d)
	}
	if err := h.a.SendToolResult(call.CallID, call.Name, json.RawMessage(`{"ok":true,"record":{"id":"P-1"}}`)); err != nil {
		t.Fatal(err)
	}
	h.rec.WaitFor(t, wait, "follow-up", func(e agent.Event) bool {
		return e.Type == agent.EventTranscriptDone && e.Text == "I found your record."
	})
	// One end of the agent's turn, after the follow-up: none at the preamble or the call.
	end := h.rec.WaitType(t, wait, agent.EventTurnEnd)
	if ends := h.rec.Of(agent.EventTurnEnd); len(ends) != 1 || end.Status != agent.StatusCompleted || end.ResponseID == "tool_"+call.CallID {
		t.Fatalf("turn ends %+v", ends)
	}
	var followUp bool
	for _, e := range h.rec.Events() {
		followUp = followUp || e.Type == agent.EventTranscriptDone && e.Text == "I found your record."
		if e.Type == agent.EventTurnEnd && !followUp {
			t.Fatal("the turn ended before the agent's continuation after the tool result")
		}
	}
	rs := h.f.Find("client_tool_result")
	if len(rs) != 1 || rs[0]["tool_call_id"] != call.CallID || rs[0]["is_error"] != false || rs[0]["result"] != `{"ok":true,"record":{"id":"P-1"}}` {
		t.Fatalf("tool results %v", rs)
	}
	if err := h.a.SendToolResult(call.CallID, call.Name, json.RawMessage(`{}`)); !errors.Is(err, agent.ErrUnknownCall) {
		t.Errorf("second result: %v", err)
	}
	clean(t, h.f)
}

func TestFailedToolIsAnErrorResult(t *testing.T) {
	h := connect(t, agenttest.Script{Replies: []agenttest.Reply{
		{Calls: []agenttest.Call{{Name: "lookup_patient", Arguments: `{"name":"Nobody"}`}}},
		{Text: "I could not find you.", AudioMS: 200},
	}}, agent.Config{Tools: []agent.Tool{lookupTool}})
	speak(t, h.a, 16000, 300, 700)
	call := h.rec.WaitType(t, wait, agent.EventToolCall)
	h.a.SendToolResult(call.CallID, call.Name, json.RawMessage(`{"error":"not_found","message":"no matching record","ok":false}`))
	h.rec.WaitFor(t, wait, "follow-up", func(e agent.Event) bool { return e.Type == agent.EventTranscriptDone })
	if rs := h.f.Find("client_tool_result"); len(rs) != 1 || rs[0]["is_error"] != true {
		t.Fatalf("tool results %v", rs)
	}
}

func TestParallelToolCallsEachAnswered(t *testing.T) {
	h := connect(t, agenttest.Script{Replies: []agenttest.Reply{
		{Calls: []agenttest.Call{{Name: "lookup_patient", Arguments: `{"name":"Ada"}`}, {Name: "lookup_patient", Arguments: `{"name":"Grace"}`}}},
		{Text: "Both found.", AudioMS: 200},
	}}, agent.Config{Tools: []agent.Tool{lookupTool}})
	speak(t, h.a, 16000, 300, 700)
	c1 := h.rec.WaitType(t, wait, agent.EventToolCall)
	c2 := h.rec.WaitType(t, wait, agent.EventToolCall)
	if c1.CallID == c2.CallID {
		t.Fatal("two calls with one id")
	}
	h.a.SendToolResult(c1.CallID, c1.Name, json.RawMessage(`{"ok":true}`))
	time.Sleep(150 * time.Millisecond)
	if n := len(h.rec.Of(agent.EventTranscriptDone)); n != 0 {
		t.Fatal("the agent went on before every result came")
	}
	if n := len(h.rec.Of(agent.EventTurnEnd)); n != 0 {
		t.Fatal("the turn ended while a tool call waited for its result")
	}
	h.a.SendToolResult(c2.CallID, c2.Name, json.RawMessage(`{"ok":true}`))
	h.rec.WaitFor(t, wait, "follow-up", func(e agent.Event) bool { return e.Type == agent.EventTranscriptDone && e.Text == "Both found." })
	clean(t, h.f)
}

func TestBargeInDropsTheInterruptedResponse(t *testing.T) {
	h := connect(t, agenttest.Script{Replies: []agenttest.Reply{
		{Text: "A very long policy explanation.", AudioMS: 3000, Pace: 15 * time.Millisecond},
		{Text: "Yes?", AudioMS: 200},
	}}, agent.Config{Tools: []agent.Tool{lookupTool}})
	speak(t, h.a, 16000, 300, 700)
	first := h.rec.WaitType(t, wait, agent.EventAudioDelta)
	h.rec.WaitType(t, wait, agent.EventAudioDelta)
	speak(t, h.a, 16000, 300, 0) // the caller talks over the agent
	intr := h.rec.WaitType(t, wait, agent.EventInterrupted)
	if intr.ResponseID != first.ResponseID {
		t.Errorf("interrupted %q, want %q", intr.ResponseID, first.ResponseID)
	}
	if d := h.rec.WaitType(t, wait, agent.EventResponseDone); d.Status != agent.StatusCancelled || d.ResponseID != first.ResponseID {
		t.Fatalf("done %+v", d)
	}
	if e := h.rec.WaitType(t, wait, agent.EventTurnEnd); e.Status != agent.StatusCancelled || e.ResponseID != first.ResponseID {
		t.Fatalf("turn end %+v, want the interrupted turn cancelled", e)
	}
	speak(t, h.a, 16000, 0, 700)
	h.rec.WaitFor(t, wait, "reply after barge-in", func(e agent.Event) bool { return e.Type == agent.EventTranscriptDone && e.Text == "Yes?" })
	// The chunk the platform still sent after the interruption never reached the session.
	var after bool
	for _, e := range h.rec.Events() {
		if e.Type == agent.EventInterrupted {
			after = true
		}
		if after && e.Type == agent.EventAudioDelta && e.ResponseID == first.ResponseID {
			t.Fatal("audio of the interrupted response delivered after the interruption")
		}
	}
	if !strings.Contains(strings.Join(h.f.Sent(), " "), "interruption audio") {
		t.Errorf("the fake sent no stale audio after the interruption: %v", h.f.Sent())
	}
	if ms := h.rec.AudioSamples() / 16; ms >= 3000 {
		t.Errorf("%d ms of audio delivered from an interrupted 3000 ms response", ms)
	}
	clean(t, h.f)
}

func TestClientInterruptDiscardsTheRest(t *testing.T) {
	h := connect(t, agenttest.Script{Replies: []agenttest.Reply{{Text: "A long explanation.", AudioMS: 1500, Pace: 10 * time.Millisecond}}},
		agent.Config{Tools: []agent.Tool{lookupTool}})
	speak(t, h.a, 16000, 300, 700)
	h.rec.WaitType(t, wait, agent.EventAudioDelta)
	if err := h.a.Interrupt(100); err != nil {
		t.Fatal(err)
	}
	n := h.rec.AudioSamples()
	time.Sleep(400 * time.Millisecond)
	if got := h.rec.AudioSamples(); got > n+1600 { // at most one chunk already decoded
		t.Errorf("audio kept coming after Interrupt: %d → %d samples", n, got)
	}
	for _, typ := range []func() error{h.a.StartTurn, h.a.EndTurn} {
		if err := typ(); err != nil {
			t.Errorf("turn call: %v", err)
		}
	}
}

func TestProviderFailuresClassified(t *testing.T) {
	tests := []struct {
		name  string
		reply agenttest.Reply
		class agent.ErrorClass
	}{
		{"internal error", agenttest.Reply{CloseCode: 1011, CloseReason: "Internal server error"}, agent.ClassProvider},
		{"quota", agenttest.Reply{CloseCode: 1002, CloseReason: "This request exceeds your quota limit."}, agent.ClassRateLimit},
		{"policy", agenttest.Reply{CloseCode: 1008, CloseReason: "Invalid message received"}, agent.ClassProtocol},
		{"dropped socket", agenttest.Reply{Text: "cut", AudioMS: 1000, Drop: true, DropAfter: 2}, agent.ClassLostConnection},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := connect(t, agenttest.Script{Replies: []agenttest.Reply{tt.reply}}, agent.Config{Tools: []agent.Tool{lookupTool}})
			speakUntilClosed(t, h.a, 16000, 300, 700)
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

func TestAgentHangingUpIsNoError(t *testing.T) {
	h := connect(t, agenttest.Script{Replies: []agenttest.Reply{{CloseCode: 1000, CloseReason: "Conversation ended by the agent"}}},
		agent.Config{Tools: []agent.Tool{lookupTool}})
	speakUntilClosed(t, h.a, 16000, 300, 700)
	h.rec.WaitClosed(t, wait)
	if errs := h.rec.Of(agent.EventError); len(errs) > 0 {
		t.Fatalf("the agent's hang-up reported as %+v", errs[0].Err)
	}
}

func TestErrorEventIsClassifiedAndNotFatal(t *testing.T) {
	h := connect(t, agenttest.Script{Replies: []agenttest.Reply{{Error: &agenttest.ProviderError{Code: "quota_exceeded", Message: "You have exceeded your quota."}},
		{Text: "Still here.", AudioMS: 200}}}, agent.Config{Tools: []agent.Tool{lookupTool}})
	speak(t, h.a, 16000, 300, 700)
	e := h.rec.WaitType(t, wait, agent.EventError)
	if e.Err.Class != agent.ClassRateLimit || e.Err.Fatal || e.Err.Code != "quota_exceeded" {
		t.Fatalf("error %+v", e.Err)
	}
	speak(t, h.a, 16000, 300, 700)
	h.rec.WaitFor(t, wait, "reply", func(e agent.Event) bool { return e.Type == agent.EventTranscriptDone })
}

func TestConnectFailuresClassified(t *testing.T) {
	dial := func(t *testing.T, ag agenttest.ElevenLabsAgent, aopts elevenlabs.Options, cfg agent.Config) error {
		f := agenttest.NewElevenLabsFake(t, agenttest.ElevenLabsOptions{Agents: []agenttest.ElevenLabsAgent{ag}, Key: key}, agenttest.Script{})
		aopts.URL = f.URL()
		if aopts.AgentID == "" {
			aopts.AgentID = ag.ID
		}
		a := elevenlabs.New(aopts)
		defer a.Close()
		return a.Connect(context.Background(), cfg)
	}
	tools := agent.Config{Tools: []agent.Tool{lookupTool}}
	t.Run("wrong key", func(t *testing.T) {
		err := dial(t, provisioned("a1"), elevenlabs.Options{Key: "sk_wrong_secret"}, tools)
		if agent.ClassOf(err) != agent.ClassAuth || strings.Contains(err.Error(), "sk_wrong_secret") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("unknown agent", func(t *testing.T) {
		err := dial(t, provisioned("a1"), elevenlabs.Options{Key: key, AgentID: "agent_missing"}, tools)
		if agent.ClassOf(err) != agent.ClassProtocol || !strings.Contains(err.Error(), "404") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("prompt override not allowed", func(t *testing.T) {
		ag := provisioned("a1")
		ag.AllowPrompt = false
		err := dial(t, ag, elevenlabs.Options{Key: key}, tools)
		if agent.ClassOf(err) != agent.ClassProtocol || !strings.Contains(err.Error(), "agent.prompt.prompt") {
			t.Fatalf("check: %v", err)
		}
		// Without the check the platform closes the socket with 1008.
		err = dial(t, ag, elevenlabs.Options{Key: key, SkipAgentCheck: true}, tools)
		if agent.ClassOf(err) != agent.ClassProtocol || !strings.Contains(err.Error(), "Override for field 'prompt' is not allowed") {
			t.Fatalf("socket: %v", err)
		}
	})
	t.Run("tools differ", func(t *testing.T) {
		ag := provisioned("a1")
		ag.Tools[0].Parameters = json.RawMessage(`{"type":"object","properties":{"full_name":{"type":"string"}}}`)
		ag.Tools = append(ag.Tools, elevenlabs.ToolConfig{Type: "client", Name: "delete_everything", ExpectsResponse: true})
		err := dial(t, ag, elevenlabs.Options{Key: key}, tools)
		if agent.ClassOf(err) != agent.ClassProtocol || !strings.Contains(err.Error(), "lookup_patient has other parameters") ||
			!strings.Contains(err.Error(), "delete_everything is not a tool of this task") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("tools by id are resolved", func(t *testing.T) {
		ag := provisioned("a1")
		ag.ToolsByID = true
		if err := dial(t, ag, elevenlabs.Options{Key: key}, tools); err != nil {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("telephone format", func(t *testing.T) {
		ag := provisioned("a1")
		ag.InputFormat = "ulaw_8000"
		err := dial(t, ag, elevenlabs.Options{Key: key}, tools)
		if agent.ClassOf(err) != agent.ClassProtocol || !strings.Contains(err.Error(), "ulaw_8000") {
			t.Fatalf("check: %v", err)
		}
		err = dial(t, ag, elevenlabs.Options{Key: key, SkipAgentCheck: true}, tools)
		if agent.ClassOf(err) != agent.ClassProtocol || !strings.Contains(err.Error(), "negotiated") {
			t.Fatalf("metadata: %v", err)
		}
	})
	t.Run("private agent without a key", func(t *testing.T) {
		err := dial(t, provisioned("a1"), elevenlabs.Options{}, tools)
		if agent.ClassOf(err) != agent.ClassAuth {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("public agent by id", func(t *testing.T) {
		ag := provisioned("a1")
		ag.Private = false
		if err := dial(t, ag, elevenlabs.Options{}, tools); err != nil {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		a := elevenlabs.New(elevenlabs.Options{URL: "ws://127.0.0.1:1/v1/convai/conversation", AgentID: "a", Key: key})
		defer a.Close()
		if err := a.Connect(context.Background(), tools); agent.ClassOf(err) != agent.ClassUnreachable {
			t.Fatalf("err %v", err)
		}
	})
}

// rawConversation talks to the fake directly, to prove it behaves as the platform does.
func rawConversation(t *testing.T, f *agenttest.ElevenLabsFake, agentID string) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(f.URL()+"?agent_id="+agentID, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	ws.WriteJSON(map[string]any{"type": "conversation_initiation_client_data",
		"conversation_config_override": map[string]any{"agent": map[string]any{"first_message": ""}}})
	return ws
}

func readUntil(t *testing.T, ws *websocket.Conn, typ string) map[string]any {
	t.Helper()
	ws.SetReadDeadline(time.Now().Add(wait))
	for {
		var m map[string]any
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatalf("waiting for %s: %v", typ, err)
		}
		if m["type"] == typ {
			return m
		}
	}
}

func TestFakeClosesWhenPingsGoUnanswered(t *testing.T) {
	ag := provisioned("pub")
	ag.Private = false
	f := agenttest.NewElevenLabsFake(t, agenttest.ElevenLabsOptions{Agents: []agenttest.ElevenLabsAgent{ag},
		PingInterval: 50 * time.Millisecond, PongTimeout: 200 * time.Millisecond}, agenttest.Script{})
	ws := rawConversation(t, f, "pub")
	readUntil(t, ws, "conversation_initiation_metadata")
	ws.SetReadDeadline(time.Now().Add(wait))
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != 1008 || !strings.Contains(ce.Text, "Ping timeout") {
				t.Fatalf("closed with %v", err)
			}
			return
		}
	}
}

func TestAdapterKeepsTheConversationAliveByAnsweringPings(t *testing.T) {
	h := connectWith(t, agenttest.ElevenLabsOptions{Agents: []agenttest.ElevenLabsAgent{provisioned("a1")}, Key: key,
		PingInterval: 50 * time.Millisecond, PongTimeout: 200 * time.Millisecond}, agenttest.Script{}, elevenlabs.Options{Key: key},
		agent.Config{Tools: []agent.Tool{lookupTool}})
	time.Sleep(800 * time.Millisecond) // four pong timeouts
	sent, answered := h.f.Pings()
	if sent < 8 || answered < sent-2 {
		t.Errorf("pings sent %d, answered %d", sent, answered)
	}
	clean(t, h.f)
}

func TestFakeIgnoresToolResultsWithoutTheCallID(t *testing.T) {
	ag := provisioned("pub")
	ag.Private = false
	f := agenttest.NewElevenLabsFake(t, agenttest.ElevenLabsOptions{Agents: []agenttest.ElevenLabsAgent{ag}, ToolTimeout: 300 * time.Millisecond},
		agenttest.Script{Replies: []agenttest.Reply{{Calls: []agenttest.Call{{Name: "lookup_patient", Arguments: `{"name":"Ada"}`}}}, {Text: "Hm.", AudioMS: 100}}})
	ws := rawConversation(t, f, "pub")
	readUntil(t, ws, "conversation_initiation_metadata")
	for _, pcm := range [][]int16{agenttest.Speech(300, 16000), agenttest.Silence(700, 16000)} {
		for len(pcm) > 0 {
			n := min(len(pcm), 640)
			ws.WriteJSON(map[string]any{"user_audio_chunk": agent.EncodePCM(pcm[:n])})
			pcm = pcm[n:]
		}
	}
	call := readUntil(t, ws, "client_tool_call")
	id := get(call, "client_tool_call", "tool_call_id")
	ws.WriteJSON(map[string]any{"type": "client_tool_result", "tool_call_id": "not-" + id.(string), "result": "{}", "is_error": false})
	readUntil(t, ws, "agent_response") // after the tool timeout the agent goes on
	v := strings.Join(f.Violations(), "; ")
	if !strings.Contains(v, "unknown tool_call_id") || !strings.Contains(v, "no client_tool_result for "+id.(string)) {
		t.Fatalf("violations %q", v)
	}
}

func TestOverflowEndsStreamWithError(t *testing.T) {
	f := agenttest.NewElevenLabsFake(t, agenttest.ElevenLabsOptions{Agents: []agenttest.ElevenLabsAgent{provisioned("a1")}, Key: key},
		agenttest.Script{Replies: []agenttest.Reply{{Text: "flood", AudioMS: 4000, ChunkMS: 20}}})
	a := elevenlabs.New(elevenlabs.Options{URL: f.URL(), AgentID: "a1", Key: key, EventLimit: 16})
	defer a.Close()
	if err := a.Connect(context.Background(), agent.Config{Tools: []agent.Tool{lookupTool}}); err != nil {
		t.Fatal(err)
	}
	speakUntilClosed(t, a, 16000, 300, 700) // nobody drains Events, so the overflow may close it mid-send
	deadline := time.After(wait)
	for {
		select {
		case <-deadline:
			t.Fatal("no overflow")
		case <-time.After(20 * time.Millisecond):
		}
		if err := a.SendAudio(make([]int16, 640)); errors.Is(err, agent.ErrClosed) {
			break
		}
	}
	var last agent.Event
	for e := range a.Events() {
		last = e
	}
	if last.Type != agent.EventError || last.Err.Class != agent.ClassOverflow || !last.Err.Fatal {
		t.Fatalf("last event %+v", last)
	}
}

func TestCloseWithoutDraining(t *testing.T) {
	f := agenttest.NewElevenLabsFake(t, agenttest.ElevenLabsOptions{Agents: []agenttest.ElevenLabsAgent{provisioned("a1")}, Key: key},
		agenttest.Script{Replies: []agenttest.Reply{{Text: "x", AudioMS: 2000, Pace: 5 * time.Millisecond}}})
	a := elevenlabs.New(elevenlabs.Options{URL: f.URL(), AgentID: "a1", Key: key})
	if err := a.Connect(context.Background(), agent.Config{Tools: []agent.Tool{lookupTool}}); err != nil {
		t.Fatal(err)
	}
	speak(t, a, 16000, 300, 700)
	time.Sleep(100 * time.Millisecond)
	a.Close() // goleak in TestMain checks nothing is left behind
	if _, ok := <-a.Events(); ok {
		for range a.Events() {
		}
	}
}

// TestProvisionedAgentPassesTheCheck: an agent created from Provision's body is what the
// adapter's check accepts, and a call on it runs.
func TestProvisionedAgentPassesTheCheck(t *testing.T) {
	p := elevenlabs.Provision("audit clinic", []agent.Tool{lookupTool}, "gpt-4.1-mini", "")
	b, _ := json.Marshal(p)
	var doc struct {
		ConversationConfig struct {
			Agent struct {
				FirstMessage string `json:"first_message"`
				Prompt       struct {
					Tools []elevenlabs.ToolConfig `json:"tools"`
				} `json:"prompt"`
			} `json:"agent"`
			ASR struct {
				Format string `json:"user_input_audio_format"`
			} `json:"asr"`
			TTS struct {
				Format string `json:"agent_output_audio_format"`
			} `json:"tts"`
		} `json:"conversation_config"`
		PlatformSettings struct {
			Auth struct {
				Enable bool `json:"enable_auth"`
			} `json:"auth"`
		} `json:"platform_settings"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	cc := doc.ConversationConfig
	ag := agenttest.ElevenLabsAgent{ID: "agent_prov", Private: doc.PlatformSettings.Auth.Enable, InputFormat: cc.ASR.Format, OutputFormat: cc.TTS.Format,
		Tools: cc.Agent.Prompt.Tools, FirstMessage: cc.Agent.FirstMessage, AllowPrompt: true, AllowFirstMessage: true, AllowLanguage: true, AllowVoice: true}
	h := connectWith(t, agenttest.ElevenLabsOptions{Agents: []agenttest.ElevenLabsAgent{ag}, Key: key},
		agenttest.Script{Replies: []agenttest.Reply{{Calls: []agenttest.Call{{Name: "lookup_patient", Arguments: `{"name":"Ada"}`}}}, {Text: "Found.", AudioMS: 200}}},
		elevenlabs.Options{Key: key}, agent.Config{Instructions: "Be brief.", Tools: []agent.Tool{lookupTool}})
	speak(t, h.a, 16000, 300, 700)
	call := h.rec.WaitType(t, wait, agent.EventToolCall)
	h.a.SendToolResult(call.CallID, call.Name, json.RawMessage(`{"ok":true}`))
	h.rec.WaitFor(t, wait, "follow-up", func(e agent.Event) bool { return e.Type == agent.EventTranscriptDone && e.Text == "Found." })
	clean(t, h.f)
}
