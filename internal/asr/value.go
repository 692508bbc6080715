package asr

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/voicebench/humanaudit/internal/canon"
)

// Value is what an answer means for its slot, in written form.
type Value struct {
	Kind Kind
	// Text is the canonical written form: digits "417", phone "503-555-0147", identifier
	// "PA2044718", number "612.4", yes/no "yes" or "no", a choice as listed, a date "1979-03-14"
	// (or "--12-05" when no year was said; see Date.Resolve), a range "<date> to <date>".
	Text string
	// Dates holds the date (KindDate) or the two ends (KindDateRange), possibly without a year.
	Dates []Date
	// Number is the quantity of KindNumber.
	Number float64
}

// Date is a spoken calendar date. Year is 0 when the speaker did not say one.
type Date struct {
	Year, Month, Day int
	Weekday          time.Weekday
	HasWeekday       bool
}

// String is YYYY-MM-DD, or --MM-DD without a year.
func (d Date) String() string {
	if d.Year == 0 {
		return fmt.Sprintf("--%02d-%02d", d.Month, d.Day)
	}
	return fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day)
}

// Resolve fills in a missing year the way a listener would: a named weekday picks the year
// nearest to ref in which the date falls on that weekday; otherwise the date is the next one on
// or after ref's day (callers schedule ahead). A date with a year is returned as is.
func (d Date) Resolve(ref time.Time) Date {
	if d.Year != 0 {
		return d
	}
	y := ref.Year()
	if d.HasWeekday {
		for off := 0; off <= 6; off++ {
			for _, cand := range []int{y + off, y - off} {
				t := time.Date(cand, time.Month(d.Month), d.Day, 0, 0, 0, 0, time.UTC)
				if t.Day() == d.Day && t.Weekday() == d.Weekday {
					d.Year = cand
					return d
				}
			}
		}
	}
	today := time.Date(ref.Year(), ref.Month(), ref.Day(), 0, 0, 0, 0, time.UTC)
	t := time.Date(y, time.Month(d.Month), d.Day, 0, 0, 0, 0, time.UTC)
	if t.Before(today) {
		y++
	}
	d.Year = y
	return d
}

// ResolveRange resolves both ends of a range: the end is the first such date not before the start.
func ResolveRange(from, to Date, ref time.Time) (Date, Date) {
	from = from.Resolve(ref)
	if to.Year == 0 && !to.HasWeekday {
		to.Year = from.Year
		if to.Month < from.Month || (to.Month == from.Month && to.Day < from.Day) {
			to.Year++
		}
		return from, to
	}
	return from, to.Resolve(ref)
}

var digitOf = map[string]byte{"zero": '0', "oh": '0', "o": '0', "one": '1', "two": '2', "three": '3', "four": '4',
	"five": '5', "six": '6', "seven": '7', "eight": '8', "nine": '9'}

