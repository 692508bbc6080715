package agenttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/openai/wire"
)

// Script drives a fake: replies in order, one per response the fake starts.
type Script struct {
	Replies []Reply
	// CallerTranscripts are reported, in order, for committed caller turns when the session asked
	// for input transcription.
	CallerTranscripts []string
	// Key, when set, is the only bearer key (OpenAI family) or x-goog-api-key (Gemini) accepted.
	Key string
	// EchoKey quotes a refused key in the HTTP 401 body (OpenAI family), as a hostile or careless
	// provider would.
	EchoKey bool
}

// Received is one client message as the fake got it (audio replaced by its byte count).
type Received struct {
	Conn int
	Type string
	Raw  json.RawMessage
}

// Handshake is what a client's upgrade request carried.
type Handshake struct {
	Path, Model string
	BetaHeader  string
	Auth        bool // an Authorization (or API key) header was present
}

// OpenAIFake is a loopback OpenAI-family realtime server.
type OpenAIFake struct {
	p      Provider
	script Script
	srv    *httptest.Server
	up     websocket.Upgrader

	traffic
	next       int // next reply
	transcript int // next caller transcript
	errorsSent []wire.ErrorDetail
	conns      map[*openaiConn]bool
	nconn      int
	wg         sync.WaitGroup
	closed     bool
}

// NewOpenAIFake starts a fake for provider p on loopback; it is closed when tb ends.
func NewOpenAIFake(tb testing.TB, p Provider, s Script) *OpenAIFake {
	tb.Helper()
	f := &OpenAIFake{p: p, script: s, conns: map[*openaiConn]bool{}, traffic: traffic{audioType: wire.InputAudioAppend}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serveHTTP))
	tb.Cleanup(f.Close)
	return f
}

// URL is the ws:// endpoint (path /v1/realtime).
func (f *OpenAIFake) URL() string {
	return "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/v1/realtime"
}

// Close drops every connection and stops the server.
func (f *OpenAIFake) Close() {
	f.mu.Lock()
	f.closed = true
	conns := make([]*openaiConn, 0, len(f.conns))
	for c := range f.conns {
		conns = append(conns, c)
	}
	f.mu.Unlock()
	for _, c := range conns {
		c.ws.Close()
	}
	f.wg.Wait()
	f.srv.Close()
}

// DropAll closes every connection's TCP socket without a close frame.
func (f *OpenAIFake) DropAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		c.ws.UnderlyingConn().Close()
	}
}

// ErrorsSent returns the error events the fake sent, in order.
func (f *OpenAIFake) ErrorsSent() []wire.ErrorDetail {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]wire.ErrorDetail(nil), f.errorsSent...)
}

// ErrorCodes returns the codes of ErrorsSent.
func (f *OpenAIFake) ErrorCodes() []string {
	var out []string
	for _, e := range f.ErrorsSent() {
		out = append(out, e.Code)
	}
	return out
}

func (f *OpenAIFake) nextReply() Reply {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.next >= len(f.script.Replies) {
		return Reply{Text: "Okay.", AudioMS: 200}
	}
	r := f.script.Replies[f.next]
	f.next++
	return r
}

func (f *OpenAIFake) nextTranscript(ms int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.transcript >= len(f.script.CallerTranscripts) {
		return fmt.Sprintf("(caller audio %d ms)", ms)
	}
	t := f.script.CallerTranscripts[f.transcript]
	f.transcript++
	return t
}

func httpError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"type": typ, "code": code, "message": msg}})
}

