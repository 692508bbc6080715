package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func mustBootstrap(tb testing.TB, resamples int, level float64, seed uint64) *ClusterBootstrap {
	tb.Helper()
	bs, err := NewClusterBootstrap(resamples, level, seed)
	if err != nil {
		tb.Fatal(err)
	}
	return bs
}

func TestClusterBootstrapBinaryMeanMatchesBinomialQuantiles(t *testing.T) {
	// With 0/1 per-task outcomes, a resampled mean is exactly Binomial(n, p̂)/n. For n = 24 and
	// p̂ = 1/2: P(X ≤ 6) = 190051/2^24 = 0.0113 and P(X ≤ 7) = 536155/2^24 = 0.0320, so the 2.5%
	// quantile is 7/24 and, by symmetry, the 97.5% quantile 17/24. 10,000 resamples put the
	// empirical tails several standard errors away from 0.025, so the percentiles land there.
	values := make([]float64, 24)
	for i := range 12 {
		values[i] = 1
	}
	ci, err := mustBootstrap(t, 10000, 0.95, 2026).Mean(values)
	if err != nil {
		t.Fatal(err)
	}
	if ci.Estimate != 0.5 || ci.Low != 7.0/24 || ci.High != 17.0/24 {
		t.Errorf("got estimate %v [%v, %v], want 0.5 [7/24 = %v, 17/24 = %v]", ci.Estimate, ci.Low, ci.High, 7.0/24, 17.0/24)
	}
	if ci.Resamples != 10000 || ci.Undefined != 0 || ci.Clusters != 24 || ci.Level != 0.95 {
		t.Errorf("bookkeeping %+v", ci)
	}
}

func TestClusterBootstrapIsDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	a := make([]float64, 24)
	b := make([]float64, 24)
	for i := range a {
		a[i], b[i] = rng.Float64(), rng.Float64()
	}
	run := func(seed uint64, first, second []float64) (Interval, Interval) {
		bs := mustBootstrap(t, 3000, 0.9, seed)
		x, err := bs.Mean(first)
		if err != nil {
			t.Fatal(err)
		}
		y, err := bs.Mean(second)
		if err != nil {
			t.Fatal(err)
		}
		return x, y
	}
	a1, b1 := run(5, a, b)
	b2, a2 := run(5, b, a)
	t.Run("same seed gives the same interval in any call order", func(t *testing.T) {
		if a1 != a2 || b1 != b2 {
			t.Errorf("intervals changed with call order: %+v vs %+v, %+v vs %+v", a1, a2, b1, b2)
		}
	})
	t.Run("another seed gives other resamples", func(t *testing.T) {
		a3, _ := run(6, a, b)
		if a3.Low == a1.Low && a3.High == a1.High {
			t.Errorf("seeds 5 and 6 gave the same interval %+v", a1)
		}
		if a3.Estimate != a1.Estimate {
			t.Errorf("estimate depends on the seed: %v vs %v", a3.Estimate, a1.Estimate)
		}
	})
}

func TestClusterBootstrapDrawsUniformly(t *testing.T) {
	// Chi-square goodness of fit of the cluster indices at p = 0.001 (critical values from
	// chi-square tables for df ≤ 23, Wilson–Hilferty beyond). n = 3, 7, 24, 256 take the 16-bit
	// path, 257 and 300 the 32-bit one; 3, 7 and 300 exercise rejection.
	for _, tc := range []struct {
		n        int
		critical float64
	}{{3, 13.82}, {7, 22.46}, {24, 49.73}, {256, 330.55}, {257, 331.69}, {300, 380.33}} {
		bs := mustBootstrap(t, 1, 0.95, 99)
		bs.pcg.Seed(99, bootstrapStream)
		idx := make([]int, tc.n)
		counts := make([]float64, tc.n)
		rounds := 400
		for range rounds {
			bs.fill(idx)
			for _, i := range idx {
				counts[i]++
			}
		}
		expect := float64(rounds)
		chi := 0.0
		for _, c := range counts {
			chi += (c - expect) * (c - expect) / expect
		}
		if chi > tc.critical {
			t.Errorf("n=%d: chi-square %.2f above %.2f: counts %v", tc.n, chi, tc.critical, counts)
		}
	}
}

func TestQuantileSelectMatchesSortedType7(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		n := 1 + rng.IntN(60)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(rng.IntN(8)) // many ties
		}
		sorted := slices.Clone(xs)
		slices.Sort(sorted)
		for _, q := range []float64{0, 0.025, 0.05, 0.5, 0.95, 0.975, 1} {
			h := q * float64(n-1)
			lo := int(math.Floor(h))
			want := sorted[lo]
			if lo+1 < n {
				want += (h - float64(lo)) * (sorted[lo+1] - sorted[lo])
			}
			if got := quantileSelect(slices.Clone(xs), q); math.Abs(got-want) > 1e-12 {
				t.Fatalf("trial %d n=%d q=%v: got %v, want %v (sorted %v)", trial, n, q, got, want, sorted)
			}
		}
	}
}

