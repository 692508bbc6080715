package gemini

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/internal/link"
	"github.com/voicebench/humanaudit/internal/agent/internal/socket"
)

// Options configure an Adapter.
type Options struct {
	URL   string // endpoint; DefaultURL when empty
	Model string // e.g. gemini-2.5-flash-native-audio-preview-12-2025 ("models/" is added)
	Key   string // sent as x-goog-api-key; empty sends none
	// ExtraVoices extends the allow-list (voices released after this list).
	ExtraVoices []string
	// LanguageCode sets the speech language (e.g. en-US); empty leaves the model's default.
	LanguageCode string
	// SilenceMS sets the server VAD's silenceDurationMs when server turn detection is on.
	SilenceMS int
	// PreRollMS is how much caller audio from before StartTurn is sent when a turn starts, in
	// matched turn-taking (default 500 ms).
	PreRollMS int
	// NoTranscription turns off the input and output transcriptions requested by default.
	NoTranscription bool
	// NoResumption turns off session resumption (handles and context window compression): a
	// goAway then ends the call.
	NoResumption bool
	Timeouts     Timeouts
	EventLimit   int // undelivered events before an overflow failure (default 8192)
}

// Timeouts bound every wait (zero fields take the defaults); the handshake is the dial plus
// setupComplete.
type Timeouts = socket.Timeouts

// Adapter is an agent.Adapter for one Gemini Live call, which may span several connections.
//
// Gemini has no response ids: each model turn gets a synthetic id ("turn_1", …) used as ResponseID
// and ItemID. Barge-in in matched mode is an activityStart (the setup asks for
// START_OF_ACTIVITY_INTERRUPTS); the protocol has no truncation, so Interrupt's playedMS is only
// used to discard the rest of the interrupted turn's audio.
//
// Tool turns come in two shapes: the model continues the same turn after the toolResponse and
// ends it with one turnComplete, or (some models) it ends the tool-call turn with turnComplete and
// answers in a new turn. The agent's turn (agent.EventTurnEnd) ends at a turnComplete after which
// no call waits for its result and no toolResponse waits for the model's continuation.
//
// Session resumption: the setup asks for resumption handles and context window compression. On
// goAway the adapter moves the call to a new connection resumed from the latest handle, at the
// next point where nothing is in flight (no model turn, no tool call, no caller activity) or,
// failing that, shortly before the connection's end; the move is reported as EventReconnect and
// the call goes on (the caller's audio meanwhile is held and sent on the new connection).
type Adapter struct {
	opts Options

	mu     sync.Mutex // guards link and everything below
	link   *link.Link
	target link.Target
	setup0 *Setup // the setup sent, resent with a handle on resuming
	notes  []string
	voice  string
	tools  []string

	resumeHandle string      // latest resumable handle
	handleFresh  bool        // no turn (the model's or the caller's) began since it was issued
	goAway       bool        // the server announced the end of the connection: move at the next quiet point
	goAwayLeft   string      // its notice, for the reconnect's reason
	resumeTimer  *time.Timer // moves anyway shortly before the connection's end
	reconnecting bool
	reconnects   int

	turns       int    // model turns seen
	turn        string // id of the model turn in progress ("" between turns)
	discard     string // turn whose remaining audio is discarded (interrupted)
	interrupted bool   // the current turn was interrupted
	outText     strings.Builder
	inText      strings.Builder
	outSamples  int
	usage       *UsageMetadata // reported during the current turn, emitted at its end

	calls   map[string]string // call id awaiting a result → name
	seen    map[string]bool
	results []FunctionResponse // results of the open batch
	// continuation: a toolResponse was sent and the model has not continued yet
	continuation bool
	agentTurn    bool // the agent's turn has begun and not ended
}

// New returns an unconnected adapter.
func New(opts Options) *Adapter {
	to := opts.Timeouts.WithDefaults()
	a := &Adapter{opts: opts, calls: map[string]string{}, seen: map[string]bool{}}
	a.link = link.New(&a.mu, link.Options{Family: "gemini", Socket: to.Options(opts.Key),
		EventLimit: opts.EventLimit, PreRollMS: opts.PreRollMS, InputRate: InputRate,
		Classify: classifyClose, Message: a.handle, Stop: a.stopTimersLocked, Resume: a.resumeOnLossLocked})
	return a
}

var (
	_ agent.Adapter         = (*Adapter)(nil)
	_ agent.SessionReporter = (*Adapter)(nil)
)