func (f *OpenAIFake) serveHTTP(w http.ResponseWriter, r *http.Request) {
	hs := Handshake{Path: r.URL.Path, Model: r.URL.Query().Get("model"), BetaHeader: r.Header.Get("OpenAI-Beta"),
		Auth: r.Header.Get("Authorization") != ""}
	f.mu.Lock()
	f.handshakes = append(f.handshakes, hs)
	closed := f.closed
	f.mu.Unlock()
	switch {
	case closed:
		httpError(w, http.StatusServiceUnavailable, "server_error", "", "shutting down")
		return
	case f.script.Key != "" && r.Header.Get("Authorization") != "Bearer "+f.script.Key:
		msg := "Incorrect API key provided."
		if f.script.EchoKey { // as a provider that quotes what it was given
			msg = "Incorrect API key provided: " + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + "."
		}
		httpError(w, http.StatusUnauthorized, "invalid_request_error", wire.CodeInvalidAPIKey, msg)
		return
	case r.URL.Path != "/v1/realtime":
		httpError(w, http.StatusNotFound, "invalid_request_error", "not_found", "Unknown path "+r.URL.Path)
		return
	case !f.p.ModelInStart && hs.Model == "":
		httpError(w, http.StatusBadRequest, "invalid_request_error", "missing_model", "Missing required parameter: 'model'.")
		return
	case f.p.BetaHeader && hs.BetaHeader != "realtime=v1":
		httpError(w, http.StatusBadRequest, "invalid_request_error", "beta_required", "The beta realtime API requires the OpenAI-Beta: realtime=v1 header.")
		return
	case !f.p.BetaHeader && hs.BetaHeader != "":
		httpError(w, http.StatusBadRequest, "invalid_request_error", "beta_not_allowed", "The OpenAI-Beta header selects the beta API, which this endpoint does not serve.")
		return
	}
	ws, err := f.up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		ws.Close()
		return
	}
	f.nconn++
	c := &openaiConn{f: f, id: f.nconn, ws: ws, model: hs.Model, items: map[string]*fakeItem{}, calls: map[string]bool{}}
	c.settings = sessionSettings{voice: f.p.DefaultVoice, serverVAD: f.p.DefaultServerVAD, silenceMS: 500, createResp: true, interruptResp: true,
		effective: f.p.defaultSession(hs.Model)}
	f.conns[c] = true
	f.wg.Add(1)
	f.mu.Unlock()
	defer f.wg.Done()
	c.serve()
}

// openaiConn is one client connection of an OpenAIFake.
type openaiConn struct {
	f     *OpenAIFake
	id    int
	ws    *websocket.Conn
	model string
	em    *wire.Emitter
	wmu   sync.Mutex

	mu       sync.Mutex
	started  bool // live variant: session.start received
	settings sessionSettings
	buffered int // caller samples in the input buffer
	vad      vad
	items    map[string]*fakeItem
	calls    map[string]bool // function call ids issued → output received
	batch    []string        // call ids of the last response's batch
	active   *fakeResponse
	wg       sync.WaitGroup // response goroutines
}

type fakeItem struct {
	assistantAudio bool
	samples        int
}

type fakeResponse struct {
	rw     *wire.ResponseWriter
	cancel chan string // reason
	done   chan struct{}
	once   sync.Once
}

func (c *openaiConn) write(ev *wire.ServerEvent) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	// Recorded before the write, so that a client reacting to an event finds it recorded.
	c.f.mu.Lock()
	c.f.sent = append(c.f.sent, ev.Type)
	if ev.Type == wire.Error && ev.Error != nil {
		c.f.errorsSent = append(c.f.errorsSent, *ev.Error)
	}
	c.f.mu.Unlock()
	c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

func (c *openaiConn) serve() {
	defer func() {
		c.ws.Close()
		c.mu.Lock()
		if c.active != nil {
			c.active.stop("connection closed")
		}
		c.mu.Unlock()
		c.wg.Wait()
		c.f.mu.Lock()
		delete(c.f.conns, c)
		c.f.mu.Unlock()
	}()
	c.em = wire.NewEmitter(c.f.p.Schema, fmt.Sprintf("c%d", c.id), c.write)
	if !c.f.p.ModelInStart {
		c.greet()
	}
	for {
		c.ws.SetReadDeadline(time.Now().Add(2 * time.Minute))
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		c.handle(data)
	}
}

