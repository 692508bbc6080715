package refagent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/openai"
	"github.com/voicebench/humanaudit/internal/agent/systems"
)

// rawClient speaks the wire protocol directly, to check what the adapter never sends.
type rawClient struct {
	ws     *websocket.Conn
	events chan map[string]any
	seq    int
	mu     sync.Mutex
	seen   []string
}

func dialRaw(tb testing.TB, s *Server) *rawClient {
	tb.Helper()
	ws, resp, err := websocket.DefaultDialer.Dial(s.URL()+"?model=reference", nil)
	if err != nil {
		tb.Fatalf("dial: %v", err)
	}
	resp.Body.Close()
	c := &rawClient{ws: ws, events: make(chan map[string]any, 4096)}
	go func() {
		defer close(c.events)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			var m map[string]any
			json.Unmarshal(data, &m)
			c.events <- m
		}
	}()
	tb.Cleanup(func() { ws.Close() })
	return c
}

// send writes a client event with a fresh event_id, which it returns.
func (c *rawClient) send(tb testing.TB, ev map[string]any) string {
	tb.Helper()
	c.seq++
	id := fmt.Sprintf("evt_test_%d", c.seq)
	ev["event_id"] = id
	if err := c.ws.WriteJSON(ev); err != nil {
		tb.Fatalf("send %v: %v", ev["type"], err)
	}
	return id
}

// next returns the next event of type typ, remembering the types passed over.
func (c *rawClient) next(tb testing.TB, typ string) map[string]any {
	tb.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case m, ok := <-c.events:
			if !ok {
				tb.Fatalf("connection closed while waiting for %s (seen %v)", typ, c.types())
			}
			t, _ := m["type"].(string)
			c.mu.Lock()
			c.seen = append(c.seen, t)
			c.mu.Unlock()
			if t == typ {
				return m
			}
		case <-deadline:
			tb.Fatalf("no %s within 30 s (seen %v)", typ, c.types())
		}
	}
}

func (c *rawClient) types() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen...)
}

// errorFor waits for the error answering client event id.
func (c *rawClient) errorFor(tb testing.TB, id string) map[string]any {
	tb.Helper()
	for {
		e := c.next(tb, "error")["error"].(map[string]any)
		if e["event_id"] == id {
			return e
		}
	}
}

func manualSession(tools []agent.Tool, instructions string) map[string]any {
	ts := make([]map[string]any, len(tools))
	for i, t := range tools {
		// Raw parameters keep the designer's property order, as the adapter sends them.
		ts[i] = map[string]any{"type": "function", "name": t.Name, "description": t.Description, "parameters": t.Parameters}
	}
	return map[string]any{"type": "session.update", "session": map[string]any{
		"type": "realtime", "instructions": instructions, "tools": ts, "tool_choice": "auto",
		"audio": map[string]any{"input": map[string]any{"format": map[string]any{"type": "audio/pcm", "rate": 24000}, "turn_detection": nil},
			"output": map[string]any{"format": map[string]any{"type": "audio/pcm", "rate": 24000}, "voice": "marin"}}}}
}

// TestHandshake: the server speaks first; session.update is applied in full and echoed.
func TestHandshake(t *testing.T) {
	s := startServer(t, Config{})
	c := dialRaw(t, s)
	created := c.next(t, "session.created")["session"].(map[string]any)
	if created["type"] != "realtime" || created["model"] != "reference" {
		t.Errorf("session.created %v", created)
	}
	c.send(t, manualSession(testTools, testInstructions))
	upd := c.next(t, "session.updated")["session"].(map[string]any)
	tools := upd["tools"].([]any)
	audio := upd["audio"].(map[string]any)
	input := audio["input"].(map[string]any)
	if len(tools) != 2 || upd["instructions"] != testInstructions || input["turn_detection"] != nil ||
		audio["output"].(map[string]any)["voice"] != "marin" || upd["tool_choice"] != "auto" {
		t.Errorf("session.updated %v", upd)
	}
	// The adapter's handshake (voice clamped, tools checked against session.updated) succeeds too,
	// and so does dialling a systems-file entry of family "reference" at the server's URL.
	dial(t, s, false)
	sys := systems.System{Label: "reference-agent", Family: systems.FamilyReference}
	a, err := systems.Dial(context.Background(), sys, systems.DialOptions{Endpoint: s.URL(),
		Config: agent.Config{Instructions: testInstructions, Tools: testTools}})
	if err != nil {
		t.Fatalf("systems.Dial: %v", err)
	}
	a.Close()
}

