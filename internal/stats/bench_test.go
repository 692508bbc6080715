package stats

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// reportCI reports the figures that matter for a bootstrap interval benchmark: milliseconds per
// 10,000-resample interval and resamples per second.
func reportCI(b *testing.B, resamplesPerOp int) {
	perOp := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(perOp*1e3, "ms/CI")
	b.ReportMetric(float64(resamplesPerOp)/perOp, "resamples/s")
}

// BenchmarkClusterBootstrapMean24 is one 10,000-resample percentile interval for the mean of 24
// per-task values: the unit of work of every task-level CI in the report.
func BenchmarkClusterBootstrapMean24(b *testing.B) {
	bs, _ := NewClusterBootstrap(10000, 0.95, 1)
	rng := rand.New(rand.NewPCG(1, 1))
	vals := make([]float64, 24)
	for i := range vals {
		vals[i] = float64(rng.IntN(4)) / 3 // per-task pass rates over 3 repeats
	}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = bs.Mean(vals)
	}
	reportCI(b, 10000)
}

// BenchmarkClusterBootstrapPaired24 is one 10,000-resample interval for a human-minus-synthetic
// difference paired by 24 tasks.
func BenchmarkClusterBootstrapPaired24(b *testing.B) {
	bs, _ := NewClusterBootstrap(10000, 0.95, 1)
	rng := rand.New(rand.NewPCG(2, 2))
	h := make([]float64, 24)
	s := make([]float64, 24)
	for i := range h {
		h[i], s[i] = float64(rng.IntN(4))/3, float64(rng.IntN(4))/3
	}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = bs.PairedDifference(h, s)
	}
	reportCI(b, 10000)
}

// BenchmarkStudyIntervals approximates the bootstrap load of a full report: 5 systems, each with
// 90 task-level intervals over 24 tasks (human, synthetic and their paired delta for ~30 metrics
// and slices), 10,000 resamples each. The figure to watch is ms/study against the 2 s budget.
func BenchmarkStudyIntervals(b *testing.B) {
	const systems, perSystem, tasks = 5, 90, 24
	bs, _ := NewClusterBootstrap(10000, 0.95, 1)
	rng := rand.New(rand.NewPCG(3, 3))
	h := make([]float64, tasks)
	s := make([]float64, tasks)
	for i := range h {
		h[i], s[i] = float64(rng.IntN(4))/3, float64(rng.IntN(4))/3
	}
	b.ReportAllocs()
	for b.Loop() {
		for range systems {
			for range perSystem / 3 {
				_, _ = bs.Mean(h)
				_, _ = bs.Mean(s)
				_, _ = bs.PairedDifference(h, s)
			}
		}
	}
	perOp := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(perOp*1e3, "ms/study")
	b.ReportMetric(float64(systems*perSystem), "CIs/study")
}

// BenchmarkAlphaBootstrap is a 10,000-resample unit bootstrap of ordinal alpha for an annotator
// study: 72 frozen utterances rated 1–5 by three annotators.
func BenchmarkAlphaBootstrap(b *testing.B) {
	rng := rand.New(rand.NewPCG(4, 4))
	var rs []Rating
	for u := range 72 {
		truth := 1 + rng.IntN(5)
		for r := range 3 {
			v := min(5, max(1, truth+rng.IntN(3)-1))
			rs = append(rs, Rating{Unit: fmt.Sprint(u), Rater: fmt.Sprint(r), Value: fmt.Sprint(v)})
		}
	}
	d, err := NewReliabilityData(rs, LevelOrdinal)
	if err != nil {
		b.Fatal(err)
	}
	bs, _ := NewClusterBootstrap(10000, 0.95, 1)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = d.BootstrapAlpha(bs)
	}
	reportCI(b, 10000)
}
