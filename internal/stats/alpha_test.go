package stats

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// krippendorff2011 is the reliability data matrix of Krippendorff, K. (2011), "Computing
// Krippendorff's Alpha-Reliability", section C ("Interval data ... with missing values"): four
// observers A–D, twelve units, missing values blank. The same matrix is in the test suite of the
// `krippendorff` Python package (pln-fing-udelar/fast-krippendorff, tests/test_krippendorff.py).
var krippendorff2011 = [][]string{
	{"1", "2", "3", "3", "2", "1", "4", "1", "2", "", "", ""},
	{"1", "2", "3", "3", "2", "2", "4", "1", "2", "5", "", "3"},
	{"", "3", "3", "3", "2", "3", "4", "2", "2", "5", "1", ""},
	{"1", "2", "3", "3", "2", "4", "4", "1", "2", "5", "1", ""},
}

// wikipediaAlpha is the "computational example" of the Wikipedia article on Krippendorff's alpha:
// three coders, fifteen units; its nominal (0.691358) and interval (0.810845) alphas are checked
// to six decimals by the `krippendorff` Python package's tests.
var wikipediaAlpha = [][]string{
	{"", "", "", "", "", "3", "4", "1", "2", "1", "1", "3", "3", "", "3"},
	{"1", "", "2", "1", "3", "3", "4", "3", "", "", "", "", "", "", ""},
	{"", "", "2", "1", "3", "4", "4", "", "2", "1", "1", "3", "3", "", "4"},
}

func TestAlphaMatchesPublishedValues(t *testing.T) {
	cases := []struct {
		name     string
		data     [][]string
		level    Level
		want     float64
		decimals int
		units    int
		values   int
	}{
		// Krippendorff (2011): nominal α = .743, ordinal .815, interval .849, ratio .797; 11
		// pairable units (unit 12 has one value) holding n = 40 pairable values.
		{"krippendorff2011 nominal is 0.743", krippendorff2011, LevelNominal, 0.743, 3, 11, 40},
		{"krippendorff2011 ordinal is 0.815", krippendorff2011, LevelOrdinal, 0.815, 3, 11, 40},
		{"krippendorff2011 interval is 0.849", krippendorff2011, LevelInterval, 0.849, 3, 11, 40},
		{"krippendorff2011 ratio is 0.797", krippendorff2011, LevelRatio, 0.797, 3, 11, 40},
		// Wikipedia example, values from the krippendorff package's tests.
		{"wikipedia nominal is 0.691358", wikipediaAlpha, LevelNominal, 0.691358, 6, 12, 26},
		{"wikipedia interval is 0.810845", wikipediaAlpha, LevelInterval, 0.810845, 6, 12, 26},
		// krippendorff package test_string_labels_nominal: labels, not numbers.
		{"string labels nominal is 0.722222", [][]string{
			{"pos", "neg", "neu", ""},
			{"pos", "neg", "neu", "pos"},
			{"pos", "neg", "pos", "pos"},
		}, LevelNominal, 0.722222, 6, 4, 11},
		// krippendorff package test_ratio_metric_with_zeros: 0 paired with 0 is no disagreement.
		{"ratio with zeros is 1", [][]string{{"0", "1", "2"}, {"0", "1", "2"}}, LevelRatio, 1, 9, 3, 6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Alpha(matrixRatings(t, tc.data), tc.level)
			if err != nil {
				t.Fatal(err)
			}
			assertNear(t, "alpha", res.Alpha, tc.want, tc.decimals)
			if res.Units != tc.units || res.PairableValues != tc.values {
				t.Errorf("units, pairable values = %d, %d; want %d, %d", res.Units, res.PairableValues, tc.units, tc.values)
			}
			if got := 1 - res.ObservedDisagreement/res.ExpectedDisagreement; math.Abs(got-res.Alpha) > 1e-12 {
				t.Errorf("alpha %v is not 1 - D_o/D_e = %v", res.Alpha, got)
			}
		})
	}
}

