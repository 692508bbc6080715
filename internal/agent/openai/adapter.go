package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/internal/link"
	"github.com/voicebench/humanaudit/internal/agent/internal/socket"
	"github.com/voicebench/humanaudit/internal/agent/openai/wire"
)

// Adapter is an agent.Adapter for one OpenAI-family connection.
//
// Response lifecycle: the adapter tracks the provider's active response from response.created and
// response.done and never sends a second response.create while one is active or requested; a
// request made meanwhile is queued (at most one) and sent after response.done. A tool batch (all
// function calls of one response) is answered with every function_call_output first and then one
// response.create after that response is done, which Grok requires and the others accept.
//
// The agent's turn ends (agent.EventTurnEnd) with the response.done of a response that called no
// tools, when no tool batch waits for outputs and no follow-up response is owed: a response
// with tool calls is followed by the follow-up the adapter asks for, and the turn goes on.
type Adapter struct {
	opts Options
	to   Timeouts

	mu    sync.Mutex // guards link and everything below
	link  *link.Link
	phase phase

	sentTools     []string          // names of the tools sent in the session
	pendingUpdate *wire.ClientEvent // session.update, sent once the provider's first event arrives
	applied       agent.Applied     // what session.updated said the provider applied

	// response lifecycle
	active        string          // id of the response in progress
	awaiting      bool            // response.create sent, response.created not seen yet
	createID      string          // event_id of that response.create
	createTimer   *time.Timer     // ResponseStart deadline of that response.create
	pendingCreate bool            // one more response.create wanted once nothing is active
	followUp      bool            // a tool batch's follow-up response is owed: the turn goes on
	createFollows bool            // the response.create in flight (createID) asks for a follow-up
	committed     bool            // a caller item was committed since the last response.created
	activeCaller  bool            // the active response started after a caller item: it answers the caller
	cancelNext    bool            // Interrupt came before response.created: cancel it on arrival
	cancelled     map[string]bool // responses we cancelled: their late audio is discarded
	respSamples   int             // agent audio samples received for the active response

	audio       audioItem // the latest assistant audio item
	transcripts map[string]*strings.Builder

	// tool calls
	seenCalls map[string]bool
	pending   map[string]string // call id awaiting its result → response id
	batches   map[string]*batch // response id → its tool batch
}

type phase int

const (
	phaseIdle        phase = iota
	phaseWaitCreated       // the provider's first event opens the handshake
	phaseWaitUpdated       // session.update sent; the link is ready once it is applied
	phaseDone              // the provider applied the session
)

type audioItem struct {
	id, respID string
	samples    int
	truncated  bool
}

type batch struct {
	pending int
	done    bool
}

var _ agent.Adapter = (*Adapter)(nil)

// New returns an unconnected adapter.
func New(opts Options) *Adapter {
	to := opts.Timeouts.withDefaults()
	a := &Adapter{
		opts:        opts,
		to:          to,
		cancelled:   map[string]bool{},
		transcripts: map[string]*strings.Builder{},
		seenCalls:   map[string]bool{},
		pending:     map[string]string{},
		batches:     map[string]*batch{},
	}
	a.link = link.New(&a.mu, link.Options{Family: opts.Dialect.Name,
		Socket: socket.Options{HandshakeTimeout: to.Handshake, WriteTimeout: to.Write, IdleTimeout: to.Idle,
			PingInterval: to.Ping, Redact: []string{opts.Key}},
		EventLimit: opts.EventLimit, PreRollMS: opts.PreRollMS, InputRate: wire.SampleRate,
		Message: a.handle, Stop: a.stopTimerLocked})
	return a
}

// Format is PCM16 24 kHz both ways.
func (a *Adapter) Format() agent.Format {
	return agent.Format{InputRate: wire.SampleRate, OutputRate: wire.SampleRate}
}

// Events returns the normalized event stream.
func (a *Adapter) Events() <-chan agent.Event { return a.link.Events() }

// Connect dials, waits for the provider's first event, sends the session configuration and waits
// for session.updated, all within ctx and Timeouts.Handshake. Session update failures (an error
// event, or tools the provider did not apply) are protocol errors.
func (a *Adapter) Connect(ctx context.Context, cfg agent.Config) error {
	if err := a.link.Begin(cfg); err != nil {
		return err
	}
	target, header, err := a.dialTarget()
	if err != nil {
		return err
	}
	update, err := a.sessionFrame(cfg)
	if err != nil {
		a.link.Finish()
		return err
	}
	a.mu.Lock()
	a.phase, a.pendingUpdate = phaseWaitCreated, update
	a.mu.Unlock()
	t := link.Target{URL: target, Header: header, Awaited: "session.updated", Model: a.opts.Model, Tools: len(cfg.Tools)}
	return a.link.Dial(ctx, t, nil) // the update follows the provider's first event
}

