package elevenlabs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/internal/socket"
)

// Options configure an Adapter.
type Options struct {
	URL     string // conversation WebSocket; DefaultURL when empty
	APIURL  string // REST base; derived from URL (wss→https, same host) when empty
	AgentID string // the platform agent provisioned for the task
	// Key is the API key: with one, the adapter checks the agent's configuration and connects
	// through a signed URL (a private agent); without, it connects by agent id (a public agent).
	Key string
	// Language overrides the agent's language ("en"); empty leaves the platform's.
	Language string
	// SkipAgentCheck connects without comparing the platform agent's tools, formats and
	// overrides with the task (the check needs the key's convai read permission).
	SkipAgentCheck bool
	// ResponseIdle ends an agent response when none of its audio came for this long after its
	// text (the protocol has no end-of-response event; default 700 ms).
	ResponseIdle time.Duration
	Timeouts     Timeouts
	EventLimit   int // undelivered events before an overflow failure (default 8192)
	HTTPClient   *http.Client
}

// Timeouts bound every wait (zero fields take the defaults); the handshake is the agent check,
// the signed URL, the dial and the metadata.
type Timeouts = socket.Timeouts

// Adapter is an agent.Adapter for one ElevenLabs Agents Platform conversation.
//
// The platform takes turns itself (its ASR and turn model hear every caller frame; StartTurn
// and EndTurn send nothing) and reports barge-in with an interruption event. Agent responses
// have no ids and no end event: each is named by the event_id its audio carries ("ev_7"), and
// ends when another response, a tool call, the caller's transcript or an interruption comes, or
// when ResponseIdle passes without its audio.
type Adapter struct {
	opts    Options
	to      Timeouts
	sockOpt socket.Options
	stream  *socket.EventStream
	idle    time.Duration

	mu       sync.Mutex
	log      *slog.Logger
	conn     *socket.Conn
	ready    bool
	hs       chan error
	closed   bool
	lost     bool
	format   agent.Format
	convID   string
	inRate   int
	outRate  int
	cur      *response
	lastIntr int64 // highest interrupted event id: later audio of it is stale
	discard  int64 // event id whose rest the caller barged over
	inSamp   int
	calls    map[string]string // tool call id awaiting a result → tool name
	owed     bool              // every result was sent and the agent's continuation has not begun
	lastResp string            // id of the last response ended
	seen     map[string]bool
}

// response is the agent response in progress.
type response struct {
	event     int64
	id        string
	text      string
	corrected string
	samples   int
	timer     *time.Timer
}

var _ agent.Adapter = (*Adapter)(nil)

// New returns an unconnected adapter.
func New(opts Options) *Adapter {
	to := opts.Timeouts.WithDefaults()
	limit := opts.EventLimit
	if limit <= 0 {
		limit = 8192
	}
	idle := opts.ResponseIdle
	if idle <= 0 {
		idle = 700 * time.Millisecond
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	return &Adapter{
		opts: opts, to: to, idle: idle,
		sockOpt: to.Options(opts.Key).WithDefaults(),
		stream:  socket.NewEventStream(limit, 256),
		log:     slog.New(slog.DiscardHandler),
		hs:      make(chan error, 1),
		format:  agent.Format{InputRate: 16000, OutputRate: 16000},
		calls:   map[string]string{},
		seen:    map[string]bool{},
	}
}

// Format reports the rates negotiated in conversation_initiation_metadata (16 kHz both ways
// before Connect).
func (a *Adapter) Format() agent.Format {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.format
}

// ConversationID is the platform's id of the conversation ("" before Connect).
func (a *Adapter) ConversationID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.convID
}

// Events returns the normalized event stream.
func (a *Adapter) Events() <-chan agent.Event { return a.stream.C() }

func protocolErr(code, format string, args ...any) *agent.Error {
	return &agent.Error{Class: agent.ClassProtocol, Code: code, Fatal: true, Message: fmt.Sprintf(format, args...)}
}

