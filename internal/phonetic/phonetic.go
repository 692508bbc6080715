// Package phonetic gives names the codes of how they sound, so that a verification can accept a
// name spelled as it was heard ("Carney" for "Kearney"): American Soundex and Lawrence Philips'
// Double Metaphone. A task names the algorithm of each sound-alike column; the trace records when
// a caller was verified only through such a match.
package phonetic

import (
	"strings"
	"unicode"
)

// Algorithms a task may name.
const (
	Soundex         = "soundex"
	DoubleMetaphone = "double_metaphone"
)

// Algorithms lists them in documentation order.
var Algorithms = []string{Soundex, DoubleMetaphone}

// Codes returns the codes of every word of s under algorithm (one per word for Soundex, a
// primary and an alternate for Double Metaphone), or nil for an unknown algorithm.
func Codes(algorithm, s string) []string {
	var out []string
	for _, w := range words(s) {
		switch algorithm {
		case Soundex:
			if c := SoundexCode(w); c != "" {
				out = append(out, c)
			}
		case DoubleMetaphone:
			p, a := DoubleMetaphoneCodes(w)
			if p != "" {
				out = append(out, p)
			}
			if a != "" && a != p {
				out = append(out, a)
			}
		default:
			return nil
		}
	}
	return out
}

// SoundAlike reports whether a and b sound the same under algorithm: as many words, each pair
// sharing a code (for Double Metaphone, primary or alternate).
func SoundAlike(algorithm, a, b string) bool {
	wa, wb := words(a), words(b)
	if len(wa) == 0 || len(wa) != len(wb) {
		return false
	}
	for i := range wa {
		ca, cb := Codes(algorithm, wa[i]), Codes(algorithm, wb[i])
		if len(ca) == 0 || len(cb) == 0 {
			return false
		}
		match := false
		for _, x := range ca {
			for _, y := range cb {
				match = match || x == y
			}
		}
		if !match {
			return false
		}
	}
	return true
}

// words splits s into its letter runs, upper-cased, accents folded to ASCII where simple.
func words(s string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
	}
	for _, r := range s {
		r = fold(r)
		switch {
		case r == '\'' || r == '’':
			continue // O'Brien is one word
		case unicode.IsLetter(r):
			b.WriteRune(unicode.ToUpper(r))
		default:
			flush()
		}
	}
	flush()
	return out
}

func fold(r rune) rune {
	switch r {
	case 'á', 'à', 'â', 'ä', 'ã', 'å', 'Á', 'À', 'Â', 'Ä', 'Ã', 'Å':
		return 'A'
	case 'é', 'è', 'ê', 'ë', 'É', 'È', 'Ê', 'Ë':
		return 'E'
	case 'í', 'ì', 'î', 'ï', 'Í', 'Ì', 'Î', 'Ï':
		return 'I'
	case 'ó', 'ò', 'ô', 'ö', 'õ', 'Ó', 'Ò', 'Ô', 'Ö', 'Õ':
		return 'O'
	case 'ú', 'ù', 'û', 'ü', 'Ú', 'Ù', 'Û', 'Ü':
		return 'U'
	case 'ç', 'Ç':
		return 'Ç'
	case 'ñ', 'Ñ':
		return 'Ñ'
	}
	return r
}

// SoundexCode is the American Soundex code of one word (letter and three digits, "R163"): H and
// W do not separate letters of one code, vowels do.
func SoundexCode(word string) string {
	code := func(r rune) byte {
		switch r {
		case 'B', 'F', 'P', 'V':
			return '1'
		case 'C', 'G', 'J', 'K', 'Q', 'S', 'X', 'Z', 'Ç':
			return '2'
		case 'D', 'T':
			return '3'
		case 'L':
			return '4'
		case 'M', 'N', 'Ñ':
			return '5'
		case 'R':
			return '6'
		case 'H', 'W':
			return 'h'
		}
		return '0' // vowels and Y
	}
	var first rune
	out := make([]byte, 0, 4)
	var last byte
	for _, r := range word {
		if r < 'A' || (r > 'Z' && r != 'Ç' && r != 'Ñ') {
			continue
		}
		c := code(r)
		if first == 0 {
			first = r
			if r == 'Ç' {
				first = 'C'
			}
			if r == 'Ñ' {
				first = 'N'
			}
			last = c
			continue
		}
		switch c {
		case 'h':
			continue // keeps last: letters of one code around H or W count once
		case '0':
			last = '0'
			continue
		}
		if c != last && len(out) < 3 {
			out = append(out, c)
		}
		last = c
	}
	if first == 0 {
		return ""
	}
	for len(out) < 3 {
		out = append(out, '0')
	}
	return string(first) + string(out)
}