// TestProtocolErrors: every malformed or untimely client event gets the error the real API sends,
// matched to the client event by event_id, and the connection stays usable.
func TestProtocolErrors(t *testing.T) {
	s := startServer(t, Config{})
	c := dialRaw(t, s)
	c.next(t, "session.created")
	for _, tc := range []struct {
		ev    map[string]any
		code  string
		param string
	}{
		{map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "temperature": 0.8}}, "unknown_parameter", "session.temperature"},
		{map[string]any{"type": "session.update", "session": map[string]any{"instructions": "x"}}, "missing_required_parameter", "session.type"},
		{map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "audio": map[string]any{"output": map[string]any{"voice": "nova"}}}}, "invalid_value", "session.audio.output.voice"},
		{map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "audio": map[string]any{"input": map[string]any{"format": map[string]any{"type": "audio/pcm", "rate": 16000}}}}}, "invalid_value", "session.audio.input.format"},
		{map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "tools": []any{map[string]any{"type": "web_search"}}}}, "invalid_value", "session.tools[0].type"},
		{map[string]any{"type": "input_audio_buffer.commit"}, "input_audio_buffer_commit_empty", ""},
		{map[string]any{"type": "response.cancel"}, "response_cancel_not_active", ""},
		{map[string]any{"type": "conversation.item.truncate", "item_id": "item_nope", "content_index": 0, "audio_end_ms": 10}, "item_not_found", "item_id"},
		{map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "function_call_output", "call_id": "call_nope", "output": "{}"}}, "invalid_value", "item.call_id"},
		{map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "reasoning"}}, "invalid_value", "item.type"},
		{map[string]any{"type": "input_audio_buffer.append", "audio": "***"}, "invalid_value", "audio"},
		{map[string]any{"type": "response.make"}, "invalid_value", "type"},
	} {
		id := c.send(t, tc.ev)
		e := c.errorFor(t, id)
		param, _ := e["param"].(string)
		if e["code"] != tc.code || param != tc.param || e["type"] != "invalid_request_error" || e["message"] == "" {
			t.Errorf("%v: error %v, want code %s param %q", tc.ev["type"], e, tc.code, tc.param)
		}
	}
	if err := c.ws.WriteMessage(websocket.TextMessage, []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	if e := c.next(t, "error")["error"].(map[string]any); e["code"] != "invalid_json" {
		t.Errorf("bad JSON: %v", e)
	}
	// Still usable: a valid update is applied.
	c.send(t, manualSession(testTools, testInstructions))
	c.next(t, "session.updated")
}