// Format is 16 kHz in, 24 kHz out.
func (a *Adapter) Format() agent.Format {
	return agent.Format{InputRate: InputRate, OutputRate: OutputRate}
}

// Events returns the normalized event stream.
func (a *Adapter) Events() <-chan agent.Event { return a.link.Events() }

// Connect dials, sends setup and waits for setupComplete within ctx and Timeouts.Handshake.
func (a *Adapter) Connect(ctx context.Context, cfg agent.Config) error {
	if err := a.link.Begin(cfg); err != nil {
		return err
	}
	setup, err := a.setup(cfg)
	if err != nil {
		a.link.Finish()
		return err
	}
	target := cmp.Or(a.opts.URL, DefaultURL)
	if _, err := socket.ParseURL(target); err != nil {
		a.link.Finish()
		return err
	}
	h := http.Header{}
	if a.opts.Key != "" {
		h.Set("x-goog-api-key", a.opts.Key)
	}
	t := link.Target{URL: target, Header: h, Awaited: "setupComplete", Model: setup.Model, Tools: len(cfg.Tools)}
	a.mu.Lock()
	a.target, a.setup0 = t, setup
	a.mu.Unlock()
	return a.link.Dial(ctx, t, func() error {
		return a.sendLocked("setup", map[string]any{"setup": setup})
	})
}

// Applied reports what the session was set up with. setupComplete echoes nothing: its arrival
// means the server accepted the whole setup (a refused field closes the connection instead), so
// the tools, voice and turn detection are those sent, after translation.
func (a *Adapter) Applied() agent.Applied {
	a.mu.Lock()
	defer a.mu.Unlock()
	td := "manual"
	if a.setup0 != nil && !a.setup0.RealtimeInputConfig.AutomaticActivityDetection.Disabled {
		td = "automatic"
	}
	return agent.Applied{Tools: append([]string(nil), a.tools...), Voice: a.voice, InputRate: InputRate, OutputRate: OutputRate,
		TurnDetection: td, Notes: append([]string(nil), a.notes...)}
}

func (a *Adapter) setup(cfg agent.Config) (*Setup, error) {
	voice := a.link.Voice(cfg.Voice, append(append([]string{}, Voices...), a.opts.ExtraVoices...), DefaultVoice)
	if err := link.CheckTools(cfg.Tools); err != nil {
		return nil, err
	}
	decls, notes, err := Declarations(cfg.Tools)
	if err != nil {
		return nil, &agent.Error{Class: agent.ClassProtocol, Code: "unsupported_schema", Fatal: true, Message: err.Error()}
	}
	a.mu.Lock()
	a.notes, a.voice = notes, voice
	if cfg.Voice != "" && !strings.EqualFold(cfg.Voice, voice) {
		a.notes = append(a.notes, fmt.Sprintf("voice %q is not offered; %q used", cfg.Voice, voice))
	}
	for _, t := range cfg.Tools {
		a.tools = append(a.tools, t.Name)
	}
	a.mu.Unlock()
	model := a.opts.Model
	if !strings.HasPrefix(model, "models/") {
		model = "models/" + model
	}
	sc := &SpeechConfig{LanguageCode: a.opts.LanguageCode}
	sc.VoiceConfig.PrebuiltVoiceConfig.VoiceName = voice
	s := &Setup{
		Model:            model,
		GenerationConfig: &GenerationConfig{ResponseModalities: []string{"AUDIO"}, SpeechConfig: sc},
		RealtimeInputConfig: &RealtimeInputConfig{
			AutomaticActivityDetection: &ActivityDetection{Disabled: !cfg.ServerTurnDetection},
			ActivityHandling:           "START_OF_ACTIVITY_INTERRUPTS",
		},
	}
	if cfg.ServerTurnDetection {
		s.RealtimeInputConfig.AutomaticActivityDetection.SilenceDurationMs = a.opts.SilenceMS
	} else {
		s.RealtimeInputConfig.TurnCoverage = "TURN_INCLUDES_ONLY_ACTIVITY"
	}
	if cfg.Instructions != "" {
		s.SystemInstruction = &Content{Parts: []Part{{Text: cfg.Instructions}}}
	}
	if !a.opts.NoTranscription {
		s.InputAudioTranscription, s.OutputAudioTranscription = &struct{}{}, &struct{}{}
	}
	if !a.opts.NoResumption {
		s.SessionResumption = &SessionResumption{}
		s.ContextWindowCompression = &ContextWindowCompression{SlidingWindow: &struct{}{}}
	}
	if len(decls) > 0 {
		s.Tools = []Tool{{FunctionDeclarations: decls}}
	}
	return s, nil
}

