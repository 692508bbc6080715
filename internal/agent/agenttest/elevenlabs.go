package agenttest

import (
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
	"github.com/voicebench/humanaudit/internal/agent/elevenlabs"
)

// ElevenLabsAgent is a platform agent the fake serves: what an operator provisions on the
// ElevenLabs Agents Platform.
type ElevenLabsAgent struct {
	ID string
	// Private agents need a signed URL (fetched with the API key); public ones take agent_id.
	Private bool
	// InputFormat and OutputFormat are the agent's audio formats (default pcm_16000).
	InputFormat, OutputFormat string
	// Tools are its client tools; with ToolsByID they are workspace tools referenced by id.
	Tools     []elevenlabs.ToolConfig
	ToolsByID bool
	// The security settings: which conversation overrides are allowed.
	AllowPrompt, AllowFirstMessage, AllowLanguage, AllowVoice bool
	// FirstMessage is what the agent says on connecting unless overridden ("" waits).
	FirstMessage string
}

// ElevenLabsOptions tune the fake's timing and its quirks.
type ElevenLabsOptions struct {
	Agents []ElevenLabsAgent
	// Key is the only xi-api-key the REST API accepts.
	Key string
	// PingInterval is how often the server pings (default 300 ms); a ping not answered with a
	// pong of its event id within PongTimeout (default 2 s) ends the conversation.
	PingInterval, PongTimeout time.Duration
	// ToolTimeout is the tools' response_timeout_secs: without every result by then the agent
	// goes on as if the tool failed (default 3 s).
	ToolTimeout time.Duration
	// SilenceMS ends a caller turn in the platform's VAD (default 500).
	SilenceMS int
}

// ElevenLabsFake is a loopback ElevenLabs Agents Platform: the REST endpoints the adapter uses
// (signed URLs, agent and tool configurations) and the conversation WebSocket. Like the platform
// it takes turns itself (an energy VAD stands in for its ASR and turn model), sends an
// interruption and drops the response when the caller speaks over the agent (and one chunk of
// the interrupted response's audio still arrives after it, as in-flight audio does), pings and
// closes the conversation when pongs do not come, refuses overrides its security settings do not
// allow by closing with 1008, and ignores tool results that do not echo a pending tool_call_id.
type ElevenLabsFake struct {
	script cursor
	opts   ElevenLabsOptions
	server

	traffic
	signatures  map[string]string // signature → agent id (single use)
	nsig        int
	initiations []map[string]any
	pings       int
	pongs       int
}

// NewElevenLabsFake starts a fake on loopback; it is closed when tb ends.
func NewElevenLabsFake(tb testing.TB, opts ElevenLabsOptions, s Script) *ElevenLabsFake {
	tb.Helper()
	if opts.PingInterval <= 0 {
		opts.PingInterval = 300 * time.Millisecond
	}
	if opts.PongTimeout <= 0 {
		opts.PongTimeout = 2 * time.Second
	}
	if opts.ToolTimeout <= 0 {
		opts.ToolTimeout = 3 * time.Second
	}
	if opts.SilenceMS <= 0 {
		opts.SilenceMS = 500
	}
	f := &ElevenLabsFake{script: cursor{s: s}, opts: opts, signatures: map[string]string{}, traffic: traffic{audioType: elevenlabs.AudioKey}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serveHTTP))
	tb.Cleanup(f.Close)
	return f
}

// URL is the conversation WebSocket endpoint (the REST API is on the same host).
func (f *ElevenLabsFake) URL() string { return f.wsURL("/v1/convai/conversation") }

// Initiations returns the conversation_initiation_client_data events received.
func (f *ElevenLabsFake) Initiations() []map[string]any { return snapshot(&f.mu, &f.initiations) }

// Closes returns the close frames the fake sent ("1008 reason").
func (f *ElevenLabsFake) Closes() []string { return f.closeFrames() }

// Pings returns how many pings the fake sent and how many were answered with their event id.
func (f *ElevenLabsFake) Pings() (sent, answered int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pings, f.pongs
}

func (f *ElevenLabsFake) agent(id string) (ElevenLabsAgent, bool) {
	for _, a := range f.opts.Agents {
		if a.ID == id {
			return a, true
		}
	}
	return ElevenLabsAgent{}, false
}

func writeDetail(w http.ResponseWriter, code int, status, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"detail": map[string]string{"status": status, "message": msg}})
}

