package stats

import (
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
