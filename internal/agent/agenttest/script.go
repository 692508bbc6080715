// Package agenttest holds faithful protocol fakes of the realtime agent APIs: real WebSocket
// servers on loopback that speak each family's wire protocol from a small script, validate what
// clients send as the real API does (rejecting what it rejects), and record the traffic so tests
// can assert on it. Adapter tests run the real client code against them. The OpenAI-family fake
// is a responder of realtimeserver; the Gemini Live fake (with the service's setup and schema
// validation, tool-turn shapes and session resumption) and the GPT-Live fake (the published API)
// are servers of their own protocols.
package agenttest

import (
	"math"
	"strings"
	"sync"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/openai/wire"
	"github.com/voicebench/humanaudit/internal/agent/realtimeserver"
)

// Reply is what the fake agent does for one response (or, for Gemini, one model turn).
type Reply struct {
	// Text is the agent's spoken words: sent as transcript deltas alongside the audio.
	Text string
	// AudioMS is the length of the reply's audio (a tone); 0 means 400 ms.
	AudioMS int
	// ChunkMS is the audio length per delta; 0 means 100 ms.
	ChunkMS int
	// Latency is the wait before the reply's first event (a fast agent: 0 to 500 ms).
	Latency time.Duration
	// Pace is the wait before each audio delta, to keep a response active while a test barges in.
	Pace time.Duration
	// Calls are function calls made in this response; several form a parallel batch. A reply with
	// calls and no Text sends no audio.
	Calls []Call
	// Error answers the request with a provider error instead of a response (OpenAI family: an
	// error event and no response.created).
	Error *ProviderError
	// Fail starts the response, then ends it as failed with this error (OpenAI family).
	Fail *ProviderError
	// Hang ignores the request: no response at all, as xAI does after a partial tool batch.
	Hang bool
	// Drop closes the TCP connection without a close frame after DropAfter audio deltas.
	Drop      bool
	DropAfter int
	// CloseCode closes the WebSocket with this code and CloseReason instead of replying.
	CloseCode   int
	CloseReason string
	// GoAway sends goAway with this time left, then closes after it (Gemini).
	GoAway time.Duration
}

// Call is one function call of a reply. Arguments is a JSON object text.
type Call struct {
	Name      string
	Arguments string
}

// ProviderError is an error the fake reports.
type ProviderError struct {
	Type    string // invalid_request_error, server_error, rate_limit_error, …
	Code    string
	Message string
}

// Rate-limit and server errors as the OpenAI family reports them.
var (
	ErrServer    = &ProviderError{Type: "server_error", Code: "server_error", Message: "The server had an error while processing your request."}
	ErrRateLimit = &ProviderError{Type: "rate_limit_error", Code: "rate_limit_exceeded", Message: "Rate limit reached for requests per minute."}
)

// cursor hands out a script's replies and caller transcripts in order, across a fake's
// connections.
type cursor struct {
	mu         sync.Mutex
	s          Script
	next       int // next reply
	transcript int // next caller transcript
}

// reply returns the next reply; past the script's end every reply is a short "Okay.".
func (c *cursor) reply() Reply {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next >= len(c.s.Replies) {
		return Reply{Text: "Okay.", AudioMS: 200}
	}
	r := c.s.Replies[c.next]
	c.next++
	return r
}

// callerTranscript returns the next caller transcript, or fallback past the script's end.
func (c *cursor) callerTranscript(fallback string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.transcript >= len(c.s.CallerTranscripts) {
		return fallback
	}
	t := c.s.CallerTranscripts[c.transcript]
	c.transcript++
	return t
}

func (r Reply) audioMS() int {
	if r.AudioMS > 0 {
		return r.AudioMS
	}
	if len(r.Calls) > 0 && r.Text == "" {
		return 0
	}
	return 400
}

func (r Reply) chunkMS() int {
	if r.ChunkMS > 0 {
		return r.ChunkMS
	}
	return 100
}

// words splits the reply text into n transcript pieces, one per audio chunk.
func (r Reply) pieces(n int) []string {
	out := make([]string, n)
	if n == 0 {
		return out
	}
	words := strings.Fields(r.Text)
	for i, w := range words {
		if i > 0 {
			w = " " + w
		}
		j := i * n / len(words)
		out[j] += w
	}
	return out
}