// Connect checks the platform agent (with a key), opens the conversation (through a signed URL
// with a key, by agent id without), sends the overrides and waits for the metadata.
func (a *Adapter) Connect(ctx context.Context, cfg agent.Config) error {
	a.mu.Lock()
	switch {
	case a.closed:
		a.mu.Unlock()
		return agent.ErrClosed
	case a.conn != nil || a.ready:
		a.mu.Unlock()
		return agent.ErrAlreadyConnected
	}
	if cfg.Logger != nil {
		a.log = cfg.Logger
	}
	a.log = a.log.With(slog.String("family", "elevenlabs"))
	a.mu.Unlock()
	if a.opts.AgentID == "" {
		return protocolErr("no_agent", "no ElevenLabs agent id: set agent_id (or agents for this task) in the systems file")
	}
	ctx, cancel := context.WithTimeout(ctx, a.to.Handshake)
	defer cancel()
	base := a.opts.URL
	if base == "" {
		base = DefaultURL
	}
	if _, err := socket.ParseURL(base); err != nil {
		return err
	}
	target := base + "?agent_id=" + url.QueryEscape(a.opts.AgentID)
	sockOpt := a.sockOpt
	if a.opts.Key != "" {
		if !a.opts.SkipAgentCheck {
			if err := a.checkAgent(ctx, cfg); err != nil {
				return err
			}
		}
		signed, err := a.signedURL(ctx)
		if err != nil {
			return err
		}
		target = signed
		if u, err := url.Parse(signed); err == nil {
			for _, v := range u.Query() {
				sockOpt.Redact = append(sockOpt.Redact, v...) // the signature is a credential too
			}
		}
	}
	ws, err := socket.Dial(ctx, target, nil, sockOpt)
	if err != nil {
		a.stream.Finish()
		return err
	}
	init := Initiation{Type: TypeInitiation, Override: &Override{Agent: &AgentOverride{
		Prompt: &PromptOverride{Prompt: cfg.Instructions}, FirstMessage: new(string), Language: a.opts.Language}}}
	if cfg.Voice != "" {
		init.Override.TTS = &TTSOverride{VoiceID: cfg.Voice}
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		ws.Close()
		return agent.ErrClosed
	}
	a.conn = socket.Start(ws, sockOpt, classifyClose, socket.Handler{Message: a.handle, Closed: a.onClosed})
	err = a.sendLocked(TypeInitiation, init)
	a.mu.Unlock()
	if err == nil || errors.Is(err, agent.ErrClosed) {
		select {
		case err = <-a.hs:
		case <-ctx.Done():
			err = protocolErr("handshake_timeout", "no conversation_initiation_metadata from %s within %s", socket.Endpoint(base), a.to.Handshake)
			if errors.Is(ctx.Err(), context.Canceled) {
				err = ctx.Err()
			}
		}
	}
	if err != nil {
		a.conn.Close()
		return err
	}
	f := a.Format()
	a.log.Info("agent connected", slog.String("endpoint", socket.Endpoint(base)), slog.String("agent", a.opts.AgentID),
		slog.String("conversation", a.ConversationID()), slog.Int("input_rate", f.InputRate), slog.Int("output_rate", f.OutputRate),
		slog.Int("tools", len(cfg.Tools)))
	return nil
}

func (a *Adapter) apiBase() string {
	if a.opts.APIURL != "" {
		return strings.TrimRight(a.opts.APIURL, "/")
	}
	base := a.opts.URL
	if base == "" {
		return DefaultAPIURL
	}
	u, err := url.Parse(base)
	if err != nil {
		return DefaultAPIURL
	}
	u.Scheme = map[string]string{"ws": "http", "wss": "https"}[u.Scheme]
	u.Path, u.RawQuery = "", ""
	return u.String()
}

