// Package asr recognizes caller speech offline with CMU PocketSphinx (Debian's libpocketsphinx and
// its en-us model). The model loads once per decoder and each utterance decodes in a fraction of
// its duration. Recognition is open-vocabulary (the model's trigram language model) or, as in IVR
// systems, constrained per question by a JSGF grammar built from what the asking side legitimately
// knows: a value's type (digits, a date, a phone number, a code of letters and digits, yes or no)
// or a list of allowed choices. A name the language model does not know is looked up in the names
// directory (RecognizeNames): the pronunciation dictionary's words, all equally likely. A Channel
// streams one speaker's utterances while they are spoken; Transcribe decodes the speech segments
// of a recorded channel after a call. Results depend only on the audio given (a whole utterance,
// or a channel's utterances in order).
package asr

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/canon"
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
	// NBest are the decoder's best distinct readings, best first (the best one included), when
	// they were asked for (Slot.Alternatives).
	NBest []Hypothesis
	// Posterior is the lattice posterior probability of the hypothesis in [0, 1]; computed only
	// where a decision reports a confidence (RecognizeAuthorization), 0 otherwise.
	Posterior float64
}

// Hypothesis is one of the recognizer's n-best readings of an utterance.
type Hypothesis struct {
	Text  string
	Score int // the path score, comparable with the other hypotheses of the same decode
}

// Word is one recognized word with its time in the utterance's speech. The time is not an offset
// into the audio: the decoder's front end drops the frames it takes for silence before it counts
// (a turn with a two-second pause has the same word times as with a one-second one), and a
// Channel's stream counts on from the utterances it streamed before. Times order words and
// measure them; cutting the audio at one cuts elsewhere.
type Word struct {
	Text       string
	Start, End time.Duration
	// Posterior is the word's lattice posterior probability (see Result.Posterior).
	Posterior float64
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
	dict   map[string]string // word -> its first pronunciation, from the model's dictionary
	// compounds are words the dictionary lacks that Known made of two it has ("edgewater" as
	// edge + water), in the order learned; each decoder adds the ones it lacks when acquired.
	lexMu     sync.Mutex
	compounds []compound
	// names and mail are the directories' language models, shared by content and written when
	// missing (names.go).
	names, mail directory
	phones      phoneDict // the dictionary by phones, for an address's sound-alikes
	spellings   spellings // the common spelling of each homophone, for the directories' readings
}

// compound is a word the dictionary lacks with the pronunciation of the two words it is made of.
type compound struct{ word, phones string }

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
	if dict, err := readDict(cfg.ModelDir + "/cmudict-en-us.dict"); err == nil {
		r.dict = dict
	}
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
		r.lexMu.Lock()
		learned := r.compounds[d.learned:]
		r.lexMu.Unlock()
		for _, c := range learned {
			d.addWord(c.word, c.phones)
			d.learned++
		}
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
// use known words. It reads the dictionary file loaded with the model, never waiting for a busy
// decoder (a call's form is built from many look-ups before its session starts).
//
// A word the dictionary lacks that is two words it has run together ("edgewater", "fastmail")
// is learned with their pronunciations, for every decoder, and known from then on: enumeration
// values and place names are often written so, and a grammar without them can never hear them.
func (r *Recognizer) Known(word string) bool {
	if r.dict != nil {
		if _, ok := r.dict[word]; ok {
			return true
		}
		return r.learnCompound(word)
	}
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
	return r.recognize(ctx, pcm, rate, g, 0, false)
}

// recognize decodes one utterance; when nbest > 0 it keeps up to nbest distinct readings, and
// with posterior it computes the hypothesis's and its words' lattice posteriors.
func (r *Recognizer) recognize(ctx context.Context, pcm []int16, rate int, g *Grammar, nbest int, posterior bool) (Result, error) {
	res, err := r.decodeWith(ctx, pcm, rate, func(d *decoder) error { return d.use(g) }, nbest, posterior)
	if err == nil && g != nil {
		res.Grammar = g.Name
	}
	return res, err
}

// decodeWith decodes one utterance on a free decoder with the search use selects (see recognize).
func (r *Recognizer) decodeWith(ctx context.Context, pcm []int16, rate int, use func(*decoder) error, nbest int, posterior bool) (Result, error) {
	in, err := To16k(pcm, rate)
	if err != nil {
		return Result{}, err
	}
	d, err := r.acquire(ctx)
	if err != nil {
		return Result{}, err
	}
	defer r.release(d)
	if err := use(d); err != nil {
		return Result{}, err
	}
	start := time.Now()
	d.posterior = posterior
	res, err := d.decode(in)
	d.posterior = false
	if err != nil {
		return Result{}, err
	}
	if nbest > 0 && res.Text != "" {
		res.NBest = d.nbest(nbest)
	}
	res.Elapsed = time.Since(start)
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
	// Alternatives are the other values the n-best readings mean (Slot.Alternatives of them at
	// most), best first, none equal to Value or to each other.
	Alternatives []Value
}

