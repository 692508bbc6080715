// Package link is the connection core every adapter family shares: the dial and the wait for the
// provider's handshake, the event stream with its overflow rule, outbound control frames kept as
// raw events, the matched turn-taking gate (caller audio outside a turn held back as pre-roll),
// and what Close and a lost connection release. A family adds only its wire protocol.
package link

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/internal/preroll"
	"github.com/voicebench/humanaudit/internal/agent/internal/socket"
)

// Options configure a Link.
type Options struct {
	// Family names the protocol family in the log ("openai", "gemini", …).
	Family string
	// Socket bounds the connection; its HandshakeTimeout also bounds the provider's handshake.
	Socket socket.Options
	// EventLimit bounds undelivered events before an overflow failure (default 8192).
	EventLimit int
	// PreRollMS is the caller audio held before a matched turn (default preroll.DefaultMS), and
	// InputRate the rate of the caller audio.
	PreRollMS, InputRate int
	// Classify maps the provider's close frames to errors (nil: every close is a lost connection).
	Classify socket.CloseClassifier
	// Message handles one provider frame, on the reader goroutine; the family hands the frame
	// back to ReceiveLocked, which drops frames of a connection the link has moved away from.
	Message func(f Frame)
	// Stop, if set, is called with the owner's lock held once the link carries no more traffic
	// (closed, lost or overflowed): the family stops its timers there.
	Stop func()
	// Resume, if set, is called with the owner's lock held when the current connection ends
	// unexpectedly (err says how). Returning true keeps the call: the family will move it to a new
	// connection with Redial (it starts that itself), and frames sent meanwhile are held.
	Resume func(err *agent.Error) bool
}

// Frame is one provider frame as read from one of the link's connections.
type Frame struct {
	Data []byte
	gen  int // the connection it came from
}

// maxHeld bounds the frames held while the link moves to a new connection (about 40 s of
// 40 ms caller frames); a move that takes longer has failed.
const maxHeld = 1000

// Link is one adapter's connection. Its state is guarded by the owner's mutex, given to New: the
// methods named …Locked need it held; the others take it themselves.
//
// A link may move to a new connection during the call (Redial: a resumed session); the event
// stream, the turn state and the pre-roll carry over, and frames sent meanwhile are held and
// sent on the new connection once the provider has confirmed it.
type Link struct {
	mu     sync.Locker
	o      Options
	stream *socket.EventStream
	hs     chan error // outcome of the handshake awaited, buffered
	log    *slog.Logger

	conn      *socket.Conn
	gen       int  // number of the current connection (1, 2, … after each Redial)
	started   bool // Begin succeeded: a second Connect is refused
	ready     bool // the provider confirmed the session
	awaiting  bool // a handshake (the first or a Redial's) waits for the provider's answer
	moving    bool // the call is moving to a new connection: frames are held
	redialing bool // a Redial runs
	greeting  bool // the family's greeting of a new connection is being sent: not held
	held      [][]byte
	closed    bool
	lost      bool
	ending    bool // the provider confirmed the end of the session: its close is no loss

	manual    bool // matched turn-taking: our endpointer ends the caller's turns
	inTurn    bool // between StartTurn and EndTurn
	preroll   preroll.Buffer
	inSamples int // caller samples sent since TakeInputSamples
	eventIDs  int // client event ids handed out
}

// New returns an unconnected link guarded by mu.
func New(mu sync.Locker, o Options) *Link {
	o.Socket = o.Socket.WithDefaults()
	if o.EventLimit <= 0 {
		o.EventLimit = 8192
	}
	return &Link{
		mu: mu, o: o,
		stream:  socket.NewEventStream(o.EventLimit, 256),
		hs:      make(chan error, 1),
		log:     slog.New(slog.DiscardHandler),
		preroll: preroll.New(o.PreRollMS, o.InputRate),
	}
}

// Events is the normalized event stream of the adapter.
func (l *Link) Events() <-chan agent.Event { return l.stream.C() }

// Log is the connection's logger (the session's, once Begin has run).
func (l *Link) Log() *slog.Logger { return l.log }

// Begin starts a Connect: it refuses a closed or already connected link and takes the call's
// logger and turn-taking mode.
func (l *Link) Begin(cfg agent.Config) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return agent.ErrClosed
	case l.started:
		return agent.ErrAlreadyConnected
	}
	l.started = true
	if cfg.Logger != nil {
		l.log = cfg.Logger
	}
	l.log = l.log.With(slog.String("family", l.o.Family))
	l.manual = !cfg.ServerTurnDetection
	return nil
}