// sendLocked encodes and queues one client message; control messages are also kept as outbound
// raw events (audio chunks are not, to keep traces small).
func (a *Adapter) sendLocked(kind string, msg any) error { return a.link.SendJSONLocked(kind, msg) }

// SendAudio sends one 16 kHz caller frame as realtimeInput audio. In matched turn-taking, audio
// outside an activity is held back and its last PreRollMS sent right after the next activityStart:
// with TURN_INCLUDES_ONLY_ACTIVITY the provider would otherwise miss the onset the endpointer
// needed time to confirm.
func (a *Adapter) SendAudio(pcm []int16) error {
	return a.link.SendAudio(pcm, `{"realtimeInput":{"audio":{"mimeType":"`+InputMIME+`","data":"`, `"}}}`)
}

// StartTurn sends activityStart (matched turn-taking); a no-op when the server detects activity
// or an activity is already open.
func (a *Adapter) StartTurn() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.link.StartTurnLocked(a.activityStartLocked)
}

func (a *Adapter) activityStartLocked() error {
	a.handleFresh = false
	return a.sendLocked("realtimeInput.activityStart", map[string]any{"realtimeInput": map[string]any{"activityStart": struct{}{}}})
}

// EndTurn sends activityEnd, after which the model replies. With server turn detection it sends
// nothing. Without an open activity it opens one first (with the held pre-roll), since an
// unpaired activityEnd stalls the session and the caller's audio would be lost.
func (a *Adapter) EndTurn() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if send, err := a.link.EndTurnLocked(a.activityStartLocked); !send {
		return err
	}
	return a.sendLocked("realtimeInput.activityEnd", map[string]any{"realtimeInput": map[string]any{"activityEnd": struct{}{}}})
}

// Interrupt is barge-in: in matched mode it opens the caller's activity (which interrupts the
// model); in both modes the rest of the current turn's audio is discarded.
func (a *Adapter) Interrupt(playedMS int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.link.CheckLocked(); err != nil {
		return err
	}
	if a.turn != "" {
		a.discard = a.turn
	}
	return a.link.StartTurnLocked(a.activityStartLocked)
}

// SendToolResult records one result; when every call of the batch (one toolCall message) has its
// result, they go out together in one toolResponse. A result that is not a JSON object is wrapped
// as {"result": …}, since the API takes an object.
func (a *Adapter) SendToolResult(callID, name string, output json.RawMessage) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.link.CheckLocked(); err != nil {
		return err
	}
	if _, ok := a.calls[callID]; !ok {
		return fmt.Errorf("tool result %s (%s): %w", callID, name, agent.ErrUnknownCall)
	}
	delete(a.calls, callID)
	resp := output
	if t := strings.TrimSpace(string(output)); !strings.HasPrefix(t, "{") || !json.Valid(output) {
		if !json.Valid(output) {
			output, _ = json.Marshal(string(output))
		}
		resp, _ = json.Marshal(map[string]json.RawMessage{"result": output})
	}
	a.results = append(a.results, FunctionResponse{ID: callID, Name: name, Response: resp})
	return a.flushResultsLocked()
}

func (a *Adapter) flushResultsLocked() error {
	if len(a.calls) > 0 || len(a.results) == 0 {
		return nil
	}
	results := a.results
	a.results = nil
	a.continuation = true // the model owes its answer to these results
	return a.sendLocked("toolResponse", map[string]any{"toolResponse": map[string]any{"functionResponses": results}})
}

// Close ends the connection; the Events channel is closed when it returns.
func (a *Adapter) Close() error { return a.link.Close() }

func (a *Adapter) stopTimersLocked() {
	if a.resumeTimer != nil {
		a.resumeTimer.Stop()
		a.resumeTimer = nil
	}
}

// goAwayLocked handles the server's notice: with a handle the call moves to a resumed session
// (now if nothing is in flight, else at the next quiet point, at the latest a third of the notice
// before the end); without one the notice is reported and the call ends with the connection.
func (a *Adapter) goAwayLocked(left string) []agent.Event {
	if a.opts.NoResumption || a.resumeHandle == "" {
		return []agent.Event{{Type: agent.EventError, Err: &agent.Error{Class: agent.ClassLostConnection, Code: "go_away",
			Message: fmt.Sprintf("provider is closing the session in %s and gave no resumption handle", left)}}}
	}
	a.goAway, a.goAwayLeft = true, left
	notice, err := time.ParseDuration(left)
	if err != nil || notice <= 0 {
		notice = time.Second
	}
	a.stopTimersLocked()
	gen := a.link.GenerationLocked()
	a.resumeTimer = time.AfterFunc(notice*2/3, func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.goAway && a.link.GenerationLocked() == gen {
			a.startReconnectLocked(true)
		}
	})
	a.maybeReconnectLocked()
	return nil
}

