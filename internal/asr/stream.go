package asr

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/voicebench/humanaudit/internal/media"
)

// Speaker is what streaming learns about one speaker's channel: the running cepstral mean that
// live normalization starts each utterance from. Keeping one per caller (rather than per decoder)
// makes a stream's result depend only on that caller's own audio, in order. The zero value starts
// from the model's default. Not safe for concurrent use.
type Speaker struct {
	mean []float32
}

// Stream decodes one utterance while its audio arrives, so that the hypothesis is ready moments
// after the speaker stops rather than a fraction of the utterance's length later. Normalization is
// live (it cannot see the end of the utterance), so results can differ slightly from Recognize.
// It holds one decoder from Stream until Finish or Abort. Its methods are not safe for concurrent
// use.
type Stream struct {
	r       *Recognizer
	speaker *Speaker
	d       *decoder
	grammar string
	rs      *media.Resampler
	skip    int // resampler delay still to drop, in 16 kHz samples
	busy    time.Duration
	err     error
	once    sync.Once
	out     []int16
}

// Stream starts decoding an utterance of speaker sp (nil: no history) in PCM16 at rate Hz with
// grammar g (nil: open vocabulary), waiting for a free decoder at most until ctx is done.
func (r *Recognizer) Stream(ctx context.Context, sp *Speaker, rate int, g *Grammar) (*Stream, error) {
	d, err := r.acquire(ctx)
	if err != nil {
		return nil, err
	}
	return r.startStream(d, sp, rate, g)
}

// TryStream starts a stream if a decoder is free now; ok is false when every decoder is busy
// (decode the whole utterance with Recognize later instead).
func (r *Recognizer) TryStream(sp *Speaker, rate int, g *Grammar) (s *Stream, ok bool, err error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, false, ErrClosed
	}
	r.busy.Add(1)
	r.mu.Unlock()
	select {
	case d := <-r.pool:
		s, err := r.startStream(d, sp, rate, g)
		return s, err == nil, err
	default:
		r.busy.Done()
		return nil, false, nil
	}
}

func (r *Recognizer) startStream(d *decoder, sp *Speaker, rate int, g *Grammar) (*Stream, error) {
	if sp == nil {
		sp = &Speaker{}
	}
	s := &Stream{r: r, d: d, speaker: sp}
	if rate != SampleRate {
		rs, err := media.NewResampler(rate, SampleRate)
		if err != nil {
			r.release(d)
			return nil, fmt.Errorf("%w: %d Hz: %v", ErrBadAudio, rate, err)
		}
		s.rs, s.skip = rs, rs.DelaySamples()
	}
	if err := d.use(g); err != nil {
		r.release(d)
		return nil, err
	}
	if g != nil {
		s.grammar = g.Name
	}
	if err := d.begin(sp.mean); err != nil {
		r.release(d)
		return nil, err
	}
	return s, nil
}

// Write decodes more audio of the utterance.
func (s *Stream) Write(pcm []int16) error {
	if s.d == nil {
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
	s.err = s.d.feed(in, false)
	s.busy += time.Since(start)
	return s.err
}

// Finish ends the utterance and returns its hypothesis; Result.Elapsed is the total decoding
// time. The decoder is released.
func (s *Stream) Finish() (Result, error) {
	if s.d == nil {
		return Result{}, ErrClosed
	}
	if s.rs != nil && s.err == nil {
		s.Write(make([]int16, 960)) // push the resampler's delay out
	}
	start := time.Now()
	var res Result
	err := s.err
	if err == nil {
		res, err = s.d.end()
		s.speaker.mean = s.d.cmn()
	} else {
		s.d.end()
	}
	res.Elapsed = s.busy + time.Since(start)
	res.Grammar = s.grammar
	s.release()
	return res, err
}

// Abort ends the utterance without a result and releases the decoder.
func (s *Stream) Abort() {
	if s.d == nil {
		return
	}
	s.d.end()
	s.release()
}

func (s *Stream) release() {
	s.once.Do(func() {
		s.r.release(s.d)
		s.d = nil
	})
}