// Parse reads the value of an answer (recognized words) for the slot. It reports false when the
// words hold no value of the slot's kind.
func (s Slot) Parse(text string) (Value, bool) {
	text = strings.ToLower(strings.TrimSpace(text))
	words := strings.Fields(strings.NewReplacer(",", " ", ".", " ", "?", " ", "!", " ").Replace(text))
	v := Value{Kind: s.Kind}
	switch s.Kind {
	case KindDigits:
		d := spokenDigits(words)
		if d == "" || (s.Digits > 0 && len(d) != s.Digits) {
			return v, false
		}
		v.Text = d
	case KindPhone:
		d := spokenDigits(words)
		if len(d) == 11 && d[0] == '1' {
			d = d[1:]
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
		n, ok := canon.Number(strings.Join(numberSpan(stripCarrier(words, s.Subject)), " "))
		if !ok {
			return v, false
		}
		v.Number = n
		v.Text = strconv.FormatFloat(n, 'f', -1, 64)
	case KindDate:
		ds := spokenDates(words)
		if len(ds) == 0 {
			return v, false
		}
		v.Dates = ds[:1]
		v.Text = ds[0].String()
	case KindDateRange:
		ds := spokenDates(words)
		if len(ds) < 2 {
			return v, false
		}
		v.Dates = ds[:2]
		v.Text = ds[0].String() + " to " + ds[1].String()
	case KindYesNo:
		p, ok := Polarity(text)
		if !ok {
			return v, false
		}
		v.Text = map[bool]string{true: "yes", false: "no"}[p]
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

// spokenDigits collects the digits of dictated digit words ("double five" is 55); other words are
// skipped.
func spokenDigits(words []string) string {
	var b strings.Builder
	for i := 0; i < len(words); i++ {
		w := words[i]
		if (w == "double" || w == "triple") && i+1 < len(words) {
			if d, ok := digitOf[words[i+1]]; ok {
				n := 2
				if w == "triple" {
					n = 3
				}
				b.WriteString(strings.Repeat(string(d), n))
				i++
				continue
			}
		}
		if d, ok := digitOf[w]; ok {
			b.WriteByte(d)
			continue
		}
		if isNumeral(w) {
			b.WriteString(w)
		}
	}
	return b.String()
}

func isNumeral(w string) bool {
	if w == "" {
		return false
	}
	for _, r := range w {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
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

// spokenIdentifier reads a code spelled as letters and digits. "oh" after a letter is the letter O
// ("H O three"), otherwise zero; a code that starts "zero x" is a hexadecimal literal and keeps the
// conventional lower-case "0x" prefix.
func spokenIdentifier(words []string, subject string) string {
	words = stripCarrier(words, subject)
	var b []byte
	lastLetter := false
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case (w == "double" || w == "triple") && i+1 < len(words) && digitOf[words[i+1]] != 0:
			n := 2
			if w == "triple" {
				n = 3
			}
			for range n {
				b = append(b, digitOf[words[i+1]])
			}
			i++
			lastLetter = false
		case (w == "oh" || w == "o") && lastLetter:
			b = append(b, 'O')
		case digitOf[w] != 0:
			b = append(b, digitOf[w])
			lastLetter = false
		case len(w) == 1 && w[0] >= 'a' && w[0] <= 'z':
			b = append(b, w[0]-'a'+'A')
			lastLetter = true
		case len(w) == 2 && w[1] == '.' && w[0] >= 'a' && w[0] <= 'z': // "p." in some dictionaries
			b = append(b, w[0]-'a'+'A')
			lastLetter = true
		case isNumeral(w):
			b = append(b, w...)
			lastLetter = false
		}
	}
	s := string(b)
	if strings.HasPrefix(s, "0X") {
		s = "0x" + s[2:]
	}
	return s
}

var monthOf = map[string]int{"january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
	"august": 8, "september": 9, "october": 10, "november": 11, "december": 12}

var weekdayOf = map[string]time.Weekday{"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday,
	"wednesday": time.Wednesday, "thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday}

// spokenDates finds dates in words: [weekday] month day [year] or [the] day of month [year].
func spokenDates(words []string) []Date {
	toks := strings.Fields(canon.SpokenToDigits(strings.Join(words, " ")))
	var out []Date
	var cur Date
	have := false
	flush := func() {
		if have && cur.Month > 0 && cur.Day > 0 {
			out = append(out, cur)
		}
		cur, have = Date{}, false
	}
	for _, t := range toks {
		if wd, ok := weekdayOf[t]; ok {
			if have && cur.Month > 0 && cur.Day > 0 {
				flush()
			}
			cur.Weekday, cur.HasWeekday, have = wd, true, true
			continue
		}
		if m, ok := monthOf[t]; ok {
			if have && cur.Month > 0 {
				flush()
			}
			cur.Month, have = m, true
			continue
		}
		if !isNumeral(t) {
			if t == "to" || t == "until" || t == "through" || t == "and" {
				flush()
			}
			continue
		}
		n, _ := strconv.Atoi(t)
		switch {
		case len(t) == 4 && n >= 1900 && n <= 2100 && have && cur.Day > 0:
			cur.Year = n
			flush()
		case n >= 1 && n <= 31 && cur.Day == 0:
			cur.Day, have = n, true
		}
	}
	flush()
	for i := range out {
		if out[i].Day > daysIn(out[i].Month) {
			return nil
		}
	}
	return out
}

func daysIn(m int) int { return [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[m] }

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
// ignored), preferring the longest choice.
func matchChoice(words []string, choices []string) (string, bool) {
	have := map[string]bool{}
	for _, w := range words {
		have[strings.TrimSuffix(w, "s")] = true
		have[w] = true
	}
	best, bestLen := "", 0
	for _, c := range choices {
		cw := strings.Fields(strings.ToLower(c))
		if len(cw) == 0 {
			continue
		}
		all := true
		for _, w := range cw {
			if !have[w] && !have[strings.TrimSuffix(w, "s")] {
				all = false
				break
			}
		}
		if all && len(cw) > bestLen {
			best, bestLen = c, len(cw)
		}
	}
	return best, bestLen > 0
}

// amountWords may appear inside a spoken quantity.
var amountWords = map[string]bool{"zero": true, "oh": true, "one": true, "two": true, "three": true, "four": true, "five": true,
	"six": true, "seven": true, "eight": true, "nine": true, "ten": true, "eleven": true, "twelve": true, "thirteen": true,
	"fourteen": true, "fifteen": true, "sixteen": true, "seventeen": true, "eighteen": true, "nineteen": true, "twenty": true,
	"thirty": true, "forty": true, "fifty": true, "sixty": true, "seventy": true, "eighty": true, "ninety": true,
	"hundred": true, "thousand": true, "point": true, "dollars": true, "dollar": true, "cents": true, "cent": true,
	"and": true, "percent": true, "bucks": true, "a": true}

// numberSpan returns the first run of words that can make up a spoken quantity ("their estimate
// was six hundred twelve dollars and forty cents" → six … cents), so that words around it do not
// spoil the reading.
func numberSpan(words []string) []string {
	start := -1
	for i, w := range words {
		num := amountWords[w] || isNumeral(strings.TrimPrefix(strings.ReplaceAll(w, ",", ""), "$"))
		if num && start < 0 && w != "and" && w != "a" && w != "dollars" && w != "cents" {
			start = i
		}
		if !num && start >= 0 {
			return words[start:i]
		}
	}
	if start < 0 {
		return words
	}
	return words[start:]
}