// Target is where Dial connects, and what it logs once connected.
type Target struct {
	URL    string
	Header http.Header
	// Awaited names the provider's answer to the handshake, for the timeout error.
	Awaited string
	// Model and Tools describe the session in the log.
	Model string
	Tools int
}

// CheckTools refuses tools whose parameters are not JSON, before anything is sent.
func CheckTools(tools []agent.Tool) error {
	for _, t := range tools {
		if len(t.Parameters) > 0 && !json.Valid(t.Parameters) {
			return &agent.Error{Class: agent.ClassProtocol, Code: "bad_tool", Fatal: true,
				Message: fmt.Sprintf("tool %q: parameters are not valid JSON", t.Name)}
		}
	}
	return nil
}

// OutputText is a tool output as the OpenAI family's function_call_output string: the contents of
// a JSON string, else the JSON text itself.
func OutputText(output json.RawMessage) string {
	var s string
	if json.Unmarshal(output, &s) == nil {
		return s
	}
	return string(output)
}

// Voice returns the allowed voice for requested (agent.ClampVoice), logging a substitution:
// providers reject a whole session for an unknown voice, tools included.
func (l *Link) Voice(requested string, allowed []string, fallback string) string {
	voice, substituted := agent.ClampVoice(requested, allowed, fallback)
	if substituted {
		l.log.Warn("voice not offered by the provider; substituted", slog.String("requested", requested), slog.String("voice", voice))
	}
	return voice
}

// Dial connects to t and waits for the handshake: greet, if set, runs with the lock held once
// the connection reads and sends the family's first frames; the family reports the provider's
// answer with HandshakeDoneLocked. The wait is bounded by ctx and the socket's HandshakeTimeout;
// on failure the connection is closed.
func (l *Link) Dial(ctx context.Context, t Target, greet func() error) error {
	ctx, cancel := context.WithTimeout(ctx, l.o.Socket.HandshakeTimeout)
	defer cancel()
	ws, err := socket.Dial(ctx, t.URL, t.Header, l.o.Socket)
	if err != nil {
		l.stream.Finish()
		return err
	}
	l.mu.Lock()
	if l.closed { // Close raced with the dial
		l.mu.Unlock()
		ws.Close()
		return agent.ErrClosed
	}
	l.gen++
	l.conn = socket.Start(ws, l.o.Socket, l.o.Classify, l.handler(l.gen))
	conn, hs := l.conn, l.hs
	l.awaiting = true
	if greet != nil {
		err = greet()
	}
	l.mu.Unlock()
	if err == nil || errors.Is(err, agent.ErrClosed) { // closed already: the reason arrives on hs
		select {
		case err = <-hs:
		case <-ctx.Done():
			err = &agent.Error{Class: agent.ClassProtocol, Code: "handshake_timeout", Fatal: true,
				Message: fmt.Sprintf("no %s from %s within %s", t.Awaited, socket.Endpoint(t.URL), l.o.Socket.HandshakeTimeout)}
			if errors.Is(ctx.Err(), context.Canceled) {
				err = ctx.Err()
			}
		}
	}
	if err != nil {
		conn.Close()
		return err
	}
	l.log.Info("agent connected", slog.String("endpoint", socket.Endpoint(t.URL)), slog.String("model", t.Model),
		slog.Bool("server_vad", !l.manual), slog.Int("tools", t.Tools))
	return nil
}

// handler binds a connection's reads to its generation: frames and the close of a connection
// the link has moved away from are ignored.
func (l *Link) handler(gen int) socket.Handler {
	return socket.Handler{
		Message: func(data []byte) { l.o.Message(Frame{Data: data, gen: gen}) },
		Closed:  func(err *agent.Error) { l.readerClosed(gen, err) },
	}
}

