package power

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkPowerPlan150 is audit study plan --power for the 150-session plan (5 systems × 24
// tasks + 6 anchor repeats, 5 sessions per participant: 30 participants) with 2,000 simulated
// studies: the power at −0.15 for every system and the pooled row, WS and AFA, and the delta
// detectable at 80% power for each, every study analysed with the report's intervals (2,000
// resamples). s/power is the figure to hold under 60 s on 2 cores; load1 is the machine's
// one-minute load average when the run ended (the machine is shared).
func BenchmarkPowerPlan150(b *testing.B) {
	tasks, anchors := suiteTasks()
	systems := systemLabels(5)
	plan := mustPlan(b, systems, tasks, anchors, 5, 7, "P")
	model := spreadModel(systems, tasks, 0.6, 0.95, 0.6, 0.9, 0.5, 0.8)
	var res *Result
	for b.Loop() {
		// A new simulator each time: nothing is cached between runs.
		sim, err := NewSimulator(Design{Plan: plan, SyntheticRuns: 3, Exclusion: 0.05}, model)
		if err != nil {
			b.Fatal(err)
		}
		res, err = sim.Run(Options{Studies: 2000, Delta: -0.15, Seed: 7})
		if err != nil {
			b.Fatal(err)
		}
	}
	perOp := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(perOp, "s/power")
	b.ReportMetric(float64(res.Analyses)/perOp, "analyses/s")
	b.ReportMetric(float64(res.Analyses), "analyses/power")
	if l, ok := load1(); ok {
		b.ReportMetric(l, "load1")
	}
}

// load1 reads the one-minute load average (Linux).
func load1() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil
}
