package agenttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/gptlive"
	"github.com/voicebench/humanaudit/internal/agent/internal/params"
)

// GPTLivePath is GPT-Live's WebSocket path.
const GPTLivePath = "/v1/live/sessions"

// GPTLiveFake is a loopback GPT-Live server written from OpenAI's published API: no query
// parameters, session.start first with a strict configuration (unknown fields refused, model
// required, audio {type: audio/pcm, rate: 16000 or 24000}, voices), session.started as its only
// acknowledgement,
// continuous caller audio that the live model answers by itself (full duplex: an energy VAD
// stands in for it), speech as session.output_audio.delta and session.output_transcript.delta with
// no end-of-turn event, and tools that a backend Responses model calls inside response.event
// after session.delegation.created; the client answers with response.item.create and one
// response.create per backend response.
type GPTLiveFake struct {
	traffic
	script cursor
	key    string
	greet  bool
	starts []map[string]any
	server
}

// GPTLiveOptions are the fake's deviations, for tests of the client's handshake.
type GPTLiveOptions struct {
	// GreetFirst sends a tool-less session.created before session.start arrives, as a server
	// announcing the connection might: it is not the acknowledgement of session.start.
	GreetFirst bool
}

// NewGPTLiveFake starts a fake on loopback; it is closed when tb ends.
func NewGPTLiveFake(tb testing.TB, s Script, o GPTLiveOptions) *GPTLiveFake {
	tb.Helper()
	f := &GPTLiveFake{script: cursor{s: s}, key: s.Key, greet: o.GreetFirst, traffic: traffic{audioType: gptlive.InputAudioAppend}}
	f.reg.Upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serveHTTP))
	tb.Cleanup(f.Close)
	return f
}

// URL is the ws:// endpoint.
func (f *GPTLiveFake) URL() string { return f.wsURL(GPTLivePath) }

// Starts returns the session objects of the session.start events received.
func (f *GPTLiveFake) Starts() []map[string]any { return snapshot(&f.mu, &f.starts) }

func (f *GPTLiveFake) serveHTTP(w http.ResponseWriter, r *http.Request) {
	f.upgrade(Handshake{Path: r.URL.Path, Auth: r.Header.Get("Authorization") != "", Model: r.URL.Query().Get("model")})
	switch {
	case f.reg.Closed():
		httpError(w, http.StatusServiceUnavailable, "server_error", "shutting down")
		return
	case f.key != "" && r.Header.Get("Authorization") != "Bearer "+f.key:
		httpError(w, http.StatusUnauthorized, "invalid_api_key", "Incorrect API key provided.")
		return
	case r.URL.Path != GPTLivePath:
		httpError(w, http.StatusNotFound, "not_found", "Unknown path "+r.URL.Path)
		return
	case r.URL.RawQuery != "":
		// A Live model on a URL with ?model= is the Realtime API's shape, not GPT-Live's.
		httpError(w, http.StatusBadRequest, "unknown_parameter", "GPT-Live takes no query parameters; name the model in session.start.")
		return
	}
	f.reg.Serve(w, r, func(ws *websocket.Conn, id int) {
		c := &liveConn{wsConn: wsConn{t: &f.traffic, id: id, ws: ws}, f: f, calls: map[string]bool{}, rate: gptlive.SampleRate}
		c.serve()
	})
}

func httpError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"type": "invalid_request_error", "code": code, "message": msg}})
}

type liveConn struct {
	wsConn
	f   *GPTLiveFake
	seq int // event ids sent, guarded by wmu

	mu       sync.Mutex
	started  bool
	tools    bool
	rate     int // the session's PCM rate, both ways
	vad      vad
	speaking *turn // the reply being played
	dlSeq    int
	calls    map[string]bool // backend calls without an output
	outputs  chan struct{}   // closed once every call has its output and response.create came
	created  bool            // response.create received for the current backend response
	wg       sync.WaitGroup
}

func (c *liveConn) send(ev map[string]any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.seq++
	ev["event_id"] = fmt.Sprintf("event_live%d_%d", c.id, c.seq)
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return c.writeLocked(websocket.TextMessage, fmt.Sprint(ev["type"]), b)
}