// Redial moves the call to a new connection to t (a resumed session) within ctx and the
// socket's HandshakeTimeout: greet runs with the lock held once the new connection reads and
// sends the family's first frames; the family reports the provider's answer with
// HandshakeDoneLocked. The old connection is closed as soon as the new one is open (the provider
// is ending it anyway); frames sent through the link meanwhile are held and follow the greeting
// once the provider has confirmed the new session, after what resumed (if set, with the lock held)
// sends to restore the state the new session needs (an open caller activity). On failure the link
// is lost: the stream ends with the fatal error, as when a connection drops.
func (l *Link) Redial(ctx context.Context, t Target, greet, resumed func() error) error {
	l.mu.Lock()
	switch {
	case l.closed || l.lost:
		l.mu.Unlock()
		return agent.ErrClosed
	case l.redialing:
		l.mu.Unlock()
		return errors.New("link: a reconnect is already in progress")
	}
	l.moving, l.redialing = true, true
	l.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, l.o.Socket.HandshakeTimeout)
	defer cancel()
	ws, err := socket.Dial(ctx, t.URL, t.Header, l.o.Socket)
	if err != nil {
		return l.redialFailed(err, nil)
	}
	l.mu.Lock()
	if l.closed || l.lost {
		l.moving, l.redialing = false, false
		l.mu.Unlock()
		ws.Close()
		return agent.ErrClosed
	}
	old := l.conn
	l.gen++
	l.conn = socket.Start(ws, l.o.Socket, l.o.Classify, l.handler(l.gen))
	conn := l.conn
	l.hs, l.awaiting = make(chan error, 1), true
	hs := l.hs
	if greet != nil {
		l.greeting = true
		err = greet()
		l.greeting = false
	}
	l.mu.Unlock()
	if old != nil {
		old.Close() // its close is ignored: the link has moved
	}
	if err == nil || errors.Is(err, agent.ErrClosed) {
		select {
		case err = <-hs:
		case <-ctx.Done():
			err = &agent.Error{Class: agent.ClassLostConnection, Code: "resume_timeout", Fatal: true,
				Message: fmt.Sprintf("no %s from %s within %s on reconnecting", t.Awaited, socket.Endpoint(t.URL), l.o.Socket.HandshakeTimeout)}
		}
	}
	if err != nil {
		return l.redialFailed(err, conn)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.moving, l.redialing = false, false
	held := l.held
	l.held = nil
	if l.closed || l.lost {
		return agent.ErrClosed
	}
	if resumed != nil {
		l.greeting = true
		err := resumed()
		l.greeting = false
		if err != nil {
			l.log.Warn("restore state after reconnect", slog.Any("err", err))
		}
	}
	for _, f := range held {
		if err := l.conn.Send(f); err != nil {
			l.log.Warn("send held frame after reconnect", slog.Any("err", err))
			break
		}
	}
	l.log.Info("agent reconnected", slog.String("endpoint", socket.Endpoint(t.URL)), slog.Int("connection", l.gen), slog.Int("held_frames", len(held)))
	return nil
}

// redialFailed ends the link after a failed Redial with a fatal lost-connection error that says
// so (an error that already ended the stream is returned as it is).
func (l *Link) redialFailed(err error, conn *socket.Conn) error {
	l.mu.Lock()
	l.moving, l.redialing, l.held = false, false, nil
	wasLost := l.lost
	l.lost = true
	if l.o.Stop != nil {
		l.o.Stop()
	}
	l.mu.Unlock()
	if conn != nil {
		conn.Kill()
	}
	var ae *agent.Error
	if !errors.As(err, &ae) {
		ae = &agent.Error{Class: agent.ClassLostConnection, Code: "resume_failed", Message: err.Error()}
	}
	e := *ae
	e.Fatal = true
	e.Message = "reconnect failed: " + e.Message
	if !wasLost {
		l.stream.Finish(agent.Event{Type: agent.EventError, Err: &e})
	}
	return &e
}

// EndingLocked says the provider has confirmed the end of the session the client asked for, so
// that the connection's close that follows is not reported as a loss.
func (l *Link) EndingLocked() { l.ending = true }

// GenerationLocked is the number of the current connection (1 for the first, then one more per
// Redial).
func (l *Link) GenerationLocked() int { return l.gen }

// Finish ends the event stream after a Connect that failed before dialling.
func (l *Link) Finish() { l.stream.Finish() }

// HandshakeDoneLocked reports the provider's answer to the handshake awaited (the first or a
// Redial's): nil makes the link ready. Only the first report of each handshake counts.
func (l *Link) HandshakeDoneLocked(err error) {
	if !l.awaiting {
		return
	}
	l.awaiting = false
	if err == nil {
		l.ready = true
	}
	select {
	case l.hs <- err:
	default:
	}
}

