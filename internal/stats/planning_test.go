package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func TestStudentT(t *testing.T) {
	// Quantiles from the standard tables (e.g. Abramowitz & Stegun table 26.10) to 4 decimals.
	for _, c := range []struct{ p, df, want float64 }{
		{0.975, 1, 12.7062}, {0.975, 10, 2.2281}, {0.975, 23, 2.0687}, {0.95, 5, 2.0150},
		{0.8, 23, 0.8575}, {0.995, 30, 2.7500}, {0.6, 2, 0.2887},
	} {
		assertNear(t, "t quantile", StudentTQuantile(c.p, c.df), c.want, 4)
		assertNear(t, "t quantile (lower)", StudentTQuantile(1-c.p, c.df), -c.want, 4)
		assertNear(t, "t cdf", StudentTCDF(StudentTQuantile(c.p, c.df), c.df), c.p, 10)
	}
	// Many degrees of freedom approach the normal; I_0.5(2, 3) = 11/16 exactly.
	assertNear(t, "t(1e6)", StudentTQuantile(0.975, 1e6), 1.959964, 5)
	assertNear(t, "I_0.5(2,3)", regIncBeta(2, 3, 0.5), 0.6875, 12)
	if !math.IsNaN(StudentTQuantile(1, 5)) || !math.IsNaN(StudentTQuantile(0.5, 0)) {
		t.Errorf("quantile outside (0,1) or df 0 is not NaN")
	}
}

func TestDeltaVariance(t *testing.T) {
	t.Run("synthetic runs count once per task, not once per human session", func(t *testing.T) {
		// 24 tasks, 5 human sessions and 3 synthetic runs each, unit variance: 1/120 + 1/72, not
		// the (1 + 1/3)/120 of a formula that pairs every human session with its own synthetic mean.
		cells := make([]DeltaCell, 24)
		for i := range cells {
			cells[i] = DeltaCell{Weight: 1.0 / 24, Human: 5, Synthetic: 3, HumanVar: 1, SynthVar: 1}
		}
		v, err := DeltaVariance(cells)
		if err != nil {
			t.Fatal(err)
		}
		assertNear(t, "Var(Δ)", v, 1.0/120+1.0/72, 12)
	})
	t.Run("unequal counts enter exactly and agree with a simulation", func(t *testing.T) {
		// 18 tasks with one human session, 6 anchor tasks with two, 3 or 2 synthetic runs: the
		// plan's shape. Averaging the counts first (30 sessions, 2.5 runs per task) would give
		// (24/30 + 1/2.5)/24 = 0.0500; the exact sum is (18·(1 + 1/3) + 6·(1/2 + 1/2))/576.
		var cells []DeltaCell
		for i := range 24 {
			c := DeltaCell{Weight: 1.0 / 24, Human: 1, Synthetic: 3, HumanVar: 1, SynthVar: 1}
			if i < 6 {
				c.Human, c.Synthetic = 2, 2
			}
			cells = append(cells, c)
		}
		v, _ := DeltaVariance(cells)
		assertNear(t, "Var(Δ)", v, (18*(1+1.0/3)+6*(0.5+0.5))/576, 12)
		rng := rand.New(rand.NewPCG(5, 6))
		const studies = 40000
		var sum, sum2 float64
		for range studies {
			var d float64
			for _, c := range cells {
				var h, s float64
				for range c.Human {
					h += rng.NormFloat64()
				}
				for range c.Synthetic {
					s += rng.NormFloat64()
				}
				d += c.Weight * (h/float64(c.Human) - s/float64(c.Synthetic))
			}
			sum += d
			sum2 += d * d
		}
		sim := sum2/studies - (sum/studies)*(sum/studies)
		// The variance of a sample variance of 40,000 normal values is 2σ⁴/n: 0.7% relative.
		if math.Abs(sim/v-1) > 0.03 {
			t.Errorf("simulated Var(Δ) %.5f, closed form %.5f", sim, v)
		}
	})
	t.Run("bad cells are refused", func(t *testing.T) {
		for _, c := range []DeltaCell{{Weight: 1, Human: 0, Synthetic: 1}, {Weight: 1, Human: 1, Synthetic: 0},
			{Weight: 1, Human: 1, Synthetic: 1, HumanVar: -1}, {Weight: math.NaN(), Human: 1, Synthetic: 1}} {
			if _, err := DeltaVariance([]DeltaCell{c}); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("%+v: err %v, want ErrInvalidArgument", c, err)
			}
		}
		if _, err := DeltaVariance(nil); !errors.Is(err, ErrNoData) {
			t.Errorf("no cells: err %v", err)
		}
	})
}

