package report

import (
	"math"
	"strconv"
)

// Num is a number of the report. It encodes as JSON null when it is NaN (an undefined statistic),
// and always with the shortest exact representation, so reports are byte-identical across runs.
type Num float64

// NaN is the undefined number.
func NaN() Num { return Num(math.NaN()) }

// IsNaN reports whether n is undefined.
func (n Num) IsNaN() bool { return math.IsNaN(float64(n)) }

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, round(f, 10), 'g', -1, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler (null is NaN), so a report.json can be read back.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = NaN()
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	*n = Num(f)
	return err
}

// round keeps d significant decimals: it hides the last-bit noise of float arithmetic, which can
// differ between machines (fused multiply-add), from the files the report writes.
func round(f float64, d int) float64 {
	if f == 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return f
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(f, 'g', d, 64), 64)
	if err != nil {
		return f
	}
	return r
}

// csv formats n for a CSV cell: empty when undefined.
func (n Num) csv() string {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return ""
	}
	return strconv.FormatFloat(round(f, 10), 'g', -1, 64)
}

// fixed formats n with d decimals for a table cell; "–" (n/a) when undefined.
func (n Num) fixed(d int) string {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "n/a"
	}
	s := strconv.FormatFloat(f, 'f', d, 64)
	if s[0] == '-' && isZero(s[1:]) {
		s = s[1:] // no "-0.000"
	}
	return s
}

// signed formats n with an explicit sign, for deltas.
func (n Num) signed(d int) string {
	s := n.fixed(d)
	if s == "n/a" || s[0] == '-' || isZero(s) {
		return s
	}
	return "+" + s
}

func isZero(s string) bool {
	for _, c := range s {
		if c != '0' && c != '.' {
			return false
		}
	}
	return true
}
