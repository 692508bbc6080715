package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Interval is a bootstrap confidence interval: the percentile bounds and, from the same
// resamples, the bias-corrected and accelerated (BCa) bounds.
type Interval struct {
	Estimate  float64 // the statistic on the original clusters
	Low, High float64 // percentile bounds; NaN when no resample gave a value
	// BCaLow and BCaHigh are Efron's (1987) BCa bounds: percentiles of the same resamples at
	// levels moved by the bias correction and the acceleration. NaN when either is undefined (every
	// resample on one side of the estimate, an undefined estimate).
	BCaLow, BCaHigh float64
	// Bias is the BCa bias correction z0 = Φ⁻¹(share of resamples below the estimate, ties counting
	// half); Acceleration is a, from the jackknife over clusters (0 when the jackknife cannot tell).
	Bias, Acceleration float64
	Level              float64 // confidence level, e.g. 0.95
	// Tail is the lower percentile level the bounds were read at: (1 − Level)/2, or less when the
	// interval is expanded for a small number of clusters.
	Tail      float64
	Expanded  bool // the small-sample expansion was applied (see ClusterBootstrap.Expand)
	Resamples int  // resamples drawn
	Undefined int  // resamples whose statistic was NaN, left out of the percentiles
	Clusters  int  // clusters (tasks) resampled
}

// ClusterBootstrap draws cluster-level (task-level) bootstrap resamples: each resample picks as
// many clusters as there are, uniformly with replacement, and evaluates a statistic on them.
//
// It is built for speed: resampled indices go into a preallocated buffer, the statistic reads
// its own data through them, and percentiles come from selection rather than sorting, so an
// interval allocates nothing once the buffers have grown. Each Interval call restarts the PCG
// generator from Seed, so an interval depends only on the data, the seed and the number of
// clusters, never on which intervals were computed before (and intervals over the same clusters
// share their resamples: common random numbers). Not safe for concurrent use; make one per
// goroutine.
type ClusterBootstrap struct {
	resamples int
	level     float64
	seed      uint64
	expand    bool
	skipBCa   bool

	pcg   rand.PCG
	idx   []int
	ident []int
	jack  []int
	jackV []float64
	stats []float64
	// tails caches the expanded lower tail level by number of clusters.
	tails map[int]float64
}

// bootstrapStream is the second PCG seed word: fixed so that Seed alone determines the stream.
const bootstrapStream = 0x9e3779b97f4a7c15

// NewClusterBootstrap returns a bootstrap drawing resamples resamples per interval, reporting
// two-sided percentile intervals at confidence level (0 < level < 1), seeded with seed.
func NewClusterBootstrap(resamples int, level float64, seed uint64) (*ClusterBootstrap, error) {
	if resamples < 1 {
		return nil, fmt.Errorf("bootstrap: resamples %d: want at least 1: %w", resamples, ErrInvalidArgument)
	}
	if !(level > 0 && level < 1) {
		return nil, fmt.Errorf("bootstrap: level %v: want between 0 and 1: %w", level, ErrInvalidArgument)
	}
	return &ClusterBootstrap{
		resamples: resamples,
		level:     level,
		seed:      seed,
		stats:     make([]float64, resamples),
	}, nil
}

// Expand turns on the small-sample expansion of Hesterberg (2015, "What teachers should know
// about the bootstrap", The American Statistician 69(4)): with n clusters, the percentile and
// BCa bounds are read at the tail level Φ(−√(n/(n−1))·t_{1−α/2, n−1}) instead of α/2. A
// bootstrap distribution of a mean is too narrow by √((n−1)/n) and uses normal rather than t
// quantiles, so with 24 tasks an unexpanded 95% interval covers about 93%; expanded, the
// percentile interval of a mean matches the t interval. It returns bs.
func (bs *ClusterBootstrap) Expand() *ClusterBootstrap {
	bs.expand = true
	return bs
}

// SkipBCa leaves the BCa bounds of every interval NaN, saving the jackknife and two selections
// when only the percentile interval is wanted. It returns bs.
func (bs *ClusterBootstrap) SkipBCa() *ClusterBootstrap {
	bs.skipBCa = true
	return bs
}