func (c *liveConn) fail(clientEventID, code, param, msg string) {
	e := map[string]any{"type": "invalid_request_error", "code": code, "message": msg}
	if param != "" {
		e["param"] = param
	}
	if clientEventID != "" {
		e["client_event_id"] = clientEventID
	}
	c.send(map[string]any{"type": gptlive.Error, "error": e})
}

func (c *liveConn) serve() {
	defer func() {
		c.ws.Close()
		c.mu.Lock()
		if c.speaking != nil {
			c.speaking.stop()
		}
		c.mu.Unlock()
		c.wg.Wait()
	}()
	if c.f.greet {
		c.send(map[string]any{"type": "session.created", "session": map[string]any{"id": fmt.Sprintf("sess_live%d", c.id), "tools": []any{}}})
	}
	c.readLoop(c.handle)
}

// The startup configuration GPT-Live accepts (it refuses unknown fields).
var liveSessionKeys = params.Tree{"model": nil, "instructions": nil, "input": nil, "store": nil, "triggers": nil, "client": nil,
	"audio": {"format": nil, "output": {"voice": nil}},
	"delegation": {"type": nil, "responses": {"model": nil, "instructions": nil, "tools": nil, "tool_choice": nil, "parallel_tool_calls": nil,
		"max_output_tokens": nil, "service_tier": nil, "reasoning": nil, "text": nil}}}

func (c *liveConn) handle(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var ev map[string]any
	if err := dec.Decode(&ev); err != nil {
		c.f.record(c.id, "(invalid json)", data)
		c.fail("", "invalid_json", "", "We could not parse the JSON body of your request.")
		return true
	}
	typ, _ := ev["type"].(string)
	id, _ := ev["event_id"].(string)
	c.f.record(c.id, typ, data)
	c.mu.Lock()
	started := c.started
	c.mu.Unlock()
	if !started && typ != gptlive.SessionStart {
		c.fail(id, "session_not_started", "type", "The first event must be session.start.")
		return false
	}
	switch typ {
	case gptlive.SessionStart:
		if started {
			c.fail(id, "session_already_started", "type", "session.start may be sent once.")
			return true
		}
		return c.start(id, ev)
	case gptlive.InputAudioAppend:
		b64, _ := ev["audio"].(string)
		pcm, err := agent.DecodePCM(b64)
		if err != nil || b64 == "" {
			c.fail(id, "invalid_value", "audio", "Invalid 'audio'. Expected base64-encoded PCM16 audio.")
			return true
		}
		c.audio(pcm)
	case gptlive.ResponseItemCreate:
		c.itemCreate(id, ev)
	case gptlive.ResponseCreate:
		c.responseCreate(id)
	case gptlive.SessionClose:
		c.send(map[string]any{"type": gptlive.SessionClosed, "reason": "close_requested", "usage": map[string]any{"seconds": 1}})
		return false
	default:
		c.fail(id, "invalid_value", "type", fmt.Sprintf("Invalid value: '%s'. Unknown event type.", typ))
	}
	return true
}

func (f *GPTLiveFake) record(conn int, typ string, data []byte) {
	audio := ""
	if typ == gptlive.InputAudioAppend {
		audio = "audio"
	}
	f.receive(conn, typ, data, audio)
}