// identifierDigitMargin is how much better (in decoder score) a digits-only reading must be than
// the letters-and-digits reading of the same audio for an identifier to be taken as all digits.
// Letters that rhyme with digits ("a"/"eight", "q"/"two") otherwise creep into numeric codes.
const identifierDigitMargin = 1000

// digitsFitBetter reports an identifier's digits-only reading (alt) that is to be taken over its
// letters-and-digits reading (res): it fits the audio better by identifierDigitMargin, and the
// letters-and-digits reading is no lettered code's (letterPrefixed).
func (s Slot) digitsFitBetter(res Result, alt *Result) bool {
	return alt != nil && alt.Text != "" && alt.Score-res.Score > identifierDigitMargin && !s.letterPrefixed(res.Text)
}

// letterPrefixed reports a code reading that begins with two letters or more before its digits
// ("P L three oh nine six two"), not all of them digitLetters: the shape of a lettered code
// (PL-30962, HPRG-0413), which the letters-and-digits grammar gives no all-digit code, and which the
// digits-only reading beats by the margin anyway when the letters rhyme with digits and carrier
// words ("it's P A, two zero …" is "it's the eight two zero …", by 1059 to 2015 in the four
// voices, where all-digit codes win by 289 to 2659). The digits-only reading is then no reading.
func (s Slot) letterPrefixed(text string) bool {
	v, ok := s.Parse(text)
	if !ok {
		return false
	}
	letters, digitLike := 0, 0
	for letters < len(v.Text) && v.Text[letters] >= 'A' && v.Text[letters] <= 'Z' {
		if strings.IndexByte(digitLetters, v.Text[letters]) >= 0 {
			digitLike++
		}
		letters++
	}
	digits := 0
	for _, c := range v.Text[letters:] {
		if c >= '0' && c <= '9' {
			digits++
		}
	}
	return letters >= 2 && digitLike < letters && digits >= 3
}

// digitLetters are the letters the letters-and-digits grammar hears at the start of an all-digit
// code said in the caller voices: A and H for "eight" ("account's h h four one …" for "account's
// eight eight four one …", rms), X for "it's". A prefix of these alone is no lettered code's.
const digitLetters = "AHX"

// RecognizeSlot decodes an answer with the slot's grammar and parses its value. An identifier is
// also decoded as digits only (see Slot.Alternative and Slot.Answer), unless the slot is Single.
func (r *Recognizer) RecognizeSlot(ctx context.Context, pcm []int16, rate int, slot Slot) (Answer, error) {
	if slot.Kind == KindAddress {
		return r.recognizeAddress(ctx, pcm, rate, slot)
	}
	res, err := r.Recognize(ctx, pcm, rate, slot.Grammar())
	if err != nil {
		return Answer{}, err
	}
	if slot.Kind == KindChoiceInContext {
		return r.choiceInContext(ctx, pcm, rate, slot, res)
	}
	var alt *Result
	if a := slot.Alternative(); a != nil && res.Text != "" && !slot.Single {
		ar, err := r.Recognize(ctx, pcm, rate, a.Grammar())
		if err != nil {
			return Answer{}, err
		}
		alt = &ar
	}
	if slot.Alternatives > 0 && (slot.Kind == KindIdentifier || slot.Kind == KindDigits) {
		// The n-best readings of a code, for retries against a verify tool: the best reading's
		// likely confusions, ranked by the audio (an n-best search over the code grammar's own
		// lattice takes seconds).
		best := res
		if slot.digitsFitBetter(res, alt) {
			best = *alt
		}
		// Readings that differ in carrier words only mean one value: ask for more.
		res.NBest = r.alternativeReadings(ctx, pcm, rate, best.Text, 4*slot.Alternatives+4)
		if alt != nil {
			alt.NBest = res.NBest
		}
	}
	return slot.Answer(res, alt), nil
}

