package canon

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

var typographic = strings.NewReplacer("’", "'", "‘", "'", "“", "\"", "”", "\"", "–", "-", "—", "-")

// Fold case-folds s, unifies quotes and dashes, trims surrounding punctuation and collapses
// whitespace: the "case-folded" comparison form.
func Fold(s string) string {
	s = typographic.Replace(s)
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
}

// Date is a calendar date.
type Date struct{ Year, Month, Day int }

func (d Date) String() string { return fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day) }

// Ordinal returns a day count for interval arithmetic (days since 0000-03-01, proleptic Gregorian).
func (d Date) Ordinal() int {
	y, m := d.Year, d.Month
	if m <= 2 {
		y--
		m += 12
	}
	return 365*y + y/4 - y/100 + y/400 + (153*(m-3)+2)/5 + d.Day - 1
}

var monthNames = map[string]int{
	"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
	"may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9,
	"sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}

// ParseDate reads a written or dictated date: 1988-07-09, 07/09/1988 (US order), 9 July 1988,
// "July 9th, 1988", "the ninth of July nineteen eighty-eight". Two-digit years pivot at 30.
func ParseDate(s string) (Date, bool) {
	s = strings.TrimSpace(s)
	// ISO and numeric forms first, before spoken-number rewriting merges digit runs.
	if d, ok := numericDate(s); ok {
		return d, true
	}
	words := strings.Fields(SpokenToDigits(s))
	month := 0
	var nums []int
	for _, w := range words {
		if m, ok := monthNames[strings.TrimSuffix(w, ".")]; ok && month == 0 {
			month = m
			continue
		}
		if isDigits(w) {
			n, _ := strconv.Atoi(w)
			if len(w) == 4 && n >= 1000 {
				nums = append(nums, n)
				continue
			}
			// "nineteen eighty" followed by "eight": SpokenToDigits already merged; a lone 2- or
			// 3-digit run after a day could be a two-digit year.
			nums = append(nums, n)
		}
	}
	if month == 0 || len(nums) != 2 {
		return Date{}, false
	}
	day, year := nums[0], nums[1]
	if day > 31 && year <= 31 {
		day, year = year, day
	}
	year = pivotYear(year, len(strconv.Itoa(year)))
	return validDate(year, month, day)
}

func numericDate(s string) (Date, bool) {
	sep := -1
	for _, c := range []string{"-", "/", "."} {
		if strings.Count(s, c) == 2 {
			sep = strings.Index("-/.", c)
			break
		}
	}
	if sep < 0 {
		return Date{}, false
	}
	parts := strings.Split(s, string("-/."[sep]))
	var n [3]int
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if !isDigits(p) {
			return Date{}, false
		}
		n[i], _ = strconv.Atoi(p)
	}
	if len(strings.TrimSpace(parts[0])) == 4 {
		return validDate(n[0], n[1], n[2])
	}
	return validDate(pivotYear(n[2], len(strings.TrimSpace(parts[2]))), n[0], n[1])
}

func pivotYear(y, digits int) int {
	if digits <= 2 {
		if y < 30 {
			return 2000 + y
		}
		return 1900 + y
	}
	return y
}

var monthDays = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

func validDate(y, m, d int) (Date, bool) {
	if y < 1000 || y > 9999 || m < 1 || m > 12 || d < 1 || d > monthDays[m] {
		return Date{}, false
	}
	if m == 2 && d == 29 && !(y%4 == 0 && (y%100 != 0 || y%400 == 0)) {
		return Date{}, false
	}
	return Date{y, m, d}, true
}

// Phone returns the digits of a phone number with a leading North American country code 1 removed.
func Phone(s string) string {
	d := Digits(s)
	if len(d) == 11 && d[0] == '1' {
		d = d[1:]
	}
	return d
}

var addressWords = map[string]string{
	"street": "st", "str": "st", "avenue": "ave", "av": "ave", "road": "rd", "boulevard": "blvd",
	"drive": "dr", "lane": "ln", "court": "ct", "place": "pl", "terrace": "ter", "highway": "hwy",
	"parkway": "pkwy", "circle": "cir", "square": "sq", "trail": "trl", "way": "way",
	"apartment": "unit", "apt": "unit", "suite": "unit", "ste": "unit", "#": "unit", "number": "unit",
	"no": "unit", "flat": "unit", "unit": "unit",
	"north": "n", "south": "s", "east": "e", "west": "w", "northeast": "ne", "northwest": "nw",
	"southeast": "se", "southwest": "sw",
	"mount": "mt", "saint": "st", "fort": "ft",
}

// Address canonicalises a postal address: spoken numbers to digits, street-type and unit words to
// their USPS abbreviations, punctuation dropped, and letters of a unit joined to its number
// ("Unit 4 B" and "Apt. 4b" are both "unit 4b").
func Address(s string) string {
	s = strings.ReplaceAll(s, "#", " # ")
	words := strings.Fields(SpokenToDigits(s))
	out := make([]string, 0, len(words))
	for i, w := range words {
		if w == "," || w == "." || w == "-" {
			continue
		}
		w = strings.Trim(w, ".,")
		if a, ok := addressWords[w]; ok {
			w = a
		}
		// Join a single letter to a preceding number: "4 b" -> "4b".
		if len(w) == 1 && w[0] >= 'a' && w[0] <= 'z' && len(out) > 0 && isDigits(out[len(out)-1]) && i > 0 {
			out[len(out)-1] += w
			continue
		}
		if len(out) > 0 && out[len(out)-1] == "unit" && w == "unit" {
			continue
		}
		out = append(out, w)
	}
	return strings.Join(out, " ")
}

// Identifier canonicalises an account, policy or ticket identifier: spoken numbers to digits,
// upper case, separators removed, leading zeros of each digit run dropped. CC-4419, "c c four four
// one nine" and cc4419 are all CC4419; HVAC-007 and HVAC-7 are both HVAC7.
func Identifier(s string) string {
	var b strings.Builder
	words := strings.Fields(SpokenToDigits(s))
	for _, w := range words {
		for _, r := range w {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				b.WriteRune(unicode.ToUpper(r))
			}
		}
	}
	return stripLeadingZeros(b.String())
}

func stripLeadingZeros(s string) string {
	var b strings.Builder
	inRun := false
	pendingZero := false
	for _, r := range s {
		if r >= '0' && r <= '9' {
			if !inRun && r == '0' {
				pendingZero = true
				continue
			}
			inRun = true
			pendingZero = false
			b.WriteRune(r)
			continue
		}
		if pendingZero {
			b.WriteByte('0')
		}
		inRun, pendingZero = false, false
		b.WriteRune(r)
	}
	if pendingZero {
		b.WriteByte('0')
	}
	return b.String()
}

// TypePrefix returns the alphabetic type prefix of a written identifier that separates it from the
// rest ("JOB" of "JOB-2201"), or "".
func TypePrefix(written string) string {
	for i, r := range written {
		if unicode.IsLetter(r) {
			continue
		}
		if i > 0 && (r == '-' || r == ' ' || r == '_' || r == '/' || r == '.') {
			return strings.ToUpper(written[:i])
		}
		return ""
	}
	return ""
}
