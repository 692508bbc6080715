package realtimeserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/openai/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var testProvider = Provider{Name: "test", Schema: wire.SchemaGA, Voices: []string{"alloy", "marin"}, DefaultVoice: "alloy",
	DefaultModel: "m", Greeting: []string{wire.SessionCreated}, ConflictMessage: "busy with %s",
	OutputModalities: [][]string{{"audio"}}, TurnTypes: []string{"server_vad"}}

// testAgent says "hi" with 200 ms of audio in every response and records what it was told.
type testAgent struct {
	mu      sync.Mutex
	heard   []int16 // Listen
	turns   []Turn  // Commit
	answers [][]Turn
	outputs []ToolOutput
	refuse  *Refusal
	calls   int // function calls per response
}

func (a *testAgent) Open(*Conn) Agent  { return a }
func (a *testAgent) Configure(Session) {}
func (a *testAgent) Close()            {}
func (a *testAgent) Clear()            {}

func (a *testAgent) Listen(pcm []int16) {
	a.mu.Lock()
	a.heard = append(a.heard, pcm...)
	a.mu.Unlock()
}

func (a *testAgent) Commit(t Turn) {
	a.mu.Lock()
	a.turns = append(a.turns, t)
	a.mu.Unlock()
}

func (a *testAgent) Admit(string) *Refusal {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.refuse
}

func (a *testAgent) Respond(r *Response) Outcome {
	a.mu.Lock()
	a.answers = append(a.answers, r.Turns())
	a.outputs = append(a.outputs, r.Outputs()...)
	calls := a.calls
	a.mu.Unlock()
	if calls > 0 {
		for i := range calls {
			r.Call("lookup", fmt.Sprintf(`{"n":%d}`, i))
		}
		return Outcome{Status: agent.StatusCompleted}
	}
	r.BeginAudio()
	r.Transcript("hi")
	r.Audio(make([]int16, wire.SampleRate/5))
	return Outcome{Status: agent.StatusCompleted}
}

type client struct {
	ws  *websocket.Conn
	seq int
}

func dial(t *testing.T, p Provider, a *testAgent) *client {
	t.Helper()
	s := New(Config{Provider: p, Responder: a})
	srv := httptest.NewServer(s.Handler())
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close(); s.Close(); srv.Close() })
	c := &client{ws: ws}
	c.next(t, wire.SessionCreated)
	return c
}

func (c *client) send(t *testing.T, ev map[string]any) string {
	t.Helper()
	c.seq++
	ev["event_id"] = fmt.Sprintf("e%d", c.seq)
	if err := c.ws.WriteJSON(ev); err != nil {
		t.Fatal(err)
	}
	return ev["event_id"].(string)
}

// next returns the next event of type typ, failing on an error event of another kind.
func (c *client) next(t *testing.T, typ string) map[string]any {
	t.Helper()
	for {
		c.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		var m map[string]any
		if err := c.ws.ReadJSON(&m); err != nil {
			t.Fatalf("waiting for %s: %v", typ, err)
		}
		if m["type"] == typ {
			return m
		}
		if m["type"] == wire.Error {
			t.Fatalf("waiting for %s: error %v", typ, m["error"])
		}
	}
}

func pcmEvent(ms int) map[string]any {
	return map[string]any{"type": wire.InputAudioAppend, "audio": agent.EncodePCM(make([]int16, ms*wire.SampleRate/1000))}
}

