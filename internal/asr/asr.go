// Package asr recognizes caller speech offline with CMU PocketSphinx (Debian's libpocketsphinx and
// its en-us model). The model loads once per decoder and each utterance decodes in a fraction of
// its duration. Recognition is open-vocabulary (the model's trigram language model) or, as in IVR
// systems, constrained per question by a JSGF grammar built from what the asking side legitimately
// knows: a value's type (digits, a date, a phone number, a code of letters and digits, yes or no)
// or a list of allowed choices. A Channel streams one speaker's utterances while they are spoken;
// Transcribe decodes the speech segments of a recorded channel after a call. Results depend only
// on the audio given (a whole utterance, or a channel's utterances in order).
package asr

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/voicebench/humanaudit/internal/audio"
)

// SampleRate is the rate the acoustic model was trained on; other rates are converted.
const SampleRate = 16000

// DefaultModelDir is where Debian's pocketsphinx-en-us installs the US English model.
const DefaultModelDir = "/usr/share/pocketsphinx/model/en-us"

// Config configures a Recognizer.
type Config struct {
	// ModelDir holds en-us/ (acoustic model), en-us.lm.bin and cmudict-en-us.dict. Default
	// DefaultModelDir.
	ModelDir string
	// Decoders is how many whole utterances can be decoded at once; each decoder holds its own
	// copy of the model (about 40 MB). Default 1.
	Decoders int
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// Result is the recognizer's best hypothesis for one utterance.
type Result struct {
	// Text is the recognized words, lower case, separated by single spaces, with silence and
	// noise tokens removed. Empty when nothing was recognized.
	Text  string
	Words []Word
	// Score is the decoder's log score of the best path (larger is better); it compares
	// hypotheses of the same audio only.
	Score int
	// Frames is the number of 10 ms feature frames decoded.
	Frames int
	// Grammar names the grammar used, "" for the open-vocabulary language model.
	Grammar string
	// Elapsed is the decoding time (for latency reports).
	Elapsed time.Duration
}

// Word is one recognized word with its time in the utterance.
type Word struct {
	Text       string
	Start, End time.Duration
}

// Recognizer decodes utterances with a pool of PocketSphinx decoders. It is safe for concurrent
// use; callers wait (bounded by their context) when every decoder is busy.
type Recognizer struct {
	log    *slog.Logger
	pool   chan *decoder
	dir    string
	all    []*decoder
	mu     sync.Mutex // guards closed and the decoders' teardown
	closed bool
	busy   sync.WaitGroup
}

// decoderParams tune PocketSphinx for short telephone-style answers: a higher silence probability
// and a lower word insertion penalty than the defaults keep pauses between dictated digits from
// being heard as extra words.
var decoderParams = map[string]string{
	"-silprob": "1.0",
	"-wip":     "0.05",
}

// New loads the model into cfg.Decoders decoders.
func New(cfg Config) (*Recognizer, error) {
	if cfg.ModelDir == "" {
		cfg.ModelDir = DefaultModelDir
	}
	if cfg.Decoders <= 0 {
		cfg.Decoders = 1
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for _, f := range []string{"en-us/mdef", "en-us.lm.bin", "cmudict-en-us.dict"} {
		if _, err := os.Stat(cfg.ModelDir + "/" + f); err != nil {
			return nil, fmt.Errorf("%w: %s/%s is missing (install pocketsphinx-en-us)", ErrModel, cfg.ModelDir, f)
		}
	}
	r := &Recognizer{log: log, pool: make(chan *decoder, cfg.Decoders), dir: cfg.ModelDir}
	start := time.Now()
	for range cfg.Decoders {
		d, err := newDecoder(cfg.ModelDir, decoderParams)
		if err != nil {
			for _, d := range r.all {
				d.close()
			}
			return nil, err
		}
		r.all = append(r.all, d)
		r.pool <- d
	}
	log.Info("speech recognizer loaded", slog.String("model", cfg.ModelDir), slog.Int("decoders", cfg.Decoders),
		slog.Duration("took", time.Since(start)))
	return r, nil
}

// Close frees the decoders after the utterances in progress finish.
func (r *Recognizer) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.busy.Wait()
	for _, d := range r.all {
		d.close()
	}
	return nil
}

// acquire takes a free decoder, waiting at most until ctx is done.
func (r *Recognizer) acquire(ctx context.Context) (*decoder, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	r.busy.Add(1)
	r.mu.Unlock()
	select {
	case d := <-r.pool:
		return d, nil
	case <-ctx.Done():
		r.busy.Done()
		return nil, ctx.Err()
	}
}

func (r *Recognizer) release(d *decoder) {
	r.pool <- d
	r.busy.Done()
}

// Known reports whether word (lower case) is in the pronunciation dictionary: grammars can only
// use known words.
func (r *Recognizer) Known(word string) bool {
	d, err := r.acquire(context.Background())
	if err != nil {
		return false
	}
	defer r.release(d)
	return d.known(word)
}

// Check reports whether every word of g is in the dictionary (an error wrapping ErrUnknownWord
// names the ones that are not).
func (r *Recognizer) Check(g *Grammar) error {
	d, err := r.acquire(context.Background())
	if err != nil {
		return err
	}
	defer r.release(d)
	if oov := d.unknownWords(g); len(oov) > 0 {
		return fmt.Errorf("grammar %s: %w: %v", g.Name, ErrUnknownWord, oov)
	}
	return nil
}

// Recognize decodes one utterance of mono PCM16 at rate Hz (converted to 16 kHz when needed).
// With a nil grammar it uses the open-vocabulary language model; with a grammar the hypothesis is
// always a sentence of the grammar, so callers judge plausibility themselves (compare Score with
// the open-vocabulary result of the same audio).
func (r *Recognizer) Recognize(ctx context.Context, pcm []int16, rate int, g *Grammar) (Result, error) {
	in, err := To16k(pcm, rate)
	if err != nil {
		return Result{}, err
	}
	d, err := r.acquire(ctx)
	if err != nil {
		return Result{}, err
	}
	defer r.release(d)
	if err := d.use(g); err != nil {
		return Result{}, err
	}
	start := time.Now()
	res, err := d.decode(in)
	if err != nil {
		return Result{}, err
	}
	res.Elapsed = time.Since(start)
	if g != nil {
		res.Grammar = g.Name
	}
	return res, nil
}

// To16k converts mono PCM16 at rate Hz to the model's 16 kHz, flushing the resampler's delay so
// the end of the utterance is kept.
func To16k(pcm []int16, rate int) ([]int16, error) {
	if rate == SampleRate {
		return pcm, nil
	}
	rs, err := audio.NewResampler(rate, SampleRate)
	if err != nil {
		return nil, fmt.Errorf("%w: %d Hz: %v", ErrBadAudio, rate, err)
	}
	tail := make([]int16, rate/50) // 20 ms of silence pushes the filter's delay out
	out := rs.Process(append(append(make([]int16, 0, len(pcm)+len(tail)), pcm...), tail...), nil)
	if d := rs.DelaySamples(); d < len(out) {
		out = out[d:]
	}
	return out, nil
}

// Answer is a recognized answer to a typed question: the hypothesis of the slot's grammar and
// the value it means (OK false when the words hold none).
type Answer struct {
	Result
	Value Value
	OK    bool
}

// identifierDigitMargin is how much better (in decoder score) a digits-only reading must be than
// the letters-and-digits reading of the same audio for an identifier to be taken as all digits.
// Letters that rhyme with digits ("a"/"eight", "q"/"two") otherwise creep into numeric codes.
const identifierDigitMargin = 1000

// RecognizeSlot decodes an answer with the slot's grammar and parses its value. An identifier is
// also decoded as digits only (see Slot.Alternative and Slot.Answer).
func (r *Recognizer) RecognizeSlot(ctx context.Context, pcm []int16, rate int, slot Slot) (Answer, error) {
	res, err := r.Recognize(ctx, pcm, rate, slot.Grammar())
	if err != nil {
		return Answer{}, err
	}
	var alt *Result
	if a := slot.Alternative(); a != nil && res.Text != "" {
		ar, err := r.Recognize(ctx, pcm, rate, a.Grammar())
		if err != nil {
			return Answer{}, err
		}
		alt = &ar
	}
	return slot.Answer(res, alt), nil
}

// Alternative is a second reading worth decoding for the slot: digits only for an identifier
// (letters that rhyme with digits, "a"/"eight" or "q"/"two", otherwise creep into numeric codes).
// Nil for other kinds.
func (s Slot) Alternative() *Slot {
	if s.Kind != KindIdentifier {
		return nil
	}
	return &Slot{Kind: KindDigits, Subject: s.Subject}
}

// Answer parses the slot's hypothesis, taking the Alternative's instead when it fits the audio
// clearly better (by identifierDigitMargin in decoder score).
func (s Slot) Answer(res Result, alt *Result) Answer {
	if alt != nil && alt.Text != "" && alt.Score-res.Score > identifierDigitMargin {
		a := *alt
		a.Elapsed += res.Elapsed
		a.Grammar = res.Grammar
		res = a
	}
	v, ok := s.Parse(res.Text)
	return Answer{Result: res, Value: v, OK: ok}
}