func (c *openaiConn) greet() {
	for _, g := range c.f.p.Greeting {
		switch g {
		case wire.SessionCreated:
			c.em.Send(&wire.ServerEvent{Type: wire.SessionCreated, Session: c.sessionJSON()})
		case wire.ConversationCreated:
			c.em.Send(&wire.ServerEvent{Type: wire.ConversationCreated,
				Conversation: &wire.Conversation{ID: c.em.NewID("conv"), Object: "realtime.conversation"}})
		}
	}
	if c.f.p.Schema == wire.SchemaGrok {
		c.em.Send(&wire.ServerEvent{Type: wire.Ping, Timestamp: time.Now().UnixMilli()})
	}
}

func (c *openaiConn) sessionJSON() json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[string]any{"id": fmt.Sprintf("sess_c%d", c.id)}
	for k, v := range c.settings.effective {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return b
}

func (c *openaiConn) reject(eventID string, bad *invalid) {
	d := &wire.ErrorDetail{Type: "invalid_request_error", Code: bad.code, Message: bad.message}
	if bad.param != "" {
		d.Param = wire.Str(bad.param)
	}
	if eventID != "" {
		d.EventID = wire.Str(eventID)
	}
	c.em.Send(&wire.ServerEvent{Type: wire.Error, Error: d})
}

func (c *openaiConn) record(typ string, data []byte) {
	raw := data
	if typ == wire.InputAudioAppend || typ == wire.ItemCreate {
		raw = agent.ElideAudio(data, "audio")
	}
	c.f.mu.Lock()
	c.f.received = append(c.f.received, Received{Conn: c.id, Type: typ, Raw: raw})
	c.f.mu.Unlock()
}

func (c *openaiConn) handle(data []byte) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var ev map[string]any
	if err := dec.Decode(&ev); err != nil {
		c.record("(invalid json)", nil)
		c.reject("", &invalid{"invalid_json", "We could not parse the JSON body of your request.", ""})
		return
	}
	typ, _ := ev["type"].(string)
	id, _ := ev["event_id"].(string)
	c.record(typ, data)

	c.mu.Lock()
	needStart := c.f.p.ModelInStart && !c.started
	c.mu.Unlock()
	if needStart && typ != wire.SessionStart {
		c.reject(id, &invalid{"session_not_started", "The first event must be session.start.", "type"})
		return
	}
	switch typ {
	case wire.SessionStart:
		if !c.f.p.ModelInStart {
			c.reject(id, &invalid{"invalid_value", "Invalid value: 'session.start'.", "type"})
			return
		}
		c.sessionUpdate(id, ev, true)
	case wire.SessionUpdate:
		c.sessionUpdate(id, ev, false)
	case wire.InputAudioAppend:
		c.appendAudio(id, ev)
	case wire.InputAudioCommit:
		c.commit(id)
	case wire.InputAudioClear:
		c.mu.Lock()
		c.buffered = 0
		c.mu.Unlock()
		c.em.Send(&wire.ServerEvent{Type: wire.InputCleared})
	case wire.ResponseCreate:
		c.responseCreate(id)
	case wire.ResponseCancel:
		c.responseCancel(id, ev)
	case wire.ItemCreate:
		c.itemCreate(id, ev)
	case wire.ItemTruncate:
		c.truncate(id, ev)
	default:
		c.reject(id, &invalid{"invalid_value", fmt.Sprintf("Invalid value: '%s'. Unknown event type.", typ), "type"})
	}
}

func (c *openaiConn) sessionUpdate(id string, ev map[string]any, start bool) {
	s, ok := ev["session"].(map[string]any)
	if !ok {
		c.reject(id, &invalid{"missing_required_parameter", "Missing required parameter: 'session'.", "session"})
		return
	}
	c.mu.Lock()
	next, bad := c.f.p.validateSession(c.settings, s, start)
	if bad == nil {
		c.settings = next
		if start {
			c.started = true
		}
	}
	c.mu.Unlock()
	if bad != nil {
		c.reject(id, bad)
		return
	}
	typ := wire.SessionUpdated
	if start {
		typ = wire.SessionCreated
	}
	c.em.Send(&wire.ServerEvent{Type: typ, Session: c.sessionJSON()})
}