// Applied reports what the provider's session.updated said it applied.
func (a *Adapter) Applied() agent.Applied {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.applied.Clone()
}

func (a *Adapter) dialTarget() (string, http.Header, error) {
	u, err := socket.ParseURL(a.opts.URL)
	if err != nil {
		return "", nil, err
	}
	if a.opts.Model != "" {
		q := u.Query()
		q.Set("model", a.opts.Model)
		u.RawQuery = q.Encode()
	}
	h := http.Header{}
	if a.opts.Key != "" {
		h.Set("Authorization", "Bearer "+a.opts.Key)
	}
	if a.opts.Dialect.BetaHeader {
		h.Set("OpenAI-Beta", "realtime=v1")
	}
	return u.String(), h, nil
}

// sessionFrame builds session.update, clamping the voice first.
func (a *Adapter) sessionFrame(cfg agent.Config) (*wire.ClientEvent, error) {
	d := a.opts.Dialect
	allowed := append(append([]string{}, d.VoicesFor(a.opts.Model)...), a.opts.ExtraVoices...)
	voice := a.link.Voice(cfg.Voice, allowed, d.DefaultVoice)
	if err := link.CheckTools(cfg.Tools); err != nil {
		return nil, err
	}
	tools := make([]wire.Tool, len(cfg.Tools))
	a.sentTools = make([]string, len(cfg.Tools))
	for i, t := range cfg.Tools {
		tools[i] = wire.Tool{Type: "function", Name: t.Name, Description: t.Description, Parameters: t.Schema()}
		a.sentTools[i] = t.Name
	}
	a.applied = agent.Applied{Voice: voice, InputRate: wire.SampleRate, OutputRate: wire.SampleRate, TurnDetection: "manual"}
	if cfg.ServerTurnDetection {
		a.applied.TurnDetection = "server_vad"
	}
	if voice != cfg.Voice && cfg.Voice != "" {
		a.applied.Notes = append(a.applied.Notes, fmt.Sprintf("voice %q is not offered for model %q; %q used", cfg.Voice, a.opts.Model, voice))
	}
	session, err := json.Marshal(a.opts.sessionObject(cfg.Instructions, tools, voice, cfg.ServerTurnDetection))
	if err != nil {
		return nil, fmt.Errorf("encode session: %w", err)
	}
	return &wire.ClientEvent{Type: wire.SessionUpdate, Session: session}, nil
}

// sendLocked encodes ev with a fresh event id, queues it and records it as an outbound raw
// event. Failures are logged: the connection's loss is reported through the event stream.
func (a *Adapter) sendLocked(ev *wire.ClientEvent) error {
	ev.EventID = a.link.NextEventIDLocked()
	return a.link.SendJSONLocked(ev.Type, ev)
}

// SendAudio appends one caller frame to the provider's input buffer; in matched turn-taking,
// audio outside a turn is held back as pre-roll (see link.SendAudio).
func (a *Adapter) SendAudio(pcm []int16) error {
	return a.link.SendAudio(pcm, `{"type":"input_audio_buffer.append","audio":"`, `"}`)
}

// StartTurn marks the caller's turn start (matched turn-taking): the held pre-roll audio is sent
// and audio flows until EndTurn. This family has no message for it; barge-in is Interrupt (call
// both when the caller starts speaking over the agent). With server turn detection it is a no-op.
func (a *Adapter) StartTurn() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.link.StartTurnLocked(nil)
}

// EndTurn commits the input buffer and asks for a response (matched turn-taking). With server turn
// detection the provider does both itself, so EndTurn only checks the connection. An EndTurn
// without StartTurn still sends the held pre-roll, so the caller's audio is not lost.
func (a *Adapter) EndTurn() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if send, err := a.link.EndTurnLocked(nil); !send {
		return err
	}
	if err := a.sendLocked(&wire.ClientEvent{Type: wire.InputAudioCommit}); err != nil {
		return err
	}
	return a.requestResponseLocked(false)
}

