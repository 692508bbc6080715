package asr

import (
	"slices"
	"strconv"
	"strings"

	"github.com/voicebench/humanaudit/internal/canon"
)

// Value is what an answer means for its slot, in written form.
type Value struct {
	Kind Kind
	// Text is the canonical written form: digits "417", phone "503-555-0147", identifier
	// "PA2044718", number "612.4", yes/no "yes" or "no", a choice as listed, a date "1979-03-14"
	// (or "--12-05" when no year was said; see Date.Resolve), a range "<date> to <date>".
	Text string
	// Dates holds the date (KindDate) or the two ends (KindDateRange), possibly without a year
	// (see canon.Date.Resolve).
	Dates []canon.Date
	// Number is the quantity of KindNumber.
	Number float64
}

// Parse reads the value of an answer (recognized words) for the slot. It reports false when the
// words hold no value of the slot's kind.
func (s Slot) Parse(text string) (Value, bool) {
	text = strings.ToLower(strings.TrimSpace(text))
	words := strings.Fields(strings.NewReplacer(",", " ", ".", " ", "?", " ", "!", " ").Replace(text))
	v := Value{Kind: s.Kind}
	switch s.Kind {
	case KindDigits:
		d := canon.Digits(strings.Join(words, " "))
		if s.Digits > 0 && len(d) != s.Digits {
			d = lastDigitRun(words, s.Digits)
		}
		if d == "" {
			return v, false
		}
		v.Text = d
	case KindPhone:
		d := canon.Digits(strings.Join(words, " "))
		if len(d) == 11 && d[0] == '1' {
			d = d[1:]
		}
		if len(d) != 10 && len(d) != 7 {
			// Only a whole number: seven digits of a longer turn are more often a number that
			// lost its area code to the recognizer than a local one.
			d = lastDigitRun(words, 10)
		}
		switch len(d) {
		case 10:
			v.Text = d[:3] + "-" + d[3:6] + "-" + d[6:]
		case 7:
			v.Text = d[:3] + "-" + d[3:]
		default:
			return v, false
		}
	case KindIdentifier:
		id := spokenIdentifier(words, s.Subject)
		if id == "" {
			return v, false
		}
		v.Text = id
	case KindNumber:
		n, ok := canon.FindNumber(strings.Join(stripCarrier(words, s.Subject), " "))
		if !ok {
			return v, false
		}
		v.Number = n
		v.Text = strconv.FormatFloat(n, 'f', -1, 64)
	case KindDate:
		ds := canon.FindDates(strings.Join(words, " "))
		if len(ds) == 0 {
			return v, false
		}
		v.Dates = ds[:1]
		v.Text = ds[0].String()
	case KindDateRange:
		ds := canon.FindDates(strings.Join(words, " "))
		if len(ds) < 2 {
			return v, false
		}
		// "The week of December seventh? So December seventh through December eleventh": the
		// range is the last two dates said.
		ds = ds[len(ds)-2:]
		v.Dates = ds
		v.Text = ds[0].String() + " to " + ds[1].String()
	case KindYesNo:
		p, ok := Polarity(text)
		if !ok {
			return v, false
		}
		v.Text = map[bool]string{true: "yes", false: "no"}[p]
	case KindSpelling:
		v.Text = spelledWords(words)
		if v.Text == "" {
			return v, false
		}
	case KindAddress:
		if !slices.ContainsFunc(words, canon.IsNumberWord) {
			return v, false
		}
		v.Text = strings.Join(words, " ")
	case KindFiller:
		v.Text = strings.Join(words, " ")
		if v.Text == "" {
			return v, false
		}
	case KindChoiceInContext:
		if s.Several {
			cs := MatchChoices(words, s.Choices)
			if len(cs) == 0 {
				return v, false
			}
			v.Text = strings.Join(cs, ", ")
			break
		}
		c, ok := matchChoice(words, s.Choices)
		if !ok {
			return v, false
		}
		v.Text = c
	case KindChoice:
		c, ok := matchChoice(words, s.Choices)
		if !ok {
			return v, false
		}
		v.Text = c
	default:
		return v, false
	}
	return v, true
}