func (c *openaiConn) appendAudio(id string, ev map[string]any) {
	b64, _ := ev["audio"].(string)
	pcm, err := agent.DecodePCM(b64)
	if err != nil {
		c.reject(id, &invalid{"invalid_value", "Invalid 'audio'. Expected base64-encoded PCM16 audio.", "audio"})
		return
	}
	ms := len(pcm) * 1000 / wire.SampleRate
	c.mu.Lock()
	c.buffered += len(pcm)
	vadOn, silence := c.settings.serverVAD, c.settings.silenceMS
	var started, stopped bool
	if vadOn {
		started, stopped = c.vad.feed(pcm, ms, silence)
	}
	c.mu.Unlock()
	if started {
		c.em.Send(&wire.ServerEvent{Type: wire.SpeechStarted, AudioStartMS: wire.Int(0), ItemID: c.em.NewID("item")})
		c.mu.Lock()
		active, interrupt := c.active, c.settings.interruptResp
		c.mu.Unlock()
		if active != nil && interrupt {
			active.stop("turn_detected")
		}
	}
	if stopped {
		c.em.Send(&wire.ServerEvent{Type: wire.SpeechStopped, AudioEndMS: wire.Int(0)})
		c.commitBuffer("")
		c.mu.Lock()
		create := c.settings.createResp
		c.mu.Unlock()
		if create {
			c.startWhenIdle()
		}
	}
}

func (c *openaiConn) commit(id string) {
	c.mu.Lock()
	ms := c.buffered * 1000 / wire.SampleRate
	c.mu.Unlock()
	if ms < 100 {
		c.reject(id, &invalid{wire.CodeCommitEmpty, fmt.Sprintf("Error committing input audio buffer: buffer too small. Expected at least 100ms of audio, but buffer only has %.2fms of audio.", float64(ms)), ""})
		return
	}
	c.commitBuffer(id)
}

// commitBuffer turns the input buffer into a user item (committed, item added, transcription).
func (c *openaiConn) commitBuffer(string) {
	c.mu.Lock()
	ms := c.buffered * 1000 / wire.SampleRate
	c.buffered = 0
	transcribe := c.settings.transcription
	c.mu.Unlock()
	itemID := c.em.NewID("item")
	c.em.Send(&wire.ServerEvent{Type: wire.InputCommitted, ItemID: itemID, PreviousItemID: nil})
	item := &wire.Item{ID: itemID, Object: "realtime.item", Type: "message", Status: "completed", Role: "user",
		Content: []wire.Content{{Type: "input_audio", Transcript: nil}}}
	c.em.Send(&wire.ServerEvent{Type: wire.NamesFor(c.f.p.Schema).ItemAdded, Item: item})
	if transcribe {
		c.em.Send(&wire.ServerEvent{Type: wire.InputTranscriptDone, ItemID: itemID, ContentIndex: wire.Int(0), Transcript: wire.Str(c.f.nextTranscript(ms))})
	}
}

func (c *openaiConn) responseCreate(id string) {
	c.mu.Lock()
	active := c.active
	var missing []string
	for _, call := range c.batch {
		if !c.calls[call] {
			missing = append(missing, call)
		}
	}
	c.mu.Unlock()
	if active != nil {
		c.reject(id, &invalid{wire.CodeActiveResponse, fmt.Sprintf(c.f.p.ConflictMessage, active.rw.ID()), ""})
		return
	}
	if len(missing) > 0 {
		c.f.violation("response.create before the function_call_output of %s", strings.Join(missing, ", "))
		if c.f.p.HangOnPartialBatch {
			return // the real provider never answers: the session hangs
		}
	}
	reply := c.f.nextReply()
	if reply.Hang {
		return
	}
	if reply.Error != nil {
		c.em.Send(&wire.ServerEvent{Type: wire.Error, Error: &wire.ErrorDetail{Type: reply.Error.Type, Code: reply.Error.Code,
			Message: reply.Error.Message, EventID: wire.Str(id)}})
		return
	}
	if reply.CloseCode != 0 {
		c.closeWith(reply.CloseCode, reply.CloseReason)
		return
	}
	c.start(reply)
}