func TestAlphaKrippendorff2011Details(t *testing.T) {
	// By hand from the matrix: off-diagonal coincidences come from unit 2 (2), unit 6 (4) and
	// unit 8 (2), so D_o = 8/40; unit 12 is dropped for its lone value; values 1..5 occur.
	res, err := Alpha(matrixRatings(t, krippendorff2011), LevelNominal)
	if err != nil {
		t.Fatal(err)
	}
	assertNear(t, "D_o", res.ObservedDisagreement, 0.2, 9)
	if res.DroppedUnits != 1 || res.Values != 5 || res.Note != "" {
		t.Errorf("dropped %d, values %d, note %q; want 1, 5, no note", res.DroppedUnits, res.Values, res.Note)
	}
}

func TestAlphaEdgeCases(t *testing.T) {
	t.Run("one value everywhere is undefined, not 1", func(t *testing.T) {
		res, err := Alpha(matrixRatings(t, [][]string{{"2", "2", "2"}, {"2", "2", "2"}, {"2", "", "2"}}), LevelOrdinal)
		if err != nil {
			t.Fatal(err)
		}
		if !math.IsNaN(res.Alpha) || res.ExpectedDisagreement != 0 || res.ObservedDisagreement != 0 {
			t.Errorf("alpha %v, D_o %v, D_e %v; want NaN, 0, 0", res.Alpha, res.ObservedDisagreement, res.ExpectedDisagreement)
		}
		if !strings.Contains(res.Note, "undefined") || !strings.Contains(res.Note, `"2"`) {
			t.Errorf("note %q does not say alpha is undefined because every value is 2", res.Note)
		}
	})
	t.Run("perfect agreement with variation is 1", func(t *testing.T) {
		// krippendorff package test_perfect_agreement.
		data := [][]string{{"1", "2", "3", "4"}, {"1", "2", "3", "4"}, {"1", "2", "3", "4"}}
		for _, level := range []Level{LevelNominal, LevelOrdinal, LevelInterval, LevelRatio} {
			res, err := Alpha(matrixRatings(t, data), level)
			if err != nil {
				t.Fatal(err)
			}
			if res.Alpha != 1 || res.ExpectedDisagreement <= 0 || !strings.Contains(res.Note, "perfect agreement") {
				t.Errorf("%v: alpha %v, D_e %v, note %q; want exactly 1 with D_e > 0 and a note", level, res.Alpha, res.ExpectedDisagreement, res.Note)
			}
		}
	})
	t.Run("one unit gives alpha 0 with a caution", func(t *testing.T) {
		// With one unit the coincidences equal their chance expectation, so D_o = D_e.
		res, err := Alpha([]Rating{{Unit: "u", Rater: "a", Value: "1"}, {Unit: "u", Rater: "b", Value: "1"}, {Unit: "u", Rater: "c", Value: "3"}}, LevelInterval)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(res.Alpha) > 1e-12 || res.Units != 1 || !strings.Contains(res.Note, "one pairable unit") {
			t.Errorf("alpha %v, units %d, note %q; want 0, 1, a caution", res.Alpha, res.Units, res.Note)
		}
	})
	t.Run("only single ratings is ErrNoPairable", func(t *testing.T) {
		_, err := Alpha([]Rating{{Unit: "u1", Rater: "a", Value: "1"}, {Unit: "u2", Rater: "a", Value: "2"}}, LevelNominal)
		if !errors.Is(err, ErrNoPairable) {
			t.Errorf("err = %v, want ErrNoPairable", err)
		}
	})
	t.Run("no ratings is ErrNoData", func(t *testing.T) {
		if _, err := Alpha(nil, LevelNominal); !errors.Is(err, ErrNoData) {
			t.Errorf("err = %v, want ErrNoData", err)
		}
	})
	for _, level := range []Level{LevelInterval, LevelRatio} {
		t.Run("non-numeric "+level.String()+" value names value and line", func(t *testing.T) {
			rs := []Rating{{Unit: "u1", Rater: "a", Value: "1", Line: 2}, {Unit: "u1", Rater: "b", Value: "high", Line: 3}}
			_, err := Alpha(rs, level)
			if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), `"high"`) || !strings.Contains(err.Error(), `line 3, column "value"`) {
				t.Errorf("err = %v, want ErrInvalidValue naming \"high\" and line 3", err)
			}
		})
	}
	t.Run("one inexact decimal everywhere is still undefined", func(t *testing.T) {
		// 3·0.1/3 ≠ 0.1 in floating point; a closed-form D_e must not turn that into alpha = 1.
		res, err := Alpha(matrixRatings(t, [][]string{{"0.1", "0.1"}, {"0.1", "0.1"}, {"0.1", "0.1"}}), LevelInterval)
		if err != nil {
			t.Fatal(err)
		}
		if !math.IsNaN(res.Alpha) {
			t.Errorf("alpha = %v, want NaN", res.Alpha)
		}
	})
	t.Run("non-numeric ordinal value is an error too", func(t *testing.T) {
		_, err := Alpha([]Rating{{Unit: "u1", Rater: "a", Value: "1"}, {Unit: "u1", Rater: "b", Value: "x"}}, LevelOrdinal)
		if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), `unit "u1" rater "b"`) {
			t.Errorf("err = %v, want ErrInvalidValue naming unit and rater", err)
		}
	})
	t.Run("negative ratio value is an error", func(t *testing.T) {
		_, err := Alpha([]Rating{{Unit: "u1", Rater: "a", Value: "1"}, {Unit: "u1", Rater: "b", Value: "-2", Line: 7}}, LevelRatio)
		if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), "line 7") {
			t.Errorf("err = %v, want ErrInvalidValue at line 7", err)
		}
	})
	t.Run("a rater rating a unit twice is ErrDuplicate", func(t *testing.T) {
		_, err := Alpha([]Rating{{Unit: "u1", Rater: "a", Value: "1", Line: 2}, {Unit: "u1", Rater: "a", Value: "2", Line: 5}}, LevelNominal)
		if !errors.Is(err, ErrDuplicate) || !strings.Contains(err.Error(), "line 5") || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("err = %v, want ErrDuplicate naming lines 5 and 2", err)
		}
	})
	t.Run("numeric levels identify 1 and 1.0", func(t *testing.T) {
		res, err := Alpha(matrixRatings(t, [][]string{{"1", "2"}, {"1.0", "2"}}), LevelInterval)
		if err != nil {
			t.Fatal(err)
		}
		if res.Alpha != 1 || res.Values != 2 {
			t.Errorf("alpha %v with %d values, want 1 with 2", res.Alpha, res.Values)
		}
	})
}