// getJSON fetches a REST resource with the key; failures are classified like a refused upgrade.
func (a *Adapter) getJSON(ctx context.Context, path string, query url.Values, into any) error {
	u := a.apiBase() + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return protocolErr("bad_url", "REST URL %s: %v", a.apiBase(), err)
	}
	req.Header.Set(KeyHeader, a.opts.Key)
	resp, err := a.opts.HTTPClient.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return ctx.Err()
		}
		return &agent.Error{Class: agent.ClassUnreachable, Code: "connect", Fatal: true,
			Message: a.sockOpt.Scrub(fmt.Sprintf("GET %s%s: %v", a.apiBase(), path, err))}
	}
	defer resp.Body.Close()
	var body [512]byte
	if resp.StatusCode != http.StatusOK {
		n, _ := resp.Body.Read(body[:])
		msg := a.sockOpt.Scrub(fmt.Sprintf("GET %s: HTTP %d: %s", path, resp.StatusCode, strings.Join(strings.Fields(string(body[:n])), " ")))
		return &agent.Error{Class: socket.StatusClass(resp.StatusCode, false), Code: "http_" + strconv.Itoa(resp.StatusCode), Message: msg, Fatal: true}
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		return protocolErr("bad_json", "GET %s: %v", path, err)
	}
	return nil
}

func (a *Adapter) signedURL(ctx context.Context) (string, error) {
	var out struct {
		SignedURL string `json:"signed_url"`
	}
	if err := a.getJSON(ctx, SignedURLPath, url.Values{"agent_id": {a.opts.AgentID}}, &out); err != nil {
		return "", err
	}
	if u, err := url.Parse(out.SignedURL); err != nil || (u.Scheme != "ws" && u.Scheme != "wss") {
		return "", protocolErr("bad_signed_url", "the platform returned no ws:// or wss:// signed URL")
	}
	return out.SignedURL, nil
}

// checkAgent compares the platform agent with what the session needs: the task's tools declared
// as client tools with the same parameter schemas (and no other client tools), the prompt and
// first-message overrides allowed, and audio formats the console can carry.
func (a *Adapter) checkAgent(ctx context.Context, cfg agent.Config) error {
	var ac AgentConfig
	if err := a.getJSON(ctx, AgentPath+url.PathEscape(a.opts.AgentID), nil, &ac); err != nil {
		return err
	}
	where := "agent " + a.opts.AgentID
	ov := ac.PlatformSettings.Overrides.ConversationConfigOverride
	var missing []string
	if !ov.Agent.Prompt.Prompt {
		missing = append(missing, "agent.prompt.prompt (System prompt)")
	}
	if !ov.Agent.FirstMessage {
		missing = append(missing, "agent.first_message (First message)")
	}
	if a.opts.Language != "" && !ov.Agent.Language {
		missing = append(missing, "agent.language (Language)")
	}
	if cfg.Voice != "" && !ov.TTS.VoiceID {
		missing = append(missing, "tts.voice_id (Voice ID)")
	}
	if len(missing) > 0 {
		return protocolErr("override_not_allowed", "%s: enable these overrides in the agent's Security settings: %s", where, strings.Join(missing, ", "))
	}
	if f := ac.ConversationConfig.ASR.InputFormat; f != "" {
		if _, err := inputRate(f); err != nil {
			return protocolErr("unsupported_format", "%s: asr.user_input_audio_format: %v", where, err)
		}
	}
	if f := ac.ConversationConfig.TTS.OutputFormat; f != "" {
		if _, err := outputRate(f); err != nil {
			return protocolErr("unsupported_format", "%s: tts.agent_output_audio_format: %v", where, err)
		}
	}
	if len(cfg.Tools) == 0 {
		return nil // a connection check, not a task's call: there are no tools to compare
	}
	tools := ac.ConversationConfig.Agent.Prompt.Tools
	for _, id := range ac.ConversationConfig.Agent.Prompt.ToolIDs {
		var tr ToolResource
		if err := a.getJSON(ctx, ToolPath+url.PathEscape(id), nil, &tr); err != nil {
			return err
		}
		tools = append(tools, tr.Config)
	}
	have := map[string]ToolConfig{}
	for _, t := range tools {
		if t.Type == "client" {
			have[t.Name] = t
		}
	}
	want := map[string]bool{}
	var problems []string
	for _, t := range cfg.Tools {
		want[t.Name] = true
		pt, ok := have[t.Name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("client tool %s is missing", t.Name))
		case !pt.ExpectsResponse:
			problems = append(problems, fmt.Sprintf("client tool %s must wait for a response (expects_response)", t.Name))
		case !sameJSON(pt.Parameters, t.Parameters):
			problems = append(problems, fmt.Sprintf("client tool %s has other parameters than the task's", t.Name))
		}
	}
	for name := range have {
		if !want[name] {
			problems = append(problems, fmt.Sprintf("client tool %s is not a tool of this task", name))
		}
	}
	if len(problems) > 0 {
		return protocolErr("tools_differ", "%s: its tools are not the task's (audit systems provision writes them): %s", where, strings.Join(sorted(problems), "; "))
	}
	return nil
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if len(a) == 0 {
		a = json.RawMessage(`{}`)
	}
	if len(b) == 0 {
		b = json.RawMessage(`{}`)
	}
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x) // maps marshal with sorted keys
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// inputRate reads a caller audio format: the console sends PCM16 at 16 or 24 kHz.
func inputRate(format string) (int, error) {
	r, err := pcmRate(format)
	if err == nil && r != 16000 && r != 24000 {
		err = fmt.Errorf("%q: the console sends pcm_16000 or pcm_24000", format)
	}
	return r, err
}