// start validates session.start as the published API does and answers session.started; a
// refused configuration gets an error and no session.started, and the connection ends.
func (c *liveConn) start(id string, ev map[string]any) bool {
	s, _ := ev["session"].(map[string]any)
	if s == nil {
		c.fail(id, "missing_required_parameter", "session", "Missing required parameter: 'session'.")
		return false
	}
	c.f.mu.Lock()
	c.f.starts = append(c.f.starts, s)
	c.f.mu.Unlock()
	if bad := params.Unknown("session", s, liveSessionKeys); bad != "" {
		c.fail(id, "unknown_parameter", bad, fmt.Sprintf("Unknown parameter: '%s'.", bad))
		return false
	}
	if m, _ := s["model"].(string); m == "" {
		c.fail(id, "missing_required_parameter", "session.model", "Missing required parameter: 'session.model'.")
		return false
	}
	// PCM16 at 16 or 24 kHz (LiveSessionAudioFormatPcmParam in OpenAI's API spec); the
	// telephony formats are 8 kHz and the fake does not speak them.
	rate := gptlive.SampleRate
	if f, ok := params.Path(s, "audio", "format"); ok {
		m, _ := f.(map[string]any)
		r := fmt.Sprint(m["rate"])
		if m["type"] != "audio/pcm" || r != "16000" && r != "24000" {
			c.fail(id, "invalid_value", "session.audio.format", `Invalid value. Supported values are: {"type":"audio/pcm","rate":16000|24000}, {"type":"audio/pcmu"}, {"type":"audio/pcma"}.`)
			return false
		}
		if r == "16000" {
			rate = 16000
		}
	}
	if v, ok := params.Path(s, "audio", "output", "voice"); ok && !slices.Contains(gaVoices, fmt.Sprint(v)) {
		c.fail(id, "invalid_value", "session.audio.output.voice", fmt.Sprintf("Invalid value: '%v'. Supported values are: '%s'.", v, strings.Join(gaVoices, "', '")))
		return false
	}
	tools := 0
	if d, ok := s["delegation"].(map[string]any); ok {
		if typ := fmt.Sprint(d["type"]); typ != "responses" && typ != "client" {
			c.fail(id, "invalid_value", "session.delegation.type", fmt.Sprintf("Invalid value: '%s'. Supported values are: 'responses', 'client'.", typ))
			return false
		}
		if r, ok := d["responses"].(map[string]any); ok {
			if m, _ := r["model"].(string); m == "" {
				c.fail(id, "missing_required_parameter", "session.delegation.responses.model", "Missing required parameter: 'session.delegation.responses.model'.")
				return false
			}
			list, _ := r["tools"].([]any)
			for i, t := range list {
				tm, _ := t.(map[string]any)
				if tm["type"] == "function" {
					if name, _ := tm["name"].(string); name == "" {
						c.fail(id, "missing_required_parameter", fmt.Sprintf("session.delegation.responses.tools[%d].name", i), "Missing required parameter: 'name'.")
						return false
					}
					tools++
				}
			}
		}
	}
	c.mu.Lock()
	c.started, c.tools, c.rate = true, tools > 0, rate
	c.mu.Unlock()
	echo := map[string]any{"id": fmt.Sprintf("live_sess_%d", c.id), "object": "live.session", "expires_at": time.Now().Add(time.Hour).Unix()}
	for k, v := range s {
		echo[k] = v
	}
	if _, ok := echo["audio"]; !ok {
		echo["audio"] = map[string]any{"format": map[string]any{"type": "audio/pcm", "rate": 24000}, "output": map[string]any{"voice": gptlive.DefaultVoice}}
	}
	c.send(map[string]any{"type": gptlive.SessionStarted, "session": echo})
	return true
}

// audio feeds the live model's ears: speech over its own stops it, the end of caller speech
// (after 500 ms of quiet) makes it answer.
func (c *liveConn) audio(pcm []int16) {
	c.mu.Lock()
	ms := len(pcm) * 1000 / c.rate
	started, stopped := c.vad.feed(pcm, ms, 500)
	speaking := c.speaking
	c.mu.Unlock()
	if started && speaking != nil {
		speaking.stop()
	}
	if stopped {
		c.answer()
	}
}

// answer plays the script's next reply: speech, then (for a reply with calls) delegated work
// whose result the live model speaks as the following reply, as long as replies call tools.
func (c *liveConn) answer() {
	r := &turn{cancel: make(chan struct{})} // a new reply cuts off the one playing: done is not used
	c.mu.Lock()
	prev := c.speaking
	c.speaking = r
	c.mu.Unlock()
	if prev != nil {
		prev.stop()
	}
	reply := c.f.script.reply()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.send(map[string]any{"type": gptlive.InputTranscriptDelta, "delta": c.f.script.callerTranscript("(caller speech)")})
		for {
			if !c.speak(r, reply) {
				return
			}
			if len(reply.Calls) == 0 {
				break
			}
			if !c.delegate(r, reply.Calls) {
				return
			}
			reply = c.f.script.reply()
		}
		c.send(map[string]any{"type": gptlive.UsageUpdated, "usage": map[string]any{"seconds": 10}})
	}()
}