// pairwiseAlpha computes alpha without a coincidence matrix, straight from its definition as
// 1 − D_o/D_e over all pairs of pairable values: within-unit pairs weighted 1/(m_u − 1) for D_o,
// all pairs across the data for D_e. The ordinal difference is computed from value frequencies.
// It is the independent check for the coincidence-matrix implementation.
func pairwiseAlpha(units [][]float64, level Level) float64 {
	var all []float64
	for _, u := range units {
		if len(u) > 1 {
			all = append(all, u...)
		}
	}
	freq := map[float64]float64{}
	for _, v := range all {
		freq[v]++
	}
	diff := func(a, b float64) float64 {
		switch level {
		case LevelNominal:
			if a == b {
				return 0
			}
			return 1
		case LevelInterval:
			return (a - b) * (a - b)
		case LevelRatio:
			if a+b == 0 {
				return 0
			}
			return ((a - b) / (a + b)) * ((a - b) / (a + b))
		default:
			lo, hi := min(a, b), max(a, b)
			s := 0.0
			for v, f := range freq {
				if v >= lo && v <= hi {
					s += f
				}
			}
			x := s - (freq[a]+freq[b])/2
			return x * x
		}
	}
	n := float64(len(all))
	do := 0.0
	for _, u := range units {
		if len(u) < 2 {
			continue
		}
		for i := range u {
			for j := range u {
				if i != j {
					do += diff(u[i], u[j]) / float64(len(u)-1)
				}
			}
		}
	}
	do /= n
	de := 0.0
	for i := range all {
		for j := range all {
			if i != j {
				de += diff(all[i], all[j])
			}
		}
	}
	de /= n * (n - 1)
	return 1 - do/de
}

func TestAlphaAgreesWithPairwiseDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 40 {
		nUnits := 1 + rng.IntN(12)
		var units [][]float64
		var rs []Rating
		for u := range nUnits {
			var vals []float64
			for r := range 1 + rng.IntN(4) {
				v := float64(rng.IntN(5)) // 0..4: ratio sees a true zero
				vals = append(vals, v)
				rs = append(rs, Rating{Unit: fmt.Sprint(u), Rater: fmt.Sprint(r), Value: strconv.FormatFloat(v, 'g', -1, 64)})
			}
			units = append(units, vals)
		}
		for _, level := range []Level{LevelNominal, LevelOrdinal, LevelInterval, LevelRatio} {
			want := pairwiseAlpha(units, level)
			got, err := Alpha(rs, level)
			if errors.Is(err, ErrNoPairable) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if math.IsNaN(want) != math.IsNaN(got.Alpha) || (!math.IsNaN(want) && math.Abs(want-got.Alpha) > 1e-9) {
				t.Errorf("trial %d %v: alpha %v, pairwise definition %v", trial, level, got.Alpha, want)
			}
		}
	}
}

func TestAlphaOnContinuousDataUsesLinearMemory(t *testing.T) {
	// 1500 units × 2 raters of distinct real values: a V×V coincidence matrix would hold 9·10⁶
	// cells; the result must still match the pairwise definition.
	rng := rand.New(rand.NewPCG(5, 6))
	var units [][]float64
	var rs []Rating
	for u := range 1500 {
		truth := rng.NormFloat64() * 10
		a, b := truth+rng.NormFloat64(), truth+rng.NormFloat64()
		units = append(units, []float64{a, b})
		rs = append(rs, Rating{Unit: fmt.Sprint(u), Rater: "a", Value: strconv.FormatFloat(a, 'g', -1, 64)},
			Rating{Unit: fmt.Sprint(u), Rater: "b", Value: strconv.FormatFloat(b, 'g', -1, 64)})
	}
	for _, level := range []Level{LevelInterval, LevelRatio} {
		if level == LevelRatio {
			for i := range rs {
				v, _ := strconv.ParseFloat(rs[i].Value, 64)
				rs[i].Value = strconv.FormatFloat(math.Abs(v), 'g', -1, 64)
			}
			for _, u := range units {
				u[0], u[1] = math.Abs(u[0]), math.Abs(u[1])
			}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		d, err := NewReliabilityData(rs, level)
		if err != nil {
			t.Fatal(err)
		}
		got := d.Alpha()
		runtime.ReadMemStats(&after)
		if mb := float64(after.TotalAlloc-before.TotalAlloc) / (1 << 20); mb > 8 {
			t.Errorf("%v: preparing and computing alpha allocated %.1f MB; a coincidence matrix would be 69 MB", level, mb)
		}
		if want := pairwiseAlpha(units, level); math.Abs(got.Alpha-want) > 1e-9 {
			t.Errorf("%v: alpha %v, pairwise definition %v", level, got.Alpha, want)
		}
		if got.Values != 3000 || got.Units != 1500 {
			t.Errorf("%v: %d values in %d units", level, got.Values, got.Units)
		}
	}
}

func TestAlphaInvariances(t *testing.T) {
	base := matrixRatings(t, krippendorff2011)
	transform := func(f func(float64) float64) []Rating {
		out := make([]Rating, len(base))
		for i, r := range base {
			v, _ := strconv.ParseFloat(r.Value, 64)
			r.Value = strconv.FormatFloat(f(v), 'g', -1, 64)
			out[i] = r
		}
		return out
	}
	cases := []struct {
		name  string
		level Level
		f     func(float64) float64
	}{
		{"ordinal is unchanged by a monotone transform", LevelOrdinal, func(v float64) float64 { return v * v * v * 10 }},
		{"interval is unchanged by an affine transform", LevelInterval, func(v float64) float64 { return 3*v - 7 }},
		{"ratio is unchanged by scaling", LevelRatio, func(v float64) float64 { return 2.5 * v }},
		{"nominal is unchanged by relabelling", LevelNominal, func(v float64) float64 { return 100 - v }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Alpha(base, tc.level)
			if err != nil {
				t.Fatal(err)
			}
			b, err := Alpha(transform(tc.f), tc.level)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(a.Alpha-b.Alpha) > 1e-12 {
				t.Errorf("alpha %v became %v", a.Alpha, b.Alpha)
			}
		})
	}
}