// closeWith ends the connection with a close frame, as a provider does for a revoked key or an
// exhausted quota (the reason is cut to what a close frame holds).
func (c *openaiConn) closeWith(code int, reason string) {
	if len(reason) > 123 {
		reason = strings.ToValidUTF8(reason[:123], "")
	}
	c.wmu.Lock()
	c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
	c.wmu.Unlock()
	c.ws.Close()
}

// startWhenIdle starts an automatic (server VAD) response once any active one has ended.
func (c *openaiConn) startWhenIdle() {
	c.mu.Lock()
	active := c.active
	c.mu.Unlock()
	if active == nil {
		c.start(c.f.nextReply())
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		<-active.done
		c.mu.Lock()
		busy := c.active != nil
		c.mu.Unlock()
		if !busy {
			c.start(c.f.nextReply())
		}
	}()
}

// start begins a response. State changes and the events that announce them happen under c.mu,
// so a client reacting to an event always finds the fake in the state the event announced.
func (c *openaiConn) start(reply Reply) {
	c.mu.Lock()
	rw, err := c.em.Begin()
	if err != nil {
		c.mu.Unlock()
		return
	}
	r := &fakeResponse{rw: rw, cancel: make(chan string, 1), done: make(chan struct{})}
	c.active = r
	c.batch = nil
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(r.done)
		status, reason := c.run(r, reply)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.active = nil
		if status == "" { // dropped
			return
		}
		var failure *wire.ErrorDetail
		if reply.Fail != nil && status == agent.StatusFailed {
			failure = &wire.ErrorDetail{Type: reply.Fail.Type, Code: reply.Fail.Code, Message: reply.Fail.Message}
		}
		audioTokens := rw.AudioMS() / 50
		usage := &wire.Usage{InputTokens: 120, OutputTokens: 20 + audioTokens, TotalTokens: 140 + audioTokens,
			InputTokenDetails:  &wire.TokenDetails{TextTokens: 100, AudioTokens: 20},
			OutputTokenDetails: &wire.TokenDetails{TextTokens: 20, AudioTokens: audioTokens}}
		rw.Done(status, reason, failure, usage)
		if c.f.p.Schema != wire.SchemaGrok {
			c.em.Send(&wire.ServerEvent{Type: wire.RateLimitsUpdated, RateLimits: []wire.RateLimit{
				{Name: "requests", Limit: 1000, Remaining: 999, ResetSeconds: 0.06},
				{Name: "tokens", Limit: 50000, Remaining: 49000, ResetSeconds: 1.2}}})
		}
	}()
}

func (r *fakeResponse) stop(reason string) {
	r.once.Do(func() { r.cancel <- reason })
}