// MatchChoices finds every choice said in words, in the order said, each once: the longest
// choice at each word (a word may end in "s" or "'s": "tuesdays" says tuesday), none just after
// "not", "no" or "except".
func MatchChoices(words []string, choices []string) []string {
	bare := func(w string) string { return strings.TrimSuffix(strings.TrimSuffix(w, "'s"), "s") }
	var out []string
	for i := 0; i < len(words); i++ {
		best, bestLen := "", 0
		for _, c := range choices {
			cw := strings.Fields(strings.ToLower(c))
			if len(cw) <= bestLen || i+len(cw) > len(words) {
				continue
			}
			all := true
			for k, w := range cw {
				if got := words[i+k]; got != w && bare(got) != w && bare(got) != bare(w) {
					all = false
					break
				}
			}
			if all {
				best, bestLen = c, len(cw)
			}
		}
		if bestLen == 0 {
			continue
		}
		refused := i > 0 && (words[i-1] == "not" || words[i-1] == "no" || words[i-1] == "except")
		if !refused && !slices.Contains(out, best) {
			out = append(out, best)
		}
		i += bestLen - 1
	}
	return out
}

// lastDigitRun is the last run of number words in words that makes exactly n digits, or "": the
// value a caller settled on when the turn holds other numbers too ("six eight five, sorry, six
// eight five oh six", "my old one is six eight five oh six").
func lastDigitRun(words []string, n int) string {
	toks := strings.Fields(canon.SpokenToDigits(strings.Join(words, " ")))
	for i := len(toks) - 1; i >= 0; i-- {
		if len(toks[i]) == n && canon.IsDigits(toks[i]) {
			return toks[i]
		}
	}
	return ""
}

// carrierWords are the words of the grammars' carrier phrases, never part of a value.
var carrierWords = map[string]bool{"it's": true, "it": true, "is": true, "sure": true, "okay": true, "yes": true,
	"um": true, "uh": true, "that's": true, "that": true, "would": true, "be": true, "my": true, "the": true,
	"thanks": true, "thank": true, "you": true, "please": true}

func stripCarrier(words []string, subject string) []string {
	subj := map[string]bool{}
	for _, w := range strings.Fields(strings.ToLower(subject)) {
		subj[w] = true
	}
	out := make([]string, 0, len(words))
	for _, w := range words {
		if carrierWords[w] || subj[w] {
			continue
		}
		out = append(out, w)
	}
	return out
}

// spokenIdentifier reads a code spelled as letters and digits (canon.SpelledCode: "oh" after a
// letter is the letter O, "double" repeats); words that can be no part of a code are dropped
// first. A code that starts "zero x" is a hexadecimal literal and keeps the conventional
// lower-case "0x" prefix.
func spokenIdentifier(words []string, subject string) string {
	var keep []string
	ws := codeHomophones(stripCarrier(words, subject))
	for i, w := range ws {
		letter := len(w) == 1 && w[0] >= 'a' && w[0] <= 'z' || len(w) == 2 && w[1] == '.' && w[0] >= 'a' && w[0] <= 'z'
		if w == "i" && i+1 < len(ws) && pronounFollowers[ws[i+1]] {
			continue // "I think", not the letter I
		}
		if letter || canon.IsNumberWord(w) || canon.IsDigits(w) || w == "double" || w == "triple" {
			keep = append(keep, strings.TrimSuffix(w, "."))
		}
	}
	s := canon.SpelledCode(strings.Join(keep, " "))
	// A code said twice in one breath ("B E, twenty-two ninety-one … yeah, B E, twenty-two
	// ninety-one") is one code.
	if n := len(s); n >= 4 && n%2 == 0 && s[:n/2] == s[n/2:] {
		s = s[:n/2]
	}
	if strings.HasPrefix(s, "0X") {
		s = "0x" + s[2:]
	}
	return s
}

// codeHomophones reads the words the open vocabulary writes for digits said among digits: "eight
// eight four one of three nine to five seven" is 8841 0392 57.
func codeHomophones(ws []string) []string {
	num := func(i int) bool { return i >= 0 && i < len(ws) && (canon.IsNumberWord(ws[i]) || canon.IsDigits(ws[i])) }
	out := slices.Clone(ws)
	for i, w := range ws {
		if !num(i-1) || !num(i+1) {
			continue
		}
		switch w {
		case "of":
			out[i] = "oh"
		case "to", "too":
			out[i] = "two"
		case "for":
			out[i] = "four"
		}
	}
	return out
}