func (f *ElevenLabsFake) serveHTTP(w http.ResponseWriter, r *http.Request) {
	f.upgrade(Handshake{Path: r.URL.Path, Auth: r.Header.Get(elevenlabs.KeyHeader) != ""})
	if f.reg.Closed() {
		http.NotFound(w, r)
		return
	}
	path := r.URL.Path
	if path == "/v1/convai/conversation" {
		f.serveConversation(w, r)
		return
	}
	if r.Method != http.MethodGet {
		writeDetail(w, http.StatusMethodNotAllowed, "method_not_allowed", "Method Not Allowed")
		return
	}
	if f.opts.Key != "" && r.Header.Get(elevenlabs.KeyHeader) != f.opts.Key {
		writeDetail(w, http.StatusUnauthorized, "invalid_api_key", "Invalid API key")
		return
	}
	switch {
	case path == elevenlabs.SignedURLPath:
		id := r.URL.Query().Get("agent_id")
		if _, ok := f.agent(id); !ok {
			writeDetail(w, http.StatusNotFound, "agent_not_found", fmt.Sprintf("Agent with id %s not found", id))
			return
		}
		f.mu.Lock()
		f.nsig++
		sig := fmt.Sprintf("sig_%04d", f.nsig)
		f.signatures[sig] = id
		f.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]string{"signed_url": f.URL() + "?agent_id=" + id + "&conversation_signature=" + sig})
	case strings.HasPrefix(path, elevenlabs.AgentPath):
		a, ok := f.agent(strings.TrimPrefix(path, elevenlabs.AgentPath))
		if !ok {
			writeDetail(w, http.StatusNotFound, "agent_not_found", "Agent not found")
			return
		}
		json.NewEncoder(w).Encode(agentDocument(a))
	case strings.HasPrefix(path, elevenlabs.ToolPath):
		id := strings.TrimPrefix(path, elevenlabs.ToolPath)
		for _, a := range f.opts.Agents {
			for _, t := range a.Tools {
				if a.ToolsByID && "tool_"+t.Name == id {
					json.NewEncoder(w).Encode(elevenlabs.ToolResource{ID: id, Config: t})
					return
				}
			}
		}
		writeDetail(w, http.StatusNotFound, "tool_not_found", "Tool not found")
	default:
		http.NotFound(w, r)
	}
}

// agentDocument is the agent as GET /v1/convai/agents/{id} returns it.
func agentDocument(a ElevenLabsAgent) map[string]any {
	prompt := map[string]any{"prompt": "(placeholder: the console overrides the prompt)", "llm": "gpt-4.1-mini"}
	if a.ToolsByID {
		var ids []string
		for _, t := range a.Tools {
			ids = append(ids, "tool_"+t.Name)
		}
		prompt["tool_ids"] = ids
	} else {
		prompt["tools"] = a.Tools
	}
	return map[string]any{
		"agent_id": a.ID, "name": a.ID,
		"conversation_config": map[string]any{
			"agent": map[string]any{"first_message": a.FirstMessage, "language": "en", "prompt": prompt},
			"asr":   map[string]any{"user_input_audio_format": orPCM16(a.InputFormat)},
			"tts":   map[string]any{"model_id": "eleven_flash_v2", "agent_output_audio_format": orPCM16(a.OutputFormat)},
		},
		"platform_settings": map[string]any{"auth": map[string]any{"enable_auth": a.Private},
			"overrides": map[string]any{"conversation_config_override": map[string]any{
				"agent": map[string]any{"prompt": map[string]any{"prompt": a.AllowPrompt}, "first_message": a.AllowFirstMessage, "language": a.AllowLanguage},
				"tts":   map[string]any{"voice_id": a.AllowVoice}}}},
	}
}

func orPCM16(f string) string {
	if f == "" {
		return "pcm_16000"
	}
	return f
}

func rateOf(format string) int {
	var r int
	fmt.Sscanf(strings.TrimPrefix(format, "pcm_"), "%d", &r)
	return r
}

