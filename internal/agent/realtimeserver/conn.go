package realtimeserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/openai/wire"
)

// maxBuffer bounds the input buffer (15 minutes of 24 kHz audio, like the real API's limit).
const maxBuffer = 15 * 60 * wire.SampleRate

// item is a conversation item the server keeps for truncate and delete.
type item struct {
	role    string
	typ     string
	samples int // assistant audio sent so far
}

// call is a function call the agent made.
type call struct {
	name     string
	answered bool
}

// Conn is one client connection. Its reader goroutine handles client events in order; a
// response goroutine runs the agent's responses one at a time.
type Conn struct {
	s     *Server
	p     *Provider
	id    int
	ws    *websocket.Conn
	log   *slog.Logger
	em    *wire.Emitter
	names wire.Names
	wmu   sync.Mutex
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
	agent Agent
	respQ chan *Response

	mu       sync.Mutex
	set      settings
	spoke    bool // assistant audio sent: the voice is frozen
	buf      []int16
	total    int64 // caller samples appended since the connection opened
	vad      VAD
	vadItem  string
	vadStart int64 // sample where the current VAD turn starts
	hearing  bool  // the turn being spoken is open to the agent's Listen
	lastItem string
	items    map[string]*item
	calls    map[string]*call
	batch    []string     // call ids of the last response
	turns    []Turn       // committed since the last response was created
	outputs  []ToolOutput // received since the last response was created
	active   *Response
	pendAuto bool // server VAD wants a response once the active one is done
}

func newConn(s *Server, id int, ws *websocket.Conn, model string) *Conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn{s: s, p: &s.cfg.Provider, id: id, ws: ws, ctx: ctx, stop: cancel,
		log:   s.log.With(slog.Int("conn", id)),
		names: wire.NamesFor(s.cfg.Provider.Schema),
		respQ: make(chan *Response, 4),
		set:   s.cfg.Provider.defaults(model),
		items: map[string]*item{}, calls: map[string]*call{},
	}
	c.em = wire.NewEmitter(s.cfg.Provider.Schema, fmt.Sprintf("%s%d_", s.cfg.IDPrefix, id), c.write)
	c.resetVADLocked()
	return c
}

// ID is the connection's number on its server (1, 2, …).
func (c *Conn) ID() int { return c.id }

// Context is cancelled when the connection ends.
func (c *Conn) Context() context.Context { return c.ctx }

// Logger is the connection's logger.
func (c *Conn) Logger() *slog.Logger { return c.log }

// Transcript sends the caller's transcript of a committed turn.
func (c *Conn) Transcript(itemID, text string) error {
	return c.em.Send(&wire.ServerEvent{Type: wire.InputTranscriptDone, ItemID: itemID, ContentIndex: wire.Int(0), Transcript: wire.Str(text)})
}

// Drop closes the TCP socket without a close frame, as a network failure would.
func (c *Conn) Drop() { c.ws.UnderlyingConn().Close() }

// CloseWith ends the connection with a close frame of code and reason (cut to what a close frame
// holds), as a provider does for a revoked key or an exhausted quota.
func (c *Conn) CloseWith(code int, reason string) {
	if len(reason) > 123 {
		reason = strings.ToValidUTF8(reason[:123], "")
	}
	c.wmu.Lock()
	c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
	c.wmu.Unlock()
	c.ws.Close()
}

func (c *Conn) write(ev *wire.ServerEvent) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if o := c.s.cfg.Observer; o != nil {
		o.Sent(c.id, ev) // before the write: a client reacting to an event finds it observed
	}
	c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := c.ws.WriteMessage(websocket.TextMessage, b); err != nil {
		c.stop()
		return err
	}
	return nil
}

func (c *Conn) serve() {
	c.agent = c.s.cfg.Responder.Open(c)
	c.agent.Configure(c.set.Session)
	c.wg.Add(1)
	go c.respond()
	c.greet()
	c.ws.SetPingHandler(func(data string) error {
		c.ws.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return c.ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(5*time.Second))
	})
	for c.ctx.Err() == nil {
		c.ws.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
		typ, data, err := c.ws.ReadMessage()
		if err != nil {
			break
		}
		if typ != websocket.TextMessage {
			c.observe("(binary frame)", nil)
			c.reject("", &invalid{wire.CodeInvalidValue, "Binary frames are not supported; send JSON text events.", ""})
			continue
		}
		c.handle(data)
	}
	c.stop()
	c.ws.Close()
	c.mu.Lock()
	if c.active != nil {
		c.active.stop("connection closed")
	}
	c.mu.Unlock()
	c.wg.Wait()
	c.agent.Close()
}

