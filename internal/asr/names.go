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
	"sync"
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

// directorySpec is one open-vocabulary directory over the pronunciation dictionary: every word
// as likely as any other but for its carriers, the words said around what is looked up, which
// share carrierShare of the mass.
type directorySpec struct {
	search       string // the decoder's name for the search
	file         string // the model file's name before its content hash
	carriers     []string
	carrierShare float64
	what         string // for errors: "names directory"
	// commonSpelling writes each word of a reading in its common spelling (spelling.go): right
	// for the words an e-mail address is made of ("harbor pine"), wrong for names, of which the
	// language model knows the nouns that sound like them better ("ferrier" would be "farrier").
	commonSpelling bool
}

// directory is a directory's model once built: its content, its path, and how many decoders
// loaded it.
type directory struct {
	once   sync.Once
	arpa   []byte
	path   string
	err    error
	loaded atomic.Int32
}

// namesDirectory is the directory names are looked up in.
var namesDirectory = directorySpec{search: "_names", file: "asr-names", carrierShare: 0.5, what: "names directory",
	// The words said around a name: the common words of a reply, the lead-ins ("my name is",
	// "this is", "I report to") and the repair of a read-back ("no, sorry, that's not right, it
	// should be …").
	carriers: slices.Concat(contextWords, strings.Fields("name name's names is was this here calling speaking "+
		"report reports called last first full middle spelled spell hyphen hyphenated dash not right wrong should "+
		"actually mean meant said sorry from with at in of and the our his her their mister miss missus doctor"))}

// namesModel returns the path of the names directory's model (directoryModel).
func (r *Recognizer) namesModel() (string, error) { return r.directoryModel(&r.names, namesDirectory) }

// directoryModel returns the path of a directory's unigram language model (ARPA text), built once
// from the dictionary loaded with the model. The file is named by its content and shared: every
// recognizer and process on the machine with this dictionary uses one file, written when it is
// missing, so that test runs and servers that end without Close (or are killed) leave at most one
// behind rather than one each.
func (r *Recognizer) directoryModel(dir *directory, spec directorySpec) (string, error) {
	dir.once.Do(func() {
		if r.dict == nil {
			dir.err = fmt.Errorf("%w: no pronunciation dictionary for the %s", ErrModel, spec.what)
			return
		}
		dir.arpa = directoryARPA(r.dict, spec)
		sum := sha256.Sum256(dir.arpa)
		dir.path = filepath.Join(os.TempDir(), fmt.Sprintf("%s-%x.arpa", spec.file, sum[:8]))
	})
	if dir.err != nil {
		return "", dir.err
	}
	if fi, err := os.Stat(dir.path); err == nil && fi.Size() == int64(len(dir.arpa)) {
		return dir.path, nil
	}
	// Written beside its name and renamed, so that a reader never loads half a model; two
	// writers at once rename identical content.
	f, err := os.CreateTemp(filepath.Dir(dir.path), spec.file+"-*.partial")
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrModel, spec.what, err)
	}
	_, err = f.Write(dir.arpa)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), dir.path)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("%w: %s %s: %v", ErrModel, spec.what, dir.path, err)
	}
	return dir.path, nil
}