func TestDetectableDelta(t *testing.T) {
	// At alpha 0.05 (two-sided) and 80% power, (z_.975 + z_.8)² = 7.849, the constant of the
	// normal-approximation sample size n = 7.849·σ²/δ² for a paired mean (Chow, Shao & Wang 2008,
	// sec. 3.1); with 23 degrees of freedom the t quantiles give 2.0687 + 0.8575.
	d, err := DetectableDelta(1, 0, 0.05, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	assertNear(t, "MDD² (normal)", d*d, 7.849, 3)
	d, _ = DetectableDelta(0.04, 23, 0.05, 0.8)
	assertNear(t, "MDD (t, 23 df)", d, (2.068658+0.857586)*0.2, 4)
	for _, args := range []struct {
		v        float64
		df       int
		alpha, p float64
	}{{-1, 0, 0.05, 0.8}, {math.NaN(), 0, 0.05, 0.8}, {1, -1, 0.05, 0.8}, {1, 3, 0, 0.8}, {1, 3, 0.05, 1}} {
		if _, err := DetectableDelta(args.v, args.df, args.alpha, args.p); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%+v: err = %v, want ErrInvalidArgument", args, err)
		}
	}
}

func TestICC(t *testing.T) {
	t.Run("Shrout and Fleiss's example gives ICC(1,1) = 0.17", func(t *testing.T) {
		// Shrout & Fleiss (1979), table 2: six targets rated by four judges; BMS 11.24, WMS 6.26,
		// ICC(1,1) = (BMS − WMS)/(BMS + 3·WMS) = 0.17 (table 4). Groups are the targets.
		g, err := NewGroupedValues([][]float64{{9, 2, 5, 8}, {6, 1, 3, 2}, {8, 4, 6, 8}, {7, 1, 2, 6}, {10, 5, 6, 9}, {6, 2, 4, 7}})
		if err != nil {
			t.Fatal(err)
		}
		r := g.ICC()
		assertNear(t, "BMS", r.MSB, 11.24, 2)
		assertNear(t, "WMS", r.MSW, 6.26, 2)
		assertNear(t, "ICC(1,1)", r.ICC, 0.17, 2)
		assertNear(t, "ICCOf(all)", g.ICCOf([]int{0, 1, 2, 3, 4, 5}), r.ICC, 12)
	})
	t.Run("unequal group sizes use n0", func(t *testing.T) {
		// Computed by hand: MSB 20.2, MSW 1.25, n0 = (10 − 30/10)/3 = 7/3.
		g, _ := NewGroupedValues([][]float64{{1, 2, 3}, {4, 5}, {6, 7, 8, 9}, {2}})
		r := g.ICC()
		assertNear(t, "MSB", r.MSB, 20.2, 12)
		assertNear(t, "MSW", r.MSW, 1.25, 12)
		assertNear(t, "n0", r.N0, 7.0/3, 12)
		assertNear(t, "ICC", r.ICC, 0.8666158536585366, 12)
		if r.SingletonGroups != 1 || r.GroupSizeMax != 4 || r.GroupSizeMin != 1 {
			t.Errorf("bookkeeping %+v", r)
		}
		// A group drawn twice counts as two groups.
		dup, _ := NewGroupedValues([][]float64{{1, 2, 3}, {1, 2, 3}, {4, 5}})
		assertNear(t, "duplicated group", g.ICCOf([]int{0, 0, 1}), dup.ICC().ICC, 12)
	})
	t.Run("recovers a known share from simulated participants", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(7, 8))
		var groups [][]float64
		for range 3000 {
			u := rng.NormFloat64() * math.Sqrt(0.3)
			var vs []float64
			for range 2 + rng.IntN(5) {
				vs = append(vs, u+rng.NormFloat64()*math.Sqrt(0.7))
			}
			groups = append(groups, vs)
		}
		g, _ := NewGroupedValues(groups)
		if r := g.ICC(); math.Abs(r.ICC-0.3) > 0.03 {
			t.Errorf("ICC %.3f, want 0.30", r.ICC)
		}
	})
	t.Run("undefined cases say why", func(t *testing.T) {
		g, _ := NewGroupedValues([][]float64{{1}, {2}, {3}})
		if r := g.ICC(); !math.IsNaN(r.ICC) || r.Note == "" {
			t.Errorf("singletons only: %+v", r)
		}
		g, _ = NewGroupedValues([][]float64{{1, 1}, {1, 1}})
		if r := g.ICC(); !math.IsNaN(r.ICC) || r.Note == "" {
			t.Errorf("constant values: %+v", r)
		}
		if _, err := NewGroupedValues([][]float64{{}}); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("empty group: %v", err)
		}
	})
}
