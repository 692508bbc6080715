package canon

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// wordKind is what a number word is.
type wordKind uint8

const (
	notNumber wordKind = iota
	unitWord           // zero … nine, "oh"
	teenWord           // ten … nineteen
	tensWord           // twenty … ninety
	hundredWord
	dozenWord
	scaleWord   // thousand, million, billion, trillion
	ordinalWord // first … ninetieth, hundredth, thousandth
)

type lexeme struct {
	kind wordKind
	val  int64
}

// lexicon holds every English cardinal and ordinal word and the scale words: one lookup per
// token.
var lexicon = func() map[string]lexeme {
	m := map[string]lexeme{"hundred": {hundredWord, 100}, "dozen": {dozenWord, 12}}
	for w, v := range map[string]int64{"zero": 0, "oh": 0, "o": 0, "nought": 0, "naught": 0, "one": 1, "two": 2,
		"three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9} {
		m[w] = lexeme{unitWord, v}
	}
	for w, v := range map[string]int64{"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
		"fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19} {
		m[w] = lexeme{teenWord, v}
	}
	for w, v := range map[string]int64{"twenty": 20, "thirty": 30, "forty": 40, "fourty": 40, "fifty": 50,
		"sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90} {
		m[w] = lexeme{tensWord, v}
	}
	for w, v := range map[string]int64{"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12} {
		m[w] = lexeme{scaleWord, v}
	}
	for w, v := range map[string]int64{"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6,
		"seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13,
		"fourteenth": 14, "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18,
		"nineteenth": 19, "twentieth": 20, "thirtieth": 30, "fortieth": 40, "fiftieth": 50, "sixtieth": 60,
		"seventieth": 70, "eightieth": 80, "ninetieth": 90, "hundredth": 100, "thousandth": 1000} {
		m[w] = lexeme{ordinalWord, v}
	}
	return m
}()

// IsNumberWord reports whether w (lower case) is an English cardinal number word: a unit ("oh"
// included), teen, tens, hundred, dozen or scale word.
func IsNumberWord(w string) bool { return isNumberWord(w) }

// isNumberWord reports whether w is a cardinal number word (a unit, teen, tens, hundred, dozen or
// scale word).
func isNumberWord(w string) bool {
	k := lexicon[w].kind
	return k != notNumber && k != ordinalWord
}

// tokens splits text into lower-case words and single punctuation marks. Letters, digits and
// apostrophes make words ("it's", "5th", "cc4419"); every other non-space rune is a token of its
// own, so hyphens split words ("eighty-eight" is "eighty", "-", "eight"). ASCII text is lowered
// in one pass; other text is case-folded (Straße → strasse). Tokens are substrings of one folded
// copy, so splitting allocates little: this runs for every graded value.
func tokens(s string) []string {
	s = lower(s)
	out := make([]string, 0, 8)
	start := -1
	for i := 0; i < len(s); {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		word := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '\'' || r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r))
		if word {
			if start < 0 {
				start = i
			}
			i += size
			continue
		}
		// A written number keeps its thousands commas and decimal point: "1,284.17", "612.40".
		if start >= 0 && (r == ',' || r == '.') && numeralSoFar(s[start:i]) {
			if n := literalPart(s, i); n > 0 {
				i += n
				continue
			}
		}
		if start >= 0 {
			out = append(out, s[start:i])
			start = -1
		}
		if !(r == ' ' || r == '\t' || r == '\n' || r == '\r' || r >= utf8.RuneSelf && unicode.IsSpace(r)) {
			out = append(out, s[i:i+size])
		}
		i += size
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// numeralSoFar reports whether w is digits, with thousands commas, and no decimal point yet.
func numeralSoFar(w string) bool {
	if w == "" || w[0] < '0' || w[0] > '9' {
		return false
	}
	for i := 0; i < len(w); i++ {
		if !(w[i] >= '0' && w[i] <= '9' || w[i] == ',') {
			return false
		}
	}
	return true
}

// literalPart returns how many bytes of s from i (a ',' or '.') continue a written number: a
// comma followed by exactly three digits, or a point followed by digits that are not themselves
// followed by another point and digit ("503.555.0147" is dictated digits, not a decimal).
func literalPart(s string, i int) int {
	j := i + 1
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	digits := j - i - 1
	if digits == 0 {
		return 0
	}
	if s[i] == ',' {
		if digits != 3 {
			return 0
		}
		return 1 // the digits are read as the word continues
	}
	if j+1 < len(s) && (s[j] == '.' || s[j] == ',') && s[j+1] >= '0' && s[j+1] <= '9' {
		return 0
	}
	return 1
}