func (f *ElevenLabsFake) serveConversation(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("agent_id")
	a, ok := f.agent(id)
	if !ok {
		writeDetail(w, http.StatusNotFound, "agent_not_found", "Agent not found")
		return
	}
	f.reg.Serve(w, r, func(ws *websocket.Conn, n int) {
		f.mu.Lock()
		sig := r.URL.Query().Get("conversation_signature")
		signed := f.signatures[sig] == id
		delete(f.signatures, sig)
		f.mu.Unlock()
		c := &elConn{wsConn: wsConn{t: &f.traffic, id: n, ws: ws}, f: f, a: a, pendingPings: map[int64]time.Time{}, stop: make(chan struct{})}
		if a.Private && !signed {
			c.closeWith(websocket.ClosePolicyViolation, "Authentication failed: conversation signature missing or invalid")
			c.finish()
			return
		}
		c.serve()
	})
}

type elConn struct {
	wsConn
	f *ElevenLabsFake
	a ElevenLabsAgent

	mu           sync.Mutex
	started      bool
	inRate       int
	outRate      int
	event        int64
	pingSeq      int64
	pendingPings map[int64]time.Time
	vad          vad
	turns        turnQueue
	calls        pendingCalls
	stop         chan struct{}
	stopOnce     sync.Once
	wg           sync.WaitGroup // the pinger
}

// elTurn is an agent response, numbered by the event id its messages carry.
type elTurn struct {
	*turn
	event int64
}

func (c *elConn) send(kind string, msg any) error {
	return c.sendJSON(websocket.TextMessage, kind, msg)
}

func (c *elConn) finish() {
	c.ws.Close()
	c.stopOnce.Do(func() { close(c.stop) })
	c.turns.end()
	c.wg.Wait()
}

func (c *elConn) serve() {
	defer c.finish()
	c.readLoop(c.handle)
}

func (c *elConn) record(typ string, data []byte) {
	audio := ""
	if typ == elevenlabs.AudioKey {
		audio = elevenlabs.AudioKey
	}
	c.f.receive(c.id, typ, data, audio)
}

// handle processes one client message; false means the connection was closed.
func (c *elConn) handle(data []byte) bool {
	var msg map[string]any
	if err := json.Unmarshal(data, &msg); err != nil {
		c.record("(invalid json)", data)
		c.closeWith(websocket.ClosePolicyViolation, "Invalid message received")
		return false
	}
	typ, _ := msg["type"].(string)
	if _, audio := msg[elevenlabs.AudioKey]; audio && typ == "" {
		typ = elevenlabs.AudioKey
	}
	c.record(typ, data)
	c.mu.Lock()
	started := c.started
	c.mu.Unlock()
	if !started {
		if typ == elevenlabs.TypeInitiation {
			return c.initiate(msg)
		}
		if !c.initiate(nil) { // the platform starts with the agent's own configuration
			return false
		}
	}
	switch typ {
	case elevenlabs.TypeInitiation:
		c.f.violation("conversation_initiation_client_data after the conversation started")
	case elevenlabs.AudioKey:
		b64, _ := msg[elevenlabs.AudioKey].(string)
		pcm, err := agent.DecodePCM(b64)
		if err != nil {
			c.closeWith(websocket.ClosePolicyViolation, "Invalid message received: user_audio_chunk is not base64 PCM")
			return false
		}
		c.audio(pcm)
	case elevenlabs.TypePong:
		id, _ := msg["event_id"].(float64)
		c.mu.Lock()
		_, ok := c.pendingPings[int64(id)]
		delete(c.pendingPings, int64(id))
		c.mu.Unlock()
		if !ok {
			c.f.violation("pong for unknown ping event_id %v", msg["event_id"])
			break
		}
		c.f.mu.Lock()
		c.f.pongs++
		c.f.mu.Unlock()
	case elevenlabs.TypeToolResult:
		c.toolResult(msg)
	case elevenlabs.TypeActivity, "contextual_update", "feedback":
	case "user_message":
		c.startTurn()
	default:
		c.closeWith(websocket.ClosePolicyViolation, fmt.Sprintf("Invalid message received: unknown type %q", typ))
		return false
	}
	return true
}