// pronounFollowers are words after which "i" is the pronoun.
var pronounFollowers = map[string]bool{"think": true, "guess": true, "believe": true, "am": true, "was": true, "have": true,
	"had": true, "need": true, "mean": true, "said": true, "gave": true, "don't": true, "can't": true, "just": true,
	"always": true, "never": true, "forget": true, "forgot": true, "know": true, "remember": true, "hope": true}

// spelledWords normalises a spelling: spelling-alphabet words become their letters, "as in
// <word>" is dropped, "double l" is two l's, "capital" goes; letters stay single words, so that
// the listener can find the runs. Other words are kept.
func spelledWords(words []string) string {
	var out []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "as" && i+2 < len(words) && words[i+1] == "in":
			i += 2
			continue
		case w == "double" && i+1 < len(words) && len(canon.SpelledCode(words[i+1])) == 1:
			l := strings.ToLower(canon.SpelledCode(words[i+1]))
			out = append(out, l, l)
			i++
			continue
		case w == "capital":
			continue
		}
		if l := canon.SpelledCode(w); len(l) == 1 && natoLetter(w) {
			w = strings.ToLower(l)
		}
		out = append(out, strings.TrimSuffix(w, "."))
	}
	return strings.Join(out, " ")
}

// natoLetter reports a spelling-alphabet word.
func natoLetter(w string) bool {
	return strings.Contains(" "+natoWords+" ", " "+w+" ")
}

// Polarity reads an answer to a yes/no question. The last qualifying word decides ("yes, go
// ahead … actually, wait, no" is no); "don't"/"not" negate what follows ("don't go ahead").
func Polarity(text string) (yes bool, ok bool) {
	words := strings.Fields(strings.NewReplacer(",", " ", ".", " ", "?", " ", "!", " ").Replace(strings.ToLower(text)))
	negated := false
	for i, w := range words {
		switch w {
		case "yes", "yeah", "yep", "sure", "correct", "right", "okay", "ok", "fine", "approve", "approved", "ahead", "proceed", "good":
			if negated {
				yes, ok = false, true
			} else {
				yes, ok = true, true
			}
			negated = false
		case "no", "nope", "wait", "stop", "cancel", "withdraw", "withdrawing", "hold", "decline", "revoke":
			if w == "no" && i+1 < len(words) && (words[i+1] == "problem" || words[i+1] == "worries" || words[i+1] == "rush" || words[i+1] == "hurry") {
				yes, ok = true, true // "no problem" agrees
				continue
			}
			yes, ok = false, true
			negated = false
		case "don't", "not", "never", "dont":
			yes, ok = false, true
			negated = true
		default:
			if negated && i > 0 && words[i-1] != "don't" && words[i-1] != "not" && words[i-1] != "go" {
				negated = false
			}
		}
	}
	return yes, ok
}

// matchChoice returns the listed choice whose words the answer contains (a trailing plural "s" is
// ignored), preferring the longest choice, then the one said first, one said after "not" last.
func matchChoice(words []string, choices []string) (string, bool) {
	have := map[string]int{} // a word's (or joined pair's) first position
	note := func(w string, i int) {
		if _, ok := have[w]; !ok {
			have[w] = i
		}
	}
	for i, w := range words {
		note(strings.TrimSuffix(w, "s"), i)
		note(w, i)
		if i+1 < len(words) {
			note(w+words[i+1], i) // "pick up" says pickup
		}
	}
	refused := func(i int) bool {
		for j := max(0, i-2); j < i; j++ {
			if words[j] == "not" || words[j] == "no" || words[j] == "except" {
				return true
			}
		}
		return false
	}
	best, bestLen, bestAt := "", 0, 0
	for _, c := range choices {
		cw := strings.Fields(strings.ToLower(c))
		if len(cw) == 0 {
			continue
		}
		at, all := len(words), true
		for _, w := range cw {
			i, ok := have[w]
			if !ok {
				i, ok = have[strings.TrimSuffix(w, "s")]
			}
			if !ok {
				all = false
				break
			}
			at = min(at, i)
		}
		if !all {
			continue
		}
		if refused(at) {
			at += len(words)
		}
		// "Afternoons, after one, I'm driving the kids around in the morning" is afternoon.
		if len(cw) > bestLen || len(cw) == bestLen && at < bestAt {
			best, bestLen, bestAt = c, len(cw), at
		}
	}
	return best, bestLen > 0
}
