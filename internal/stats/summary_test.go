package stats

import (
	"errors"
	"math"
	"testing"
)

func TestSummaries(t *testing.T) {
	cases := []struct {
		name          string
		xs            []float64
		mean, med, vr float64
	}{
		{"odd count", []float64{3, 1, 2}, 2, 2, 1},
		{"even count takes the middle pair", []float64{4, 1, 3, 2}, 2.5, 2.5, 5.0 / 3},
		{"one value has no variance", []float64{7}, 7, 7, math.NaN()},
		{"empty is NaN", nil, math.NaN(), math.NaN(), math.NaN()},
	}
	same := func(a, b float64) bool { return (math.IsNaN(a) && math.IsNaN(b)) || math.Abs(a-b) < 1e-12 }
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float64(nil), tc.xs...)
			if m, md, v := Mean(tc.xs), Median(tc.xs), Variance(tc.xs); !same(m, tc.mean) || !same(md, tc.med) || !same(v, tc.vr) {
				t.Errorf("mean %v median %v variance %v, want %v %v %v", m, md, v, tc.mean, tc.med, tc.vr)
			}
			for i := range in {
				if in[i] != tc.xs[i] {
					t.Fatal("Median reordered its input")
				}
			}
		})
	}
}

func TestMinDetectableDifference(t *testing.T) {
	// At alpha 0.05 (two-sided) and 80% power, (z_.975 + z_.8)² = 7.849, the constant of the
	// normal-approximation sample size n = 7.849·σ²/δ² for a one-sample or paired mean (Chow, Shao
	// & Wang 2008, sec. 3.1; half of Lehr's (1992) "16 s²/d²" for two independent groups).
	t.Run("unit variance and one pair gives the 80% power multiplier", func(t *testing.T) {
		d, err := MinDetectableDifference(1, 1, 0.05, 0.8)
		if err != nil {
			t.Fatal(err)
		}
		assertNear(t, "MDD²", d*d, 7.849, 3)
	})
	t.Run("shrinks with the square root of n", func(t *testing.T) {
		d24, _ := MinDetectableDifference(0.09, 24, 0.05, 0.8)
		d96, _ := MinDetectableDifference(0.09, 96, 0.05, 0.8)
		assertNear(t, "MDD(24)", d24, (1.959964+0.841621)*math.Sqrt(0.09/24), 5)
		assertNear(t, "MDD(24)/MDD(96)", d24/d96, 2, 12)
	})
	t.Run("bad arguments are rejected", func(t *testing.T) {
		for _, args := range [][4]float64{{-1, 5, 0.05, 0.8}, {1, 0, 0.05, 0.8}, {1, 5, 0, 0.8}, {1, 5, 0.05, 1}, {math.NaN(), 5, 0.05, 0.8}} {
			if _, err := MinDetectableDifference(args[0], int(args[1]), args[2], args[3]); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("%v: err = %v, want ErrInvalidArgument", args, err)
			}
		}
	})
}