// initiate applies the client's overrides (msg nil: none) and starts the conversation.
func (c *elConn) initiate(msg map[string]any) bool {
	if msg != nil {
		c.f.mu.Lock()
		c.f.initiations = append(c.f.initiations, msg)
		c.f.mu.Unlock()
	}
	ov, _ := msg["conversation_config_override"].(map[string]any)
	agentOv, _ := ov["agent"].(map[string]any)
	ttsOv, _ := ov["tts"].(map[string]any)
	first := c.a.FirstMessage
	refuse := func(field string) bool {
		c.closeWith(websocket.ClosePolicyViolation, fmt.Sprintf("Override for field '%s' is not allowed by config.", field))
		return false
	}
	if p, ok := agentOv["prompt"]; ok && p != nil {
		if !c.a.AllowPrompt {
			return refuse("prompt")
		}
	}
	if fm, ok := agentOv["first_message"]; ok {
		if !c.a.AllowFirstMessage {
			return refuse("first_message")
		}
		first, _ = fm.(string)
	}
	if l, ok := agentOv["language"]; ok && l != "" && !c.a.AllowLanguage {
		return refuse("language")
	}
	if v, ok := ttsOv["voice_id"]; ok && v != "" && !c.a.AllowVoice {
		return refuse("voice_id")
	}
	c.mu.Lock()
	c.started = true
	c.inRate, c.outRate = rateOf(orPCM16(c.a.InputFormat)), rateOf(orPCM16(c.a.OutputFormat))
	c.mu.Unlock()
	c.send(elevenlabs.TypeMetadata, map[string]any{"type": elevenlabs.TypeMetadata, "conversation_initiation_metadata_event": map[string]any{
		"conversation_id": fmt.Sprintf("conv_%04d", c.id), "agent_output_audio_format": orPCM16(c.a.OutputFormat),
		"user_input_audio_format": orPCM16(c.a.InputFormat)}})
	c.wg.Add(1)
	go c.pinger()
	if first != "" {
		c.startReply(Reply{Text: first, AudioMS: 300})
	}
	return true
}

// pinger pings at PingInterval and ends the conversation when a ping goes unanswered.
func (c *elConn) pinger() {
	defer c.wg.Done()
	t := time.NewTicker(c.f.opts.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case now := <-t.C:
			c.mu.Lock()
			for id, at := range c.pendingPings {
				if now.Sub(at) > c.f.opts.PongTimeout {
					c.mu.Unlock()
					c.f.violation("ping %d not answered within %s", id, c.f.opts.PongTimeout)
					c.closeWith(websocket.ClosePolicyViolation, "Ping timeout: no pong received")
					return
				}
			}
			c.pingSeq++
			id := c.pingSeq
			c.pendingPings[id] = now
			c.mu.Unlock()
			c.f.mu.Lock()
			c.f.pings++
			c.f.mu.Unlock()
			ping := map[string]any{"event_id": id}
			if id > 1 {
				ping["ping_ms"] = 40
			}
			if c.send(elevenlabs.TypePing, map[string]any{"type": elevenlabs.TypePing, "ping_event": ping}) != nil {
				return
			}
		}
	}
}

// audio feeds the platform's VAD: speech over the agent interrupts it, the end of a caller turn
// starts the reply.
func (c *elConn) audio(pcm []int16) {
	c.mu.Lock()
	ms := len(pcm) * 1000 / c.inRate
	started, stopped := c.vad.feed(pcm, ms, c.f.opts.SilenceMS)
	c.mu.Unlock()
	turn := c.turns.current()
	if started && turn != nil {
		turn.stop()
	}
	if stopped {
		c.send(elevenlabs.TypeUserTranscript, map[string]any{"type": elevenlabs.TypeUserTranscript,
			"user_transcription_event": map[string]any{"user_transcript": c.f.script.callerTranscript("(caller speech)")}})
		c.startTurn()
	}
}

func (c *elConn) startTurn() { c.startReply(c.f.script.reply()) }

// startReply runs a reply as the next agent response, after any response still finishing.
func (c *elConn) startReply(reply Reply) {
	c.turns.start(func(t *turn) { c.runReply(&elTurn{turn: t}, reply) })
}

func (c *elConn) runReply(t *elTurn, reply Reply) {
	for {
		switch {
		case reply.CloseCode != 0:
			c.closeWith(reply.CloseCode, reply.CloseReason)
			return
		case reply.Drop && reply.DropAfter == 0:
			c.ws.UnderlyingConn().Close()
			return
		case reply.Hang:
			return
		case reply.Error != nil:
			c.send(elevenlabs.TypeError, map[string]any{"type": elevenlabs.TypeError,
				"error_event": map[string]any{"error_type": reply.Error.Code, "message": reply.Error.Message}})
			return
		}
		c.mu.Lock()
		c.event++
		t.event = c.event
		c.mu.Unlock()
		if !c.speak(t, reply) || c.interrupted(t) {
			return
		}
		if len(reply.Calls) == 0 {
			return
		}
		if !c.callTools(t, reply.Calls) {
			return
		}
		reply = c.f.script.reply() // the agent goes on after its tools answered
	}
}

