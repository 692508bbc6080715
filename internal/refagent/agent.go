package refagent

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/openai/wire"
	"github.com/voicebench/humanaudit/internal/agent/realtimeserver"
	"github.com/voicebench/humanaudit/internal/asr"
	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/refagent/dialog"
)

// reference is what the reference agent's server accepts: the OpenAI Realtime GA protocol with
// audio output only, and the conversation history calls (item deletes, function_call items).
var reference = realtimeserver.Provider{Name: "reference", Schema: wire.SchemaGA,
	Voices:       []string{"alloy", "ash", "ballad", "coral", "echo", "sage", "shimmer", "verse", "marin", "cedar"},
	DefaultVoice: "marin", DefaultModel: "reference", Greeting: []string{wire.SessionCreated},
	ConflictMessage:  "Conversation already has an active response in progress: %s. Wait until the response is finished before creating a new one.",
	DefaultServerVAD: true, OutputModalities: [][]string{{"audio"}}, TurnTypes: []string{"server_vad", "semantic_vad"}, History: true}

// endpointer is the audio endpointer as the server's turn detection.
type endpointer struct{ e *audio.Endpointer }

func newEndpointer(s realtimeserver.Session) realtimeserver.VAD {
	e, err := audio.NewEndpointer(audio.EndpointerConfig{SilenceDuration: time.Duration(s.SilenceMS) * time.Millisecond,
		PrefixPadding: time.Duration(s.PrefixMS) * time.Millisecond})
	if err != nil {
		return nil
	}
	return endpointer{e}
}

func (v endpointer) Feed(pcm []int16, start time.Duration) []realtimeserver.SpeechEvent {
	var out []realtimeserver.SpeechEvent
	v.e.Process(pcm, wire.SampleRate, start, func(e audio.SpeechEvent) {
		out = append(out, realtimeserver.SpeechEvent{Start: e.Start, At: e.At, Padded: e.Padded})
	})
	return out
}

func (v endpointer) Speaking() bool { return v.e.Speaking() }

// responder opens a callAgent per connection.
type responder struct{ s *Server }

func (r responder) Open(c *realtimeserver.Conn) realtimeserver.Agent {
	a := &callAgent{s: r.s, c: c, log: c.Logger(), dlg: dialog.New(dialog.Config{Now: r.s.cfg.Now, Known: r.s.rec.Known, Homophones: r.s.rec.Homophones})}
	// The caller's channel gets a decoder of its own, so that streaming recognition of this call
	// depends on nothing but its own audio. Loading it takes a fraction of a second, before the
	// session starts.
	if ch, err := r.s.rec.OpenChannel(); err != nil {
		a.log.Warn("no streaming recognition for this call; turns are decoded when committed", slog.Any("err", err))
	} else {
		a.channel = ch
	}
	return a
}

// turn is one committed caller turn awaiting recognition.
type turn struct {
	itemID string
	pcm    []int16
	text   string          // a text message instead of audio
	q      dialog.Question // what the agent asked when the turn was committed
	ear    *ear            // the open-vocabulary stream of the turn, when one ran
	at     time.Time
	done   chan struct{}
	h      dialog.Heard
}

// ear decodes a caller turn with the open-vocabulary model while it is spoken, so that only the
// turn's last moments remain to decode when it is committed.
type ear struct {
	stream *asr.Stream
	ch     chan []int16
	done   chan struct{}
	res    asr.Result
	err    error
	broken bool // audio was lost (the stream fell too far behind): decode the turn whole
}

// earQueue is how far (in 40 ms frames) a stream may fall behind the caller before it is given up.
const earQueue = 1500

// callAgent is the reference agent of one call: it streams each caller turn through speech
// recognition while it is spoken, understands it on its own goroutine once committed (so that
// recognition overlaps the agent's speech), lets the dialogue decide each response, and speaks.
type callAgent struct {
	s       *Server
	c       *realtimeserver.Conn
	log     *slog.Logger
	channel *asr.Channel // the caller's channel: a decoder of its own; nil: turns are decoded whole
	wg      sync.WaitGroup

	mu        sync.Mutex
	dlg       *dialog.Dialog
	listening bool // Listen has been told of the turn being spoken
	ear       *ear // the stream of the turn being spoken
	lastEar   *ear // the previous turn's stream (the channel streams one turn at a time)
	turns     []*turn
	answerTo  int // turns the responses so far answer
	consumed  int // turns fed to the dialogue
	outputs   []realtimeserver.ToolOutput
	outUsed   int
}

