package stats

import (
	"fmt"
	"math"
)

// ICCResult is a one-way random-effects intra-class correlation: the share of the variance of
// the values that lies between groups (participants), from the ANOVA estimator for unequal group
// sizes (Searle, Casella & McCulloch, "Variance Components", sec. 3.6).
type ICCResult struct {
	ICC                        float64 // σ²_between / (σ²_between + σ²_within); may be negative by chance
	Between, Within            float64 // variance components; Between = (MSB − MSW)/n0
	MSB, MSW                   float64 // mean squares between and within groups
	N0                         float64 // the effective group size (N − Σn²/N)/(g − 1)
	Groups, Values             int
	SingletonGroups            int // groups with one value (they inform the between mean square only)
	WithinFreedom              int // N − g
	BetweenFreedom             int // g − 1
	Note                       string
	GroupSizeMin, GroupSizeMax int
}

// GroupedValues holds values in groups (e.g. each participant's residuals) for the intra-class
// correlation and for its bootstrap over groups: ICCOf evaluates a multiset of groups without
// allocating.
type GroupedValues struct {
	n     []float64 // values per group
	sum   []float64 // Σ y per group
	ss    []float64 // Σ (y − ȳ_g)² per group
	total int
}

// NewGroupedValues prepares groups of values; empty groups are not allowed.
func NewGroupedValues(groups [][]float64) (*GroupedValues, error) {
	g := &GroupedValues{}
	for i, vs := range groups {
		if len(vs) == 0 {
			return nil, fmt.Errorf("icc: group %d is empty: %w", i, ErrInvalidArgument)
		}
		var s float64
		for _, v := range vs {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("icc: group %d holds %v: want finite values: %w", i, v, ErrInvalidValue)
			}
			s += v
		}
		m := s / float64(len(vs))
		var ss float64
		for _, v := range vs {
			ss += (v - m) * (v - m)
		}
		g.n = append(g.n, float64(len(vs)))
		g.sum = append(g.sum, s)
		g.ss = append(g.ss, ss)
		g.total += len(vs)
	}
	return g, nil
}

// Groups returns the number of groups.
func (g *GroupedValues) Groups() int { return len(g.n) }

// ICC computes the intra-class correlation of all the groups.
func (g *GroupedValues) ICC() ICCResult {
	r := ICCResult{Groups: len(g.n), Values: g.total, ICC: math.NaN(), Between: math.NaN(), Within: math.NaN(),
		MSB: math.NaN(), MSW: math.NaN(), N0: math.NaN()}
	for i, n := range g.n {
		if n == 1 {
			r.SingletonGroups++
		}
		if i == 0 || int(n) < r.GroupSizeMin {
			r.GroupSizeMin = int(n)
		}
		r.GroupSizeMax = max(r.GroupSizeMax, int(n))
	}
	r.BetweenFreedom, r.WithinFreedom = r.Groups-1, r.Values-r.Groups
	switch {
	case r.Groups < 2:
		r.Note = "fewer than two participants"
		return r
	case r.WithinFreedom < 1:
		r.Note = "no participant has two sessions"
		return r
	}
	r.MSB, r.MSW, r.N0 = g.meanSquares(nil)
	r.ICC, r.Between, r.Within = iccFrom(r.MSB, r.MSW, r.N0)
	if math.IsNaN(r.ICC) {
		r.Note = "no variance: every value is the same"
	}
	return r
}

// ICCOf is the intra-class correlation of the multiset of groups whose indices are given (a
// group drawn twice counts as two groups); NaN when it is undefined (fewer than two groups, no
// group with two values, no variance).
func (g *GroupedValues) ICCOf(idx []int) float64 {
	msb, msw, n0 := g.meanSquares(idx)
	icc, _, _ := iccFrom(msb, msw, n0)
	return icc
}

// meanSquares returns MSB, MSW and n0 over the groups in idx (all groups when idx is nil).
func (g *GroupedValues) meanSquares(idx []int) (msb, msw, n0 float64) {
	var groups, N, sumN2, S, sumS2n, ssw float64
	add := func(i int) {
		groups++
		N += g.n[i]
		sumN2 += g.n[i] * g.n[i]
		S += g.sum[i]
		sumS2n += g.sum[i] * g.sum[i] / g.n[i]
		ssw += g.ss[i]
	}
	if idx == nil {
		for i := range g.n {
			add(i)
		}
	} else {
		for _, i := range idx {
			add(i)
		}
	}
	if groups < 2 || N-groups < 1 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	ssb := sumS2n - S*S/N
	msb = ssb / (groups - 1)
	msw = ssw / (N - groups)
	n0 = (N - sumN2/N) / (groups - 1)
	return msb, msw, n0
}

// iccFrom turns the mean squares into the ICC and the variance components.
func iccFrom(msb, msw, n0 float64) (icc, between, within float64) {
	if math.IsNaN(msb) || math.IsNaN(msw) || !(n0 > 0) {
		return math.NaN(), math.NaN(), math.NaN()
	}
	between = (msb - msw) / n0
	within = msw
	if between+within <= 0 {
		return math.NaN(), between, within
	}
	return between / (between + within), between, within
}
