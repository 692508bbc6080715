package asr

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/voicebench/humanaudit/internal/canon"
)

// An address is read again with a grammar of its own shape (a unit, the house number, the street
// with its direction and type, a unit, then the rest as heard), whose street words are the words
// the open transcript heard there and the dictionary words that sound like them. The open
// vocabulary's trigrams prefer a common word to a street's name ("alter court" for Alder Court,
// "elder" for Alder); in the grammar no word is likelier than another, and the audio decides.

// addressTypes are the street types.
const addressTypes = "street | avenue | road | drive | lane | way | court | place | boulevard | circle | terrace | parkway | " +
	"highway | trail | square | loop | row | plaza | alley | crossing | pike | run"

const addressDirections = "north | south | east | west | northeast | northwest | southeast | southwest"

const addressUnitWords = "unit | apartment | suite | number | floor | building | room"

// addressCarriers are the words that name an address before it ("my new service address is").
const addressCarriers = "address | new | service | home | mailing | delivery | shipping | property | street | was | are | our | their | " +
	"his | her | send | ship | located | live | lives | apartment | unit"

// maxSoundAlikes bounds the words that sound like one heard word: the grammar grows with them,
// and so does the chance that a rare word fits the audio a little better than the right one.
const maxSoundAlikes = 24

// addressGrammar is the grammar of an address whose street name is made of street (the heard
// words and their sound-alikes) and has a type, and whose other words are tail (as heard). The
// type is wanted even where none was heard ("older color" for Alder Court): most addresses have
// one, and a reading without it ran the street into the rest.
func addressGrammar(street, tail []string) *Grammar {
	rules := map[string]string{
		"d1":     digitWords,
		"teen":   teenWords,
		"tens":   tensWords,
		"unit":   unitWords,
		"hn":     "<d1> | <teen> | <tens> [<unit>] | hundred | thousand",
		"type":   addressTypes,
		"dir":    addressDirections,
		"uw":     addressUnitWords,
		"letter": letterWords,
		"asin":   natoWords + " | " + asInWords,
		"sw":     "none",
		"tw":     "<d1> | in",
	}
	if len(street) > 0 {
		rules["sw"] = strings.Join(street, " | ")
	}
	if len(tail) > 0 {
		rules["tw"] += " | " + strings.Join(tail, " | ")
	}
	rules["apt"] = "<uw> (<hn>+ [<letter>] | <letter> [<hn>+]) [<letter> as in <asin>]"
	rules["street"] = "[<dir>] <sw> [<sw>] [<sw>] <type> [<dir>]"
	body := "[<apt>] <hn>+ <street> [<apt>] <tw>*"
	// The turn is read whole (a streamed transcript's word times need not be the turn audio's), so
	// whatever the caller said before the address is made of common words and its carriers.
	pre := "it's | it is | sure | okay | yes | um | uh | so | that's | that is | at | send it to | no sorry | sorry no | sorry | actually | " +
		"that's not right | that's wrong | that's not it | it should be | i said | what i said was | " +
		strings.Join(slices.DeleteFunc(slices.Clone(contextWords), canon.IsNumberWord), " | ") + " | " + addressCarriers
	post := "thanks | thank you | please | not that"
	keys := make([]string, 0, len(rules))
	for k := range rules {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString("#JSGF V1.0;\ngrammar address;\npublic <utt> = <pre>* " + body + " [<post>];\n")
	b.WriteString("<pre> = " + pre + ";\n<post> = " + post + ";\n")
	for _, k := range keys {
		b.WriteString("<" + k + "> = " + rules[k] + ";\n")
	}
	return &Grammar{Name: string(KindAddress), JSGF: b.String()}
}

// phoneDict is the dictionary's words with their phones split, for the sound-alike search, and
// by pronunciation, for homophones.
type phoneDict struct {
	once  sync.Once
	words []string
	phons [][]string
	same  map[string][]string // pronunciation -> its words, sorted
}

// phoneIndex builds the dictionary's phoneDict on first use.
func (r *Recognizer) phoneIndex() *phoneDict {
	r.phones.once.Do(func() {
		r.phones.same = map[string][]string{}
		for w, p := range r.dict {
			r.phones.words = append(r.phones.words, w)
			r.phones.phons = append(r.phones.phons, strings.Fields(p))
			r.phones.same[p] = append(r.phones.same[p], w)
		}
		for _, ws := range r.phones.same {
			slices.Sort(ws)
		}
	})
	return &r.phones
}

// Homophones returns the dictionary's other words with w's pronunciation ("vazquez" for
// "vasquez", "harbour" for "harbor"), sorted: what the recognizer could as well have written for
// what it heard. Nil for a word the dictionary lacks or says no other way.
func (r *Recognizer) Homophones(w string) []string {
	p, ok := r.dict[w]
	if !ok {
		return nil
	}
	var out []string
	for _, o := range r.phoneIndex().same[p] {
		if o != w {
			out = append(out, o)
		}
	}
	return out
}

// soundAlikes returns the heard words and, for each, the dictionary words whose pronunciation
// differs from its by one phone (a vowel for a vowel, a consonant for a consonant), up to
// maxSoundAlikes of them, the nearest in sound first.
func (r *Recognizer) soundAlikes(heard []string) []string {
	r.phoneIndex()
	seen := map[string]bool{}
	var out []string
	add := func(w string) {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	for _, w := range heard {
		p, ok := r.dict[w]
		if !ok {
			continue
		}
		add(w)
		ps := strings.Fields(p)
		type near struct {
			w    string
			cost int
		}
		var found []near
		// A vowel-initial street word after the house number is often heard with a glide or an h
		// before it ("fourteen eighteen alder" streamed as "walter"): the word without that onset,
		// and its one-phone neighbours, are sound-alikes a step further away.
		var bare []string
		if len(ps) > 2 && onsetGlide[ps[0]] && isVowel(ps[1]) {
			bare = ps[1:]
		}
		for i, q := range r.phones.phons {
			if seen[r.phones.words[i]] {
				continue
			}
			if c, ok := oneSubstitution(ps, q); ok {
				found = append(found, near{r.phones.words[i], c})
			} else if bare != nil && slices.Equal(bare, q) {
				found = append(found, near{r.phones.words[i], 1})
			} else if c, ok := oneSubstitution(bare, q); bare != nil && ok {
				found = append(found, near{r.phones.words[i], c + 2})
			}
		}
		slices.SortFunc(found, func(a, b near) int {
			if a.cost != b.cost {
				return a.cost - b.cost
			}
			return strings.Compare(a.w, b.w)
		})
		for i := 0; i < len(found) && i < maxSoundAlikes; i++ {
			add(found[i].w)
		}
	}
	return out
}

// oneSubstitution reports whether q is p with one phone replaced by another of its class, and
// how far apart the two sound (0: voiced and voiceless of one place, or neighbouring vowels).
func oneSubstitution(p, q []string) (int, bool) {
	if len(p) != len(q) {
		return 0, false
	}
	diff := -1
	for i := range p {
		if p[i] != q[i] {
			if diff >= 0 {
				return 0, false
			}
			diff = i
		}
	}
	if diff < 0 || isVowel(p[diff]) != isVowel(q[diff]) {
		return 0, false
	}
	if voicingPair[p[diff]] == q[diff] {
		return 0, true
	}
	return 1, true
}

// onsetGlide are the onsets a recognizer hears before a word that starts with a vowel.
var onsetGlide = map[string]bool{"W": true, "Y": true, "HH": true}

func isVowel(ph string) bool { return strings.ContainsAny(ph[:1], "AEIOU") }

var voicingPair = map[string]string{"P": "B", "B": "P", "T": "D", "D": "T", "K": "G", "G": "K", "F": "V", "V": "F",
	"S": "Z", "Z": "S", "TH": "DH", "DH": "TH", "CH": "JH", "JH": "CH", "SH": "ZH", "ZH": "SH", "M": "N", "N": "M"}

// recognizeAddress decodes an address with the grammar of the words heard in it (Slot.Words, in
// order): the street's words (after the house number, up to its type or the unit) and those heard
// for it before (Slot.Street), with their sound-alikes, the others as heard.
func (r *Recognizer) recognizeAddress(ctx context.Context, pcm []int16, rate int, slot Slot) (Answer, error) {
	street, tail := addressParts(slot.Words)
	for _, w := range slot.Street {
		if w = strings.ToLower(w); wordRE.MatchString(w) && !slices.Contains(street, w) {
			street = append(street, w)
		}
	}
	g := addressGrammar(r.soundAlikes(street), tail)
	// Its best reading only: an n-best search over this grammar's lattice takes seconds.
	res, err := r.recognize(ctx, pcm, rate, g, 0, false)
	if err != nil {
		return Answer{}, err
	}
	return slot.Answer(res, nil), nil
}

// addressParts picks from the heard words of an address its street's words (after the house
// number, up to the street type or unit word) and the words of the rest (every word after the
// house number), none a number, letter or word of the grammar's own.
func addressParts(heard []string) (street, tail []string) {
	own := map[string]bool{}
	for _, rule := range []string{digitWords, teenWords, tensWords, addressTypes, addressDirections, addressUnitWords, letterWords, "hundred | thousand | in | that's"} {
		for _, w := range strings.Split(rule, "|") {
			own[strings.TrimSpace(w)] = true
		}
	}
	stage := 0 // 0: before the house number, 1: in it, 2: the street, 3: after it
	for _, w := range heard {
		w = strings.ToLower(w)
		isNum := own[w] && (strings.Contains(digitWords+teenWords+tensWords, w) || w == "hundred")
		switch {
		case stage == 1 && houseHomophones[w]:
			continue // "fifteen or two": the grammar reads the house number's words itself
		case stage <= 1 && isNum:
			stage = 1
			continue
		case stage == 1:
			stage = 2
		case stage == 2 && own[w] && !strings.Contains(addressDirections, w):
			stage = 3
		}
		if own[w] || !wordRE.MatchString(w) {
			continue
		}
		if stage == 2 && !slices.Contains(street, w) {
			street = append(street, w)
		}
		// Every word after the house number may be one of the rest: where no street type was
		// heard ("older color department freebie eugene"), the type the grammar finds may end
		// the street before any of them.
		if stage >= 2 && !slices.Contains(tail, w) {
			tail = append(tail, w)
		}
	}
	return street, tail
}

var wordRE = regexp.MustCompile(`^[a-z][a-z'-]*$`)

// houseHomophones are the words the open vocabulary writes for a house number's "oh", "two",
// "four" and "eight".
var houseHomophones = map[string]bool{"or": true, "to": true, "too": true, "for": true, "ate": true, "and": true}