// directoryARPA is a directory's model: every dictionary word as likely as any other but for the
// carriers, which share the spec's carrierShare of the mass.
func directoryARPA(dict map[string]string, spec directorySpec) []byte {
	words := make([]string, 0, len(dict))
	for w := range dict {
		words = append(words, w)
	}
	slices.Sort(words)
	carrier := map[string]bool{}
	for _, w := range spec.carriers {
		if _, ok := dict[w]; ok {
			carrier[w] = true
		}
	}
	pc := math.Log10(spec.carrierShare / float64(len(carrier)))
	pr := math.Log10((1 - spec.carrierShare) / float64(len(words)-len(carrier)))
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

// useDirectory selects a directory's search, loading its language model on first use (and
// counting the decoder in the directory's loaded).
func (d *decoder) useDirectory(spec directorySpec, path string, loaded *atomic.Int32) error {
	cn := C.CString(spec.search)
	defer C.free(unsafe.Pointer(cn))
	if !d.searches[spec.search] {
		cp := C.CString(path)
		rc := C.ps_set_lm_file(d.ps, cn, cp)
		C.free(unsafe.Pointer(cp))
		if rc != 0 {
			return fmt.Errorf("%w: %s from %s", ErrModel, spec.what, path)
		}
		d.searches[spec.search] = true
		loaded.Add(1)
	}
	if C.ps_set_search(d.ps, cn) != 0 {
		return fmt.Errorf("select search %s: %w", spec.search, ErrGrammar)
	}
	return nil
}

// recognizeDirectory decodes an utterance with a directory's model (the e-mail directory's
// reading in common spelling, spelling.go).
func (r *Recognizer) recognizeDirectory(ctx context.Context, pcm []int16, rate int, dir *directory, spec directorySpec) (Result, error) {
	path, err := r.directoryModel(dir, spec)
	if err != nil {
		return Result{}, err
	}
	var common map[string]string
	res, err := r.decodeWith(ctx, pcm, rate, func(d *decoder) error {
		if spec.commonSpelling {
			common = r.commonSpellings(d)
		}
		return d.useDirectory(spec, path, &dir.loaded)
	}, 0, false)
	if err != nil || common == nil {
		return res, err
	}
	return commonlySpelled(res, common, spec), nil
}

// RecognizeNames decodes an utterance with the names directory (see above): the reading a name
// misheard by the open vocabulary is looked up in. Its Grammar is "names".
func (r *Recognizer) RecognizeNames(ctx context.Context, pcm []int16, rate int) (Result, error) {
	res, err := r.recognizeDirectory(ctx, pcm, rate, &r.names, namesDirectory)
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
	return r.prepareDirectory(ctx, &r.names, namesDirectory)
}

// prepareDirectory loads a directory into every decoder (PrepareNames).
func (r *Recognizer) prepareDirectory(ctx context.Context, dir *directory, spec directorySpec) error {
	path, err := r.directoryModel(dir, spec)
	if err != nil {
		return err
	}
	// The pool hands decoders out in turn; a decoder taken twice is one another caller had.
	for range 4 * len(r.all) {
		if int(dir.loaded.Load()) >= len(r.all) {
			return nil
		}
		d, err := r.acquire(ctx)
		if err != nil {
			return err
		}
		if spec.commonSpelling {
			r.commonSpellings(d) // once: a fifth of a second no caller should wait for
		}
		err = d.useDirectory(spec, path, &dir.loaded)
		r.release(d)
		if err != nil {
			return err
		}
	}
	return nil
}

// mailDirectory is the directory an e-mail address is read with: its parts are names, words run
// together ("fjord mail") and spelled letters, joined by "dot" and "at", which the open
// vocabulary hears as "doctor", "got" and "daughter" and the names directory as the names that
// sound like them. Here the structure words and the letters are the carriers.
var mailDirectory = directorySpec{search: "_mail", file: "asr-mail", carrierShare: 0.6, what: "e-mail directory", commonSpelling: true,
	carriers: slices.Concat(strings.Fields(strings.ReplaceAll(letterWords, "|", "")), strings.Fields(
		"o dot at example com org net edu underscore dash hyphen period mail email e-mail address "+
			"it's it is send to my the that's spelled like and then all one word lowercase sure so um uh please yes no okay"))}

// RecognizeMail decodes an utterance with the e-mail directory (mailDirectory). Its Grammar is
// "mail".
func (r *Recognizer) RecognizeMail(ctx context.Context, pcm []int16, rate int) (Result, error) {
	res, err := r.recognizeDirectory(ctx, pcm, rate, &r.mail, mailDirectory)
	if err == nil {
		res.Grammar = "mail"
	}
	return res, err
}

// PrepareMail loads the e-mail directory into every decoder, as PrepareNames does the names
// directory, and indexes the dictionary's homophones, which an address read with it is offered
// in.
func (r *Recognizer) PrepareMail(ctx context.Context) error {
	if r.dict != nil {
		r.phoneIndex()
	}
	return r.prepareDirectory(ctx, &r.mail, mailDirectory)
}