// A response answers the turns committed since the previous one, and sees the tool outputs sent
// since; the agent hears exactly the committed audio while it is appended.
func TestResponsesAnswerWhatCameBefore(t *testing.T) {
	a := &testAgent{calls: 2}
	c := dial(t, testProvider, a)
	c.send(t, map[string]any{"type": wire.SessionUpdate, "session": map[string]any{"type": "realtime",
		"audio": map[string]any{"input": map[string]any{"turn_detection": nil}}}})
	c.next(t, wire.SessionUpdated)
	for range 3 {
		c.send(t, pcmEvent(40))
	}
	c.send(t, map[string]any{"type": wire.InputAudioCommit})
	c.send(t, map[string]any{"type": wire.ResponseCreate})
	done := c.next(t, wire.ResponseDone)["response"].(map[string]any)
	var callIDs []string
	for _, o := range done["output"].([]any) {
		callIDs = append(callIDs, o.(map[string]any)["call_id"].(string))
	}
	if len(callIDs) != 2 {
		t.Fatalf("output %v", done["output"])
	}
	a.mu.Lock()
	a.calls = 0
	a.mu.Unlock()
	for _, id := range callIDs {
		c.send(t, map[string]any{"type": wire.ItemCreate, "item": map[string]any{"type": "function_call_output", "call_id": id, "output": "ok " + id}})
	}
	c.send(t, map[string]any{"type": wire.ResponseCreate})
	c.next(t, wire.ResponseDone)
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.turns) != 1 || len(a.turns[0].PCM) != 3*960 || len(a.heard) != 3*960 {
		t.Errorf("committed %v, heard %d samples; want one turn of 2880 samples, heard while appended", a.turns, len(a.heard))
	}
	if len(a.answers) != 2 || len(a.answers[0]) != 1 || len(a.answers[1]) != 0 {
		t.Errorf("responses answered %v turns, want [1 0]", a.answers)
	}
	if len(a.outputs) != 2 || a.outputs[0] != (ToolOutput{CallID: callIDs[0], Name: "lookup", Output: "ok " + callIDs[0]}) {
		t.Errorf("outputs %+v", a.outputs)
	}
}

// The provider's rules decide what is refused: a voice change after assistant audio, an item
// delete without History, binary frames, and a response.create the agent does not admit.
func TestRefusals(t *testing.T) {
	a := &testAgent{}
	c := dial(t, testProvider, a)
	c.send(t, map[string]any{"type": wire.ResponseCreate})
	c.next(t, wire.ResponseDone)
	errorFor := func(id string) map[string]any {
		t.Helper()
		for {
			c.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
			var m map[string]any
			if err := c.ws.ReadJSON(&m); err != nil {
				t.Fatal(err)
			}
			if e, ok := m["error"].(map[string]any); ok && (id == "" || e["event_id"] == id) {
				return e
			}
			if m["type"] == wire.ResponseCreated {
				t.Fatalf("a response started: %v", m)
			}
		}
	}
	id := c.send(t, map[string]any{"type": wire.SessionUpdate, "session": map[string]any{"type": "realtime",
		"audio": map[string]any{"output": map[string]any{"voice": "marin"}}}})
	if e := errorFor(id); e["code"] != "cannot_update_voice" || e["param"] != "session.audio.output.voice" {
		t.Errorf("voice change after audio: %v", e)
	}
	id = c.send(t, map[string]any{"type": wire.ItemDelete, "item_id": "item_x"})
	if e := errorFor(id); e["code"] != wire.CodeInvalidValue || e["param"] != "type" {
		t.Errorf("delete without History: %v", e)
	}
	if err := c.ws.WriteMessage(websocket.BinaryMessage, []byte(`{"type":"response.create"}`)); err != nil {
		t.Fatal(err)
	}
	if e := errorFor(""); e["code"] != wire.CodeInvalidValue || !strings.Contains(e["message"].(string), "Binary") {
		t.Errorf("binary frame: %v", e)
	}
	a.mu.Lock()
	a.refuse = &Refusal{Error: &wire.ErrorDetail{Type: "server_error", Code: "server_error", Message: "down"}}
	a.mu.Unlock()
	id = c.send(t, map[string]any{"type": wire.ResponseCreate})
	if e := errorFor(id); e["code"] != "server_error" {
		t.Errorf("refused response: %v", e)
	}
	if n := len(a.answers); n != 1 {
		t.Errorf("%d responses, want 1", n)
	}
}