// outputRate reads an agent audio format: PCM16 at a rate with a small ratio to 24 kHz.
func outputRate(format string) (int, error) {
	r, err := pcmRate(format)
	if err == nil {
		switch r {
		case 8000, 16000, 24000, 48000:
		default:
			err = fmt.Errorf("%q: choose pcm_16000, pcm_24000 or pcm_48000", format)
		}
	}
	return r, err
}

func pcmRate(format string) (int, error) {
	rest, ok := strings.CutPrefix(format, "pcm_")
	if !ok {
		return 0, fmt.Errorf("%q is not PCM (set the agent to pcm_16000)", format)
	}
	r, err := strconv.Atoi(rest)
	if err != nil || r <= 0 {
		return 0, fmt.Errorf("%q is not a PCM format", format)
	}
	return r, nil
}

// sendLocked encodes and queues one client event; control events are also kept as outbound raw
// events (audio chunks are not).
func (a *Adapter) sendLocked(kind string, msg any) error {
	if a.conn == nil || a.lost || a.closed {
		return agent.ErrClosed
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("encode %s: %w", kind, err)
	}
	if err := a.conn.Send(b); err != nil {
		return err
	}
	a.emitLocked(agent.Event{Type: agent.EventRaw, RawType: kind, Raw: agent.BoundRaw(b), Outbound: true})
	return nil
}

func (a *Adapter) emitLocked(ev agent.Event) {
	if err := a.stream.Emit(ev); errors.Is(err, socket.ErrOverflow) && !a.lost {
		a.lost = true
		a.stopTimerLocked()
		a.stream.FinishOverflow()
		if a.conn != nil {
			a.conn.Kill()
		}
	}
}

func (a *Adapter) check() error {
	switch {
	case a.closed || a.lost:
		return agent.ErrClosed
	case !a.ready:
		return agent.ErrNotConnected
	}
	return nil
}

// SendAudio sends one caller frame at the negotiated input rate as a user_audio_chunk. Every
// frame goes: the platform's turn model needs the caller's silences as well as their speech.
func (a *Adapter) SendAudio(pcm []int16) error {
	frame := make([]byte, 0, len(pcm)*8/3+32)
	frame = append(frame, `{"`+AudioKey+`":"`...)
	frame = append(frame, agent.EncodePCM(pcm)...)
	frame = append(frame, `"}`...)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.check(); err != nil {
		return err
	}
	a.inSamp += len(pcm)
	return a.conn.Send(frame)
}