// AwaitingHandshakeLocked reports whether a handshake waits for the provider's answer.
func (l *Link) AwaitingHandshakeLocked() bool { return l.awaiting }

// ReadyLocked reports whether the provider confirmed the session.
func (l *Link) ReadyLocked() bool { return l.ready }

// CheckLocked is the precondition of every adapter method after Connect.
func (l *Link) CheckLocked() error {
	switch {
	case l.closed || l.lost:
		return agent.ErrClosed
	case !l.ready:
		return agent.ErrNotConnected
	}
	return nil
}

// EmitLocked queues an event; on overflow it fails the connection (see agent.Adapter).
func (l *Link) EmitLocked(ev agent.Event) {
	if err := l.stream.Emit(ev); errors.Is(err, socket.ErrOverflow) && !l.lost {
		l.lost = true
		if l.o.Stop != nil {
			l.o.Stop()
		}
		l.stream.FinishOverflow()
		if l.conn != nil {
			l.conn.Kill()
		}
	}
}

// ReceiveLocked takes one provider frame: data as read, err from parsing it (what names the
// expected form: "JSON event", …), rawType and raw (audio elided) to keep in the trace. The events
// of normalize are emitted, the first carrying the frame, or an EventRaw when it has none; a
// frame that did not parse is an error event holding the frame as a JSON string (so the trace
// stays valid JSON). Frames after the connection was lost are ignored.
func (l *Link) ReceiveLocked(f Frame, what string, err error, rawType string, raw []byte, normalize func() []agent.Event) {
	data := f.Data
	switch {
	case l.lost || f.gen != l.gen:
		return
	case err != nil:
		b, _ := json.Marshal(strings.ToValidUTF8(string(data), "?"))
		l.EmitLocked(agent.Event{Type: agent.EventError, RawType: "unparsable", Raw: agent.BoundRaw(b),
			Err: &agent.Error{Class: agent.ClassProtocol, Code: "bad_json", Message: "provider sent a frame that is not a " + what + ": " + err.Error()}})
		return
	}
	out := normalize()
	if len(out) == 0 {
		out = []agent.Event{{Type: agent.EventRaw}}
	}
	out[0].RawType, out[0].Raw = rawType, agent.BoundRaw(raw)
	for _, e := range out {
		l.EmitLocked(e)
	}
}

// NextEventIDLocked returns a fresh client event id: "evt_1", "evt_2", … over the link's life.
func (l *Link) NextEventIDLocked() string {
	l.eventIDs++
	return fmt.Sprintf("evt_%d", l.eventIDs)
}

// SendJSONLocked encodes msg and queues it as SendLocked does.
func (l *Link) SendJSONLocked(kind string, msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("encode %s: %w", kind, err)
	}
	return l.SendLocked(kind, b)
}

// CheckAppliedTools refuses a session whose provider dropped tools: every name in sent must be
// in applied. what says who applied them ("provider applied").
func CheckAppliedTools(sent, applied []string, what string) error {
	var missing []string
	for _, name := range sent {
		if !slices.Contains(applied, name) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return &agent.Error{Class: agent.ClassProtocol, Code: "tools_dropped", Fatal: true,
			Message: fmt.Sprintf("%s %d of %d tools; refused: %s", what, len(sent)-len(missing), len(sent), strings.Join(missing, ", "))}
	}
	return nil
}

// SendLocked queues one control frame and records it as an outbound raw event of type kind.
func (l *Link) SendLocked(kind string, frame []byte) error {
	if l.conn == nil || l.lost || l.closed {
		return agent.ErrClosed
	}
	if err := l.sendLocked(frame); err != nil {
		l.log.Warn("send failed", slog.String("type", kind), slog.Any("err", err))
		return err
	}
	l.EmitLocked(agent.Event{Type: agent.EventRaw, RawType: kind, Raw: agent.BoundRaw(frame), Outbound: true})
	return nil
}