func (c *Conn) greet() {
	for _, g := range c.p.Greeting {
		switch g {
		case wire.SessionCreated:
			c.em.Send(&wire.ServerEvent{Type: wire.SessionCreated, Session: c.sessionJSON()})
		case wire.ConversationCreated:
			c.em.Send(&wire.ServerEvent{Type: wire.ConversationCreated,
				Conversation: &wire.Conversation{ID: c.em.NewID("conv"), Object: "realtime.conversation"}})
		case wire.Ping:
			c.em.Send(&wire.ServerEvent{Type: wire.Ping, Timestamp: time.Now().UnixMilli()})
		}
	}
}

func (c *Conn) sessionJSON() json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[string]any{"id": fmt.Sprintf("sess_%s%d", c.s.cfg.IDPrefix, c.id)}
	for k, v := range c.set.effective {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return b
}

// reject sends the error the real API sends for a client event (eventID "" when it had none).
func (c *Conn) reject(eventID string, bad *invalid) {
	d := &wire.ErrorDetail{Type: "invalid_request_error", Code: bad.code, Message: bad.message}
	if bad.param != "" {
		d.Param = wire.Str(bad.param)
	}
	if eventID != "" {
		d.EventID = wire.Str(eventID)
	}
	c.em.Send(&wire.ServerEvent{Type: wire.Error, Error: d})
}

func (c *Conn) observe(typ string, data []byte) {
	if o := c.s.cfg.Observer; o != nil {
		o.Received(c.id, typ, data)
	}
}

func (c *Conn) misuse(format string, args ...any) {
	if o := c.s.cfg.Observer; o != nil {
		o.Misuse(c.id, fmt.Sprintf(format, args...))
	}
}

func (c *Conn) handle(data []byte) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var ev map[string]any
	if err := dec.Decode(&ev); err != nil || ev == nil {
		c.observe("(invalid json)", nil)
		c.reject("", &invalid{"invalid_json", "We could not parse the JSON body of your request.", ""})
		return
	}
	typ, _ := ev["type"].(string)
	id, _ := ev["event_id"].(string)
	c.observe(typ, data)

	switch typ {
	case wire.SessionUpdate:
		c.sessionUpdate(id, ev, data)
	case wire.InputAudioAppend:
		c.appendAudio(id, ev)
	case wire.InputAudioCommit:
		c.commit(id)
	case wire.InputAudioClear:
		c.mu.Lock()
		c.buf = c.buf[:0]
		c.resetVADLocked()
		c.hearing = false
		c.mu.Unlock()
		if l, ok := c.agent.(Listener); ok {
			l.Clear()
		}
		c.em.Send(&wire.ServerEvent{Type: wire.InputCleared})
	case wire.ResponseCreate:
		c.responseCreate(id, ev)
	case wire.ResponseCancel:
		c.responseCancel(id, ev)
	case wire.ItemCreate:
		c.itemCreate(id, ev, data)
	case wire.ItemTruncate:
		c.truncate(id, ev)
	case wire.ItemDelete:
		if !c.p.History {
			c.reject(id, unknownEvent(typ))
			return
		}
		c.itemDelete(id, ev)
	case "":
		c.reject(id, missing("type"))
	default:
		c.reject(id, unknownEvent(typ))
	}
}

func unknownEvent(typ string) *invalid {
	return &invalid{wire.CodeInvalidValue, fmt.Sprintf("Invalid value: '%s'. Unknown event type.", typ), "type"}
}

// ---- session ----