func TestAlphaOfDoesNotAllocate(t *testing.T) {
	d, err := NewReliabilityData(matrixRatings(t, krippendorff2011), LevelOrdinal)
	if err != nil {
		t.Fatal(err)
	}
	idx := []int{0, 0, 3, 4, 5, 5, 6, 7, 8, 9, 10}
	if n := testing.AllocsPerRun(20, func() { d.AlphaOf(idx) }); n != 0 {
		t.Errorf("AlphaOf allocates %v times per call, want 0", n)
	}
	all := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if got, want := d.AlphaOf(all), d.Alpha().Alpha; got != want {
		t.Errorf("AlphaOf(all units) = %v, Alpha() = %v", got, want)
	}
}

func TestBootstrapAlpha(t *testing.T) {
	d, err := NewReliabilityData(matrixRatings(t, krippendorff2011), LevelInterval)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := NewClusterBootstrap(2000, 0.95, 42)
	if err != nil {
		t.Fatal(err)
	}
	ci, err := d.BootstrapAlpha(bs)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("interval brackets the estimate", func(t *testing.T) {
		assertNear(t, "estimate", ci.Estimate, 0.849, 3)
		if !(ci.Low < ci.Estimate && ci.Estimate < ci.High && ci.High <= 1) {
			t.Errorf("interval [%v, %v] around %v", ci.Low, ci.High, ci.Estimate)
		}
		if ci.Resamples != 2000 || ci.Clusters != 11 {
			t.Errorf("resamples %d clusters %d, want 2000 and 11", ci.Resamples, ci.Clusters)
		}
	})
	t.Run("same seed gives the same interval", func(t *testing.T) {
		again, err := d.BootstrapAlpha(bs)
		if err != nil {
			t.Fatal(err)
		}
		if again != ci {
			t.Errorf("second run %+v differs from first %+v", again, ci)
		}
	})
	t.Run("all-agree data has no defined resample", func(t *testing.T) {
		d, err := NewReliabilityData(matrixRatings(t, [][]string{{"3", "3"}, {"3", "3"}}), LevelInterval)
		if err != nil {
			t.Fatal(err)
		}
		ci, err := d.BootstrapAlpha(bs)
		if err != nil {
			t.Fatal(err)
		}
		if ci.Undefined != 2000 || !math.IsNaN(ci.Low) || !math.IsNaN(ci.Estimate) {
			t.Errorf("got %+v, want every resample undefined and NaN bounds", ci)
		}
	})
}

func TestParseLevel(t *testing.T) {
	for _, l := range []Level{LevelNominal, LevelOrdinal, LevelInterval, LevelRatio} {
		got, err := ParseLevel(strings.ToUpper(l.String()))
		if err != nil || got != l {
			t.Errorf("ParseLevel(%q) = %v, %v", l.String(), got, err)
		}
	}
	if _, err := ParseLevel("circular"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("ParseLevel(circular) err = %v, want ErrInvalidArgument", err)
	}
}