// isNumeral reports whether w is a written number: digits with optional thousands commas and
// decimal point ("1,284.17").
func isNumeral(w string) bool {
	if w == "" || w[0] < '0' || w[0] > '9' {
		return false
	}
	dot := false
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case c >= '0' && c <= '9':
		case c == ',' && !dot:
		case c == '.' && !dot:
			dot = true
		default:
			return false
		}
	}
	c := w[len(w)-1]
	return c >= '0' && c <= '9'
}

// lower lowers ASCII text without allocating when it is already lower case, and case-folds any
// other text, with typographic quotes and dashes made plain.
func lower(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return foldUnicode(s)
		}
		if c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= utf8.RuneSelf {
					return foldUnicode(s)
				}
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// IsDigits reports whether s is one or more ASCII digits.
func IsDigits(s string) bool { return allIn(s, '0', '9') }

func isLetters(s string) bool { return allIn(s, 'a', 'z') }

// allIn reports whether s is not empty and every byte of it is in lo..hi.
func allIn(s string, lo, hi byte) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < lo || s[i] > hi {
			return false
		}
	}
	return true
}

// cardinal reads one cardinal group of number words at toks[i] and returns its value and how many
// tokens it used (0 when toks[i] does not start one). It reads "forty two", "one hundred and
// twelve", "twelve-hundred", "a hundred", "two thousand five", "one million two hundred thousand",
// "two dozen". A unit or teen after a complete unit or teen, or a tens word after anything but a
// hundred or a scale, starts a new group: that is how digit-by-digit dictation ("five five five")
// and paired years ("nineteen eighty") split.
func cardinal(toks []string, i int) (int64, int) {
	const (
		none = iota
		unit
		teen
		tens
		hundred
		scale
	)
	start := i
	var total, cur int64
	last := none
	lastScale := int64(1e15)
loop:
	for i < len(toks) {
		w := toks[i]
		lx := lexicon[w]
		switch lx.kind {
		case notNumber, ordinalWord:
			switch {
			case w == "-" && last != none && i+1 < len(toks):
				// A hyphen joins "twenty-five", "twelve-hundred", "two-thousand".
				nx := lexicon[toks[i+1]]
				if (last == tens && nx.kind == unitWord && toks[i+1] != "o" && toks[i+1] != "oh") ||
					((nx.kind == hundredWord || nx.kind == scaleWord) && last != scale) {
					i++
					continue
				}
			case (w == "a" || w == "an") && last == none && i+1 < len(toks):
				if k := lexicon[toks[i+1]].kind; k == scaleWord || k == hundredWord || k == dozenWord {
					cur, last = 1, unit
					i++
					continue
				}
			case w == "and" && (last == hundred || last == scale) && i+1 < len(toks) && startsCardinal(toks[i+1]):
				i++
				continue
			}
			break loop
		case unitWord:
			if (w == "o" || w == "oh") && last == none && !nextIsNumber(toks, i+1) && !prevIsNumber(toks, start-1) {
				break loop // "oh, I see"
			}
			if last == unit || last == teen {
				break loop
			}
			cur += lx.val
			last = unit
		case teenWord, tensWord:
			if last == unit || last == teen || last == tens {
				break loop
			}
			cur += lx.val
			last = teen
			if lx.kind == tensWord {
				last = tens
			}
		case hundredWord, dozenWord:
			if (last != unit && last != teen && last != tens) || cur < 1 || cur >= 100 {
				break loop
			}
			cur *= lx.val
			last = hundred
		case scaleWord:
			if last == none || last == scale || lx.val >= lastScale || cur <= 0 {
				break loop
			}
			total += cur * lx.val
			cur = 0
			last = scale
			lastScale = lx.val
		}
		i++
	}
	if last == none {
		return 0, 0
	}
	return total + cur, i - start
}

// pauses are what a speaker puts between dictated digits without ending the number.
var pauses = map[string]bool{",": true, "uh": true, "um": true, "er": true, "erm": true, "ah": true, "hmm": true}

// nextIsNumber reports whether the next token after toks[i:], past pauses, can begin a number:
// then "oh" is zero ("five five five, oh, uh, one nine three").
func nextIsNumber(toks []string, i int) bool {
	for ; i < len(toks) && pauses[toks[i]]; i++ {
	}
	return i < len(toks) && startsNumber(toks[i])
}

// prevIsNumber reports whether the token before toks[i+1], past pauses, ends a number.
func prevIsNumber(toks []string, i int) bool {
	for ; i >= 0 && pauses[toks[i]]; i-- {
	}
	return i >= 0 && endsNumber(toks[i])
}

// startsCardinal reports whether a cardinal group can start with w.
func startsCardinal(w string) bool {
	k := lexicon[w].kind
	return k == unitWord && w != "o" || k == teenWord || k == tensWord
}

// startsNumber reports whether w can begin a number: a number word or digits.
func startsNumber(w string) bool {
	k := lexicon[w].kind
	return (k == unitWord || k == teenWord || k == tensWord) && w != "o" || IsDigits(w)
}

