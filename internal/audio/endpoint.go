package audio

import (
	"fmt"
	"math"
	"time"
)

// EndpointerConfig tunes the energy-based voice-activity endpointer. The zero value of a field
// takes the default noted beside it.
type EndpointerConfig struct {
	// ThresholdDBFS: a 10 ms block at or above this RMS level (dB full scale) is voiced. Default -45.
	ThresholdDBFS float64
	// MinSpeech is the voiced time needed before a speech start is reported. Default 100 ms.
	MinSpeech time.Duration
	// SilenceDuration is the unvoiced time after which speech is over (a turn ends). Default 500 ms.
	SilenceDuration time.Duration
	// PrefixPadding is how much audio before the onset a turn should include. Default 300 ms.
	PrefixPadding time.Duration
}

func (c EndpointerConfig) withDefaults() EndpointerConfig {
	if c.ThresholdDBFS == 0 {
		c.ThresholdDBFS = -45
	}
	if c.MinSpeech == 0 {
		c.MinSpeech = 100 * time.Millisecond
	}
	if c.SilenceDuration == 0 {
		c.SilenceDuration = 500 * time.Millisecond
	}
	if c.PrefixPadding == 0 {
		c.PrefixPadding = 300 * time.Millisecond
	}
	return c
}

func (c EndpointerConfig) validate(field string) error {
	switch {
	case c.ThresholdDBFS >= 0 || c.ThresholdDBFS < -96:
		return fmt.Errorf("%w: %s.ThresholdDBFS = %v, want a level in [-96, 0) dBFS", ErrBadConfig, field, c.ThresholdDBFS)
	case c.MinSpeech < 0 || c.SilenceDuration < 0 || c.PrefixPadding < 0:
		return fmt.Errorf("%w: %s durations must not be negative (MinSpeech %v, SilenceDuration %v, PrefixPadding %v)",
			ErrBadConfig, field, c.MinSpeech, c.SilenceDuration, c.PrefixPadding)
	}
	return nil
}

// SpeechEvent is a speech start or end found by an Endpointer, stamped on the media clock.
type SpeechEvent struct {
	Start bool // true: speech started; false: speech ended
	// At is the onset, to the sample: the first sample of the voiced run that leads into the first
	// voiced block (see Endpointer); or the offset, the end of the last voiced block.
	At time.Duration
	// Padded is At minus the prefix padding, not before 0: where a turn's audio should begin.
	Padded time.Duration
	// Detected is the media time the decision was made: after MinSpeech of voice for a start,
	// after SilenceDuration of silence for an end.
	Detected time.Duration
}

// endpointBlock is the endpointer's analysis block.
const endpointBlock = 10 * time.Millisecond

// Endpointer finds speech starts and ends in one channel with an RMS threshold, a minimum speech
// time and a hangover. The same settings applied to every agent give matched turn-taking: each
// agent hears turns that end the same way. Not safe for concurrent use.
//
// Decisions are made on 10 ms blocks (a block is voiced when its RMS reaches the threshold); a
// start's onset is then refined to the sample: it is the first sample of the voiced run that
// leads into the first voiced block, the run being samples whose magnitude reaches the threshold
// level with no stretch below it longer than 12.5 ms (an 80 Hz voice's pitch period), followed
// back at most 100 ms. Offsets stay on the 10 ms grid.
type Endpointer struct {
	cfg EndpointerConfig
	thr float64 // energy threshold per sample (linear, int16 scale squared)

	speaking  bool
	cand      time.Duration // onset of a candidate start; -1 when none
	voiced    time.Duration // voiced time since cand
	unvoiced  time.Duration // unvoiced time in a row
	lastVoice time.Duration // end of the last voiced block

	hist    []int16       // the audio before the current block (up to onsetLookback), for the onset search
	histEnd time.Duration // media time at its end (-1: none)
}

// Onset refinement: the longest stretch below the threshold level a voiced run may have inside
// (the trough between two pitch pulses of an 80 Hz voice, a plosive's closure), and how far back
// before the first voiced block the run is followed.
const (
	onsetGap      = 12500 * time.Microsecond
	onsetLookback = 100 * time.Millisecond
)

// NewEndpointer returns an endpointer with cfg (defaults filled in).
func NewEndpointer(cfg EndpointerConfig) (*Endpointer, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate("EndpointerConfig"); err != nil {
		return nil, err
	}
	return &Endpointer{
		cfg:     cfg,
		thr:     32768 * 32768 * math.Pow(10, cfg.ThresholdDBFS/10),
		cand:    -1,
		histEnd: -1,
	}, nil
}