// Resamples returns the number of resamples drawn per interval.
func (bs *ClusterBootstrap) Resamples() int { return bs.resamples }

// Level returns the confidence level.
func (bs *ClusterBootstrap) Level() float64 { return bs.level }

// Seed returns the seed every interval starts from.
func (bs *ClusterBootstrap) Seed() uint64 { return bs.seed }

// ExpandedTail is the lower tail level at which an expanded interval at confidence level over n
// clusters reads its bounds: Φ(−√(n/(n−1))·t_{1−α/2, n−1}) with α = 1 − level; (1 − level)/2
// when n < 2.
func ExpandedTail(level float64, n int) float64 {
	alpha := 1 - level
	if n < 2 {
		return alpha / 2
	}
	nf := float64(n)
	return NormalCDF(-math.Sqrt(nf/(nf-1)) * StudentTQuantile(1-alpha/2, nf-1))
}

// tail is the lower percentile level for an interval over n clusters.
func (bs *ClusterBootstrap) tail(n int) float64 {
	if !bs.expand || n < 2 {
		return (1 - bs.level) / 2
	}
	if t, ok := bs.tails[n]; ok {
		return t
	}
	if bs.tails == nil {
		bs.tails = map[int]float64{}
	}
	t := ExpandedTail(bs.level, n)
	bs.tails[n] = t
	return t
}

// Interval bootstraps any statistic of a set of clusters. stat receives the indices (each in
// [0, clusters), repeats allowed) of the clusters in one resample and returns the statistic, or
// NaN when it is undefined for that resample. stat is called once on the identity indices for
// the estimate, once per resample (len(idx) == clusters) and once per cluster left out for the
// BCa jackknife (len(idx) == clusters − 1); it must not keep idx and, for speed, should not
// allocate.
func (bs *ClusterBootstrap) Interval(clusters int, stat func(idx []int) float64) (Interval, error) {
	if clusters < 1 {
		return Interval{}, fmt.Errorf("bootstrap: no clusters: %w", ErrNoData)
	}
	if clusters > math.MaxUint32 {
		return Interval{}, fmt.Errorf("bootstrap: %d clusters: %w", clusters, ErrInvalidArgument)
	}
	if cap(bs.idx) < clusters {
		bs.idx = make([]int, clusters)
		bs.ident = make([]int, clusters)
		bs.jack = make([]int, clusters)
		bs.jackV = make([]float64, clusters)
	}
	idx := bs.idx[:clusters]
	ident := bs.ident[:clusters]
	for i := range ident {
		ident[i] = i
	}
	out := Interval{
		Estimate:  stat(ident),
		Level:     bs.level,
		Tail:      bs.tail(clusters),
		Expanded:  bs.expand && clusters >= 2,
		Resamples: bs.resamples,
		Clusters:  clusters,
		BCaLow:    math.NaN(),
		BCaHigh:   math.NaN(),
	}

	bs.pcg.Seed(bs.seed, bootstrapStream)
	valid := 0
	for range bs.resamples {
		bs.fill(idx)
		v := stat(idx)
		if math.IsNaN(v) {
			out.Undefined++
			continue
		}
		bs.stats[valid] = v
		valid++
	}
	if valid == 0 {
		out.Low, out.High = math.NaN(), math.NaN()
		return out, nil
	}
	vals := bs.stats[:valid]
	out.Low = quantileSelect(vals, out.Tail)
	out.High = quantileSelect(vals, 1-out.Tail)
	if !bs.skipBCa {
		bs.bca(&out, vals, stat)
	}
	return out, nil
}

