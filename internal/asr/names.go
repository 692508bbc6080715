package asr

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"
)

/*
#include <stdlib.h>
#include <pocketsphinx.h>
*/
import "C"

// The names directory is an open-vocabulary reading in which every word of the pronunciation
// dictionary is as likely as any other, and only the common words said around a name are
// likelier. The trigram language model, trained on running text, hears a name it rarely saw as
// the common words that sound like it ("my manager is based on the ferry or" for "my manager is
// Gustavo Ferreira"); the dictionary has the pronunciations of some 126,000 words, most of them
// names, and with no prior against them the audio decides. It hears common words worse (a
// business's name, "Twin Cities Rooter", comes out "twinge should quiche ruter"), so the agent
// turns to it only after the caller said a name it heard was wrong, as a telephone agent asks a
// directory when the name is not one they know.

// namesSearch is the decoder's name for the directory search.
const namesSearch = "_names"

// namesCarrierShare is the share of the directory's probability mass given to the carrier words.
const namesCarrierShare = 0.5

// namesCarriers are the words said around a name: the common words of a reply, the lead-ins
// ("my name is", "this is", "I report to") and the repair of a read-back ("no, sorry, that's not
// right, it should be …").
var namesCarriers = slices.Concat(contextWords, strings.Fields("name name's names is was this here calling speaking "+
	"report reports called last first full middle spelled spell hyphen hyphenated dash not right wrong should "+
	"actually mean meant said sorry from with at in of and the our his her their mister miss missus doctor"))

// namesModel returns the path of the directory's unigram language model (ARPA text), built once
// from the dictionary loaded with the model. The file is named by its content and shared: every
// recognizer and process on the machine with this dictionary uses one file, written when it is
// missing, so that test runs and servers that end without Close (or are killed) leave at most one
// behind rather than one each.
func (r *Recognizer) namesModel() (string, error) {
	r.namesOnce.Do(func() {
		if r.dict == nil {
			r.namesErr = fmt.Errorf("%w: no pronunciation dictionary for the names directory", ErrModel)
			return
		}
		r.namesARPA = namesARPA(r.dict)
		sum := sha256.Sum256(r.namesARPA)
		r.namesPath = filepath.Join(os.TempDir(), fmt.Sprintf("asr-names-%x.arpa", sum[:8]))
	})
	if r.namesErr != nil {
		return "", r.namesErr
	}
	if fi, err := os.Stat(r.namesPath); err == nil && fi.Size() == int64(len(r.namesARPA)) {
		return r.namesPath, nil
	}
	// Written beside its name and renamed, so that a reader never loads half a model; two
	// writers at once rename identical content.
	f, err := os.CreateTemp(filepath.Dir(r.namesPath), "asr-names-*.partial")
	if err != nil {
		return "", fmt.Errorf("%w: names directory: %v", ErrModel, err)
	}
	_, err = f.Write(r.namesARPA)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), r.namesPath)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("%w: names directory %s: %v", ErrModel, r.namesPath, err)
	}
	return r.namesPath, nil
}

// namesARPA is the directory's model: every dictionary word as likely as any other but for the
// carriers, which share namesCarrierShare of the mass.
func namesARPA(dict map[string]string) []byte {
	words := make([]string, 0, len(dict))
	for w := range dict {
		words = append(words, w)
	}
	slices.Sort(words)
	carrier := map[string]bool{}
	for _, w := range namesCarriers {
		if _, ok := dict[w]; ok {
			carrier[w] = true
		}
	}
	pc := math.Log10(namesCarrierShare / float64(len(carrier)))
	pr := math.Log10((1 - namesCarrierShare) / float64(len(words)-len(carrier)))
	var b bytes.Buffer
	fmt.Fprintf(&b, "\\data\\\nngram 1=%d\n\n\\1-grams:\n-1.0 <s>\n-1.0 </s>\n", len(words)+2)
	for _, w := range words {
		p := pr
		if carrier[w] {
			p = pc
		}
		fmt.Fprintf(&b, "%.4f %s\n", p, w)
	}
	b.WriteString("\n\\end\\\n")
	return b.Bytes()
}

// useNames selects the directory search, loading its language model on first use (and counting
// the decoder in loaded).
func (d *decoder) useNames(path string, loaded *atomic.Int32) error {
	cn := C.CString(namesSearch)
	defer C.free(unsafe.Pointer(cn))
	if !d.searches[namesSearch] {
		cp := C.CString(path)
		rc := C.ps_set_lm_file(d.ps, cn, cp)
		C.free(unsafe.Pointer(cp))
		if rc != 0 {
			return fmt.Errorf("%w: names directory from %s", ErrModel, path)
		}
		d.searches[namesSearch] = true
		loaded.Add(1)
	}
	if C.ps_set_search(d.ps, cn) != 0 {
		return fmt.Errorf("select search %s: %w", namesSearch, ErrGrammar)
	}
	return nil
}

// RecognizeNames decodes an utterance with the names directory (see above): the reading a name
// misheard by the open vocabulary is looked up in. Its Grammar is "names".
func (r *Recognizer) RecognizeNames(ctx context.Context, pcm []int16, rate int) (Result, error) {
	path, err := r.namesModel()
	if err != nil {
		return Result{}, err
	}
	res, err := r.decodeWith(ctx, pcm, rate, func(d *decoder) error { return d.useNames(path, &r.namesLoaded) }, 0, false)
	if err == nil {
		res.Grammar = "names"
	}
	return res, err
}

// PrepareNames writes the names directory and loads it into every decoder, so that no caller
// waits for it on the first name of a call (it takes about half a second per decoder). It takes
// one decoder at a time, as a decode does: two of these (two servers on one recognizer) or a call
// in progress never wait on each other.
func (r *Recognizer) PrepareNames(ctx context.Context) error {
	path, err := r.namesModel()
	if err != nil {
		return err
	}
	// The pool hands decoders out in turn; a decoder taken twice is one another caller had.
	for range 4 * len(r.all) {
		if int(r.namesLoaded.Load()) >= len(r.all) {
			return nil
		}
		d, err := r.acquire(ctx)
		if err != nil {
			return err
		}
		err = d.useNames(path, &r.namesLoaded)
		r.release(d)
		if err != nil {
			return err
		}
	}
	return nil
}
