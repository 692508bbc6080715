package canon

import (
	"strings"
	"unicode"
)

// natoLetters are the spelling alphabet's words for letters ("P as in Papa", "hotel victor sierra").
var natoLetters = map[string]string{
	"alpha": "a", "alfa": "a", "bravo": "b", "charlie": "c", "delta": "d", "echo": "e", "foxtrot": "f",
	"golf": "g", "hotel": "h", "india": "i", "juliet": "j", "juliett": "j", "kilo": "k", "lima": "l",
	"mike": "m", "november": "n", "oscar": "o", "papa": "p", "quebec": "q", "romeo": "r", "sierra": "s",
	"tango": "t", "uniform": "u", "victor": "v", "whiskey": "w", "whisky": "w", "xray": "x", "yankee": "y",
	"zulu": "z",
}

// spellingFillers are words said while spelling a code that are not part of it ("capital Q,
// dash, two").
var spellingFillers = map[string]bool{
	"capital": true, "uppercase": true, "upper": true, "lowercase": true, "lower": true, "small": true,
	"dash": true, "hyphen": true, "underscore": true, "slash": true, "dot": true, "point": true,
	"then": true, "letter": true, "case": true, "and": true, "space": true,
}

// SpelledCode reads an identifier as written or spelled aloud and returns its letters (upper
// case) and digits in order, separators dropped: "PA-20-44718", "p a two zero four four seven
// one eight" and "P as in Papa, A, twenty, forty-four seven eighteen" are all PA2044718.
// "Double"/"triple" repeat a letter or digit, "as in <word>" and spelling fillers ("dash",
// "capital") drop out, spelling-alphabet words are their letters, and "oh" right after a spelled
// letter, or opening the code before one, is the letter O ("H O three" is HO3, "oh F G" OFG)
// where after a digit it is zero.
func SpelledCode(s string) string {
	if code, ok := plainCode(s); ok {
		return code
	}
	return spelledCode(s)
}

// spelledCode is SpelledCode's general reader.
func spelledCode(s string) string {
	raw := tokens(s)
	toks := make([]string, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		w := raw[i]
		switch {
		case w == "as" && i+2 < len(raw) && raw[i+1] == "in":
			i += 2 // "B as in boy"
			continue
		case spellingFillers[w]:
			// A filler separates what is around it: "twenty dash four" is 20 then 4, not 24.
			toks = append(toks, ",")
			continue
		case w == "double" || w == "triple":
			j := i + 1
			if j < len(raw) && raw[j] == "-" {
				j++ // "double-e", "double-oh"
			}
			if j < len(raw) && len(raw[j]) == 1 && isLetters(raw[j]) && raw[j] != "o" {
				toks = append(toks, raw[j], raw[j])
				if w == "triple" {
					toks = append(toks, raw[j])
				}
				i = j
				continue
			}
			toks = append(toks, w) // a digit follows: digitize repeats it
			i = j - 1
			continue
		case w == "x" && i+2 < len(raw) && raw[i+1] == "-" && raw[i+2] == "ray": // "x-ray"
			toks = append(toks, "x")
			i += 2
			continue
		}
		if l, ok := natoLetters[w]; ok {
			w = l
		}
		toks = append(toks, w)
	}
	letterO := func(i int) bool {
		if i > 0 && len(toks[i-1]) == 1 && isLetters(toks[i-1]) && toks[i-1] != "o" {
			return true
		}
		// "Oh F G, nine one two": an "oh" that opens the code before a spelled letter is O.
		return (i == 0 || toks[i-1] == ",") && i+1 < len(toks) && len(toks[i+1]) == 1 && isLetters(toks[i+1])
	}
	var b strings.Builder
	for _, w := range digitize(toks, letterO) {
		for _, r := range w {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				b.WriteRune(unicode.ToUpper(r))
			}
		}
	}
	return b.String()
}

// plainCode reads a code written plainly ("PA-20-44718", "RX 6023-1148"): ASCII letters, digits
// and separators, whose letter runs are none of the words SpelledCode reads specially (number
// words, spelling-alphabet words, fillers). It is the common case and skips tokenizing.
func plainCode(s string) (string, bool) {
	b := make([]byte, 0, len(s))
	start := -1          // start of the current letter run in s
	afterDigits := false // the run is glued to digits before it ("5th")
	flush := func(end int) bool {
		if start < 0 {
			return true
		}
		w := strings.ToLower(s[start:end])
		start = -1
		if afterDigits && (w == "st" || w == "nd" || w == "rd" || w == "th") {
			return false // a written ordinal, which the tokenizer reads as its number
		}
		if _, ok := lexicon[w]; ok {
			return false
		}
		if _, ok := natoLetters[w]; ok {
			return false
		}
		return !spellingFillers[w] && w != "as" && w != "in" && w != "double" && w != "triple" && w != "x"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			if start < 0 {
				start = i
				afterDigits = i > 0 && s[i-1] >= '0' && s[i-1] <= '9'
			}
			b = append(b, c&^0x20)
			continue
		case c >= '0' && c <= '9':
			// A letter run glued to digits ("ho3", "5th") is a code, not a word.
			if start >= 0 {
				start = -1
			}
			b = append(b, c)
			continue
		case c == '-' || c == ' ' || c == '_' || c == '/' || c == '.' || c == '#':
		default:
			return "", false
		}
		if !flush(i) {
			return "", false
		}
	}
	if !flush(len(s)) {
		return "", false
	}
	return string(b), true
}