// interrupted reports the interruption if the caller spoke over the response: an interruption
// event, then one more chunk of the interrupted audio already in flight, then the correction.
func (c *elConn) interrupted(t *elTurn) bool {
	if !t.cancelled() {
		return false
	}
	c.mu.Lock()
	c.calls.drop()
	rate := c.outRate
	c.mu.Unlock()
	// One write: the chunk was in flight behind the interruption, so no other message
	// (the caller's next transcript) goes between them.
	intr, _ := json.Marshal(map[string]any{"type": elevenlabs.TypeInterruption, "interruption_event": map[string]any{"event_id": t.event}})
	stale, _ := json.Marshal(map[string]any{"type": elevenlabs.TypeAudio, "audio_event": map[string]any{
		"audio_base_64": agent.EncodePCM(Tone(rate/10, rate, 0)), "event_id": t.event}})
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.writeLocked(websocket.TextMessage, elevenlabs.TypeInterruption, intr) == nil {
		c.writeLocked(websocket.TextMessage, elevenlabs.TypeAudio, stale)
	}
	return true
}

// speak streams the reply's audio, its agent_response with the first chunk; false when the
// connection dropped.
func (c *elConn) speak(t *elTurn, reply Reply) bool {
	c.mu.Lock()
	rate := c.outRate
	c.mu.Unlock()
	_, end := reply.play(t.cancel, func() int { return rate }, func(ch chunk) bool {
		c.send(elevenlabs.TypeAudio, map[string]any{"type": elevenlabs.TypeAudio, "audio_event": map[string]any{
			"audio_base_64": agent.EncodePCM(ch.pcm), "event_id": t.event}})
		if ch.i == 0 && reply.Text != "" {
			c.send(elevenlabs.TypeAgentResponse, map[string]any{"type": elevenlabs.TypeAgentResponse,
				"agent_response_event": map[string]any{"agent_response": reply.Text, "event_id": t.event}})
		}
		return !c.dropAt(reply, ch.i)
	})
	return end != playStopped
}

// callTools sends one client_tool_call per call and waits for every result (or the tool
// timeout); false when the turn was interrupted or the connection ended.
func (c *elConn) callTools(t *elTurn, calls []Call) bool {
	c.mu.Lock()
	done := c.calls.batch()
	var msgs []map[string]any
	for _, call := range calls {
		if len(c.a.Tools) > 0 && !slices.ContainsFunc(c.a.Tools, func(x elevenlabs.ToolConfig) bool { return x.Name == call.Name }) {
			c.f.violation("script calls %s, which agent %s does not declare", call.Name, c.a.ID)
		}
		id := c.calls.add("toolu_%02d_%03d", c.id)
		var params any
		json.Unmarshal([]byte(call.Arguments), &params)
		msgs = append(msgs, map[string]any{"type": elevenlabs.TypeClientToolCall, "client_tool_call": map[string]any{
			"tool_name": call.Name, "tool_call_id": id, "parameters": params, "expects_response": true}})
	}
	c.mu.Unlock()
	for _, m := range msgs {
		c.send(elevenlabs.TypeClientToolCall, m)
	}
	timeout := time.NewTimer(c.f.opts.ToolTimeout)
	defer timeout.Stop()
	select {
	case <-done:
		return true
	case <-t.cancel:
		c.interrupted(t)
		return false
	case <-timeout.C:
		c.mu.Lock()
		missing := c.calls.drop()
		c.mu.Unlock()
		c.f.violation("no client_tool_result for %s within %s", strings.Join(missing, ", "), c.f.opts.ToolTimeout)
		return true // the agent goes on without the result
	case <-c.stop:
		return false
	}
}

func (c *elConn) toolResult(msg map[string]any) {
	id, _ := msg["tool_call_id"].(string)
	if _, ok := msg["result"].(string); !ok {
		c.f.violation("client_tool_result %s: result is %T, want a string", id, msg["result"])
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.calls.answer(id) {
		c.f.violation("client_tool_result for unknown tool_call_id %q: ignored", id)
		return
	}
	c.calls.settle()
}