// TestActiveResponseConflict: a second response.create while one is active is refused with
// conversation_already_has_active_response (no response.created for it); the first completes.
func TestActiveResponseConflict(t *testing.T) {
	s := startServer(t, Config{})
	c := dialRaw(t, s)
	c.next(t, "session.created")
	c.send(t, manualSession(testTools, testInstructions))
	c.next(t, "session.updated")
	c.send(t, map[string]any{"type": "response.create"})
	second := c.send(t, map[string]any{"type": "response.create"})
	created := c.next(t, "response.created")["response"].(map[string]any)
	e := c.errorFor(t, second)
	if e["code"] != "conversation_already_has_active_response" || !strings.Contains(e["message"].(string), created["id"].(string)) {
		t.Errorf("conflict error %v", e)
	}
	done := c.next(t, "response.done")["response"].(map[string]any)
	if done["id"] != created["id"] || done["status"] != "completed" {
		t.Errorf("response.done %v", done)
	}
	if n := strings.Count(strings.Join(c.types(), " "), "response.created"); n != 1 {
		t.Errorf("%d response.created events, want 1", n)
	}
	// The greeting is an audio reply in the GA order.
	want := []string{"response.created", "response.output_item.added", "conversation.item.added", "response.content_part.added",
		"response.output_audio_transcript.delta", "response.output_audio.delta"}
	var got []string
	for _, ty := range c.types() {
		if (len(got) == 0 && ty == "response.created") || (len(got) > 0 && len(got) < len(want)) {
			if ty != "error" {
				got = append(got, ty)
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("audio reply starts %v, want %v", got, want)
	}
	tail := c.types()[len(c.types())-6:]
	if !slices.Equal(tail, []string{"response.output_audio.done", "response.output_audio_transcript.done", "response.content_part.done",
		"response.output_item.done", "conversation.item.done", "response.done"}) {
		t.Errorf("audio reply ends %v", tail)
	}
}

// TestToolCallRoundTrip drives a call through the OpenAI GA adapter with Flite caller audio: the
// caller's transcript comes back, the agent asks one question at a time, records each answer with
// a tool call, marks the ticket ready after the tool outputs, and says goodbye.
func TestToolCallRoundTrip(t *testing.T) {
	s := startServer(t, Config{AudioLead: -1})
	a := dial(t, s, false)
	callerTurn(t, a, say(t, "rms", "Hi, I need help with my laptop."))
	c := until(t, a, true, nil)
	if c.caller == "" || !strings.Contains(c.transcript, "employee ID?") || c.audio == 0 || len(c.calls) != 0 {
		t.Fatalf("first reply: %+v", c)
	}
	callerTurn(t, a, say(t, "rms", "It's four one seven."))
	c = until(t, a, true, nil)
	if len(c.calls) != 1 || c.calls[0].Name != "record_ticket" || string(c.calls[0].Arguments) != `{"employee_id":"417"}` {
		t.Fatalf("record call: %+v", c.calls)
	}
	if !strings.Contains(c.transcript, "callback phone number?") {
		t.Errorf("second question: %q", c.transcript)
	}
	callerTurn(t, a, say(t, "rms", "It's five oh three, five five five, oh one four seven."))
	c = until(t, a, true, nil)
	var names []string
	for _, cl := range c.calls {
		names = append(names, cl.Name+" "+string(cl.Arguments))
	}
	if !slices.Equal(names, []string{`record_ticket {"callback_phone":"503-555-0147"}`, "mark_ready {}"}) {
		t.Errorf("calls %v", names)
	}
	if !strings.Contains(c.transcript, "ready for review") || !strings.Contains(c.transcript, "anything else") {
		t.Errorf("wrap-up: %q", c.transcript)
	}
	callerTurn(t, a, say(t, "rms", "No, that's everything. Thanks, bye."))
	if c = until(t, a, true, nil); !strings.Contains(c.transcript, "Goodbye") {
		t.Errorf("goodbye: %q", c.transcript)
	}
}

// TestCancelAndTruncate: a barge-in cancels the paced reply (response.done cancelled) and
// truncates its audio item at what was played; the agent then takes the caller's turn normally.
func TestCancelAndTruncate(t *testing.T) {
	s := startServer(t, Config{AudioLead: 200 * time.Millisecond})
	a := dial(t, s, false)
	callerTurn(t, a, say(t, "rms", "Hi, I need help with my laptop."))
	var raw []string
	audio := 0
	deadline := time.After(30 * time.Second)
	interrupted := false
	for done := false; !done; {
		select {
		case ev := <-a.Events():
			if ev.RawType != "" && !ev.Outbound {
				raw = append(raw, ev.RawType)
			}
			switch ev.Type {
			case agent.EventAudioDelta:
				audio += len(ev.Audio)
				if !interrupted && audio >= 24000/2 {
					interrupted = true
					if err := a.Interrupt(300); err != nil {
						t.Fatal(err)
					}
				}
			case agent.EventResponseDone:
				if ev.Status != agent.StatusCancelled {
					t.Fatalf("response ended %s, want cancelled", ev.Status)
				}
				done = true
			case agent.EventError:
				t.Fatalf("error %+v", ev.Err)
			}
		case <-deadline:
			t.Fatalf("no cancelled response; raw %v", raw)
		}
	}
	// The truncate acknowledgement follows.
	for !slices.Contains(raw, "conversation.item.truncated") {
		select {
		case ev := <-a.Events():
			if ev.RawType != "" && !ev.Outbound {
				raw = append(raw, ev.RawType)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no conversation.item.truncated; raw %v", raw)
		}
	}
	if audio > 24000*3 {
		t.Errorf("%d ms of audio arrived after a barge-in at 500 ms: the reply was not paced", audio*1000/24000)
	}
	callerTurn(t, a, say(t, "rms", "It's four one seven."))
	c := until(t, a, true, nil)
	if len(c.calls) == 0 || c.calls[0].Name != "record_ticket" {
		t.Errorf("after the barge-in: %+v", c)
	}
}

// TestServerVAD: with server turn detection the agent hears turns itself: speech_started,
// speech_stopped, the commit, the caller transcript and an automatic response.
func TestServerVAD(t *testing.T) {
	s := startServer(t, Config{AudioLead: -1})
	a := dial(t, s, true)
	pcm := append(make([]int16, 24000/2), say(t, "rms", "Hi, I need help with my laptop.")...)
	pcm = append(pcm, make([]int16, 24000)...)
	go func() {
		for off := 0; off < len(pcm); off += 960 {
			if a.SendAudio(pcm[off:min(off+960, len(pcm))]) != nil {
				return
			}
		}
	}()
	var got []agent.EventType
	var transcript, said string
	deadline := time.After(30 * time.Second)
	for said == "" {
		select {
		case ev := <-a.Events():
			switch ev.Type {
			case agent.EventCallerSpeechStarted, agent.EventCallerSpeechStopped, agent.EventResponseDone:
				got = append(got, ev.Type)
			case agent.EventCallerTranscript:
				transcript = ev.Text
			case agent.EventTranscriptDone:
				said = ev.Text
			case agent.EventError:
				t.Fatalf("error %+v", ev.Err)
			}
		case <-deadline:
			t.Fatalf("no automatic response; events %v", got)
		}
	}
	if len(got) < 2 || got[0] != agent.EventCallerSpeechStarted || got[1] != agent.EventCallerSpeechStopped {
		t.Errorf("events %v", got)
	}
	if !strings.Contains(transcript, "laptop") || !strings.Contains(said, "employee ID") {
		t.Errorf("caller %q, agent %q", transcript, said)
	}
}

// TestCloseReleasesEverything: closing the server in the middle of a reply ends the client's
// connection and leaves no goroutine behind.
func TestCloseReleasesEverything(t *testing.T) {
	needTools(t)
	sharedRecognizer(t)
	ignore := goleak.IgnoreCurrent()
	s, err := New(Config{Recognizer: sharedRecognizer(t), AudioLead: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	a := openai.New(openai.Options{URL: s.URL(), Model: "reference", Dialect: openai.GA})
	if err := a.Connect(context.Background(), agent.Config{Instructions: testInstructions, Tools: testTools}); err != nil {
		t.Fatal(err)
	}
	callerTurn(t, a, say(t, "rms", "Hi, I need help with my laptop."))
	for ev := range a.Events() {
		if ev.Type == agent.EventAudioDelta {
			break // a paced reply is being streamed
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve after Close: %v", err)
	}
	lost := false
	for ev := range a.Events() {
		lost = lost || (ev.Type == agent.EventError && ev.Err.Class == agent.ClassLostConnection)
	}
	if !lost {
		t.Error("the client did not see the connection lost")
	}
	a.Close()
	if _, err := http.Get("http://" + s.Addr().String() + "/v1/realtime"); err == nil {
		t.Error("still listening after Close")
	}
	goleak.VerifyNone(t, ignore)
}

// TestDroppedConnection: a client whose TCP connection drops mid-reply is cleaned up while the
// server keeps serving.
func TestDroppedConnection(t *testing.T) {
	s := startServer(t, Config{AudioLead: 100 * time.Millisecond})
	ignore := goleak.IgnoreCurrent()
	c := dialRaw(t, s)
	c.next(t, "session.created")
	c.send(t, manualSession(testTools, testInstructions))
	c.next(t, "session.updated")
	c.send(t, map[string]any{"type": "response.create"})
	c.next(t, "response.output_audio.delta")
	c.ws.UnderlyingConn().Close()
	for range c.events {
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.connections() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := s.connections(); n != 0 {
		t.Fatalf("%d connections still open after the client dropped", n)
	}
	goleak.VerifyNone(t, ignore)
	// The server still serves.
	c2 := dialRaw(t, s)
	c2.next(t, "session.created")
}

// TestTextTurns: a user message with input_text is a caller turn like a spoken one, read by the
// same dialogue: the agent answers it, records the value with a tool call and asks on.
func TestTextTurns(t *testing.T) {
	s := startServer(t, Config{AudioLead: -1})
	c := dialRaw(t, s)
	c.next(t, "session.created")
	c.send(t, manualSession(testTools, testInstructions))
	c.next(t, "session.updated")
	turn := func(text string) map[string]any {
		c.send(t, map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
			"content": []any{map[string]any{"type": "input_text", "text": text}}}})
		c.send(t, map[string]any{"type": "response.create"})
		return c.next(t, "response.done")["response"].(map[string]any)
	}
	said := func(r map[string]any) string {
		var b strings.Builder
		for _, o := range r["output"].([]any) {
			if it := o.(map[string]any); it["type"] == "message" {
				for _, part := range it["content"].([]any) {
					b.WriteString(part.(map[string]any)["transcript"].(string))
				}
			}
		}
		return b.String()
	}
	if got := said(turn("Hi, I need help with my laptop.")); !strings.Contains(got, "employee ID?") {
		t.Fatalf("first reply %q", got)
	}
	out := turn("It's four one seven.")["output"].([]any)
	if len(out) != 1 || out[0].(map[string]any)["name"] != "record_ticket" || out[0].(map[string]any)["arguments"] != `{"employee_id":"417"}` {
		t.Fatalf("record call %v", out)
	}
	call := out[0].(map[string]any)
	c.send(t, map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "function_call_output",
		"call_id": call["call_id"], "output": `{"ok":true}`}})
	c.send(t, map[string]any{"type": "response.create"})
	if got := said(c.next(t, "response.done")["response"].(map[string]any)); !strings.Contains(got, "callback phone number?") {
		t.Errorf("next question %q", got)
	}
}
