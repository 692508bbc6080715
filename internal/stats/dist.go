package stats

import "math"

// regIncBeta is the regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 ≤ x ≤ 1,
// evaluated with the continued fraction of Abramowitz & Stegun 26.5.8 (modified Lentz's method)
// on the side of x where it converges fast, and the symmetry I_x(a, b) = 1 − I_{1−x}(b, a) on the
// other. It is accurate to about 1e-14, far beyond what the intervals here need.
func regIncBeta(a, b, x float64) float64 {
	switch {
	case math.IsNaN(x) || a <= 0 || b <= 0:
		return math.NaN()
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(a*math.Log(x) + b*math.Log1p(-x) - (la + lb - lab))
	if x > (a+1)/(a+b+2) {
		return 1 - front*betaContinuedFraction(b, a, 1-x)/b
	}
	return front * betaContinuedFraction(a, b, x) / a
}

// betaContinuedFraction evaluates 1/(1+ d1/(1+ d2/(1+ …))) of A&S 26.5.8.
func betaContinuedFraction(a, b, x float64) float64 {
	const tiny, eps = 1e-300, 1e-15
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	f := d
	// step takes one partial numerator num into Lentz's c and d and returns the factor it
	// multiplies f by; even and odd terms differ only in num.
	step := func(num float64) float64 {
		d = 1 + num*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + num/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		return d * c
	}
	for m := 1; m <= 500; m++ {
		fm := float64(m)
		// Even step: d_{2m} = m(b−m)x / ((a+2m−1)(a+2m)).
		f *= step(fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm)))
		// Odd step: d_{2m+1} = −(a+m)(a+b+m)x / ((a+2m)(a+2m+1)).
		delta := step(-(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1)))
		f *= delta
		if math.Abs(delta-1) < eps {
			break
		}
	}
	return f
}

// StudentTCDF is the distribution function of Student's t with df > 0 degrees of freedom.
func StudentTCDF(t, df float64) float64 {
	if math.IsNaN(t) || !(df > 0) {
		return math.NaN()
	}
	if math.IsInf(t, 0) {
		if t > 0 {
			return 1
		}
		return 0
	}
	tail := 0.5 * regIncBeta(df/2, 0.5, df/(df+t*t)) // P(T > |t|)
	if t > 0 {
		return 1 - tail
	}
	return tail
}

// StudentTQuantile is the quantile function of Student's t with df > 0 degrees of freedom, for
// 0 < p < 1 (NaN outside). It is found by bisection on StudentTCDF to about 1e-12, started from
// a bracket around the normal quantile.
func StudentTQuantile(p, df float64) float64 {
	if !(p > 0 && p < 1) || !(df > 0) {
		return math.NaN()
	}
	if p == 0.5 {
		return 0
	}
	if p < 0.5 {
		return -StudentTQuantile(1-p, df)
	}
	lo, hi := 0.0, math.Max(2*NormalQuantile(p), 1)
	for StudentTCDF(hi, df) < p {
		lo, hi = hi, 2*hi
	}
	for range 200 {
		mid := (lo + hi) / 2
		if StudentTCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo < 1e-12*math.Max(1, hi) {
			break
		}
	}
	return (lo + hi) / 2
}