// chunk is one audio delta of a reply being spoken.
type chunk struct {
	i       int     // its index, from 0
	startMS int     // where it starts in the reply's audio
	ms      int     // its length
	pcm     []int16 // the tone, continuing the chunks before
	text    string  // the reply's transcript piece that goes with it
}

// playEnd is how the playing of a reply ended.
type playEnd int

const (
	playedAll playEnd = iota
	playCancelled
	playStopped // deliver refused a chunk: the connection is gone
)

// play speaks the reply as paced chunks of tone at rate (read before each chunk): it waits Pace
// before each chunk, ending early when cancel is closed, then hands the chunk to deliver. It
// returns the samples delivered and how it ended.
func (r Reply) play(cancel <-chan struct{}, rate func() int, deliver func(chunk) bool) (int, playEnd) {
	chunkMS, total := r.chunkMS(), r.audioMS()
	n := (total + chunkMS - 1) / chunkMS
	pieces := r.pieces(n)
	sent := 0
	for i := 0; i < n; i++ {
		timer := time.NewTimer(r.Pace)
		select {
		case <-cancel:
			timer.Stop()
			return sent, playCancelled
		case <-timer.C:
		}
		ms := min(chunkMS, total-i*chunkMS)
		hz := rate()
		pcm := Tone(ms*hz/1000, hz, sent)
		sent += len(pcm)
		if !deliver(chunk{i: i, startMS: i * chunkMS, ms: ms, pcm: pcm, text: pieces[i]}) {
			return sent, playStopped
		}
	}
	return sent, playedAll
}

// Tone returns n samples of a 220 Hz tone at rate, starting at sample offset; fake agents speak
// with it so tests can tell agent audio from silence.
func Tone(n, rate, offset int) []int16 {
	pcm := make([]int16, n)
	for i := range pcm {
		pcm[i] = int16(3000 * math.Sin(2*math.Pi*220*float64(offset+i)/float64(rate)))
	}
	return pcm
}

// Speech returns ms of caller "speech" (a loud 300 Hz tone) at rate, for fakes' server VAD.
func Speech(ms, rate int) []int16 {
	n := ms * rate / 1000
	pcm := make([]int16, n)
	for i := range pcm {
		pcm[i] = int16(8000 * math.Sin(2*math.Pi*300*float64(i)/float64(rate)))
	}
	return pcm
}

// Silence returns ms of silence at rate.
func Silence(ms, rate int) []int16 { return make([]int16, ms*rate/1000) }

// rms is the root mean square of pcm.
func rms(pcm []int16) float64 {
	if len(pcm) == 0 {
		return 0
	}
	var s float64
	for _, v := range pcm {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(len(pcm)))
}

// vad is the fakes' energy voice-activity detector standing in for a provider's server VAD.
type vad struct {
	speaking  bool
	silenceMS int
}

const vadThreshold = 1000

// feed consumes one chunk of ms milliseconds and reports speech start and end (after silenceMS
// of quiet).
func (v *vad) feed(pcm []int16, ms, silenceMS int) (started, stopped bool) {
	loud := rms(pcm) > vadThreshold
	switch {
	case !v.speaking && loud:
		v.speaking, v.silenceMS = true, 0
		return true, false
	case v.speaking && loud:
		v.silenceMS = 0
	case v.speaking && !loud:
		v.silenceMS += ms
		if v.silenceMS >= silenceMS {
			v.speaking = false
			return false, true
		}
	}
	return false, false
}

// energyVAD is the vad as an OpenAI-family server's turn detection.
type energyVAD struct {
	v         vad
	silenceMS int
}

func newEnergyVAD(s realtimeserver.Session) realtimeserver.VAD {
	return &energyVAD{silenceMS: s.SilenceMS}
}

func (e *energyVAD) Feed(pcm []int16, start time.Duration) []realtimeserver.SpeechEvent {
	d := time.Duration(len(pcm)) * time.Second / wire.SampleRate
	switch started, stopped := e.v.feed(pcm, int(d.Milliseconds()), e.silenceMS); {
	case started:
		return []realtimeserver.SpeechEvent{{Start: true, At: start, Padded: start}}
	case stopped:
		return []realtimeserver.SpeechEvent{{At: start + d}}
	}
	return nil
}

func (e *energyVAD) Speaking() bool { return e.v.speaking }