func (c *Conn) sessionUpdate(id string, ev map[string]any, data []byte) {
	s, ok := ev["session"].(map[string]any)
	if !ok {
		c.reject(id, missing("session"))
		return
	}
	// The tools verbatim: their parameters keep the designer's property order.
	var verbatim struct {
		Session struct {
			Tools []wire.Tool `json:"tools"`
		} `json:"session"`
	}
	json.Unmarshal(data, &verbatim)
	c.mu.Lock()
	next, bad := c.p.validate(c.set, s, verbatim.Session.Tools, c.spoke)
	if bad == nil {
		vadChanged := next.ServerVAD != c.set.ServerVAD || next.SilenceMS != c.set.SilenceMS || next.PrefixMS != c.set.PrefixMS
		c.set = next
		if vadChanged {
			c.resetVADLocked()
		}
	}
	c.mu.Unlock()
	if bad != nil {
		c.reject(id, bad)
		return
	}
	c.agent.Configure(next.Session)
	c.log.Debug("session updated", slog.Int("tools", len(next.Tools)), slog.Bool("server_vad", next.ServerVAD))
	c.em.Send(&wire.ServerEvent{Type: wire.SessionUpdated, Session: c.sessionJSON()})
}

func (c *Conn) resetVADLocked() {
	c.vad = nil
	if c.set.ServerVAD && c.s.cfg.VAD != nil {
		c.vad = c.s.cfg.VAD(c.set.Session)
	}
	c.vadItem = ""
}

// ---- caller audio ----

func sampleTime(n int64) time.Duration { return time.Duration(n) * time.Second / wire.SampleRate }

func (c *Conn) appendAudio(id string, ev map[string]any) {
	b64, _ := ev["audio"].(string)
	pcm, err := agent.DecodePCM(b64)
	if err != nil || b64 == "" {
		c.reject(id, &invalid{wire.CodeInvalidValue, "Invalid 'audio'. Expected base64-encoded PCM16 audio.", "audio"})
		return
	}
	c.mu.Lock()
	if len(c.buf)+len(pcm) > maxBuffer {
		c.mu.Unlock()
		c.reject(id, &invalid{"input_audio_buffer_full", "The input audio buffer is full; commit or clear it.", "audio"})
		return
	}
	start := c.total
	c.buf = append(c.buf, pcm...)
	c.total += int64(len(pcm))
	if c.vad == nil {
		c.hearing = true // manual turns: every appended sample belongs to the next commit
	}
	listen := c.hearing
	var events []SpeechEvent
	if c.vad != nil {
		events = c.vad.Feed(pcm, sampleTime(start))
		if c.vadItem == "" && !c.vad.Speaking() {
			// Outside speech only the prefix padding is kept.
			keep := int64(c.set.PrefixMS)*wire.SampleRate/1000 + wire.SampleRate/10
			if n := int64(len(c.buf)); n > keep {
				c.buf = append(c.buf[:0], c.buf[n-keep:]...)
			}
		}
	}
	c.mu.Unlock()
	if l, ok := c.agent.(Listener); ok && listen {
		l.Listen(pcm)
	}
	for _, e := range events {
		c.vadEvent(e)
	}
}

// vadEvent runs server turn detection: speech_started (cancelling a response the caller talks
// over), then speech_stopped, the commit and, when configured, a response.
func (c *Conn) vadEvent(e SpeechEvent) {
	if e.Start {
		c.mu.Lock()
		c.vadItem = c.em.NewID("item")
		bufStart := c.total - int64(len(c.buf))
		c.vadStart = max(int64(e.Padded*wire.SampleRate/time.Second), bufStart)
		var heard []int16
		if !c.hearing {
			c.hearing = true
			heard = slices.Clone(c.buf[c.vadStart-bufStart:])
		}
		item, active, interrupt := c.vadItem, c.active, c.set.InterruptResponse
		c.mu.Unlock()
		if l, ok := c.agent.(Listener); ok && heard != nil {
			l.Listen(heard)
		}
		c.em.Send(&wire.ServerEvent{Type: wire.SpeechStarted, AudioStartMS: wire.Int(int(e.Padded.Milliseconds())), ItemID: item})
		if active != nil && interrupt {
			active.stop("turn_detected")
		}
		return
	}
	c.mu.Lock()
	item := c.vadItem
	c.vadItem = ""
	if item == "" {
		c.mu.Unlock()
		return
	}
	bufStart := c.total - int64(len(c.buf))
	pcm := slices.Clone(c.buf[max(0, int(c.vadStart-bufStart)):])
	c.buf = c.buf[:0]
	c.hearing = false
	auto := c.set.CreateResponse
	c.mu.Unlock()
	c.em.Send(&wire.ServerEvent{Type: wire.SpeechStopped, AudioEndMS: wire.Int(int(e.At.Milliseconds())), ItemID: item})
	c.commitTurn(Turn{ItemID: item, PCM: pcm})
	if auto {
		c.autoResponse()
	}
}