// choiceContextMargin is how much better per 10 ms frame, in decoder score, the reading with a
// choice must fit the audio than the context words alone for the choice to be taken: on the
// bank's choice answers and non-answers in the four Flite voices through Opus, choices said
// scored 1.4 to 9.4, non-answers a choice was forced into -2.4 to -5 (or found no path at all).
const choiceContextMargin = 0.5

// choiceInContext judges an in-context choice reading against the context words alone.
func (r *Recognizer) choiceInContext(ctx context.Context, pcm []int16, rate int, slot Slot, res Result) (Answer, error) {
	ans := slot.Answer(res, nil)
	if !ans.OK || res.Frames == 0 {
		ans.OK = false
		return ans, nil
	}
	none, err := r.Recognize(ctx, pcm, rate, slot.contextGrammar())
	if err != nil {
		return Answer{}, err
	}
	// The context words that found no path at all explain the audio worse than any path.
	if none.Text != "" && float64(res.Score-none.Score) < choiceContextMargin*float64(res.Frames) {
		ans.OK = false
	}
	return ans, nil
}

// Alternative is a second reading worth decoding for the slot: digits only for an identifier
// (letters that rhyme with digits, "a"/"eight" or "q"/"two", otherwise creep into numeric codes).
// Nil for other kinds.
func (s Slot) Alternative() *Slot {
	if s.Kind != KindIdentifier {
		return nil
	}
	return &Slot{Kind: KindDigits, Subject: s.Subject, Contractions: s.Contractions}
}

// Answer parses the slot's hypothesis, taking the Alternative's instead when it fits the audio
// clearly better (by identifierDigitMargin in decoder score).
func (s Slot) Answer(res Result, alt *Result) Answer {
	digitsTaken := false
	if s.digitsFitBetter(res, alt) {
		a := *alt
		a.Elapsed += res.Elapsed
		a.Grammar = res.Grammar
		res = a
		digitsTaken = true
	}
	// The lattice's best path (the first n-best reading) is surer than the first pass's: take it
	// when it means a value. Its confusion grammar weighs letters and digits alike, so once the
	// digits-only reading was taken by its margin, only another all-digit reading may replace it:
	// a letter there ("eight h four one" for "eight eight four one") is the prior undone.
	if len(res.NBest) > 0 && res.NBest[0].Text != res.Text {
		if v, ok := s.Parse(res.NBest[0].Text); ok && (!digitsTaken || canon.IsDigits(v.Text)) {
			res.Text = res.NBest[0].Text
			res.Score = res.NBest[0].Score
		}
	}
	v, ok := s.Parse(res.Text)
	ans := Answer{Result: res, Value: v, OK: ok}
	if s.Alternatives > 0 {
		seen := map[string]bool{v.Text: ok}
		for _, h := range res.NBest {
			if len(ans.Alternatives) >= s.Alternatives {
				break
			}
			if av, ok := s.Parse(h.Text); ok && !seen[av.Text] {
				seen[av.Text] = true
				ans.Alternatives = append(ans.Alternatives, av)
			}
		}
	}
	return ans
}

// readDict reads each word's first pronunciation from a PocketSphinx dictionary ("word PHONES";
// alternative pronunciations, "read(2) PHONES", are left out).
func readDict(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dict := make(map[string]string, 140000)
	for _, line := range strings.Split(string(data), "\n") {
		w, phones, ok := strings.Cut(line, " ")
		if !ok || w == "" || strings.IndexByte(w, '(') > 0 {
			continue
		}
		dict[w] = strings.TrimSpace(phones)
	}
	return dict, nil
}

// minCompoundPart is the shortest word a compound is split into: shorter ones ("a", "in", "ed")
// make a compound of almost any unknown word.
const minCompoundPart = 3

// learnCompound learns word when it splits into two dictionary words of at least
// minCompoundPart letters, the most even split first ("edge" + "water", not "edgew" + "ater").
func (r *Recognizer) learnCompound(word string) bool {
	if len(word) < 2*minCompoundPart || strings.ContainsAny(word, " '-.") {
		return false
	}
	r.lexMu.Lock()
	defer r.lexMu.Unlock()
	for _, c := range r.compounds {
		if c.word == word {
			return true
		}
	}
	best, bestShort := "", 0
	for i := minCompoundPart; i <= len(word)-minCompoundPart; i++ {
		a, okA := r.dict[word[:i]]
		b, okB := r.dict[word[i:]]
		if okA && okB && min(i, len(word)-i) > bestShort {
			best, bestShort = a+" "+b, min(i, len(word)-i)
		}
	}
	if best == "" {
		return false
	}
	r.compounds = append(r.compounds, compound{word, best})
	return true
}