// endsNumber reports whether w can end a number: a number word or digits.
func endsNumber(w string) bool {
	return isNumberWord(w) || IsDigits(w)
}

// digitOrdinal reads a written ordinal: "9th", "21st", "2nd", "3rd".
func digitOrdinal(w string) (int64, bool) {
	if len(w) < 3 || w[0] < '0' || w[0] > '9' {
		return 0, false
	}
	switch w[len(w)-2:] {
	case "st", "nd", "rd", "th":
		if !IsDigits(w[:len(w)-2]) {
			return 0, false
		}
		v, err := strconv.ParseInt(w[:len(w)-2], 10, 64)
		return v, err == nil
	}
	return 0, false
}

// ordinalTail reads the ordinal unit that can end an ordinal after a round cardinal head at
// toks[j] ("twenty-first", "one hundred and fifth"): it returns the ordinal's value and the
// tokens it used after the head.
func ordinalTail(toks []string, j int, head int64) (int64, int) {
	k := j
	if k < len(toks) && (toks[k] == "-" || toks[k] == "and") {
		k++
	}
	if k >= len(toks) {
		return 0, 0
	}
	lx := lexicon[toks[k]]
	if lx.kind != ordinalWord || lx.val >= 100 {
		return 0, 0
	}
	// Only a round head takes an ordinal tail: "twenty first" yes, "twenty two first" no.
	if head%10 != 0 || (lx.val >= 10 && head%100 != 0) {
		return 0, 0
	}
	return head + lx.val, k - j + 1
}

// digitize rewrites runs of number words as digit strings and keeps every other token: "five
// five five" → "555", "nineteen eighty-eight" → "1988", "double five" → "55", "a hundred" →
// "100", "twelve-hundred" → "1200", "forty two" → "42", ordinals as their numbers ("ninth" → "9",
// "twenty-first" → "21", "21st" → "21"). Groups said one after another join, as dictated digits
// do ("twenty two oh one" → "2201"); anything between them (a comma, a word) keeps them apart.
// letterO marks the positions where "oh" is the letter O (a spelled code) rather than zero.
func digitize(toks []string, letterO func(i int) bool) []string {
	out := make([]string, 0, len(toks))
	joinable := false // the last token written ended a number-word run
	for i := 0; i < len(toks); {
		w := toks[i]
		lx, isWord := lexicon[w]
		switch {
		case !isWord && (w == "a" || w == "an" || w == "double" || w == "triple"):
		case !isWord:
			if v, ok := digitOrdinal(w); ok {
				out = append(out, strconv.FormatInt(v, 10))
			} else {
				out = append(out, w)
			}
			joinable = false
			i++
			continue
		case lx.kind == ordinalWord:
			out = append(out, strconv.FormatInt(lx.val, 10))
			joinable = false
			i++
			continue
		}
		if letterO != nil && (w == "oh" || w == "o") && letterO(i) {
			out = append(out, "o")
			joinable = false
			i++
			continue
		}
		if (w == "double" || w == "triple") && i+1 < len(toks) {
			if nx := lexicon[toks[i+1]]; nx.kind == unitWord && toks[i+1] != "o" {
				rep := 2
				if w == "triple" {
					rep = 3
				}
				out = appendDigits(out, strings.Repeat(strconv.FormatInt(nx.val, 10), rep), joinable)
				joinable = true
				i += 2
				continue
			}
		}
		v, n := cardinal(toks, i)
		if n == 0 {
			out = append(out, w)
			joinable = false
			i++
			continue
		}
		if o, m := ordinalTail(toks, i+n, v); m > 0 {
			out = append(out, strconv.FormatInt(o, 10))
			joinable = false
			i += n + m
			continue
		}
		out = appendDigits(out, strconv.FormatInt(v, 10), joinable)
		joinable = true
		i += n
	}
	return out
}

func appendDigits(out []string, d string, join bool) []string {
	if join && len(out) > 0 && IsDigits(out[len(out)-1]) {
		out[len(out)-1] += d
		return out
	}
	return append(out, d)
}

// SpokenToDigits rewrites runs of number words as digit strings and keeps every other token, so
// "five five five, one two three four" becomes "555 , 1234", "nineteen eighty-eight" becomes
// "1988", "double five" becomes "55" and "forty two Birch Lane" becomes "42 birch lane". Ordinal
// words become digits too ("ninth" → "9"). The result is lower case and space-separated.
func SpokenToDigits(s string) string {
	return strings.Join(digitize(tokens(s), nil), " ")
}

// Digits returns only the digits of s after spoken numbers are converted.
func Digits(s string) string {
	var b strings.Builder
	for _, w := range digitize(tokens(s), nil) {
		for i := 0; i < len(w); i++ {
			if w[i] >= '0' && w[i] <= '9' {
				b.WriteByte(w[i])
			}
		}
	}
	return b.String()
}