// quietLocked reports a point where a resumed session loses nothing: no model turn, no tool call
// or result in flight, no continuation owed, no caller activity open, and a handle issued after
// the last turn (the service sends it right after turnComplete).
func (a *Adapter) quietLocked() bool {
	return a.turn == "" && len(a.calls) == 0 && len(a.results) == 0 && !a.continuation && !a.agentTurn && !a.link.InTurnLocked() && a.handleFresh
}

// maybeReconnectLocked moves the call after a goAway once it is quiet.
func (a *Adapter) maybeReconnectLocked() {
	if a.goAway && a.quietLocked() {
		a.startReconnectLocked(false)
	}
}

// resumeOnLossLocked keeps a call whose connection ended after a goAway: it moves to a resumed
// session at once.
func (a *Adapter) resumeOnLossLocked(err *agent.Error) bool {
	if !a.goAway || a.resumeHandle == "" || a.reconnecting {
		return a.reconnecting
	}
	a.startReconnectLocked(true)
	return true
}

// startReconnectLocked starts moving the call to a session resumed from the latest handle. forced
// says the call was not quiet: what is in flight is given up (the model's turn ends as
// incomplete, pending tool calls are forgotten) so that the caller can go on.
func (a *Adapter) startReconnectLocked(forced bool) {
	if a.reconnecting {
		return
	}
	a.reconnecting, a.goAway = true, false
	a.stopTimersLocked()
	if forced && !a.quietLocked() {
		if a.turn != "" {
			a.link.EmitLocked(agent.Event{Type: agent.EventResponseDone, ResponseID: a.turn, Status: agent.StatusIncomplete})
			a.turn = ""
		}
		a.calls, a.results, a.continuation = map[string]string{}, nil, false
		if a.agentTurn {
			a.agentTurn = false
			a.link.EmitLocked(agent.Event{Type: agent.EventTurnEnd, Status: agent.StatusIncomplete})
		}
	}
	setup := *a.setup0
	setup.SessionResumption = &SessionResumption{Handle: a.resumeHandle}
	reason := fmt.Sprintf("goAway (%s left)", a.goAwayLeft)
	t := a.target
	go a.reconnect(t, &setup, reason)
}

// reconnect runs the move (on its own goroutine: dialling blocks).
func (a *Adapter) reconnect(t link.Target, setup *Setup, reason string) {
	err := a.link.Redial(context.Background(), t, func() error {
		return a.sendLocked("setup", map[string]any{"setup": setup})
	}, func() error {
		if a.link.InTurnLocked() { // the caller's activity goes on in the new session
			return a.activityStartLocked()
		}
		return nil
	})
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reconnecting = false
	if err != nil {
		a.link.Log().Warn("resuming the session failed", "err", err)
		return // the link reported the loss
	}
	a.reconnects++
	a.link.EmitLocked(agent.Event{Type: agent.EventReconnect, Text: fmt.Sprintf("%s: resumed on connection %d", reason, a.link.GenerationLocked())})
}

// classifyClose maps the Live API's close frames (its only error channel) to error classes.
func classifyClose(ce *websocket.CloseError) *agent.Error {
	reason := strings.ToLower(ce.Text)
	e := &agent.Error{Code: fmt.Sprint(ce.Code), Message: fmt.Sprintf("provider closed the connection: %d %s", ce.Code, ce.Text)}
	switch {
	case strings.Contains(reason, "api key") || strings.Contains(reason, "permission") || strings.Contains(reason, "unauthenticated") || strings.Contains(reason, "unauthorized"):
		e.Class = agent.ClassAuth
	case strings.Contains(reason, "quota") || strings.Contains(reason, "exhausted") || strings.Contains(reason, "rate limit"):
		e.Class = agent.ClassRateLimit
	case ce.Code == websocket.CloseInvalidFramePayloadData || ce.Code == websocket.ClosePolicyViolation:
		e.Class = agent.ClassProtocol // 1007 invalid argument, 1008 policy
	case ce.Code == websocket.CloseInternalServerErr || ce.Code == websocket.CloseTryAgainLater:
		e.Class = agent.ClassProvider // 1011, 1013
	default:
		return nil // normal or going-away closes: lost connection
	}
	return e
}
