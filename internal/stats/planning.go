package stats

import (
	"fmt"
	"math"
)

// DeltaCell is one cell's part in a human-minus-synthetic delta Δ = Σ_c w_c·(h̄_c − s̄_c): a task
// (for one system's delta, w_c = 1/T) or a system–task cell (for the pooled delta, w_c =
// 1/(T·S_t) with S_t systems paired on task t). h̄_c is the mean of Human sessions, s̄_c the mean
// of Synthetic runs.
type DeltaCell struct {
	Weight           float64
	Human, Synthetic int
	// HumanVar and SynthVar are the variances of one session's outcome around the cell's mean.
	HumanVar, SynthVar float64
}

// DeltaVariance is the variance of Δ = Σ_c w_c·(h̄_c − s̄_c) over the cells, with the cells'
// means fixed and sessions independent:
//
//	Var(Δ) = Σ_c w_c²·(σ²_h,c/n_c + σ²_s,c/k_c)
//
// Each cell's own counts enter exactly; nothing is averaged first. A task's synthetic mean is
// shared by all the human sessions of that task, so the synthetic runs count once per task
// (σ²_s/k_c), not once per human session. Sessions correlated through a participant add a
// covariance term that is not included here.
func DeltaVariance(cells []DeltaCell) (float64, error) {
	if len(cells) == 0 {
		return 0, fmt.Errorf("delta variance: no cells: %w", ErrNoData)
	}
	var v float64
	for i, c := range cells {
		switch {
		case c.Human < 1 || c.Synthetic < 1:
			return 0, fmt.Errorf("delta variance: cell %d has %d human sessions and %d synthetic runs: want at least 1 of each: %w", i, c.Human, c.Synthetic, ErrInvalidArgument)
		case !(c.HumanVar >= 0) || !(c.SynthVar >= 0) || math.IsInf(c.HumanVar, 0) || math.IsInf(c.SynthVar, 0):
			return 0, fmt.Errorf("delta variance: cell %d variances %v, %v: want finite values >= 0: %w", i, c.HumanVar, c.SynthVar, ErrInvalidArgument)
		case !(c.Weight >= 0) || math.IsInf(c.Weight, 0):
			return 0, fmt.Errorf("delta variance: cell %d weight %v: want a finite value >= 0: %w", i, c.Weight, ErrInvalidArgument)
		}
		v += c.Weight * c.Weight * (c.HumanVar/float64(c.Human) + c.SynthVar/float64(c.Synthetic))
	}
	return v, nil
}

// DetectableDelta is the smallest true delta that a two-sided test at significance alpha detects
// with the given power when the estimate has the given variance:
//
//	MDD = (q_{1−α/2} + q_{power})·√variance
//
// where q are Student t quantiles with df degrees of freedom (the paired tasks minus one, the
// t-like reference of the report's expanded bootstrap interval), or normal quantiles when df is 0.
// With normal quantiles, alpha = 0.05 and power = 0.8 the multiplier is 1.960 + 0.842 = 2.802;
// with t quantiles and 23 degrees of freedom it is 2.069 + 0.858 = 2.927. It is the
// normal-approximation planning formula for a paired mean (Chow, Shao & Wang, "Sample Size
// Calculations in Clinical Research", sec. 3.1) with t quantiles for a small number of tasks.
func DetectableDelta(variance float64, df int, alpha, power float64) (float64, error) {
	z, err := detectableMultiplier(df, alpha, power)
	if err != nil {
		return 0, err
	}
	if !(variance >= 0) || math.IsInf(variance, 0) {
		return 0, fmt.Errorf("detectable delta: variance %v: want a finite value >= 0: %w", variance, ErrInvalidArgument)
	}
	return z * math.Sqrt(variance), nil
}

func detectableMultiplier(df int, alpha, power float64) (float64, error) {
	switch {
	case df < 0:
		return 0, fmt.Errorf("detectable delta: %d degrees of freedom: want 0 (normal) or more: %w", df, ErrInvalidArgument)
	case !(alpha > 0 && alpha < 1):
		return 0, fmt.Errorf("detectable delta: alpha %v: want between 0 and 1: %w", alpha, ErrInvalidArgument)
	case !(power > 0 && power < 1):
		return 0, fmt.Errorf("detectable delta: power %v: want between 0 and 1: %w", power, ErrInvalidArgument)
	}
	if df == 0 {
		return NormalQuantile(1-alpha/2) + NormalQuantile(power), nil
	}
	return StudentTQuantile(1-alpha/2, float64(df)) + StudentTQuantile(power, float64(df)), nil
}
