package media

import "time"

// latencyBucket and latencyBuckets set the LatencyHistogram's resolution and range: 10 µs steps
// up to 50 ms; anything above lands in an overflow count (and Max).
const (
	latencyBucket  = 10 * time.Microsecond
	latencyBuckets = int(50 * time.Millisecond / latencyBucket)
)

// LatencyHistogram counts per-frame server-added latencies with 10 µs resolution, so dashboards
// and benchmarks can read p50/p99 without keeping samples.
type LatencyHistogram struct {
	counts   [latencyBuckets]uint32
	overflow uint32
	n        uint64
	max      time.Duration
}

// Add records one latency.
func (h *LatencyHistogram) Add(d time.Duration) {
	d = max(d, 0)
	if i := int(d / latencyBucket); i < latencyBuckets {
		h.counts[i]++
	} else {
		h.overflow++
	}
	h.n++
	h.max = max(h.max, d)
}

// Merge adds another histogram's counts (for figures across sessions).
func (h *LatencyHistogram) Merge(o *LatencyHistogram) {
	for i := range h.counts {
		h.counts[i] += o.counts[i]
	}
	h.overflow += o.overflow
	h.n += o.n
	h.max = max(h.max, o.max)
}

// Sub removes the counts of an earlier snapshot of the same histogram, leaving what was recorded
// since (Max stays the overall maximum).
func (h *LatencyHistogram) Sub(earlier *LatencyHistogram) {
	for i := range h.counts {
		h.counts[i] -= earlier.counts[i]
	}
	h.overflow -= earlier.overflow
	h.n -= earlier.n
}

// Count returns the number of latencies recorded.
func (h *LatencyHistogram) Count() uint64 { return h.n }

// Max returns the largest latency recorded.
func (h *LatencyHistogram) Max() time.Duration { return h.max }

// Quantile returns the latency below which a fraction q of the frames fell (upper bucket edge,
// so it never understates); Max for the overflow range, 0 when empty.
func (h *LatencyHistogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += uint64(c)
		if seen >= rank {
			return min(time.Duration(i+1)*latencyBucket, h.max)
		}
	}
	return h.max
}

// LatencySummary is the part of a histogram a dashboard shows.
type LatencySummary struct {
	P50, P99, Max time.Duration // upper bucket edges (10 µs resolution), and the largest seen
	Frames        uint64        // how many frames or packets were measured
}

// Summary returns p50, p99 and max.
func (h *LatencyHistogram) Summary() LatencySummary {
	return LatencySummary{P50: h.Quantile(0.5), P99: h.Quantile(0.99), Max: h.max, Frames: h.n}
}
