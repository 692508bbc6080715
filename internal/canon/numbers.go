// Package canon canonicalises values that were dictated aloud: spoken numbers and digit strings,
// dates, phone numbers, addresses and identifiers. The grader, the workspace's lookups and the flow
// engine all compare values through it, so "July ninth 1988" and 1988-07-09 are the same date
// everywhere.
package canon

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

var unitWords = map[string]int{
	"zero": 0, "oh": 0, "o": 0, "nought": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
	"six": 6, "seven": 7, "eight": 8, "nine": 9,
}

var teenWords = map[string]int{
	"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
	"sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}

var tensWords = map[string]int{
	"twenty": 20, "thirty": 30, "forty": 40, "fourty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
	"eighty": 80, "ninety": 90,
}

var ordinalWords = map[string]int{
	"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
	"eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13,
	"fourteenth": 14, "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18,
	"nineteenth": 19, "twentieth": 20, "thirtieth": 30,
}

// tokens splits text into lowercase words and single punctuation marks; hyphens between letters
// split words ("eighty-eight"). Tokens are substrings of one lowered copy, so splitting allocates
// little: this runs for every graded field.
func tokens(s string) []string {
	s = strings.ToLower(s)
	out := make([]string, 0, 8)
	start := -1
	for i, r := range s {
		word := unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\''
		if word {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, s[start:i])
			start = -1
		}
		if !unicode.IsSpace(r) {
			out = append(out, s[i:i+utf8.RuneLen(r)])
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// numberGroup parses one cardinal group ("forty two", "one hundred and twelve", "two thousand
// five") starting at toks[i] and returns its value and how many tokens it used (0 when toks[i] is
// not a number word). A unit or teen after a complete value starts a new group, which is how
// digit-by-digit dictation ("five five five") and paired years ("nineteen eighty") split.
func numberGroup(toks []string, i int) (val int, n int) {
	const (
		none = iota
		unit
		teen
		tens
		hundred
		thousand
	)
	start := i
	total, cur, last := 0, 0, none
	for i < len(toks) {
		w := toks[i]
		if w == "-" && last == tens && i+1 < len(toks) {
			if _, ok := unitWords[toks[i+1]]; ok {
				i++
				continue
			}
		}
		if w == "and" && (last == hundred || last == thousand) && nextIsNumberWord(toks, i+1) {
			i++
			continue
		}
		if u, ok := unitWords[w]; ok {
			if (w == "o" || w == "oh") && last == none && !nextIsNumberWord(toks, i+1) && !prevIsNumber(toks, start) {
				break
			}
			if last == unit || last == teen {
				break
			}
			cur += u
			last = unit
			i++
			continue
		}
		if t, ok := teenWords[w]; ok {
			if last != none && last != hundred && last != thousand {
				break
			}
			cur += t
			last = teen
			i++
			continue
		}
		if t, ok := tensWords[w]; ok {
			if last != none && last != hundred && last != thousand {
				break
			}
			cur += t
			last = tens
			i++
			continue
		}
		if w == "hundred" && (last == unit || last == teen) && cur < 100 {
			cur *= 100
			last = hundred
			i++
			continue
		}
		if w == "thousand" && last != none && last != thousand && total == 0 {
			total = cur * 1000
			cur = 0
			last = thousand
			i++
			continue
		}
		break
	}
	return total + cur, i - start
}

func nextIsNumberWord(toks []string, i int) bool {
	if i >= len(toks) {
		return false
	}
	w := toks[i]
	_, u := unitWords[w]
	_, t := teenWords[w]
	_, tt := tensWords[w]
	return (u && w != "o") || t || tt || isDigits(w)
}

func prevIsNumber(toks []string, i int) bool {
	if i == 0 {
		return false
	}
	w := toks[i-1]
	_, u := unitWords[w]
	_, t := teenWords[w]
	_, tt := tensWords[w]
	return u || t || tt || isDigits(w)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// SpokenToDigits rewrites runs of number words as digit strings and keeps every other token, so
// "five five five, one two three four" becomes "555 , 1234", "nineteen eighty-eight" becomes
// "1988", "double five" becomes "55" and "forty two Birch Lane" becomes "42 birch lane". Ordinal
// words become digits too ("ninth" → "9"). The result is lowercase and space-separated.
func SpokenToDigits(s string) string {
	toks := tokens(s)
	out := make([]string, 0, len(toks))
	for i := 0; i < len(toks); {
		w := toks[i]
		if o, ok := ordinalOf(toks, i); ok {
			out = append(out, strconv.Itoa(o.val))
			i += o.n
			continue
		}
		if (w == "double" || w == "triple") && i+1 < len(toks) {
			if u, ok := unitWords[toks[i+1]]; ok {
				rep := 2
				if w == "triple" {
					rep = 3
				}
				out = appendDigits(out, strings.Repeat(strconv.Itoa(u), rep), i > 0 && isRunEnd(toks, i-1))
				i += 2
				continue
			}
		}
		v, n := numberGroup(toks, i)
		if n == 0 {
			out = append(out, w)
			i++
			continue
		}
		out = appendDigits(out, strconv.Itoa(v), i > 0 && isRunEnd(toks, i-1))
		i += n
	}
	return strings.Join(out, " ")
}

// isRunEnd reports whether toks[i] was part of a number-word run, so the next group concatenates.
func isRunEnd(toks []string, i int) bool {
	w := toks[i]
	_, u := unitWords[w]
	_, t := teenWords[w]
	_, tt := tensWords[w]
	return u || t || tt || w == "hundred" || w == "thousand"
}

func appendDigits(out []string, d string, concat bool) []string {
	if concat && len(out) > 0 && isDigits(out[len(out)-1]) {
		out[len(out)-1] += d
		return out
	}
	return append(out, d)
}

type ordinal struct{ val, n int }

// ordinalOf parses "ninth", "twenty-ninth", "twenty ninth", "9th" at toks[i].
func ordinalOf(toks []string, i int) (ordinal, bool) {
	w := toks[i]
	if o, ok := ordinalWords[w]; ok {
		return ordinal{o, 1}, true
	}
	if t, ok := tensWords[w]; ok && i+1 < len(toks) {
		j := i + 1
		if toks[j] == "-" && j+1 < len(toks) {
			j++
		}
		if o, ok := ordinalWords[toks[j]]; ok && o < 10 {
			return ordinal{t + o, j - i + 1}, true
		}
	}
	if len(w) > 2 && isDigits(w[:len(w)-2]) {
		switch w[len(w)-2:] {
		case "st", "nd", "rd", "th":
			v, _ := strconv.Atoi(w[:len(w)-2])
			return ordinal{v, 1}, true
		}
	}
	return ordinal{}, false
}

// Digits returns only the digits of s after spoken numbers are converted.
func Digits(s string) string {
	var b strings.Builder
	for _, r := range SpokenToDigits(s) {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

var hedgeWords = map[string]bool{
	"about": true, "around": true, "approximately": true, "roughly": true, "like": true, "maybe": true,
	"say": true, "circa": true, "some": true, "nearly": true, "almost": true, "~": true, "approx": true,
	"just": true, "under": true, "over": true, "and": true, "a": true, "an": true, "it's": true, "its": true,
	"is": true, "uh": true, "um": true,
}

var currencyMarks = strings.NewReplacer("$", " ", "€", " ", "£", " ", "%", " ")

// Number parses a dictated quantity: "about 20", "twenty", "$1,284.17", "one thousand two hundred
// eighty four dollars and seventeen cents", "12.5%", "two point five". Hedges and units are ignored.
func Number(s string) (float64, bool) {
	s = strings.ReplaceAll(strings.TrimSpace(s), ",", "")
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f, true
	}
	s = currencyMarks.Replace(s)
	// "two point five" and "12.5": join a point between digit runs.
	words := strings.Fields(SpokenToDigits(strings.ReplaceAll(s, ".", " point ")))
	var nums []string
	cents := ""
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case isDigits(w):
			if i >= 2 && words[i-1] == "point" && len(nums) > 0 && !strings.Contains(nums[len(nums)-1], ".") {
				nums[len(nums)-1] += "." + w
				continue
			}
			if i+1 < len(words) && (words[i+1] == "cents" || words[i+1] == "cent") && len(nums) > 0 {
				cents = w
				continue
			}
			nums = append(nums, w)
		case w == "point" || hedgeWords[w] || w == "dollars" || w == "dollar" || w == "bucks" ||
			w == "percent" || w == "cents" || w == "cent" || w == "usd" || w == "euros" || w == "-" || w == "minutes" ||
			w == "hours" || w == "days" || w == "miles" || w == "per" || w == "month" || w == "year":
		default:
			if unicode.IsPunct([]rune(w)[0]) {
				continue
			}
			return 0, false
		}
	}
	if len(nums) != 1 {
		return 0, false
	}
	f, err := strconv.ParseFloat(nums[0], 64)
	if err != nil {
		return 0, false
	}
	if cents != "" {
		c, _ := strconv.ParseFloat(cents, 64)
		f += c / 100
	}
	return f, true
}