// bca fills the BCa bounds of out from the valid resampled statistics (Efron & Tibshirani 1993,
// sec. 14.3): the bias correction z0 from the share of resamples below the estimate (ties count
// half, so that a discrete statistic sitting on its own estimate is not read as biased), the
// acceleration a = Σ(θ̄ − θ₍ᵢ₎)³ / (6·(Σ(θ̄ − θ₍ᵢ₎)²)^{3/2}) from the leave-one-cluster-out
// jackknife, and the bounds at the levels Φ(z0 + (z0 + z)/(1 − a(z0 + z))) for z = ±Φ⁻¹(tail).
func (bs *ClusterBootstrap) bca(out *Interval, vals []float64, stat func([]int) float64) {
	if math.IsNaN(out.Estimate) {
		return
	}
	below := 0.0
	for _, v := range vals {
		switch {
		case v < out.Estimate:
			below++
		case v == out.Estimate:
			below += 0.5
		}
	}
	z0 := NormalQuantile(below / float64(len(vals)))
	if math.IsNaN(z0) || math.IsInf(z0, 0) {
		return // every resample on one side: no finite correction
	}
	out.Bias = z0
	if n := out.Clusters; n >= 3 {
		// Jackknife: leave each cluster out in turn.
		jack, jv := bs.jack[:n-1], bs.jackV[:0]
		for i := range n {
			copy(jack, bs.ident[:i])
			copy(jack[i:], bs.ident[i+1:n])
			if v := stat(jack); !math.IsNaN(v) {
				jv = append(jv, v)
			}
		}
		var mean float64
		for _, v := range jv {
			mean += v
		}
		mean /= float64(max(len(jv), 1))
		var s2, s3 float64
		for _, v := range jv {
			d := mean - v
			s2 += d * d
			s3 += d * d * d
		}
		if s2 > 0 {
			out.Acceleration = s3 / (6 * math.Pow(s2, 1.5))
		}
	}
	a := out.Acceleration
	z := NormalQuantile(out.Tail)
	level := func(z float64) float64 {
		w := z0 + z
		if 1-a*w <= 0 {
			return math.NaN()
		}
		return NormalCDF(z0 + w/(1-a*w))
	}
	lo, hi := level(z), level(-z)
	if !(lo >= 0 && hi <= 1 && lo <= hi) {
		return
	}
	out.BCaLow = quantileSelect(vals, lo)
	out.BCaHigh = quantileSelect(vals, hi)
}

// fill draws len(idx) cluster indices uniformly from [0, len(idx)) with Lemire's multiply-shift
// method with rejection, which is exactly uniform. For up to 256 clusters (every task set here)
// each 64-bit PCG output is cut into four 16-bit draws, rejected with probability
// (2^16 mod n)/2^16 < 0.4%; larger sets use two 32-bit draws per output.
func (bs *ClusterBootstrap) fill(idx []int) {
	n := len(idx)
	if n <= 256 {
		bs.fill16(idx)
		return
	}
	n64 := uint64(n)
	thresh := -uint32(n) % uint32(n) // 2^32 mod n: draws whose low product word falls below are rejected
	for i := 0; i < n; {
		r := bs.pcg.Uint64()
		for range 2 {
			m := (r & 0xffffffff) * n64
			r >>= 32
			if uint32(m) >= thresh && i < n {
				idx[i] = int(m >> 32)
				i++
			}
		}
	}
}

// fill16 is fill for n ≤ 256: four 16-bit draws per PCG output.
func (bs *ClusterBootstrap) fill16(idx []int) {
	n := len(idx)
	n32 := uint32(n)
	thresh := -uint16(n) % uint16(n) // 2^16 mod n
	i := 0
	for i+3 < n {
		r := bs.pcg.Uint64()
		m0 := uint32(r&0xffff) * n32
		m1 := uint32((r>>16)&0xffff) * n32
		m2 := uint32((r>>32)&0xffff) * n32
		m3 := uint32(r>>48) * n32
		if uint16(m0) >= thresh && uint16(m1) >= thresh && uint16(m2) >= thresh && uint16(m3) >= thresh {
			idx[i] = int(m0 >> 16)
			idx[i+1] = int(m1 >> 16)
			idx[i+2] = int(m2 >> 16)
			idx[i+3] = int(m3 >> 16)
			i += 4
			continue
		}
		for _, m := range [4]uint32{m0, m1, m2, m3} {
			if uint16(m) >= thresh {
				idx[i] = int(m >> 16)
				i++
			}
		}
	}
	for i < n {
		r := bs.pcg.Uint64()
		for range 4 {
			m := uint32(r&0xffff) * n32
			r >>= 16
			if uint16(m) >= thresh && i < n {
				idx[i] = int(m >> 16)
				i++
			}
		}
	}
}

