package asr

/*
#cgo pkg-config: pocketsphinx sphinxbase
#include <stdlib.h>
#include <pocketsphinx.h>
#include <sphinxbase/err.h>
#include <sphinxbase/ngram_model.h>

static cmd_ln_t *asr_config(int argc, char **argv) {
	return cmd_ln_parse_r(NULL, ps_args(), argc, argv, TRUE);
}

static void asr_quiet(void) { err_set_logfp(NULL); }

// sphinxbase switches the feature extractor to live (prior) normalization for good the first time
// an utterance is fed in pieces; these read and restore the configured type.
static int asr_cmn_type(ps_decoder_t *ps) { return (int)ps_get_feat(ps)->cmn; }
static void asr_set_cmn_type(ps_decoder_t *ps, int t) { ps_get_feat(ps)->cmn = (cmn_type_t)t; }

// asr_posterior is the lattice posterior probability of the best hypothesis, in [0, 1]; it also
// computes the word posteriors asr_seg_posterior reads.
static double asr_posterior(ps_decoder_t *ps) { return logmath_exp(ps_get_logmath(ps), ps_get_prob(ps)); }

// asr_seg_posterior is one word's posterior probability in [0, 1].
static double asr_seg_posterior(ps_decoder_t *ps, ps_seg_t *seg) {
	int32 ascr, lscr, lback;
	return logmath_exp(ps_get_logmath(ps), ps_seg_prob(seg, &ascr, &lscr, &lback));
}

// asr_unigram is a word's log probability alone in the language model of a search: 1 with it
// in *score, 0 for a word the model lacks, -1 when the search has no language model.
static int asr_unigram(ps_decoder_t *ps, const char *search, const char *w, int32 *score) {
	ngram_model_t *lm = ps_get_lm(ps, search);
	if (lm == NULL) return -1;
	int32 wid = ngram_wid(lm, w);
	if (wid == ngram_unknown_wid(lm)) return 0;
	int32 used;
	*score = ngram_ng_score(lm, wid, NULL, 0, &used);
	return 1;
}
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// quietOnce silences sphinxbase's process-wide logging (it writes to stderr by default).
var quietOnce sync.Once

// decoder is one PocketSphinx decoder: the acoustic model, dictionary and language model loaded
// once, plus the grammar searches registered on it. Not safe for concurrent use.
type decoder struct {
	ps       *C.ps_decoder_t
	cmnType  C.int           // the model's normalization type (batch for en-us)
	searches map[string]bool // grammar searches registered, by name
	order    []string        // registration order, for eviction
	learned  int             // how many of the recognizer's compounds this decoder has added
	// posterior asks end for the hypothesis's lattice posterior (a little extra work per
	// utterance, so only the decisions that report a confidence ask for it).
	posterior bool
}

// defaultSearch is PocketSphinx's name for the search built from -lm.
const defaultSearch = "_default"

// maxSearches bounds the grammar searches kept per decoder (each holds a compiled FSG).
const maxSearches = 64

func newDecoder(modelDir string, params map[string]string) (*decoder, error) {
	quietOnce.Do(func() { C.asr_quiet() })
	args := []string{
		"-hmm", modelDir + "/en-us",
		"-lm", modelDir + "/en-us.lm.bin",
		"-dict", modelDir + "/cmudict-en-us.dict",
		"-logfn", "/dev/null",
	}
	for k, v := range params {
		args = append(args, k, v)
	}
	argv := make([]*C.char, len(args))
	for i, a := range args {
		argv[i] = C.CString(a)
	}
	defer func() {
		for _, p := range argv {
			C.free(unsafe.Pointer(p))
		}
	}()
	cfg := C.asr_config(C.int(len(argv)), &argv[0])
	if cfg == nil {
		return nil, fmt.Errorf("%w: bad decoder parameters %v", ErrModel, args)
	}
	ps := C.ps_init(cfg)
	C.cmd_ln_free_r(cfg) // ps_init keeps its own reference
	if ps == nil {
		return nil, fmt.Errorf("%w: cannot load the model from %s", ErrModel, modelDir)
	}
	d := &decoder{ps: ps, searches: map[string]bool{}}
	d.cmnType = C.asr_cmn_type(ps)
	return d, nil
}

func (d *decoder) close() {
	if d.ps != nil {
		C.ps_free(d.ps)
		d.ps = nil
	}
}

// addWord adds a word to the decoder's dictionary (a word already there is left as it is).
func (d *decoder) addWord(word, phones string) {
	cw, cp := C.CString(word), C.CString(phones)
	defer C.free(unsafe.Pointer(cw))
	defer C.free(unsafe.Pointer(cp))
	C.ps_add_word(d.ps, cw, cp, 1)
}

// known reports whether word is in the pronunciation dictionary.
func (d *decoder) known(word string) bool {
	cw := C.CString(word)
	defer C.free(unsafe.Pointer(cw))
	p := C.ps_lookup_word(d.ps, cw)
	if p == nil {
		return false
	}
	C.free(unsafe.Pointer(p))
	return true
}

// unigram is w's log probability alone in the open-vocabulary language model (in sphinxbase's
// log base), and false for a word the model lacks.
func (d *decoder) unigram(w string) (int32, bool) {
	cs, cw := C.CString(defaultSearch), C.CString(w)
	defer C.free(unsafe.Pointer(cs))
	defer C.free(unsafe.Pointer(cw))
	var score C.int32
	if C.asr_unigram(d.ps, cs, cw, &score) != 1 {
		return 0, false
	}
	return int32(score), true
}

// use selects the search for g (registering its grammar on first use), or the language model.
func (d *decoder) use(g *Grammar) error {
	name := defaultSearch
	if g != nil {
		name = g.search()
		if !d.searches[name] {
			if len(d.order) >= maxSearches {
				old := d.order[0]
				d.order = d.order[1:]
				delete(d.searches, old)
				cn := C.CString(old)
				C.ps_unset_search(d.ps, cn)
				C.free(unsafe.Pointer(cn))
			}
			if oov := d.unknownWords(g); len(oov) > 0 {
				return fmt.Errorf("grammar %s: %w: %s", g.Name, ErrUnknownWord, strings.Join(oov, ", "))
			}
			cn, cg := C.CString(name), C.CString(g.JSGF)
			rc := C.ps_set_jsgf_string(d.ps, cn, cg)
			C.free(unsafe.Pointer(cn))
			C.free(unsafe.Pointer(cg))
			if rc != 0 {
				return fmt.Errorf("grammar %s: %w", g.Name, ErrGrammar)
			}
			d.searches[name] = true
			d.order = append(d.order, name)
		}
	}
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	if C.ps_set_search(d.ps, cn) != 0 {
		return fmt.Errorf("select search %s: %w", name, ErrGrammar)
	}
	return nil
}

// allphoneSearch is the name of the phone-loop search (every phone sequence, weighted by a
// phonetic language model): the reference an utterance's grammar score is compared with.
const allphoneSearch = "_allphone"

// useAllphone selects the phone-loop search, registering it from the model's phonetic language
// model on first use.
func (d *decoder) useAllphone(path string) error {
	if !d.searches[allphoneSearch] {
		cn, cp := C.CString(allphoneSearch), C.CString(path)
		rc := C.ps_set_allphone_file(d.ps, cn, cp)
		C.free(unsafe.Pointer(cn))
		C.free(unsafe.Pointer(cp))
		if rc != 0 {
			return fmt.Errorf("%w: phone loop from %s", ErrModel, path)
		}
		d.searches[allphoneSearch] = true
	}
	cn := C.CString(allphoneSearch)
	defer C.free(unsafe.Pointer(cn))
	if C.ps_set_search(d.ps, cn) != 0 {
		return fmt.Errorf("select search %s: %w", allphoneSearch, ErrGrammar)
	}
	return nil
}

func (d *decoder) unknownWords(g *Grammar) []string {
	var oov []string
	for _, w := range g.words() {
		if !d.known(w) {
			oov = append(oov, w)
		}
	}
	return oov
}

// decode runs one whole utterance of 16 kHz PCM through the selected search. The cepstral mean
// is computed over the utterance itself, so the result depends on nothing decoded before.
func (d *decoder) decode(pcm []int16) (Result, error) {
	if err := d.begin(false); err != nil {
		return Result{}, err
	}
	if err := d.feed(pcm, true); err != nil {
		C.ps_end_utt(d.ps)
		return Result{}, err
	}
	return d.end()
}

// begin starts an utterance on the selected search. A whole utterance (live false) starts a new
// stream (which resets the front end's noise estimate) and is normalized over itself, as the model
// was trained, so its result depends on nothing the decoder did before. A live utterance continues
// the decoder's stream: its noise estimate and cepstral mean carry over from the utterances before
// it, which is what a Channel is for.
func (d *decoder) begin(live bool) error {
	if !live {
		C.asr_set_cmn_type(d.ps, d.cmnType)
		if C.ps_start_stream(d.ps) < 0 {
			return fmt.Errorf("%w: start stream", ErrDecode)
		}
	}
	if C.ps_start_utt(d.ps) < 0 {
		return fmt.Errorf("%w: start utterance", ErrDecode)
	}
	return nil
}

// feed decodes more 16 kHz audio of the utterance; whole says it is all of it (one call per
// utterance), which lets the decoder normalize over the whole utterance.
func (d *decoder) feed(pcm []int16, whole bool) error {
	if len(pcm) == 0 {
		return nil
	}
	full := C.int(0)
	if whole {
		full = 1
	}
	if C.ps_process_raw(d.ps, (*C.int16)(unsafe.Pointer(&pcm[0])), C.size_t(len(pcm)), 0, full) < 0 {
		return fmt.Errorf("%w: process audio", ErrDecode)
	}
	return nil
}

// end finishes the utterance and returns the best hypothesis with word times.
func (d *decoder) end() (Result, error) {
	if C.ps_end_utt(d.ps) < 0 {
		return Result{}, fmt.Errorf("%w: end utterance", ErrDecode)
	}
	var score C.int32
	var res Result
	hyp := C.ps_get_hyp(d.ps, &score)
	res.Score = int(score)
	res.Frames = int(C.ps_get_n_frames(d.ps))
	if hyp == nil {
		return res, nil
	}
	if d.posterior {
		res.Posterior = float64(C.asr_posterior(d.ps))
	}
	for seg := C.ps_seg_iter(d.ps); seg != nil; seg = C.ps_seg_next(seg) {
		w := C.GoString(C.ps_seg_word(seg))
		if filler(w) {
			continue
		}
		var sf, ef C.int
		C.ps_seg_frames(seg, &sf, &ef)
		word := Word{Text: baseWord(w), Start: frameTime(int(sf)), End: frameTime(int(ef) + 1)}
		if d.posterior {
			word.Posterior = float64(C.asr_seg_posterior(d.ps, seg))
		}
		res.Words = append(res.Words, word)
	}
	texts := make([]string, len(res.Words))
	for i, w := range res.Words {
		texts[i] = w.Text
	}
	res.Text = strings.Join(texts, " ")
	return res, nil
}

// nbest returns up to max distinct hypotheses of the utterance just ended, best first, from the
// decoder's word lattice (the best hypothesis included). Hypotheses that differ only in filler
// words or alternate pronunciations are one.
func (d *decoder) nbest(max int) []Hypothesis {
	var out []Hypothesis
	seen := map[string]bool{}
	it := C.ps_nbest(d.ps)
	for tries := 0; it != nil && len(out) < max && tries < 8*max; tries++ {
		var score C.int32
		if h := C.ps_nbest_hyp(it, &score); h != nil {
			var words []string
			for _, w := range strings.Fields(C.GoString(h)) {
				if !filler(w) {
					words = append(words, baseWord(w))
				}
			}
			text := strings.Join(words, " ")
			if !seen[text] {
				seen[text] = true
				out = append(out, Hypothesis{Text: text, Score: int(score)})
			}
		}
		it = C.ps_nbest_next(it)
	}
	if it != nil {
		C.ps_nbest_free(it)
	}
	return out
}

// frameTime converts a 10 ms feature frame index to a duration.
func frameTime(f int) time.Duration { return time.Duration(f) * 10 * time.Millisecond }

// filler reports the decoder's silence and noise tokens (<s>, </s>, <sil>, [NOISE], …).
func filler(w string) bool {
	return w == "" || w == "(NULL)" || strings.HasPrefix(w, "<") || strings.HasPrefix(w, "[") || strings.HasPrefix(w, "++")
}

// baseWord drops the alternate-pronunciation suffix: "read(2)" is "read".
func baseWord(w string) string {
	if i := strings.IndexByte(w, '('); i > 0 {
		return w[:i]
	}
	return w
}