func TestClusterBootstrapStatistics(t *testing.T) {
	bs := mustBootstrap(t, 2000, 0.95, 11)
	t.Run("constant paired difference has a zero-width interval", func(t *testing.T) {
		a := []float64{0.9, 0.5, 0.7, 0.2}
		b := []float64{0.65, 0.25, 0.45, -0.05}
		ci, err := bs.PairedDifference(a, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []float64{ci.Estimate, ci.Low, ci.High} {
			if math.Abs(v-0.25) > 1e-12 {
				t.Errorf("got %+v, want everything 0.25", ci)
			}
		}
	})
	t.Run("paired difference keeps pairs together", func(t *testing.T) {
		// a and b vary widely across tasks but their difference does not: resampling pairs
		// gives a far narrower interval than differencing two independent resamples would.
		a := []float64{0.1, 0.9, 0.2, 0.8, 0.3, 0.7}
		b := []float64{0.0, 0.8, 0.1, 0.7, 0.3, 0.6}
		ci, err := bs.PairedDifference(a, b)
		if err != nil {
			t.Fatal(err)
		}
		if !(ci.High-ci.Low < 0.1 && ci.Low >= 0 && ci.High <= 0.1+1e-12) {
			t.Errorf("paired interval [%v, %v] not within the spread of the differences", ci.Low, ci.High)
		}
	})
	t.Run("mismatched pairs are rejected", func(t *testing.T) {
		if _, err := bs.PairedDifference([]float64{1}, []float64{1, 2}); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("err = %v", err)
		}
		if _, err := bs.RatioOfSums([]float64{1}, nil); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("ratio of sums counts undefined resamples", func(t *testing.T) {
		// One task of three has sessions; a resample without it has no denominator.
		ci, err := bs.RatioOfSums([]float64{2, 0, 0}, []float64{4, 0, 0})
		if err != nil {
			t.Fatal(err)
		}
		// P(task 0 never drawn in 3 draws) = (2/3)^3 ≈ 0.296 of 2000 resamples.
		if ci.Estimate != 0.5 || ci.Undefined < 500 || ci.Undefined > 700 || ci.Low != 0.5 || ci.High != 0.5 {
			t.Errorf("got %+v, want estimate 0.5 with about 593 undefined resamples", ci)
		}
	})
	t.Run("one cluster gives its own value", func(t *testing.T) {
		ci, err := bs.Mean([]float64{0.4})
		if err != nil {
			t.Fatal(err)
		}
		if ci.Low != 0.4 || ci.High != 0.4 || ci.Estimate != 0.4 {
			t.Errorf("got %+v", ci)
		}
	})
	t.Run("no clusters is ErrNoData", func(t *testing.T) {
		if _, err := bs.Mean(nil); !errors.Is(err, ErrNoData) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("custom statistic sees resampled indices", func(t *testing.T) {
		// Median of per-task values, through the general Interval.
		vals := []float64{5, 1, 4, 2, 3}
		scratch := make([]float64, len(vals))
		ci, err := bs.Interval(len(vals), func(idx []int) float64 {
			for i, j := range idx {
				scratch[i] = vals[j]
			}
			return quantileSelect(scratch, 0.5)
		})
		if err != nil {
			t.Fatal(err)
		}
		if ci.Estimate != 3 || ci.Low < 1 || ci.High > 5 || ci.Low >= ci.High {
			t.Errorf("got %+v", ci)
		}
	})
}

func TestClusterBootstrapDoesNotAllocate(t *testing.T) {
	bs := mustBootstrap(t, 1000, 0.95, 1)
	a := make([]float64, 24)
	b := make([]float64, 24)
	for i := range a {
		a[i], b[i] = float64(i%3)/2, float64(i%5)/4
	}
	if _, err := bs.PairedDifference(a, b); err != nil { // grows the buffers once
		t.Fatal(err)
	}
	for name, f := range map[string]func(){
		"Mean":             func() { _, _ = bs.Mean(a) },
		"PairedDifference": func() { _, _ = bs.PairedDifference(a, b) },
		"RatioOfSums":      func() { _, _ = bs.RatioOfSums(a, b) },
	} {
		if n := testing.AllocsPerRun(5, f); n != 0 {
			t.Errorf("%s allocates %v times per interval, want 0", name, n)
		}
	}
}

func TestNewClusterBootstrapRejectsBadArguments(t *testing.T) {
	for name, args := range map[string]struct {
		resamples int
		level     float64
	}{"no resamples": {0, 0.95}, "level 1": {100, 1}, "level 0": {100, 0}, "NaN level": {100, math.NaN()}} {
		t.Run(name+" is ErrInvalidArgument", func(t *testing.T) {
			if _, err := NewClusterBootstrap(args.resamples, args.level, 1); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

func TestBCa(t *testing.T) {
	t.Run("acceleration of a mean is the jackknife skewness formula", func(t *testing.T) {
		// For the mean, θ̄ − θ₍ᵢ₎ = (xᵢ − x̄)/(n − 1), so a = Σd³ / (6·(Σd²)^{3/2}) with d = x − x̄.
		rng := rand.New(rand.NewPCG(11, 12))
		xs := make([]float64, 24)
		for i := range xs {
			xs[i] = rng.ExpFloat64()
		}
		ci, err := mustBootstrap(t, 4000, 0.95, 3).Mean(xs)
		if err != nil {
			t.Fatal(err)
		}
		m := Mean(xs)
		var s2, s3 float64
		for _, x := range xs {
			s2 += (x - m) * (x - m)
			s3 += (x - m) * (x - m) * (x - m)
		}
		assertNear(t, "acceleration", ci.Acceleration, s3/(6*math.Pow(s2, 1.5)), 12)
		// Right-skewed data: BCa moves both bounds up from the percentile ones.
		if !(ci.Acceleration > 0 && ci.BCaLow > ci.Low && ci.BCaHigh > ci.High) {
			t.Errorf("skewed mean: a = %v, percentile [%v, %v], BCa [%v, %v]: want BCa shifted up", ci.Acceleration, ci.Low, ci.High, ci.BCaLow, ci.BCaHigh)
		}
	})
	t.Run("symmetric data gives the percentile interval", func(t *testing.T) {
		// Values symmetric about their mean: a = 0; half the resamples fall on each side, so z0 ≈ 0.
		xs := []float64{-3, -2, -1, -0.5, 0.5, 1, 2, 3}
		ci, _ := mustBootstrap(t, 20000, 0.9, 4).Mean(xs)
		if math.Abs(ci.Acceleration) > 1e-12 || math.Abs(ci.Bias) > 0.03 || math.Abs(ci.BCaLow-ci.Low) > 0.05 || math.Abs(ci.BCaHigh-ci.High) > 0.05 {
			t.Errorf("symmetric: %+v", ci)
		}
	})
	t.Run("every resample on one side leaves BCa undefined", func(t *testing.T) {
		calls := 0
		ci, _ := mustBootstrap(t, 500, 0.95, 5).Interval(5, func(idx []int) float64 {
			calls++
			if calls == 1 {
				return 0 // the estimate is below every resample
			}
			return 1
		})
		if !math.IsNaN(ci.BCaLow) || !math.IsNaN(ci.BCaHigh) {
			t.Errorf("BCa [%v, %v], want undefined", ci.BCaLow, ci.BCaHigh)
		}
	})
}

// The expansion reads the bounds at Φ(−√(n/(n−1))·t_{.975, n−1}): 1.73% for 24 tasks. Simulated
// samples of 24 normal values show why: the plain 95% percentile interval of the mean covers about
// 93%, the expanded one 95% like the t interval. (With too few resamples the noise of the bounds
// costs coverage too: about half a point at 1,000 resamples.)
func TestExpandedPercentileCoverage(t *testing.T) {
	assertNear(t, "tail(24)", ExpandedTail(0.95, 24), 0.017289, 5)
	assertNear(t, "tail(1)", ExpandedTail(0.95, 1), 0.025, 12)
	plain := mustBootstrap(t, 4000, 0.95, 9)
	wide := mustBootstrap(t, 4000, 0.95, 9).Expand()
	rng := rand.New(rand.NewPCG(13, 14))
	const samples = 4000
	var inPlain, inWide, inBCa int
	xs := make([]float64, 24)
	for range samples {
		for i := range xs {
			xs[i] = rng.NormFloat64()
		}
		p, _ := plain.Mean(xs)
		w, _ := wide.Mean(xs)
		if p.Low <= 0 && 0 <= p.High {
			inPlain++
		}
		if w.Low <= 0 && 0 <= w.High {
			inWide++
		}
		if w.BCaLow <= 0 && 0 <= w.BCaHigh {
			inBCa++
		}
		if !w.Expanded || p.Expanded || w.Tail >= p.Tail {
			t.Fatalf("expansion bookkeeping: plain %+v, expanded %+v", p, w)
		}
	}
	cp, cw, cb := float64(inPlain)/samples, float64(inWide)/samples, float64(inBCa)/samples
	t.Logf("coverage of the mean of 24 normal values over %d samples: percentile %.4f, expanded percentile %.4f, expanded BCa %.4f", samples, cp, cw, cb)
	// The Monte Carlo standard error of a coverage near 0.95 is 0.0034.
	if cw < 0.94 || cw > 0.96 || cb < 0.935 || cb > 0.965 {
		t.Errorf("expanded coverage %.4f (BCa %.4f), want 0.95 ± 0.01", cw, cb)
	}
	if cp > cw-0.005 {
		t.Errorf("plain percentile covers %.4f, expanded %.4f: the expansion should add about 2 points", cp, cw)
	}
}
