package report

import (
	"testing"
	"time"
)

// BenchmarkReport measures a full report (every table, interval and figure, rendered to all files)
// for 5 systems × 24 tasks × 3 synthetic repeats with 10,000 bootstrap resamples per interval. The
// data is generated in memory, so this measures the report, not the database.
func BenchmarkReport(b *testing.B) {
	in := genStudy(fullStudy, 1)
	opts := Options{Seed: 42, Resamples: 10000, Planning: &PlanningOptions{Participants: 25}}
	var intervals int
	start := time.Now()
	for b.Loop() {
		r, err := Build(in, opts)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Render(r); err != nil {
			b.Fatal(err)
		}
		intervals = countIntervals(r)
	}
	b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "s/report")
	b.ReportMetric(float64(intervals), "intervals/report")
}

// countIntervals counts the bootstrap intervals a report holds.
func countIntervals(r *Report) int {
	n := 0
	count := func(iv Interval) {
		if iv.Clusters > 0 {
			n++
		}
	}
	for _, s := range r.Systems {
		for _, m := range []ModeResult{s.Human, s.Synthetic} {
			count(m.PassAt1)
			count(m.AFA)
			count(m.TTR.MeanS)
		}
	}
	for _, d := range r.Deltas {
		count(d.Diff)
	}
	for _, s := range r.Slices {
		count(s.Delta)
	}
	if a := r.Annotators; a != nil {
		for _, iv := range []Interval{a.Fidelity, a.Naturalness, a.Leakage, a.FidelityAlpha.Interval, a.NaturalnessAlpha.Interval} {
			count(iv)
		}
	}
	return n
}