func (c *Conn) commit(id string) {
	c.mu.Lock()
	if len(c.buf) < wire.SampleRate/10 {
		n := len(c.buf)
		c.mu.Unlock()
		c.reject(id, &invalid{wire.CodeCommitEmpty, fmt.Sprintf("Error committing input audio buffer: buffer too small. Expected at least 100ms of audio, but buffer only has %.2fms of audio.",
			float64(n)*1000/wire.SampleRate), ""})
		return
	}
	pcm := slices.Clone(c.buf)
	c.buf = c.buf[:0]
	item := c.vadItem
	c.vadItem = ""
	c.hearing = false
	c.mu.Unlock()
	if item == "" {
		item = c.em.NewID("item")
	}
	c.commitTurn(Turn{ItemID: item, PCM: pcm})
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// commitTurn adds a caller item (after input_audio_buffer.committed for buffered audio) and gives
// the turn to the agent.
func (c *Conn) commitTurn(t Turn) {
	c.mu.Lock()
	prev := strPtr(c.lastItem)
	c.lastItem = t.ItemID
	c.items[t.ItemID] = &item{role: "user", typ: "message"}
	c.mu.Unlock()
	content := wire.Content{Type: "input_audio", Transcript: nil}
	if t.Text != "" {
		content = wire.Content{Type: "input_text", Text: t.Text}
	}
	if !t.Message {
		c.em.Send(&wire.ServerEvent{Type: wire.InputCommitted, ItemID: t.ItemID, PreviousItemID: prev})
	}
	c.added(prev, &wire.Item{ID: t.ItemID, Object: "realtime.item", Type: "message", Status: "completed", Role: "user", Content: []wire.Content{content}})
	c.agent.Commit(t)
	// Only now may a response answer the turn: the agent has it.
	c.mu.Lock()
	c.turns = append(c.turns, t)
	c.mu.Unlock()
}

// added announces a new conversation item in the schema's words.
func (c *Conn) added(prev *string, it *wire.Item) {
	c.em.Send(&wire.ServerEvent{Type: c.names.ItemAdded, PreviousItemID: prev, Item: it})
	if c.names.ItemDone {
		c.em.Send(&wire.ServerEvent{Type: wire.ItemDone, PreviousItemID: prev, Item: it})
	}
}

// ---- conversation items ----

func (c *Conn) itemCreate(id string, ev map[string]any, data []byte) {
	it, ok := ev["item"].(map[string]any)
	if !ok {
		c.reject(id, missing("item"))
		return
	}
	var verbatim struct {
		Item wire.Item `json:"item"`
	}
	json.Unmarshal(data, &verbatim)
	out := verbatim.Item
	out.Object, out.Status = "realtime.item", "completed"
	if out.ID == "" {
		out.ID = c.em.NewID("item")
	}
	typ, _ := it["type"].(string)
	role := ""
	batchDone := false
	switch typ {
	case "function_call_output":
		callID, _ := it["call_id"].(string)
		v, has := it["output"]
		output, isString := v.(string)
		switch {
		case !has:
			c.reject(id, missing("item.output"))
			return
		case !isString:
			c.reject(id, &invalid{"invalid_type", "Invalid type for 'item.output': expected a string.", "item.output"})
			return
		}
		c.mu.Lock()
		cl := c.calls[callID]
		first := cl != nil && !cl.answered
		if first {
			cl.answered = true
			c.outputs = append(c.outputs, ToolOutput{CallID: callID, Name: cl.name, Output: output})
			batchDone = c.p.AutoFollowUp && len(c.batch) > 0 && !slices.ContainsFunc(c.batch, func(id string) bool { return !c.calls[id].answered })
			if batchDone {
				c.batch = nil
			}
		}
		c.mu.Unlock()
		if cl == nil {
			c.reject(id, &invalid{wire.CodeInvalidValue, fmt.Sprintf("Tool call ID '%s' not found in conversation.", callID), "item.call_id"})
			return
		}
		if !first {
			c.misuse("second function_call_output for %s", callID)
		}
	case "message":
		role, _ = it["role"].(string)
		if !slices.Contains([]string{"user", "assistant", "system"}, role) {
			c.reject(id, invalidValue("item.role", it["role"], []string{"user", "assistant", "system"}))
			return
		}
		text, audio, bad := messageContent(it["content"])
		if bad != nil {
			c.reject(id, bad)
			return
		}
		if role == "user" {
			c.commitTurn(Turn{ItemID: out.ID, PCM: audio, Text: text, Message: true})
			return
		}
	case "function_call":
		if !c.p.History {
			c.reject(id, invalidValue("item.type", typ, []string{"message", "function_call", "function_call_output"}))
			return
		}
		// A call the client adds to the history (replaying a conversation): kept, never answered.
	default:
		c.reject(id, invalidValue("item.type", typ, []string{"message", "function_call", "function_call_output"}))
		return
	}
	c.mu.Lock()
	prev := strPtr(c.lastItem)
	c.lastItem = out.ID
	c.items[out.ID] = &item{role: role, typ: typ}
	c.mu.Unlock()
	c.added(prev, &out)
	if batchDone {
		c.autoResponse() // this server continues by itself once the batch is answered
	}
}

// messageContent reads a message's text and audio content.
func messageContent(v any) (string, []int16, *invalid) {
	parts, _ := v.([]any)
	var text strings.Builder
	var audio []int16
	for _, p := range parts {
		m, _ := p.(map[string]any)
		switch m["type"] {
		case "input_text", "text", "output_text":
			s, _ := m["text"].(string)
			text.WriteString(s + " ")
		case "input_audio":
			b64, _ := m["audio"].(string)
			pcm, err := agent.DecodePCM(b64)
			if err != nil {
				return "", nil, &invalid{wire.CodeInvalidValue, "Invalid 'item.content.audio': expected base64-encoded PCM16 audio.", "item.content"}
			}
			audio = append(audio, pcm...)
		default:
			return "", nil, &invalid{wire.CodeInvalidValue, fmt.Sprintf("Invalid value: '%v'. Unsupported content type.", m["type"]), "item.content.type"}
		}
	}
	return strings.TrimSpace(text.String()), audio, nil
}

func (c *Conn) truncate(id string, ev map[string]any) {
	itemID, _ := ev["item_id"].(string)
	end, ok := ev["audio_end_ms"].(json.Number)
	endMS, err := end.Int64()
	if !ok || err != nil || endMS < 0 {
		c.reject(id, invalidValue("audio_end_ms", ev["audio_end_ms"], nil))
		return
	}
	if ci, _ := ev["content_index"].(json.Number); ci != "0" {
		c.reject(id, invalidValue("content_index", ev["content_index"], []string{"0"}))
		return
	}
	c.mu.Lock()
	it := c.items[itemID]
	var audioMS int
	assistantAudio := it != nil && it.role == "assistant" && it.samples > 0
	if it != nil {
		audioMS = it.samples * 1000 / wire.SampleRate
	}
	c.mu.Unlock()
	switch {
	case it == nil:
		c.reject(id, &invalid{"item_not_found", "Item with item_id not found: " + itemID, "item_id"})
		return
	case !assistantAudio:
		c.reject(id, &invalid{"unsupported_content_type", "Only assistant messages with audio content can be truncated.", "item_id"})
		return
	case int(endMS) > audioMS:
		c.reject(id, &invalid{wire.CodeInvalidValue, fmt.Sprintf("Audio content of %dms is already shorter than %dms", audioMS, endMS), "audio_end_ms"})
		return
	}
	if t, ok := c.agent.(Truncater); ok {
		t.Truncate(itemID, int(endMS))
	}
	c.em.Send(&wire.ServerEvent{Type: wire.ItemTruncated, ItemID: itemID, ContentIndex: wire.Int(0), AudioEndMS: wire.Int(int(endMS))})
}

func (c *Conn) itemDelete(id string, ev map[string]any) {
	itemID, _ := ev["item_id"].(string)
	c.mu.Lock()
	_, ok := c.items[itemID]
	delete(c.items, itemID)
	c.mu.Unlock()
	if !ok {
		c.reject(id, &invalid{"item_not_found", "Item with item_id not found: " + itemID, "item_id"})
		return
	}
	c.em.Send(&wire.ServerEvent{Type: wire.ItemDeleted, ItemID: itemID})
}

// ---- responses ----

func (c *Conn) responseCreate(id string, ev map[string]any) {
	if r, ok := ev["response"]; ok && r != nil {
		if _, isObj := r.(map[string]any); !isObj {
			c.reject(id, &invalid{"invalid_type", "Invalid type for 'response': expected an object.", "response"})
			return
		}
	}
	c.mu.Lock()
	active := c.active
	var unanswered []string
	for _, callID := range c.batch {
		if !c.calls[callID].answered {
			unanswered = append(unanswered, callID)
		}
	}
	c.mu.Unlock()
	if active != nil {
		c.reject(id, &invalid{wire.CodeActiveResponse, fmt.Sprintf(c.p.ConflictMessage, active.ID()), ""})
		return
	}
	if len(unanswered) > 0 {
		c.misuse("response.create before the function_call_output of %s", strings.Join(unanswered, ", "))
		if c.p.HangOnPartialBatch {
			return // the real provider never answers: the session hangs
		}
	}
	if a, ok := c.agent.(Admitter); ok {
		if r := a.Admit(id); r != nil {
			if r.Error != nil {
				e := *r.Error
				e.EventID = wire.Str(id)
				c.em.Send(&wire.ServerEvent{Type: wire.Error, Error: &e})
			}
			return
		}
	}
	// Only the response goroutine ends a response, and a pending automatic one starts only
	// while another is active: none can have started since the check above.
	c.mu.Lock()
	c.startLocked(false)
	c.mu.Unlock()
}

// autoResponse is server VAD's response to a committed turn: now, or once the active response
// (being cancelled) is done.
func (c *Conn) autoResponse() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active != nil {
		c.pendAuto = true
		return
	}
	c.startLocked(true)
}