// requestResponseLocked sends response.create unless a response is active or requested, or a
// tool batch still waits for results; then it queues one. followUp says the response continues a
// tool batch (the agent's turn is not over until it is done).
func (a *Adapter) requestResponseLocked(followUp bool) error {
	if followUp {
		a.followUp = true
	}
	if a.active != "" || a.awaiting || a.batchOpenLocked() {
		a.pendingCreate = true
		return nil
	}
	a.pendingCreate = false
	ev := &wire.ClientEvent{Type: wire.ResponseCreate}
	if a.opts.Dialect.ResponseModalities {
		ev.Response = json.RawMessage(`{"modalities":["text","audio"]}`)
	}
	if err := a.sendLocked(ev); err != nil {
		return err
	}
	a.awaiting, a.createID, a.createFollows = true, ev.EventID, a.followUp
	id := ev.EventID
	a.stopTimerLocked()
	a.createTimer = time.AfterFunc(a.to.ResponseStart, func() { a.responseStartTimeout(id) })
	return nil
}

func (a *Adapter) batchOpenLocked() bool {
	for _, b := range a.batches {
		if b.pending > 0 {
			return true
		}
	}
	return false
}

func (a *Adapter) stopTimerLocked() {
	if a.createTimer != nil {
		a.createTimer.Stop()
		a.createTimer = nil
	}
}

func (a *Adapter) responseStartTimeout(createID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.link.CheckLocked() != nil || !a.awaiting || a.createID != createID {
		return
	}
	a.awaiting = false
	a.link.EmitLocked(agent.Event{Type: agent.EventError, Err: &agent.Error{Class: agent.ClassProtocol, Code: "response_timeout",
		Message: fmt.Sprintf("no response.created within %s of response.create", a.to.ResponseStart)}})
	if a.pendingCreate {
		a.requestResponseLocked(false)
		return
	}
	if a.followUp && !a.batchOpenLocked() {
		// The provider never started the follow-up: nothing more comes for this turn.
		a.followUp = false
		a.link.EmitLocked(agent.Event{Type: agent.EventTurnEnd, Status: agent.StatusFailed})
	}
}

// Interrupt cancels the active (or requested) response and truncates the latest agent audio item
// at playedMS (the milliseconds of that item the caller heard), clamped to the audio received.
// Nothing is truncated when the active response has sent no audio yet, or the item was already
// truncated. Audio of the cancelled response that is still in flight is discarded.
func (a *Adapter) Interrupt(playedMS int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.link.CheckLocked(); err != nil {
		return err
	}
	a.pendingCreate = false
	switch {
	case a.active != "":
		if !a.cancelled[a.active] {
			a.cancelled[a.active] = true
			if err := a.sendLocked(&wire.ClientEvent{Type: wire.ResponseCancel, ResponseID: a.active}); err != nil {
				return err
			}
		}
	case a.awaiting:
		a.cancelNext = true
	}
	it := &a.audio
	if it.id == "" || it.samples == 0 || it.truncated {
		return nil
	}
	if (a.active != "" && it.respID != a.active) || a.awaiting {
		return nil // the new response has no audio yet; the latest item belongs to an earlier one
	}
	receivedMS := it.samples * 1000 / wire.SampleRate
	end := min(max(playedMS, 0), receivedMS)
	it.truncated = true
	return a.sendLocked(&wire.ClientEvent{Type: wire.ItemTruncate, ItemID: it.id, ContentIndex: wire.Int(0), AudioEndMS: wire.Int(end)})
}

// SendToolResult sends a function_call_output for callID. The output string is output's JSON
// text, or its contents when output is a JSON string. When it completes its batch and the batch's
// response is done, one response.create follows.
func (a *Adapter) SendToolResult(callID, name string, output json.RawMessage) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.link.CheckLocked(); err != nil {
		return err
	}
	respID, ok := a.pending[callID]
	if !ok {
		return fmt.Errorf("tool result %s (%s): %w", callID, name, agent.ErrUnknownCall)
	}
	text := link.OutputText(output)
	if err := a.sendLocked(&wire.ClientEvent{Type: wire.ItemCreate,
		Item: &wire.Item{Type: "function_call_output", CallID: callID, Output: &text}}); err != nil {
		return err
	}
	delete(a.pending, callID)
	b := a.batches[respID]
	if b == nil {
		return nil
	}
	b.pending--
	if b.pending > 0 || !b.done {
		return nil
	}
	delete(a.batches, respID)
	return a.requestResponseLocked(true)
}

// Close ends the connection; the Events channel is closed when it returns.
func (a *Adapter) Close() error { return a.link.Close() }
