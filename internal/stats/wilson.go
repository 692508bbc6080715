package stats

import (
	"fmt"
	"math"
)

// ProportionInterval is a proportion with its Wilson score interval.
type ProportionInterval struct {
	Successes, N int
	P            float64 // Successes / N
	Low, High    float64
	Level        float64
}

// Wilson returns the Wilson (1927) score interval for successes out of n at confidence level
// (e.g. 0.95), without continuity correction: Newcombe's (1998) method 3. Unlike the Wald
// interval it stays inside [0, 1] and is sensible at 0 and n successes.
func Wilson(successes, n int, level float64) (ProportionInterval, error) {
	if n < 1 {
		return ProportionInterval{}, fmt.Errorf("wilson: n = %d: want at least 1 trial: %w", n, ErrInvalidArgument)
	}
	if successes < 0 || successes > n {
		return ProportionInterval{}, fmt.Errorf("wilson: %d successes out of %d: want 0..n: %w", successes, n, ErrInvalidArgument)
	}
	if !(level > 0 && level < 1) {
		return ProportionInterval{}, fmt.Errorf("wilson: level %v: want between 0 and 1: %w", level, ErrInvalidArgument)
	}
	z := NormalQuantile(1 - (1-level)/2)
	nf := float64(n)
	p := float64(successes) / nf
	z2 := z * z
	centre := (p + z2/(2*nf)) / (1 + z2/nf)
	half := z / (1 + z2/nf) * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	out := ProportionInterval{Successes: successes, N: n, P: p, Level: level,
		Low: max(0, centre-half), High: min(1, centre+half)}
	// The bounds are exactly 0 and 1 at the extremes; rounding can miss by an ulp.
	if successes == 0 {
		out.Low = 0
	}
	if successes == n {
		out.High = 1
	}
	return out, nil
}

// NormalQuantile is the standard normal quantile function Φ⁻¹(p) for 0 < p < 1 (NaN outside).
func NormalQuantile(p float64) float64 {
	if !(p > 0 && p < 1) {
		return math.NaN()
	}
	return -math.Sqrt2 * math.Erfcinv(2*p)
}

// NormalCDF is the standard normal distribution function Φ(x).
func NormalCDF(x float64) float64 {
	return 0.5 * math.Erfc(-x/math.Sqrt2)
}
