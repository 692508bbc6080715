package stats

import (
	"fmt"
	"math"
	"testing"
)

// matrixRatings turns a raters × units reliability data matrix (the layout of Krippendorff's
// papers) into long-format ratings; "" is a missing rating. Units are named u1.., raters r1...
func matrixRatings(tb testing.TB, m [][]string) []Rating {
	tb.Helper()
	var out []Rating
	for u := range m[0] {
		for r, row := range m {
			if len(row) != len(m[0]) {
				tb.Fatalf("row %d has %d units, want %d", r, len(row), len(m[0]))
			}
			if row[u] != "" {
				out = append(out, Rating{Unit: fmt.Sprintf("u%d", u+1), Rater: fmt.Sprintf("r%d", r+1), Value: row[u]})
			}
		}
	}
	return out
}

// subjectRatings turns a subjects × raters matrix (the layout of R irr) into long-format ratings.
func subjectRatings(m [][]int) []Rating {
	var out []Rating
	for s, row := range m {
		for r, v := range row {
			out = append(out, Rating{Unit: fmt.Sprintf("s%d", s+1), Rater: fmt.Sprintf("r%d", r+1), Value: fmt.Sprint(v)})
		}
	}
	return out
}

// near reports whether got equals want to the given number of decimals (|got−want| < 0.5·10^-d),
// the way published values rounded to d decimals are compared.
func near(got, want float64, decimals int) bool {
	return math.Abs(got-want) < 0.5*math.Pow(10, -float64(decimals))
}

func assertNear(tb testing.TB, name string, got, want float64, decimals int) {
	tb.Helper()
	if !near(got, want, decimals) {
		tb.Errorf("%s = %.7f, want %.*f", name, got, decimals, want)
	}
}
