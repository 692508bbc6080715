// Package canon is the one reader of values dictated aloud: numbers in digits or words (hedges,
// currencies, percentages and signs included), dates and date-times, intervals, phone numbers,
// addresses, identifiers, e-mail addresses, enumeration keys and case-folded text. The grader,
// the workspace's lookups, the bank's quality control and the reference agent's understanding all
// read values through it, so "July ninth 1988" and 1988-07-09 are the same date everywhere.
package canon

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

var typographic = strings.NewReplacer("’", "'", "‘", "'", "“", "\"", "”", "\"", "–", "-", "—", "-", "‐", "-", "‑", "-", "\u00a0", " ")

// foldUnicode case-folds non-ASCII text the Unicode way (Straße and STRASSE are both strasse),
// after composing it (NFC) and making typographic quotes and dashes plain. A Caser keeps state,
// so each call has its own.
func foldUnicode(s string) string {
	s = typographic.Replace(s)
	if !norm.NFC.IsNormalString(s) {
		s = norm.NFC.String(s)
	}
	return cases.Fold().String(s)
}

// Fold case-folds s (Unicode case folding), unifies quotes and dashes, trims surrounding
// punctuation and collapses whitespace: the "case-folded" comparison form.
func Fold(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if !ascii {
		s = foldUnicode(s)
	}
	// One pass: lower ASCII, collapse runs of white space, and trim punctuation and space at both
	// ends.
	b := make([]byte, 0, len(s))
	space := false
	for i := 0; i < len(s); {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r >= utf8.RuneSelf && unicode.IsSpace(r) {
			space = len(b) > 0
			i += size
			continue
		}
		if space {
			b = append(b, ' ')
			space = false
		}
		if r >= 'A' && r <= 'Z' {
			b = append(b, byte(r)+'a'-'A')
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return strings.TrimFunc(string(b), func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
}

// EnumKey is the comparison form of an enumeration value or one of its synonyms: case-folded,
// apostrophes dropped, "&" read as "and", and every other run of punctuation, hyphens,
// underscores and spaces made one space. "High-Deductible Health Plan", "high deductible health
// plan" and "HIGH_DEDUCTIBLE_HEALTH_PLAN" have one key.
func EnumKey(s string) string {
	s = Fold(s)
	var b strings.Builder
	b.Grow(len(s))
	gap := false
	for _, r := range s {
		switch {
		case r == '\'':
			continue
		case r == '&':
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString("and")
			gap = true
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if gap && b.Len() > 0 {
				b.WriteByte(' ')
			}
			gap = false
			b.WriteRune(r)
		default:
			gap = true
		}
	}
	return b.String()
}

// Key is the comparison key of a value under a column comparison of the task format
// ("identifier", "date", "phone", "number", "address", "casefold", "exact"); ok is false when the
// value cannot be read that way (a date that is no date). Two values compare equal when both
// read and their keys are equal.
func Key(compare, s string) (key string, ok bool) {
	switch compare {
	case "identifier":
		return Identifier(s), true
	case "date":
		d, ok := ParseDate(s)
		return d.String(), ok
	case "phone":
		return Phone(s), true
	case "number":
		n, ok := Number(s)
		return strconv.FormatFloat(n, 'g', -1, 64), ok
	case "address":
		return Address(s), true
	case "casefold":
		return Fold(s), true
	}
	return strings.TrimSpace(s), true
}

// Same reports whether two values are equal under a column comparison (see Key); identifiers
// are also equal when they differ only by O against 0 as spoken ("H O three" is H03).
func Same(compare, a, b string) bool {
	if compare == "identifier" {
		x, y := NewIDForm(a), NewIDForm(b)
		return x.Key == y.Key || x.Spoken == y.Spoken
	}
	ka, ok1 := Key(compare, a)
	kb, ok2 := Key(compare, b)
	return ok1 && ok2 && ka == kb
}