// Identifier canonicalises an account, policy or ticket identifier: its spelled code (see
// SpelledCode) with leading zeros of each digit run dropped. CC-4419, "c c four four one nine"
// and cc4419 are all CC4419; HVAC-007 and HVAC-7 are both HVAC7.
func Identifier(s string) string {
	return stripLeadingZeros(SpelledCode(s))
}

func stripLeadingZeros(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	inRun := false
	pendingZero := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' {
			if !inRun && c == '0' {
				pendingZero = true
				continue
			}
			inRun = true
			pendingZero = false
			b.WriteByte(c)
			continue
		}
		if pendingZero {
			b.WriteByte('0')
		}
		inRun, pendingZero = false, false
		b.WriteByte(c)
	}
	if pendingZero {
		b.WriteByte('0')
	}
	return b.String()
}

// TypePrefix returns the alphabetic type prefix of a written identifier that separates it from the
// rest ("JOB" of "JOB-2201", "RX" of "RX 6023-1148"), or "" (a glued "CC4419" has none).
func TypePrefix(written string) string {
	written = strings.TrimSpace(written)
	for i, r := range written {
		if unicode.IsLetter(r) {
			continue
		}
		if i > 0 && (r == '-' || r == ' ' || r == '_' || r == '/' || r == '.' || r == '#') {
			return strings.ToUpper(written[:i])
		}
		return ""
	}
	return ""
}

// IDForm is an identifier prepared for comparison: its key (Identifier) and its letters and
// digits as spelled with O and 0 made one (dictation says "oh" for both).
type IDForm struct {
	Key    string
	Spoken string
	Type   string // the written type prefix, as a key ("JOB")
}

// NewIDForm prepares a written or dictated identifier.
func NewIDForm(s string) IDForm {
	code := SpelledCode(s)
	return IDForm{Key: stripLeadingZeros(code), Spoken: strings.ReplaceAll(code, "O", "0"), Type: Identifier(TypePrefix(s))}
}

// SameIdentifier reports whether two identifiers are the same for a reviewer: equal keys
// (case, separators, leading zeros and spelling ignored), or equal letters and digits with O read
// as 0, or equal once a type prefix is taken off. A type prefix may be left out on either side
// (JOB-2201 is 2201, and 2201 is JOB-2201) but not swapped for another (INV-77310 is not
// PO-77310), except that the declared prefixes are interchangeable (with ACCT and ACT declared,
// acct_88 is act88). how is a note for the grade ("" when the keys are equal).
func SameIdentifier(a, b IDForm, prefixes []string) (same bool, how string) {
	if a.Key == b.Key {
		return true, ""
	}
	if a.Spoken == b.Spoken {
		return true, "O read as 0"
	}
	declared := make([]string, 0, len(prefixes))
	for _, p := range prefixes {
		if k := Identifier(p); k != "" {
			declared = append(declared, k)
		}
	}
	written := []string{a.Type, b.Type}
	bareA, pa, da := stripPrefix(a.Key, declared, written)
	bareB, pb, db := stripPrefix(b.Key, declared, written)
	switch {
	case bareA == "" || bareA != bareB:
		return false, ""
	case pa == "" && pb == "":
		return false, ""
	case pa != "" && pb != "" && pa != pb && !(da && db):
		return false, "" // one type prefix swapped for another
	}
	p := pa
	if p == "" {
		p = pb
	}
	return true, "type prefix " + p + " ignored"
}

// stripPrefix removes the longest prefix that key starts with, a declared one or a written type
// prefix, and returns the rest without leading zeros, the prefix and whether it was declared. A
// written type prefix must be followed by a digit, so that JOB does not eat the start of JOBX.
func stripPrefix(key string, declared, written []string) (rest, prefix string, isDeclared bool) {
	for _, c := range declared {
		if strings.HasPrefix(key, c) && len(c) > len(prefix) && len(c) < len(key) {
			prefix, isDeclared = c, true
		}
	}
	for _, c := range written {
		if c != "" && strings.HasPrefix(key, c) && len(c) > len(prefix) && len(c) < len(key) && key[len(c)] >= '0' && key[len(c)] <= '9' {
			prefix, isDeclared = c, false
		}
	}
	if prefix == "" {
		return key, "", false
	}
	return stripLeadingZeros(key[len(prefix):]), prefix, isDeclared
}
