package stats

import (
	"fmt"
	"math"
	"slices"
)

// Mean is the arithmetic mean of xs; NaN when xs is empty.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Median is the middle value of xs (the mean of the two middle values for an even count); NaN
// when xs is empty. xs is not modified.
func Median(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Variance is the sample variance of xs with the n − 1 denominator; NaN for fewer than two values.
func Variance(xs []float64) float64 {
	if len(xs) < 2 {
		return math.NaN()
	}
	m := Mean(xs)
	s := 0.0
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s / float64(len(xs)-1)
}

// MinDetectableDifference is the smallest true mean paired difference that a two-sided test at
// significance alpha detects with the given power, in a paired design with n units (tasks or
// participants) whose paired differences have the given variance. It uses the normal
// approximation of the one-sample (paired) test:
//
//	MDD = (z_{1−α/2} + z_{power}) · √(variance / n)
//
// e.g. for alpha = 0.05 and power = 0.8 the multiplier is 1.960 + 0.842 = 2.802. With few units
// the t distribution would give a somewhat larger difference; the approximation is standard for
// planning (Chow, Shao & Wang, "Sample Size Calculations in Clinical Research", sec. 3.1).
func MinDetectableDifference(variance float64, n int, alpha, power float64) (float64, error) {
	switch {
	case !(variance >= 0) || math.IsInf(variance, 0):
		return 0, fmt.Errorf("minimum detectable difference: variance %v: want a finite value >= 0: %w", variance, ErrInvalidArgument)
	case n < 1:
		return 0, fmt.Errorf("minimum detectable difference: n = %d: want at least 1: %w", n, ErrInvalidArgument)
	case !(alpha > 0 && alpha < 1):
		return 0, fmt.Errorf("minimum detectable difference: alpha %v: want between 0 and 1: %w", alpha, ErrInvalidArgument)
	case !(power > 0 && power < 1):
		return 0, fmt.Errorf("minimum detectable difference: power %v: want between 0 and 1: %w", power, ErrInvalidArgument)
	}
	z := NormalQuantile(1-alpha/2) + NormalQuantile(power)
	return z * math.Sqrt(variance/float64(n)), nil
}
