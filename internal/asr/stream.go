package asr

import (
	"fmt"
	"sync"
	"time"

	"github.com/voicebench/humanaudit/internal/audio"
)

// Channel is one speaker's audio channel (a caller in a call) with a decoder of its own, which
// decodes that speaker's utterances in order while they are spoken. Live normalization (noise
// and cepstral mean) carries over from one utterance to the next, as in a continuous recognizer,
// and because the decoder hears nothing else, the results depend only on the channel's own audio:
// the same call decodes the same way every time. One utterance streams at a time.
type Channel struct {
	r      *Recognizer
	mu     sync.Mutex
	d      *decoder
	busy   bool
	closed bool
}

// OpenChannel loads a decoder for one speaker's channel (a fraction of a second and about 40 MB);
// Close frees it.
func (r *Recognizer) OpenChannel() (*Channel, error) {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	d, err := newDecoder(r.dir, decoderParams)
	if err != nil {
		return nil, err
	}
	return &Channel{r: r, d: d}, nil
}

// Close frees the channel's decoder (after the utterance in progress, if any, is abandoned).
func (c *Channel) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	c.d.close()
	return nil
}

// Stream starts the channel's next utterance, in PCM16 at rate Hz, with grammar g (nil: open
// vocabulary). It fails while another utterance of the channel is streaming.
func (c *Channel) Stream(rate int, g *Grammar) (*Stream, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return nil, ErrClosed
	case c.busy:
		return nil, fmt.Errorf("%w: the channel's previous utterance is still streaming", ErrDecode)
	}
	s := &Stream{c: c}
	if rate != SampleRate {
		rs, err := audio.NewResampler(rate, SampleRate)
		if err != nil {
			return nil, fmt.Errorf("%w: %d Hz: %v", ErrBadAudio, rate, err)
		}
		s.rs, s.skip = rs, rs.DelaySamples()
	}
	if err := c.d.use(g); err != nil {
		return nil, err
	}
	if g != nil {
		s.grammar = g.Name
	}
	if err := c.d.begin(true); err != nil {
		return nil, err
	}
	c.busy = true
	return s, nil
}

// Stream decodes one utterance of a Channel while its audio arrives, so that the hypothesis is
// ready moments after the speaker stops rather than a fraction of the utterance's length later.
// Normalization is live (it cannot see the end of the utterance), so results can differ slightly
// from Recognize. Its methods are not safe for concurrent use.
type Stream struct {
	c       *Channel
	grammar string
	rs      *audio.Resampler
	skip    int // resampler delay still to drop, in 16 kHz samples
	busy    time.Duration
	err     error
	done    bool
	out     []int16
}

// Write decodes more audio of the utterance.
func (s *Stream) Write(pcm []int16) error {
	if s.done {
		return ErrClosed
	}
	if s.err != nil {
		return s.err
	}
	start := time.Now()
	in := pcm
	if s.rs != nil {
		s.out = s.rs.Process(pcm, s.out)
		in = s.out
		if s.skip > 0 {
			n := min(s.skip, len(in))
			in, s.skip = in[n:], s.skip-n
		}
	}
	s.c.mu.Lock()
	if s.c.closed {
		s.err = ErrClosed
	} else {
		s.err = s.c.d.feed(in, false)
	}
	s.c.mu.Unlock()
	s.busy += time.Since(start)
	return s.err
}

// Finish ends the utterance and returns its hypothesis; Result.Elapsed is the total decoding
// time.
func (s *Stream) Finish() (Result, error) {
	if s.done {
		return Result{}, ErrClosed
	}
	if s.rs != nil && s.err == nil {
		s.Write(make([]int16, 960)) // push the resampler's delay out
	}
	s.done = true
	start := time.Now()
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	s.c.busy = false
	if s.c.closed {
		return Result{}, ErrClosed
	}
	res, err := s.c.d.end()
	if s.err != nil {
		err = s.err
	}
	res.Elapsed = s.busy + time.Since(start)
	res.Grammar = s.grammar
	return res, err
}

// Abort ends the utterance without a result.
func (s *Stream) Abort() {
	if s.done {
		return
	}
	s.done = true
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	s.c.busy = false
	if !s.c.closed {
		s.c.d.end()
	}
}
