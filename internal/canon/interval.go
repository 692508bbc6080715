package canon

import "strings"

// Interval is a closed range of dates (as day numbers, the end day included: Hi is the day after
// the last) or of numbers.
type Interval struct {
	Lo, Hi float64
	Dates  bool
}

// intervalSeparators split "A to B", in order of preference; "and" only after "between".
var intervalSeparators = []string{"to", "through", "thru", "until", "till", "and", "-", "/"}

// ParseInterval reads a dictated or written range: "from December 18th 2026 to January 2nd 2027",
// "between 12/18/2026 and 1/2/2027", "2026-12-18/2027-01-02" (ISO), "December 18 through 22",
// "December 18 to January 2 2027" (a year said once counts for both ends), "20 to 30",
// "between 20 and 30", "20-30".
func ParseInterval(s string) (Interval, bool) {
	toks := digitize(tokens(s), nil)
	spans := scanDates(toks, false)
	switch len(spans) {
	case 2:
		if !numbersOnlyIn(toks, spans) {
			return Interval{}, false
		}
		a, b := spans[0].d, spans[1].d
		switch {
		case a.Year == 0 && b.Year == 0:
			return Interval{}, false
		case a.Year == 0:
			a.Year = b.Year
			if a.Month > b.Month || a.Month == b.Month && a.Day > b.Day {
				a.Year--
			}
		case b.Year == 0:
			b.Year = a.Year
			if b.Month < a.Month || b.Month == a.Month && b.Day < a.Day {
				b.Year++
			}
		}
		if !validDate(a.Year, a.Month, a.Day) || !validDate(b.Year, b.Month, b.Day) {
			return Interval{}, false
		}
		return DateInterval(a, b), true
	case 1:
		// "December 18 through 22" or "December 7 through 11, 2026": the second end is a day of
		// the same month, and a year said last counts for both.
		a := spans[0].d
		rest := toks[spans[0].end:]
		if len(rest) < 2 || !isSeparator(rest[0]) {
			return Interval{}, false
		}
		k := 1
		if rest[k] == "the" {
			k++
		}
		if k >= len(rest) {
			return Interval{}, false
		}
		d, ok := dayOf(rest[k])
		if !ok {
			return Interval{}, false
		}
		k++
		if k < len(rest) && rest[k] == "," {
			k++
		}
		if k < len(rest) && a.Year == 0 {
			if y, ok := yearOf(rest[k], false); ok {
				a.Year = y
				k++
			}
		}
		if k != len(rest) && !(k == len(rest)-1 && !isNumeral(rest[k])) {
			return Interval{}, false
		}
		if a.Year == 0 || !validDate(a.Year, a.Month, a.Day) || !validDate(a.Year, a.Month, d) {
			return Interval{}, false
		}
		return DateInterval(a, Date{Year: a.Year, Month: a.Month, Day: d}), true
	case 0:
		between := false
		for _, w := range toks {
			if w == "between" {
				between = true
			}
		}
		for _, sep := range intervalSeparators {
			if sep == "and" && !between {
				continue
			}
			for k, w := range toks {
				if w != sep || k == 0 || k == len(toks)-1 {
					continue
				}
				x, ok1 := Number(strings.Join(dropLead(toks[:k]), " "))
				y, ok2 := Number(strings.Join(toks[k+1:], " "))
				if ok1 && ok2 {
					return Interval{Lo: min(x, y), Hi: max(x, y)}, true
				}
			}
		}
	}
	return Interval{}, false
}

// Endpoints reads an interval given as its two ends (a JSON [start, end] or {start, end}).
func Endpoints(a, b string) (Interval, bool) {
	if da, ok := ParseDate(a); ok {
		db, ok := ParseDate(b)
		if !ok {
			return Interval{}, false
		}
		return DateInterval(da, db), true
	}
	x, ok1 := Number(a)
	y, ok2 := Number(b)
	if !ok1 || !ok2 {
		return Interval{}, false
	}
	return Interval{Lo: min(x, y), Hi: max(x, y)}, true
}

// DateInterval is the range of days from a to b, both included, in either order.
func DateInterval(a, b Date) Interval {
	x, y := float64(a.Ordinal()), float64(b.Ordinal())
	return Interval{Lo: min(x, y), Hi: max(x, y) + 1, Dates: true}
}

func isSeparator(w string) bool {
	for _, s := range intervalSeparators {
		if w == s && w != "/" {
			return true
		}
	}
	return false
}

// dropLead removes "from" and "between" before the first end.
func dropLead(ws []string) []string {
	for len(ws) > 0 && (ws[0] == "from" || ws[0] == "between") {
		ws = ws[1:]
	}
	return ws
}

// numbersOnlyIn reports whether no number is said outside the two dates of an interval, but for
// times of day ("2026-12-18T00:00:00Z/…", "from 9 am on December 18 …").
func numbersOnlyIn(toks []string, spans []dateSpan) bool {
	numbers, timed := false, false
	for _, sp := range spans {
		timed = timed || sp.timed
	}
	for i, w := range toks {
		in := false
		for _, sp := range spans {
			if i >= sp.start && i < sp.end {
				in = true
			}
		}
		if in {
			continue
		}
		timed = timed || timeWords[w]
		numbers = numbers || isNumeral(w)
	}
	return !numbers || timed
}
