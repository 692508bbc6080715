package asr

import (
	"math"
	"slices"
	"strings"
	"sync"
)

// A directory holds every dictionary word as likely as any other, so of the words that sound
// alike ("harbor" and "harbour", "pine" and "pyne") it writes whichever the decoder came to first:
// "a p at harborpine dot example" was read "ap at harbourpyne dot example" by the e-mail
// directory every time the caller said it. The open-vocabulary language model knows which of them
// is written more often; for the words an e-mail address is made of, that one is what the caller
// most likely meant (directorySpec.commonSpelling).

// spellings maps each dictionary word that shares its pronunciation with others to the one of
// them the language model finds likeliest alone (commonSpellings), but for a letter's
// homophones.
type spellings struct {
	once sync.Once
	of   map[string]string
}

// commonSpellings returns the map, built on first use with d's language model (a few tens of
// milliseconds, once per recognizer).
func (r *Recognizer) commonSpellings(d *decoder) map[string]string {
	r.spellings.once.Do(func() {
		of := map[string]string{}
		if r.dict != nil {
			for _, ws := range r.phoneIndex().same {
				if len(ws) < 2 || slices.ContainsFunc(ws, func(w string) bool { return len(w) == 1 }) {
					// A spelled letter stays one: "r" is no "are" in "a p at r b …".
					continue
				}
				best, top := "", int32(math.MinInt32)
				for _, w := range ws { // sorted: of equal scores the first alphabetically
					if s, ok := d.unigram(w); ok && s > top {
						best, top = w, s
					}
				}
				if len(best) < 4 {
					// A short word is most often a function word ("an" over the name "anne"),
					// which a directory's reading is not about.
					continue
				}
				for _, w := range ws {
					if w != best {
						of[w] = best
					}
				}
			}
		}
		r.spellings.of = of
	})
	return r.spellings.of
}

// commonlySpelled rewrites a directory's reading with each word's common spelling, but for the
// directory's carriers and their homophones: "mail" in an e-mail address is no "male".
func commonlySpelled(res Result, of map[string]string, spec directorySpec) Result {
	rewrite := func(w string) (string, bool) {
		c, ok := of[w]
		if !ok || slices.Contains(spec.carriers, w) || slices.Contains(spec.carriers, c) {
			return w, false
		}
		return c, true
	}
	changed := false
	words := make([]Word, len(res.Words))
	for i, w := range res.Words {
		if c, ok := rewrite(w.Text); ok {
			w.Text, changed = c, true
		}
		words[i] = w
	}
	if !changed {
		return res
	}
	res.Words = words
	fields := strings.Fields(res.Text)
	for i, f := range fields {
		fields[i], _ = rewrite(f)
	}
	res.Text = strings.Join(fields, " ")
	return res
}