// StartTurn is a no-op: the platform detects the caller's turns itself.
func (a *Adapter) StartTurn() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.check()
}

// EndTurn is a no-op: the platform detects the caller's turns itself.
func (a *Adapter) EndTurn() error { return a.StartTurn() }

// Interrupt discards the rest of the response the caller talked over; the platform hears the
// caller in the audio it is sent and interrupts itself (the protocol has no client cancel).
func (a *Adapter) Interrupt(playedMS int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.check(); err != nil {
		return err
	}
	if a.cur != nil {
		a.discard = a.cur.event
	}
	return nil
}

// SendToolResult answers one client_tool_call with its tool_call_id; the result is the tool's
// JSON as a string, is_error when the workspace reported "ok": false.
func (a *Adapter) SendToolResult(callID, name string, output json.RawMessage) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.check(); err != nil {
		return err
	}
	if _, ok := a.calls[callID]; !ok {
		return fmt.Errorf("tool result %s (%s): %w", callID, name, agent.ErrUnknownCall)
	}
	delete(a.calls, callID)
	a.owed = a.owed || len(a.calls) == 0 // the agent continues once it has every result
	var status struct {
		OK *bool `json:"ok"`
	}
	isErr := json.Unmarshal(output, &status) == nil && status.OK != nil && !*status.OK
	return a.sendLocked(TypeToolResult, ToolResult{Type: TypeToolResult, ToolCallID: callID, Result: string(output), IsError: isErr})
}

// Close ends the conversation; the Events channel is closed when it returns.
func (a *Adapter) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	a.stopTimerLocked()
	conn := a.conn
	a.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
	a.stream.Abort()
	return nil
}

func (a *Adapter) stopTimerLocked() {
	if a.cur != nil && a.cur.timer != nil {
		a.cur.timer.Stop()
	}
}

func (a *Adapter) onClosed(err *agent.Error) {
	a.mu.Lock()
	wasLost := a.lost
	a.lost = true
	if !a.ready {
		var hsErr error = agent.ErrClosed
		if err != nil {
			hsErr = err
		}
		select {
		case a.hs <- hsErr:
		default:
		}
	}
	var final []agent.Event
	if a.ready && !wasLost {
		final = a.endResponseLocked(agent.StatusIncomplete)
	}
	a.stopTimerLocked()
	a.mu.Unlock()
	switch {
	case err != nil && !wasLost && err.Code == strconv.Itoa(websocket.CloseNormalClosure):
		// The agent ended the conversation (its end_call tool): the call is over, nothing failed.
		a.stream.Finish(final...)
	case err != nil && !wasLost:
		a.stream.Finish(append(final, agent.Event{Type: agent.EventError, Err: err})...)
	default:
		a.stream.Finish(final...)
	}
}

// classifyClose maps the platform's close frames to error classes; nil keeps lost_connection
// (a normal close is the agent hanging up, see onClosed).
func classifyClose(ce *websocket.CloseError) *agent.Error {
	reason := strings.ToLower(ce.Text)
	e := &agent.Error{Code: strconv.Itoa(ce.Code), Message: fmt.Sprintf("provider closed the connection: %d %s", ce.Code, ce.Text)}
	switch {
	case strings.Contains(reason, "quota") || strings.Contains(reason, "rate limit") || strings.Contains(reason, "concurrency"):
		e.Class = agent.ClassRateLimit
	case strings.Contains(reason, "auth") || strings.Contains(reason, "signature") || strings.Contains(reason, "api key") || strings.Contains(reason, "permission"):
		e.Class = agent.ClassAuth
	case ce.Code == websocket.ClosePolicyViolation || ce.Code == websocket.CloseProtocolError || ce.Code == websocket.CloseInvalidFramePayloadData:
		e.Class = agent.ClassProtocol
	case ce.Code == websocket.CloseInternalServerErr || ce.Code == websocket.CloseTryAgainLater:
		e.Class = agent.ClassProvider
	default:
		return nil
	}
	return e
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
