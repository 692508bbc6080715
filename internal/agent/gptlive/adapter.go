package gptlive

import (
	"cmp"
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
)

// Options configure an Adapter.
type Options struct {
	URL   string // endpoint; DefaultURL when empty
	Model string // the live model (gpt-live-1), named in session.start
	// BackendModel is the Responses model the tools are delegated to (DefaultBackendModel when
	// empty).
	BackendModel string
	Key          string // bearer key; empty sends no Authorization header
	// ExtraVoices extends the allow-list (voices released after this list).
	ExtraVoices []string
	// QuietMS is the silence after the agent's audio would have finished playing that ends its
	// turn, when no delegated work is open (default 700 ms): GPT-Live has no end-of-turn event.
	QuietMS    int
	Timeouts   Timeouts
	EventLimit int // undelivered events before an overflow failure (default 8192)
}

// Timeouts bound every wait (zero fields take the defaults); the handshake is the dial plus
// session.started.
type Timeouts = socket.Timeouts

// Adapter is an agent.Adapter for one GPT-Live session over its primary WebSocket.
//
// The live model takes turns itself (full duplex): caller audio streams continuously, StartTurn
// and EndTurn send nothing, and Interrupt only ends the agent's current speech in the events
// (the model hears the caller and stops on its own). Speech between two quiet gaps is one
// synthetic response ("speech_1", …). Tool calls come from the backend Responses model inside
// response.event; each output goes back as a response.item.create, and once every call of a
// backend response has its output one response.create lets the backend continue.
//
// The agent's turn (agent.EventTurnEnd) ends when no delegated work is open, the result of the
// last delegation has been spoken, and QuietMS have passed since the agent's audio received so
// far would have finished playing in real time: an inference from what the server sent, as the
// protocol has no end-of-turn event.
type Adapter struct {
	opts Options

	mu      sync.Mutex // guards link and everything below
	link    *link.Link
	voice   string
	tools   []string // names of the tools sent
	applied agent.Applied
	closing chan struct{} // closed by session.closed

	// the agent's speech and turn
	segments   int
	seg        string // the speech segment in progress ("" between segments)
	segText    strings.Builder
	segSamples int
	inText     strings.Builder
	playoutEnd time.Time // when the audio received so far would have played out
	quiet      *time.Timer
	quietGen   int  // bumped by every output: a stale quiet timer does nothing
	turnOpen   bool // the agent's turn has begun and not ended
	owed       bool // a delegation finished: the live model owes its spoken result

	// delegated work
	open     map[string]bool            // delegation ids in progress
	backend  map[string]*backendResp    // backend response id → its state
	calls    map[string]string          // call id awaiting its output → backend response id
	seen     map[string]bool            // call ids already emitted
	respOfDl map[string]map[string]bool // delegation id → its backend responses not yet done
}

// backendResp is one backend Responses response of a delegation.
type backendResp struct {
	delegation string
	pending    int  // calls without an output
	calls      int  // calls made
	done       bool // the backend response ended
}

var (
	_ agent.Adapter         = (*Adapter)(nil)
	_ agent.SessionReporter = (*Adapter)(nil)
)

// New returns an unconnected adapter.
func New(opts Options) *Adapter {
	to := opts.Timeouts.WithDefaults()
	if opts.QuietMS <= 0 {
		opts.QuietMS = 700
	}
	a := &Adapter{opts: opts, closing: make(chan struct{}),
		open: map[string]bool{}, backend: map[string]*backendResp{}, calls: map[string]string{}, seen: map[string]bool{},
		respOfDl: map[string]map[string]bool{}}
	a.link = link.New(&a.mu, link.Options{Family: "live", Socket: to.Options(opts.Key),
		EventLimit: opts.EventLimit, InputRate: SampleRate, Message: a.handle, Stop: a.stopTimerLocked})
	return a
}

// Format is PCM16 24 kHz both ways.
func (a *Adapter) Format() agent.Format {
	return agent.Format{InputRate: SampleRate, OutputRate: SampleRate}
}

// Events returns the normalized event stream.
func (a *Adapter) Events() <-chan agent.Event { return a.link.Events() }

// Connect dials without query parameters, sends session.start and waits for session.started
// (only that event acknowledges the start: a session.created or session.updated some servers send
// first is not the answer), within ctx and Timeouts.Handshake.
func (a *Adapter) Connect(ctx context.Context, cfg agent.Config) error {
	cfg.ServerTurnDetection = true // the live model takes turns itself: caller audio is never held back
	if err := a.link.Begin(cfg); err != nil {
		return err
	}
	target := cmp.Or(a.opts.URL, DefaultURL)
	if _, err := socket.ParseURL(target); err != nil {
		a.link.Finish()
		return err
	}
	if err := link.CheckTools(cfg.Tools); err != nil {
		a.link.Finish()
		return err
	}
	start := a.sessionStart(cfg)
	h := http.Header{}
	if a.opts.Key != "" {
		h.Set("Authorization", "Bearer "+a.opts.Key)
	}
	t := link.Target{URL: target, Header: h, Awaited: SessionStarted, Model: a.opts.Model, Tools: len(cfg.Tools)}
	return a.link.Dial(ctx, t, func() error { return a.sendLocked(start) })
}

