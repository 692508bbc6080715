package canon

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Date is a calendar date as written or said. Year is 0 when the speaker did not say one;
// Weekday is set when a weekday was named with it ("Tuesday, November 24th").
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

// SameDay reports whether two dates name the same calendar day (a weekday said with one does
// not matter).
func (d Date) SameDay(e Date) bool { return d.Year == e.Year && d.Month == e.Month && d.Day == e.Day }

// Ordinal returns a day count for interval arithmetic (days since 0000-03-01, proleptic Gregorian).
func (d Date) Ordinal() int {
	y, m := d.Year, d.Month
	if m <= 2 {
		y--
		m += 12
	}
	return 365*y + y/4 - y/100 + y/400 + (153*(m-3)+2)/5 + d.Day - 1
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

var monthNames = map[string]int{
	"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
	"may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9,
	"sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}

var weekdayNames = map[string]time.Weekday{
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
}

// timeWords mark a time of day in a date-time ("July 9 1988 at 3 pm", "1988-07-09T00:00:00Z").
var timeWords = map[string]bool{":": true, "am": true, "pm": true, "o'clock": true, "noon": true, "midnight": true,
	"utc": true, "gmt": true, "z": true}

var monthDays = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// validDate checks a date; year 0 means "not said" (February 29 is then allowed).
func validDate(y, m, d int) bool {
	if m < 1 || m > 12 || d < 1 || d > monthDays[m] {
		return false
	}
	if y != 0 && (y < 1000 || y > 9999) {
		return false
	}
	if y != 0 && m == 2 && d == 29 && !(y%4 == 0 && (y%100 != 0 || y%400 == 0)) {
		return false
	}
	return true
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

// dateSpan is a date found in digitized tokens, with the tokens it covers.
type dateSpan struct {
	d          Date
	start, end int
	timed      bool // an ISO time part followed the date ("…T00:00:00Z")
}

// dayOf reads a day-of-month token (1–31).
func dayOf(w string) (int, bool) {
	if len(w) > 2 || !IsDigits(w) {
		return 0, false
	}
	n, _ := strconv.Atoi(w)
	return n, n >= 1 && n <= 31
}

// yearOf reads a year token: four digits (1900–2100 in free text, any in a whole value), or two
// digits written "'88" or, in a whole value, said alone ("nineteen eighty-eight" is already four).
func yearOf(w string, whole bool) (int, bool) {
	short := false
	if strings.HasPrefix(w, "'") {
		w, short = w[1:], true
	}
	if !IsDigits(w) {
		return 0, false
	}
	n, _ := strconv.Atoi(w)
	switch {
	case len(w) == 4 && !short:
		return n, whole || n >= 1900 && n <= 2100
	case len(w) == 2 && (short || whole):
		return pivotYear(n, 2), true
	}
	return 0, false
}

// isoDay reads the day part of an ISO date, which may carry the time ("09t00" of
// "1988-07-09T00:00:00Z").
func isoDay(w string) (day int, timed, ok bool) {
	if d, ok := dayOf(w); ok && len(w) == 2 {
		return d, false, true
	}
	if len(w) > 3 && w[2] == 't' && IsDigits(w[:2]) && w[3] >= '0' && w[3] <= '9' {
		d, ok := dayOf(w[:2])
		return d, true, ok
	}
	return 0, false, false
}

// scanDates finds every date in digitized tokens, in order: month-name dates ("July 9th, 1988",
// "the ninth of July", "Tuesday, November 24"), ISO dates and date-times (1988-07-09,
// 1988-07-09T00:00:00Z, 2026/12/18) and US numeric dates (07/09/1988, 7-9-88; a first part
// above 12 is the day). whole says the text is one value, which allows a two-digit year said
// after a month-name date.
func scanDates(toks []string, whole bool) []dateSpan {
	var out []dateSpan
	for i := 0; i < len(toks); i++ {
		if sp, ok := numericDateAt(toks, i); ok {
			out = append(out, sp)
			i = sp.end - 1
			continue
		}
		m, ok := monthNames[toks[i]]
		if !ok {
			continue
		}
		sp := dateSpan{start: i}
		day := 0
		j := i + 1
		if j < len(toks) && toks[j] == "." {
			j++ // "Dec. 5"
		}
		k := j
		if k < len(toks) && toks[k] == "the" {
			k++
		}
		if k < len(toks) {
			if d, ok := dayOf(toks[k]); ok {
				day, j = d, k+1
			}
		}
		if day == 0 {
			// The day before the month: "9 July", "the ninth of July".
			k = i - 1
			if k >= 0 && toks[k] == "of" {
				k--
			}
			if k >= 0 && (len(out) == 0 || out[len(out)-1].end <= k) {
				if d, ok := dayOf(toks[k]); ok {
					day, sp.start = d, k
					if k > 0 && toks[k-1] == "the" {
						sp.start = k - 1
					}
				}
			}
		}
		if day == 0 {
			continue
		}
		year := 0
		y := j
		if y < len(toks) && toks[y] == "," {
			y++
		}
		if y < len(toks) {
			if n, ok := yearOf(toks[y], whole); ok {
				year, j = n, y+1
			}
		}
		if !validDate(year, m, day) {
			continue
		}
		sp.d = Date{Year: year, Month: m, Day: day}
		// A weekday named before the date: "Tuesday, November 24".
		k = sp.start - 1
		if k >= 0 && toks[k] == "," {
			k--
		}
		if k >= 0 && (len(out) == 0 || out[len(out)-1].end <= k) {
			if wd, ok := weekdayNames[toks[k]]; ok {
				sp.d.Weekday, sp.d.HasWeekday, sp.start = wd, true, k
			}
		}
		sp.end = j
		out = append(out, sp)
		i = j - 1
	}
	return out
}

// numericDateAt reads an ISO or US numeric date at toks[i].
func numericDateAt(toks []string, i int) (dateSpan, bool) {
	if i+4 >= len(toks) || !IsDigits(toks[i]) || !IsDigits(toks[i+2]) {
		return dateSpan{}, false
	}
	sep := toks[i+1]
	if (sep != "-" && sep != "/" && sep != ".") || toks[i+3] != sep || len(toks[i+2]) > 2 {
		return dateSpan{}, false
	}
	a, _ := strconv.Atoi(toks[i])
	b, _ := strconv.Atoi(toks[i+2])
	if len(toks[i]) == 4 {
		day, timed, ok := isoDay(toks[i+4])
		if !ok && len(toks[i+4]) == 1 {
			day, ok = dayOf(toks[i+4])
		}
		if !ok || !validDate(a, b, day) {
			return dateSpan{}, false
		}
		return dateSpan{d: Date{Year: a, Month: b, Day: day}, start: i, end: i + 5, timed: timed}, true
	}
	last := toks[i+4]
	if len(toks[i]) > 2 || !IsDigits(last) || (len(last) != 2 && len(last) != 4) {
		return dateSpan{}, false
	}
	y, _ := strconv.Atoi(last)
	y = pivotYear(y, len(last))
	m, d := a, b
	if m > 12 && d <= 12 {
		m, d = d, m // 18/12/2026 can only be the 18th of December
	}
	if !validDate(y, m, d) {
		return dateSpan{}, false
	}
	return dateSpan{d: Date{Year: y, Month: m, Day: d}, start: i, end: i + 5}, true
}

// ParseDate reads a written or dictated date that is the whole value: 1988-07-09,
// 1988-07-09T00:00:00Z, 07/09/1988 (US order), 9 July 1988, "July 9th, 1988", "the ninth of July
// nineteen eighty-eight", "Tuesday, November twenty-fourth, twenty twenty-six". A time of day may
// follow ("at 3 pm"); any other number, a second date or a missing year is no reading. Two-digit
// years pivot at 30.
func ParseDate(s string) (Date, bool) {
	if d, ok := isoDate(s); ok {
		return d, true
	}
	toks := digitize(tokens(s), nil)
	spans := scanDates(toks, true)
	if len(spans) != 1 || spans[0].d.Year == 0 {
		return Date{}, false
	}
	if !spans[0].timed && !timeOfDayOnly(toks, spans[0]) {
		return Date{}, false
	}
	d := spans[0].d
	d.Weekday, d.HasWeekday = 0, false
	return d, true
}

// isoDate reads a plain YYYY-MM-DD, the common recorded form, without tokenizing.
func isoDate(s string) (Date, bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return Date{}, false
	}
	n := func(a, b int) (int, bool) {
		v := 0
		for i := a; i < b; i++ {
			if s[i] < '0' || s[i] > '9' {
				return 0, false
			}
			v = v*10 + int(s[i]-'0')
		}
		return v, true
	}
	y, ok1 := n(0, 4)
	m, ok2 := n(5, 7)
	d, ok3 := n(8, 10)
	if !ok1 || !ok2 || !ok3 || !validDate(y, m, d) || y == 0 {
		return Date{}, false
	}
	return Date{Year: y, Month: m, Day: d}, true
}

// timeOfDayOnly reports whether the tokens outside the date hold no number, or hold a time of day.
func timeOfDayOnly(toks []string, sp dateSpan) bool {
	numbers, timed := false, false
	for i, w := range toks {
		if i >= sp.start && i < sp.end {
			continue
		}
		if timeWords[w] {
			timed = true
		}
		if isNumeral(w) {
			numbers = true
		}
	}
	return !numbers || timed
}

// FindDates returns the dates said in a free text, in order; a date without a year has Year 0.
func FindDates(s string) []Date {
	spans := scanDates(digitize(tokens(s), nil), false)
	out := make([]Date, len(spans))
	for i, sp := range spans {
		out[i] = sp.d
	}
	return out
}