// Config returns the settings in use.
func (e *Endpointer) Config() EndpointerConfig { return e.cfg }

// Speaking reports whether the channel is inside a speech segment.
func (e *Endpointer) Speaking() bool { return e.speaking }

// Process analyses pcm (rate Hz) whose first sample is at media time start and calls emit for
// each event, in order. Blocks are 10 ms; a trailing partial block is analysed on its own.
func (e *Endpointer) Process(pcm []int16, rate int, start time.Duration, emit func(SpeechEvent)) {
	n := rate / 100
	for off := 0; off < len(pcm); off += n {
		blk := pcm[off:min(off+n, len(pcm))]
		var energy float64
		for _, s := range blk {
			energy += float64(s) * float64(s)
		}
		t0 := start + time.Duration(off)*time.Second/time.Duration(rate)
		t1 := start + time.Duration(off+len(blk))*time.Second/time.Duration(rate)
		voiced := energy >= e.thr*float64(len(blk))
		onset := t0
		if voiced && !e.speaking && e.cand < 0 {
			onset = start + time.Duration(off+e.onsetOffset(blk, rate, t0))*time.Second/time.Duration(rate)
		}
		e.block(voiced, t0, t1, onset, emit)
		e.remember(blk, rate, t0, t1)
	}
}

// remember keeps the last onsetLookback of audio for the onset search (in a buffer of twice that,
// slid when full, so each block costs a copy of itself).
func (e *Endpointer) remember(blk []int16, rate int, t0, t1 time.Duration) {
	keep := int(int64(rate) * int64(onsetLookback) / int64(time.Second))
	if e.histEnd != t0 {
		e.hist = e.hist[:0] // not contiguous with what came before
	}
	if len(e.hist)+len(blk) > 2*keep && len(e.hist) > keep {
		e.hist = e.hist[:copy(e.hist, e.hist[len(e.hist)-keep:])]
	}
	e.hist = append(e.hist, blk...)
	e.histEnd = t1
}

// onsetOffset returns where, relative to the first sample of blk (a voiced block starting at t0),
// the voiced run leading into it begins: 0 or later inside blk, negative before it.
func (e *Endpointer) onsetOffset(blk []int16, rate int, t0 time.Duration) int {
	var before []int16 // contiguous audio before blk, at most onsetLookback of it
	if e.histEnd == t0 {
		keep := int(int64(rate) * int64(onsetLookback) / int64(time.Second))
		before = e.hist[max(0, len(e.hist)-keep):]
	}
	// A block whose RMS reaches the threshold holds a sample at least at the threshold level.
	level := int(math.Ceil(math.Sqrt(e.thr)))
	loud := func(v int16) bool { return int(v) >= level || int(v) <= -level }
	first := -1
	for i, v := range blk {
		if loud(v) {
			first = i
			break
		}
	}
	if first < 0 {
		return 0
	}
	// Walk back through the run: loud samples with no quiet stretch longer than maxQuiet.
	maxQuiet := int(int64(rate) * int64(onsetGap) / int64(time.Second))
	run, quiet := first, 0
	for i := first - 1; i >= -len(before) && quiet <= maxQuiet; i-- {
		var v int16
		if i >= 0 {
			v = blk[i]
		} else {
			v = before[len(before)+i]
		}
		if loud(v) {
			run, quiet = i, 0
		} else {
			quiet++
		}
	}
	return run
}

// block takes the decision for one block; onset is where a start found in it would begin.
func (e *Endpointer) block(voiced bool, t0, t1, onset time.Duration, emit func(SpeechEvent)) {
	d := t1 - t0
	if voiced {
		e.unvoiced = 0
		e.lastVoice = t1
		if e.speaking {
			return
		}
		if e.cand < 0 {
			e.cand, e.voiced = onset, 0
		}
		e.voiced += d
		if e.voiced >= e.cfg.MinSpeech {
			e.speaking = true
			emit(SpeechEvent{Start: true, At: e.cand, Padded: max(0, e.cand-e.cfg.PrefixPadding), Detected: t1})
			e.cand = -1
		}
		return
	}
	e.unvoiced += d
	switch {
	case e.speaking && e.unvoiced >= e.cfg.SilenceDuration:
		e.speaking = false
		emit(SpeechEvent{At: e.lastVoice, Padded: e.lastVoice, Detected: t1})
	case !e.speaking && e.cand >= 0 && e.unvoiced > max(e.cfg.MinSpeech, endpointBlock):
		e.cand = -1 // a click or a breath, not speech
	}
}