// With History the client may delete items and add function calls to the conversation.
func TestHistory(t *testing.T) {
	p := testProvider
	p.History = true
	c := dial(t, p, &testAgent{})
	c.send(t, map[string]any{"type": wire.ItemCreate, "item": map[string]any{"id": "item_fc", "type": "function_call", "name": "x",
		"call_id": "call_old", "arguments": "{}"}})
	added := c.next(t, wire.ItemAdded)["item"].(map[string]any)
	if added["id"] != "item_fc" || added["call_id"] != "call_old" {
		t.Errorf("added %v", added)
	}
	c.send(t, map[string]any{"type": wire.ItemDelete, "item_id": "item_fc"})
	if got := c.next(t, wire.ItemDeleted); got["item_id"] != "item_fc" {
		t.Errorf("deleted %v", got)
	}
}

// The session echoes what the client set, merged into the provider's defaults; a rejected
// update changes nothing.
func TestSessionEcho(t *testing.T) {
	c := dial(t, testProvider, &testAgent{})
	tools := []any{map[string]any{"type": "function", "name": "f", "parameters": json.RawMessage(`{"type":"object","properties":{"b":{},"a":{}}}`)}}
	c.send(t, map[string]any{"type": wire.SessionUpdate, "session": map[string]any{"type": "realtime", "tools": tools, "instructions": "x"}})
	s := c.next(t, wire.SessionUpdated)["session"].(map[string]any)
	if s["instructions"] != "x" || len(s["tools"].([]any)) != 1 || s["model"] != "m" {
		t.Errorf("session %v", s)
	}
	c.send(t, map[string]any{"type": wire.SessionUpdate, "session": map[string]any{"type": "realtime", "instructions": "y",
		"audio": map[string]any{"input": map[string]any{"turn_detection": map[string]any{"type": "semantic_vad"}}}}})
	c.send(t, map[string]any{"type": wire.SessionUpdate, "session": map[string]any{"type": "realtime"}})
	if s := c.nextAfterError(t, wire.SessionUpdated)["session"].(map[string]any); s["instructions"] != "x" {
		t.Errorf("a rejected update was applied: %v", s)
	}
}

// nextAfterError is next, passing over error events.
func (c *client) nextAfterError(t *testing.T, typ string) map[string]any {
	t.Helper()
	for {
		c.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		var m map[string]any
		if err := c.ws.ReadJSON(&m); err != nil {
			t.Fatal(err)
		}
		if m["type"] == typ {
			return m
		}
	}
}

// A wrong key is refused with 401 before the upgrade; a careless provider quotes it back.
func TestKeyRefusal(t *testing.T) {
	for _, echo := range []bool{false, true} {
		s := New(Config{Provider: testProvider, Responder: &testAgent{}, Key: "sk-right", EchoRefusedKey: echo})
		srv := httptest.NewServer(s.Handler())
		_, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+Path, map[string][]string{"Authorization": {"Bearer sk-wrong"}})
		if err == nil || resp == nil || resp.StatusCode != 401 {
			t.Fatalf("echo %v: dial with a wrong key: %v %v", echo, resp, err)
		}
		var body struct {
			Error struct{ Code, Message string }
		}
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if body.Error.Code != wire.CodeInvalidAPIKey || strings.Contains(body.Error.Message, "sk-wrong") != echo {
			t.Errorf("echo %v: refusal %+v", echo, body.Error)
		}
		s.Close()
		srv.Close()
	}
}

// closingAgent ends the connection with a close frame instead of answering a response.create.
type closingAgent struct {
	testAgent
	c *Conn
}

func (a *closingAgent) Open(c *Conn) Agent { a.c = c; return a }

func (a *closingAgent) Admit(string) *Refusal {
	a.c.CloseWith(4001, "key revoked")
	return &Refusal{}
}

func TestCloseWith(t *testing.T) {
	a := &closingAgent{}
	s := New(Config{Provider: testProvider, Responder: a})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	defer s.Close()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.WriteJSON(map[string]any{"type": wire.ResponseCreate})
	for {
		ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		var m map[string]any
		err := ws.ReadJSON(&m)
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			if ce.Code != 4001 || ce.Text != "key revoked" {
				t.Errorf("close %d %q", ce.Code, ce.Text)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if m["type"] == wire.ResponseCreated {
			t.Fatal("a response started")
		}
	}
}