// sessionStart builds session.start: the strict configuration, with the tools delegated to the
// backend Responses model (the task's instructions go to both models: the live model converses,
// the backend decides which tools to call).
func (a *Adapter) sessionStart(cfg agent.Config) *ClientEvent {
	allowed := append(append([]string{}, Voices...), a.opts.ExtraVoices...)
	a.voice = a.link.Voice(cfg.Voice, allowed, DefaultVoice)
	s := &Session{Model: a.opts.Model, Instructions: cfg.Instructions,
		Audio: &Audio{Format: &AudioFormat{Type: "audio/pcm", Rate: SampleRate}, Output: &AudioOutput{Voice: a.voice}}}
	if len(cfg.Tools) > 0 {
		backend := a.opts.BackendModel
		if backend == "" {
			backend = DefaultBackendModel
		}
		parallel := true
		r := &Responses{Model: backend, Instructions: cfg.Instructions, ToolChoice: "auto", ParallelToolCalls: &parallel}
		for _, t := range cfg.Tools {
			r.Tools = append(r.Tools, Tool{Type: "function", Name: t.Name, Description: t.Description, Parameters: t.Schema()})
			a.tools = append(a.tools, t.Name)
		}
		s.Delegation = &Delegation{Type: "responses", Responses: r}
	}
	a.applied = agent.Applied{Tools: append([]string(nil), a.tools...), Voice: a.voice, InputRate: SampleRate, OutputRate: SampleRate,
		TurnDetection: "full_duplex"}
	if cfg.Voice != "" && !strings.EqualFold(cfg.Voice, a.voice) {
		a.applied.Notes = append(a.applied.Notes, fmt.Sprintf("voice %q is not offered; %q used", cfg.Voice, a.voice))
	}
	return &ClientEvent{Type: SessionStart, Session: s}
}

// Applied reports what session.started said the server applied.
func (a *Adapter) Applied() agent.Applied {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.applied.Clone()
}

// sendLocked encodes ev with a fresh event id and queues it as an outbound raw event.
func (a *Adapter) sendLocked(ev *ClientEvent) error {
	ev.EventID = a.link.NextEventIDLocked()
	return a.link.SendJSONLocked(ev.Type, ev)
}

// SendAudio streams one caller frame (GPT-Live listens continuously).
func (a *Adapter) SendAudio(pcm []int16) error {
	return a.link.SendAudio(pcm, `{"type":"`+InputAudioAppend+`","audio":"`, `"}`)
}

// StartTurn sends nothing: the live model hears the caller all the time.
func (a *Adapter) StartTurn() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.link.CheckLocked()
}

// EndTurn sends nothing: the live model decides itself when the caller has finished.
func (a *Adapter) EndTurn() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.link.CheckLocked()
}

// Interrupt ends the agent's current speech (cancelled) and with it the agent's turn: the caller
// has the floor. The protocol has no cancel or truncate; the model hears the barge-in itself.
func (a *Adapter) Interrupt(playedMS int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.link.CheckLocked(); err != nil {
		return err
	}
	if a.seg != "" {
		for _, e := range a.endSegmentLocked(agent.StatusCancelled) {
			a.link.EmitLocked(e)
		}
	}
	if a.turnOpen && len(a.open) == 0 {
		a.turnOpen, a.owed = false, false
		a.stopTimerLocked()
		a.link.EmitLocked(agent.Event{Type: agent.EventTurnEnd, Status: agent.StatusCancelled})
	}
	return nil
}

// SendToolResult returns the output of one backend function call (response.item.create); once
// every call of that backend response has its output and the response has ended, one
// response.create lets the backend continue.
func (a *Adapter) SendToolResult(callID, name string, output json.RawMessage) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.link.CheckLocked(); err != nil {
		return err
	}
	respID, ok := a.calls[callID]
	if !ok {
		return fmt.Errorf("tool result %s (%s): %w", callID, name, agent.ErrUnknownCall)
	}
	text := link.OutputText(output)
	if err := a.sendLocked(&ClientEvent{Type: ResponseItemCreate, Item: &Item{Type: "function_call_output", CallID: callID, Output: &text}}); err != nil {
		return err
	}
	delete(a.calls, callID)
	if br := a.backend[respID]; br != nil {
		br.pending--
		return a.continueLocked(respID)
	}
	return nil
}

// continueLocked sends response.create once the backend response respID has ended and every one
// of its calls has its output.
func (a *Adapter) continueLocked(respID string) error {
	br := a.backend[respID]
	if br == nil || !br.done || br.pending > 0 || br.calls == 0 {
		return nil
	}
	delete(a.backend, respID)
	delete(a.respOfDl[br.delegation], respID)
	return a.sendLocked(&ClientEvent{Type: ResponseCreate})
}

func (a *Adapter) stopTimerLocked() {
	if a.quiet != nil {
		a.quiet.Stop()
		a.quiet = nil
	}
}

// Close asks the server to end the session (session.close), waits briefly for session.closed so
// that billing stops, and ends the connection; the Events channel is closed when it returns.
func (a *Adapter) Close() error {
	a.mu.Lock()
	sent := a.link.CheckLocked() == nil && a.sendLocked(&ClientEvent{Type: SessionClose}) == nil
	a.mu.Unlock()
	if sent {
		select {
		case <-a.closing:
		case <-time.After(time.Second):
		}
	}
	return a.link.Close()
}