// Mean bootstraps the mean of per-cluster values (e.g. per-task success rates, each task
// weighted equally).
func (bs *ClusterBootstrap) Mean(values []float64) (Interval, error) {
	return bs.Interval(len(values), func(idx []int) float64 {
		return gatherSum(values, idx) / float64(len(idx))
	})
}

// PairedDifference bootstraps the mean per-cluster difference a[i] − b[i] (e.g. human minus
// synthetic per task), resampling clusters so that each pair stays together.
func (bs *ClusterBootstrap) PairedDifference(a, b []float64) (Interval, error) {
	if len(a) != len(b) {
		return Interval{}, fmt.Errorf("bootstrap: paired difference of %d and %d clusters: %w", len(a), len(b), ErrInvalidArgument)
	}
	return bs.Interval(len(a), func(idx []int) float64 {
		return (gatherSum(a, idx) - gatherSum(b, idx)) / float64(len(idx))
	})
}

// RatioOfSums bootstraps Σnum/Σden over clusters, e.g. the pooled success rate when tasks have
// different numbers of sessions (num = successes, den = sessions per task). A resample whose
// denominators sum to 0 is undefined.
func (bs *ClusterBootstrap) RatioOfSums(num, den []float64) (Interval, error) {
	if len(num) != len(den) {
		return Interval{}, fmt.Errorf("bootstrap: ratio of %d numerators and %d denominators: %w", len(num), len(den), ErrInvalidArgument)
	}
	return bs.Interval(len(num), func(idx []int) float64 {
		var sn, sd float64
		for _, i := range idx {
			sn += num[i]
			sd += den[i]
		}
		if sd == 0 {
			return math.NaN()
		}
		return sn / sd
	})
}

// gatherSum returns Σ xs[idx[i]] with four independent accumulators, so that the additions
// pipeline instead of waiting on one another.
func gatherSum(xs []float64, idx []int) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+3 < len(idx); i += 4 {
		s0 += xs[idx[i]]
		s1 += xs[idx[i+1]]
		s2 += xs[idx[i+2]]
		s3 += xs[idx[i+3]]
	}
	for ; i < len(idx); i++ {
		s0 += xs[idx[i]]
	}
	return (s0 + s1) + (s2 + s3)
}

// quantileSelect returns the q-quantile of xs with linear interpolation between order
// statistics (Hyndman & Fan type 7, the default of R's quantile and NumPy's percentile). It
// reorders xs and runs in linear expected time.
func quantileSelect(xs []float64, q float64) float64 {
	n := len(xs)
	h := q * float64(n-1)
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return selectKth(xs, n-1)
	}
	a := selectKth(xs, lo)
	// After selection everything right of lo is >= a; the next order statistic is their minimum.
	b := xs[lo+1]
	for _, x := range xs[lo+2:] {
		if x < b {
			b = x
		}
	}
	return a + (h-float64(lo))*(b-a)
}

// selectKth reorders xs so that xs[k] is the k-th smallest (0-based) and returns it. Three-way
// partitioning keeps it linear when many values tie, as bootstrap means of 0/1 outcomes do.
func selectKth(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		// Median of three as the pivot.
		mid := lo + (hi-lo)/2
		a, b, c := xs[lo], xs[mid], xs[hi]
		var p float64
		switch {
		case (a <= b) == (b <= c):
			p = b
		case (b <= a) == (a <= c):
			p = a
		default:
			p = c
		}
		// Dutch national flag: [lo,lt) < p, [lt,i) == p, (gt,hi] > p.
		lt, i, gt := lo, lo, hi
		for i <= gt {
			switch x := xs[i]; {
			case x < p:
				xs[lt], xs[i] = xs[i], xs[lt]
				lt++
				i++
			case x > p:
				xs[i], xs[gt] = xs[gt], xs[i]
				gt--
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt - 1
		case k > gt:
			lo = gt + 1
		default:
			return xs[k]
		}
	}
	return xs[k]
}