// startLocked sends response.created and hands the response to the response goroutine. The
// state changes and the event that announces them happen under c.mu, so a client reacting to an
// event always finds the server in the state the event announced.
func (c *Conn) startLocked(auto bool) {
	rw, err := c.em.Begin()
	if err != nil {
		return
	}
	r := &Response{c: c, rw: rw, cancel: make(chan struct{}), auto: auto, turns: c.turns, outputs: c.outputs}
	c.turns, c.outputs, c.batch = nil, nil, nil
	c.active = r
	select {
	case c.respQ <- r:
	default: // cannot happen: one response is active at a time
		r.stop("busy")
	}
}

func (c *Conn) responseCancel(id string, ev map[string]any) {
	want, _ := ev["response_id"].(string)
	c.mu.Lock()
	active := c.active
	c.mu.Unlock()
	if active == nil || (want != "" && want != active.ID()) {
		c.reject(id, &invalid{wire.CodeCancelNotActive, "Cancellation failed: no active response found", ""})
		return
	}
	active.stop("client_cancelled")
}

// respond is the response goroutine: one response at a time, in order.
func (c *Conn) respond() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case r := <-c.respQ:
			c.finish(r, c.agent.Respond(r))
		}
	}
}

// finish ends a response with response.done (unless the connection was dropped) and starts the
// automatic response server VAD asked for meanwhile.
func (c *Conn) finish(r *Response, out Outcome) {
	if out.Status == agent.StatusCancelled && out.Reason == "" {
		out.Reason = "client_cancelled"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.active = nil
	if out.Status == "" {
		return
	}
	r.rw.Done(out.Status, out.Reason, out.Failure, out.Usage)
	if c.p.RateLimits {
		c.em.Send(&wire.ServerEvent{Type: wire.RateLimitsUpdated, RateLimits: []wire.RateLimit{
			{Name: "requests", Limit: 1000, Remaining: 999, ResetSeconds: 0.06},
			{Name: "tokens", Limit: 50000, Remaining: 49000, ResetSeconds: 1.2}}})
	}
	auto := c.pendAuto
	c.pendAuto = false
	if auto && c.ctx.Err() == nil {
		c.startLocked(true)
	}
}