var (
	_ realtimeserver.Agent     = (*callAgent)(nil)
	_ realtimeserver.Listener  = (*callAgent)(nil)
	_ realtimeserver.Truncater = (*callAgent)(nil)
)

// Configure derives the agent's form from the session's instructions and tools.
func (a *callAgent) Configure(s realtimeserver.Session) {
	tools := make([]dialog.Tool, len(s.Tools))
	for i, t := range s.Tools {
		tools[i] = dialog.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
	}
	a.mu.Lock()
	a.dlg.Configure(s.Instructions, tools)
	a.mu.Unlock()
}

// Listen streams the turn being spoken through the open-vocabulary model.
func (a *callAgent) Listen(pcm []int16) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.listening {
		a.listening = true
		a.openEarLocked()
	}
	a.hearLocked(pcm)
}

// Clear abandons the turn being spoken.
func (a *callAgent) Clear() {
	a.mu.Lock()
	a.listening = false
	a.closeEarLocked(true)
	a.mu.Unlock()
}

// Truncate notes that the caller cut the agent short: a question in what was cut may not have
// been heard.
func (a *callAgent) Truncate(string, int) {
	a.mu.Lock()
	a.dlg.Truncated()
	a.mu.Unlock()
}

// Commit starts recognizing a committed turn against what the agent asked last.
func (a *callAgent) Commit(t realtimeserver.Turn) {
	a.mu.Lock()
	var e *ear
	if !t.Message {
		a.listening = false
		e = a.closeEarLocked(false)
	}
	tn := &turn{itemID: t.ItemID, pcm: t.PCM, text: t.Text, q: a.dlg.Question(), ear: e, at: time.Now(), done: make(chan struct{})}
	a.turns = append(a.turns, tn)
	a.wg.Add(1)
	a.mu.Unlock()
	go a.recognize(tn)
}

// Close abandons the turn being spoken and waits for recognition to stop.
func (a *callAgent) Close() {
	a.mu.Lock()
	a.closeEarLocked(true)
	a.mu.Unlock()
	a.wg.Wait()
	if a.channel != nil {
		a.channel.Close()
	}
}

// openEarLocked starts streaming the turn being spoken through the open-vocabulary model on the
// caller's channel (without a channel the turn is decoded whole when committed).
func (a *callAgent) openEarLocked() {
	if a.channel == nil {
		return
	}
	if a.lastEar != nil {
		<-a.lastEar.done // the channel streams one turn at a time; the last one is nearly done
	}
	s, err := a.channel.Stream(wire.SampleRate, nil)
	if err != nil {
		a.log.Warn("cannot stream the turn", slog.Any("err", err))
		return
	}
	e := &ear{stream: s, ch: make(chan []int16, earQueue), done: make(chan struct{})}
	a.ear, a.lastEar = e, e
	ctx := a.c.Context()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer close(e.done)
		for pcm := range e.ch {
			if e.err == nil {
				e.err = s.Write(pcm)
			}
		}
		if e.broken || e.err != nil || ctx.Err() != nil {
			s.Abort()
			return
		}
		e.res, e.err = s.Finish()
	}()
}

// hearLocked feeds the open stream; a stream that falls too far behind is given up.
func (a *callAgent) hearLocked(pcm []int16) {
	e := a.ear
	if e == nil || e.broken || len(pcm) == 0 {
		return
	}
	select {
	case e.ch <- slices.Clone(pcm):
	default:
		e.broken = true
		a.log.Warn("speech recognition fell behind the caller; decoding the turn whole")
	}
}

// closeEarLocked ends the open stream's input and detaches it; abandon discards its result.
func (a *callAgent) closeEarLocked(abandon bool) *ear {
	e := a.ear
	a.ear = nil
	if e != nil {
		e.broken = e.broken || abandon
		close(e.ch)
	}
	return e
}

func (a *callAgent) recognize(t *turn) {
	defer a.wg.Done()
	defer close(t.done)
	ctx := a.c.Context()
	if t.text != "" {
		t.h = t.q.UnderstandText(ctx, t.text)
		return
	}
	var streamed *asr.Result
	if e := t.ear; e != nil {
		select {
		case <-e.done:
		case <-ctx.Done():
			return
		}
		if e.err == nil && !e.broken {
			streamed = &e.res
		}
	}
	t.h = hear(ctx, a.s.rec, t.q, t.pcm, streamed)
	if ctx.Err() != nil {
		return
	}
	a.log.Debug("caller turn recognized", slog.String("item", t.itemID), slog.String("transcript", t.h.Transcript()),
		slog.String("intent", t.h.Intent()), slog.Bool("streamed", streamed != nil),
		slog.Int64("asr_ms", time.Since(t.at).Milliseconds())) // from the commit: what the caller waits for
	a.c.Transcript(t.itemID, t.h.Transcript())
}