// SendAudio sends caller audio as one frame: head, the base64 PCM, tail. In matched
// turn-taking, audio outside a turn is held back (only its last PreRollMS is kept, and sent when
// the next turn starts), so that every family hears the same span of each caller turn and nothing
// between turns.
func (l *Link) SendAudio(pcm []int16, head, tail string) error {
	b64 := agent.EncodePCM(pcm)
	frame := make([]byte, 0, len(head)+len(b64)+len(tail))
	frame = append(append(append(frame, head...), b64...), tail...)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.CheckLocked(); err != nil {
		return err
	}
	if l.manual && !l.inTurn {
		l.preroll.Push(frame, len(pcm))
		return nil
	}
	l.inSamples += len(pcm)
	return l.sendLocked(frame)
}

// sendLocked sends one frame on the current connection, or holds it while the link moves to a
// new one (the new connection's greeting goes out at once).
func (l *Link) sendLocked(frame []byte) error {
	if l.moving && !l.greeting {
		if len(l.held) >= maxHeld {
			return agent.ErrSendBacklog
		}
		l.held = append(l.held, frame)
		return nil
	}
	return l.conn.Send(frame)
}

// StartTurnLocked opens a matched turn: open, if set, sends the family's turn-start message,
// then the held pre-roll follows. With server turn detection, or in a turn already, it does
// nothing.
func (l *Link) StartTurnLocked(open func() error) error {
	if err := l.CheckLocked(); err != nil {
		return err
	}
	if !l.manual || l.inTurn {
		return nil
	}
	if open != nil {
		if err := open(); err != nil {
			return err
		}
	}
	l.inTurn = true
	frames, samples := l.preroll.Take()
	l.inSamples += samples
	for _, f := range frames {
		if err := l.sendLocked(f); err != nil {
			return err
		}
	}
	return nil
}

// EndTurnLocked closes a matched turn and reports whether the family must now send its
// end-of-turn message (false with server turn detection). A turn never started is opened first
// (with open and the held pre-roll), so that the caller's audio is not lost.
func (l *Link) EndTurnLocked(open func() error) (bool, error) {
	if err := l.CheckLocked(); err != nil {
		return false, err
	}
	if !l.manual {
		return false, nil
	}
	if !l.inTurn {
		l.log.Warn("EndTurn without StartTurn; the turn opens with the held pre-roll")
		if err := l.StartTurnLocked(open); err != nil {
			return false, err
		}
	}
	l.inTurn = false
	return true, nil
}

// InTurnLocked reports a matched caller turn in progress (between StartTurn and EndTurn).
func (l *Link) InTurnLocked() bool { return l.manual && l.inTurn }

// TakeInputSamplesLocked returns the caller samples sent since the last call, for usage.
func (l *Link) TakeInputSamplesLocked() int {
	n := l.inSamples
	l.inSamples = 0
	return n
}

// Close ends the connection; the event stream is closed when it returns.
func (l *Link) Close() error {
	l.mu.Lock()
	conn, again := l.conn, l.closed
	l.closed = true
	if l.o.Stop != nil {
		l.o.Stop()
	}
	l.mu.Unlock()
	if again {
		return nil
	}
	if conn != nil {
		conn.Close()
	}
	l.stream.Abort()
	return nil
}

// readerClosed runs on the reader goroutine when connection gen ends.
func (l *Link) readerClosed(gen int, err *agent.Error) {
	l.mu.Lock()
	if gen != l.gen {
		l.mu.Unlock()
		return // a connection the link moved away from
	}
	if l.ending {
		err = nil
	}
	if l.redialing && l.awaiting {
		// The new connection of a Redial ended before the provider confirmed it: Redial reports
		// the failure (and ends the link).
		l.HandshakeDoneLocked(closedDuringHandshake(err))
		l.mu.Unlock()
		return
	}
	if err != nil && !l.closed && !l.lost && !l.awaiting && l.o.Resume != nil && l.o.Resume(err) {
		l.moving = true // the family redials; hold what is sent until then
		l.mu.Unlock()
		return
	}
	if l.o.Stop != nil {
		l.o.Stop()
	}
	wasLost := l.lost
	l.lost = true
	l.HandshakeDoneLocked(closedDuringHandshake(err))
	l.mu.Unlock()
	if err != nil && !wasLost {
		l.stream.Finish(agent.Event{Type: agent.EventError, Err: err})
		return
	}
	l.stream.Finish()
}

// closedDuringHandshake is the handshake's failure when its connection ended with err (nil: a
// close without a reason).
func closedDuringHandshake(err *agent.Error) error {
	if err != nil {
		return err
	}
	return agent.ErrClosed
}