// speak streams a reply's audio and transcript; false when it was cut off.
func (c *liveConn) speak(r *turn, reply Reply) bool {
	rate := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.rate
	}
	_, end := reply.play(r.cancel, rate, func(ch chunk) bool {
		c.send(map[string]any{"type": gptlive.OutputAudioDelta, "delta": agent.EncodePCM(ch.pcm)})
		if ch.text != "" {
			c.send(map[string]any{"type": gptlive.OutputTranscriptDelta, "delta": ch.text, "start_ms": ch.startMS, "end_ms": ch.startMS + ch.ms})
		}
		return true
	})
	return end == playedAll
}

// delegate hands calls to the backend Responses model: session.delegation.created, the calls
// as output items, response.completed; after every output and a response.create the backend
// finishes with a message. False when the connection ended first.
func (c *liveConn) delegate(r *turn, calls []Call) bool {
	c.mu.Lock()
	c.dlSeq++
	dl, resp := fmt.Sprintf("dl_live%d_%d", c.id, c.dlSeq), fmt.Sprintf("resp_live%d_%d", c.id, c.dlSeq)
	done := make(chan struct{})
	c.outputs, c.created = done, false
	var items []any
	for i, call := range calls {
		callID := fmt.Sprintf("call_live%d_%d_%d", c.id, c.dlSeq, i)
		c.calls[callID] = true
		items = append(items, map[string]any{"id": "fc_" + callID, "type": "function_call", "status": "completed", "call_id": callID, "name": call.Name, "arguments": call.Arguments})
	}
	c.mu.Unlock()
	c.send(map[string]any{"type": gptlive.DelegationCreated, "delegation": map[string]any{"id": dl, "target": "responses", "response_id": resp}})
	event := func(ev map[string]any) {
		c.send(map[string]any{"type": gptlive.ResponseEvent, "delegation_id": dl, "event": ev})
	}
	event(map[string]any{"type": "response.created", "response": map[string]any{"id": resp, "object": "response", "status": "in_progress", "output": []any{}}})
	for i, it := range items {
		event(map[string]any{"type": "response.output_item.done", "output_index": i, "item": it})
	}
	event(map[string]any{"type": "response.completed", "response": map[string]any{"id": resp, "object": "response", "status": "completed", "output": items,
		"usage": map[string]any{"input_tokens": 300, "output_tokens": 40, "total_tokens": 340}}})
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		c.f.violation("no function_call_output and response.create within 30 s of %s", resp)
		return false
	}
	next := resp + "_b"
	event(map[string]any{"type": "response.created", "response": map[string]any{"id": next, "object": "response", "status": "in_progress", "output": []any{}}})
	msg := map[string]any{"id": "msg_" + next, "type": "message", "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": "done"}}}
	event(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": msg})
	event(map[string]any{"type": "response.completed", "response": map[string]any{"id": next, "object": "response", "status": "completed", "output": []any{msg},
		"usage": map[string]any{"input_tokens": 120, "output_tokens": 10, "total_tokens": 130}}})
	return true
}

func (c *liveConn) itemCreate(id string, ev map[string]any) {
	it, _ := ev["item"].(map[string]any)
	if it["type"] != "function_call_output" {
		c.fail(id, "invalid_value", "item.type", fmt.Sprintf("Invalid value: '%v'. Supported values are: 'function_call_output', 'message'.", it["type"]))
		return
	}
	callID, _ := it["call_id"].(string)
	if _, isString := it["output"].(string); !isString {
		c.fail(id, "invalid_type", "item.output", "Invalid type for 'item.output': expected a string.")
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.calls[callID] {
		c.mu.Unlock()
		c.fail(id, "invalid_value", "item.call_id", fmt.Sprintf("No function call with call_id '%s' is waiting for an output.", callID))
		c.mu.Lock()
		return
	}
	delete(c.calls, callID)
}

func (c *liveConn) responseCreate(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.calls) > 0 {
		c.f.violation("response.create before every function_call_output (%d missing)", len(c.calls))
		return
	}
	if c.outputs == nil || c.created {
		c.f.violation("response.create with no backend response waiting for outputs")
		return
	}
	c.created = true
	close(c.outputs)
	c.outputs = nil
}