// Respond waits for the caller turns the response answers to be recognized, lets the dialogue
// decide, and sends function calls or speech.
func (a *callAgent) Respond(r *realtimeserver.Response) realtimeserver.Outcome {
	ctx := a.c.Context()
	a.mu.Lock()
	a.answerTo += len(r.Turns())
	a.outputs = append(a.outputs, r.Outputs()...)
	turnsTo, outputTo := a.answerTo, len(a.outputs)
	pending := slices.Clone(a.turns[a.consumed:turnsTo])
	a.mu.Unlock()
	for _, t := range pending {
		select {
		case <-t.done:
		case <-r.Cancelled():
		case <-ctx.Done():
		}
	}
	status, reason := agent.StatusCompleted, ""
	var spoken string
	heardWords := 0
	select {
	case <-r.Cancelled():
		status, reason = agent.StatusCancelled, r.Reason()
	case <-ctx.Done():
		status, reason = agent.StatusCancelled, "connection closed"
	default:
		a.mu.Lock()
		for _, o := range a.outputs[a.outUsed:outputTo] {
			a.dlg.ToolResult(o.Name, o.Output)
		}
		a.outUsed = outputTo
		for _, t := range pending {
			a.dlg.Heard(t.h)
			heardWords += len(strings.Fields(t.h.Transcript()))
		}
		a.consumed = turnsTo
		act := a.dlg.Next()
		a.mu.Unlock()
		switch {
		case len(act.Calls) > 0:
			for _, cl := range act.Calls {
				if _, err := r.Call(cl.Name, string(cl.Args)); err != nil {
					status, reason = agent.StatusFailed, "connection closed"
					break
				}
				a.log.Debug("tool call", slog.String("tool", cl.Name), slog.String("args", string(cl.Args)))
			}
		case act.Say != "":
			spoken = act.Say
			if s, rsn := a.speak(r, act.Say); s != "" {
				status, reason = s, rsn
			}
		}
	}
	usage := &wire.Usage{InputTokens: heardWords, OutputTokens: len(strings.Fields(spoken))}
	usage.TotalTokens = usage.InputTokens + usage.OutputTokens
	a.log.Debug("response done", slog.String("response", r.ID()), slog.String("status", status), slog.String("said", spoken))
	return realtimeserver.Outcome{Status: status, Reason: reason, Usage: usage}
}

// chunk is the audio per delta (100 ms).
const chunk = wire.SampleRate / 10

// speak streams an utterance sentence by sentence: a transcript delta, then its audio in 100 ms
// deltas, paced to run at most AudioLead ahead of real time. It returns a non-empty status when
// the response ends early.
func (a *callAgent) speak(r *realtimeserver.Response, text string) (status, reason string) {
	ctx := a.c.Context()
	if _, err := r.BeginAudio(); err != nil {
		return agent.StatusFailed, "connection closed"
	}
	lead := a.s.cfg.AudioLead
	start := time.Now()
	sent := 0
	for i, sentence := range sentences(text) {
		pcm, err := a.s.voice.Speak(ctx, a.s.cfg.Voice, sentence)
		if err != nil {
			a.log.Error("speech synthesis failed", slog.Any("err", err))
			return agent.StatusFailed, "synthesis failed"
		}
		delta := sentence
		if i > 0 {
			delta = " " + sentence
		} else {
			pcm = pcm[voiceStart(pcm):]
		}
		if r.Transcript(delta) != nil {
			return agent.StatusFailed, "connection closed"
		}
		for off := 0; off < len(pcm); off += chunk {
			if lead >= 0 {
				due := start.Add(time.Duration(sent)*time.Second/wire.SampleRate - lead)
				if wait := time.Until(due); wait > 0 {
					t := time.NewTimer(wait)
					select {
					case <-t.C:
					case <-r.Cancelled():
						t.Stop()
					case <-ctx.Done():
						t.Stop()
					}
				}
			}
			select {
			case <-r.Cancelled():
				return agent.StatusCancelled, r.Reason()
			case <-ctx.Done():
				return agent.StatusCancelled, "connection closed"
			default:
			}
			part := pcm[off:min(off+chunk, len(pcm))]
			if r.Audio(part) != nil {
				return agent.StatusFailed, "connection closed"
			}
			sent += len(part)
		}
	}
	return "", ""
}