// run produces one response; it returns the final status and reason, or "" when the connection
// was dropped.
func (c *openaiConn) run(r *fakeResponse, reply Reply) (status, reason string) {
	if reply.Fail != nil {
		return agent.StatusFailed, ""
	}
	if reply.Drop && reply.DropAfter == 0 {
		c.ws.UnderlyingConn().Close()
		return "", ""
	}
	chunkMS := reply.chunkMS()
	n := (reply.audioMS() + chunkMS - 1) / chunkMS
	if n > 0 {
		c.mu.Lock()
		itemID, err := r.rw.BeginAudio()
		if err == nil {
			c.items[itemID] = &fakeItem{assistantAudio: true}
		}
		c.mu.Unlock()
		if err != nil {
			return "", ""
		}
		pieces := reply.pieces(n)
		sent := 0
		for i := 0; i < n; i++ {
			timer := time.NewTimer(reply.Pace)
			select {
			case reason := <-r.cancel:
				timer.Stop()
				return agent.StatusCancelled, reason
			case <-timer.C:
			}
			ms := min(chunkMS, reply.audioMS()-i*chunkMS)
			pcm := Tone(ms*wire.SampleRate/1000, wire.SampleRate, sent)
			c.mu.Lock()
			err := r.rw.Audio(pcm)
			sent += len(pcm)
			c.items[itemID].samples = sent
			c.mu.Unlock()
			if err != nil {
				return "", ""
			}
			if pieces[i] != "" {
				r.rw.Transcript(pieces[i])
			}
			if reply.Drop && i+1 == reply.DropAfter {
				c.ws.UnderlyingConn().Close()
				return "", ""
			}
		}
	}
	select {
	case reason := <-r.cancel:
		return agent.StatusCancelled, reason
	default:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, call := range reply.Calls {
		id, err := r.rw.FunctionCall(call.Name, call.Arguments)
		if err != nil {
			return "", ""
		}
		c.calls[id] = false
		c.batch = append(c.batch, id)
	}
	return agent.StatusCompleted, ""
}

func (c *openaiConn) responseCancel(id string, ev map[string]any) {
	want, _ := ev["response_id"].(string)
	c.mu.Lock()
	active := c.active
	c.mu.Unlock()
	if active == nil || (want != "" && want != active.rw.ID()) {
		c.reject(id, &invalid{wire.CodeCancelNotActive, "Cancellation failed: no active response found", ""})
		return
	}
	active.stop("client_cancelled")
}

func (c *openaiConn) itemCreate(id string, ev map[string]any) {
	item, _ := ev["item"].(map[string]any)
	typ, _ := item["type"].(string)
	switch typ {
	case "function_call_output":
		callID, _ := item["call_id"].(string)
		if _, isString := item["output"].(string); !isString {
			c.reject(id, &invalid{"invalid_type", "Invalid type for 'item.output': expected a string.", "item.output"})
			return
		}
		c.mu.Lock()
		answered, known := c.calls[callID]
		if known {
			c.calls[callID] = true
		}
		c.mu.Unlock()
		if !known {
			c.reject(id, &invalid{wire.CodeInvalidValue, fmt.Sprintf("Tool call ID '%s' not found in conversation.", callID), "item.call_id"})
			return
		}
		if answered {
			c.f.violation("second function_call_output for %s", callID)
		}
	case "message":
	default:
		c.reject(id, invalidValue("item.type", typ, []string{"message", "function_call", "function_call_output"}))
		return
	}
	itemID := c.em.NewID("item")
	out := &wire.Item{ID: itemID, Object: "realtime.item", Type: typ, Status: "completed"}
	if callID, ok := item["call_id"].(string); ok {
		out.CallID = callID
	}
	c.em.Send(&wire.ServerEvent{Type: wire.NamesFor(c.f.p.Schema).ItemAdded, Item: out})
}

func (c *openaiConn) truncate(id string, ev map[string]any) {
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
	if it != nil {
		audioMS = it.samples * 1000 / wire.SampleRate
	}
	c.mu.Unlock()
	switch {
	case it == nil:
		c.reject(id, &invalid{"item_not_found", fmt.Sprintf("Item with item_id not found: %s", itemID), "item_id"})
		return
	case !it.assistantAudio:
		c.reject(id, &invalid{"unsupported_content_type", "Only assistant messages with audio content can be truncated.", "item_id"})
		return
	case int(endMS) > audioMS:
		c.reject(id, &invalid{wire.CodeInvalidValue, fmt.Sprintf("Audio content of %dms is already shorter than %dms", audioMS, endMS), "audio_end_ms"})
		return
	}
	c.em.Send(&wire.ServerEvent{Type: wire.ItemTruncated, ItemID: itemID, ContentIndex: wire.Int(0), AudioEndMS: wire.Int(int(endMS))})
}
