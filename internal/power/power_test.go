package power

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/report"
	"github.com/voicebench/humanaudit/internal/study"
)

// The closed-form detectable delta, (t_.975 + t_.8)·√Var(Δ) with Var(Δ) summed over each task's
// human sessions and synthetic runs, agrees within 5% with the delta the simulated studies detect
// 80% of the time when analysed with the report's own intervals, for three designs: one human
// session per task (5 systems × 24 tasks), 1.25 per task (the same plus 6 anchor repeats: 30
// sessions per system) and 5 per task (five such plans by different participants: 120 per
// system). Each design's simulated delta is the mean over its five systems (1,000 studies each);
// every system's own is checked too, more loosely. The old formula, s²(1 + 1/k)/n, would have
// been off by 10% to 40% here (logged).
func TestClosedFormMatchesSimulatedDetectableDelta(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 3 × 1,000 studies")
	}
	tasks, anchors := suiteTasks()
	systems := systemLabels(5)
	var five []study.Session
	for c := range 5 {
		five = append(five, mustPlan(t, systems, tasks, nil, 5, int64(11+c), string(rune('A'+c)))...)
	}
	designs := []struct {
		name    string
		plan    []study.Session
		perTask float64
	}{
		{"one session per task", mustPlan(t, systems, tasks, nil, 5, 7, "P"), 1},
		{"1.25 per task (24 tasks + 6 anchors)", mustPlan(t, systems, tasks, anchors, 5, 7, "P"), 1.25},
		{"5 per task", five, 5},
	}
	model := spreadModel(systems, tasks, 0.6, 0.95, 0.6, 0.9, 0.5, 0.8)
	for _, d := range designs {
		sim, err := NewSimulator(Design{Plan: d.plan, SyntheticRuns: 3}, model)
		if err != nil {
			t.Fatal(err)
		}
		res, err := sim.Run(Options{Studies: 1000, Delta: -0.15, Seed: 21, Rows: systems})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []report.Metric{report.MetricWS, report.MetricAFA} {
			var simSum, closedSum, oldSum float64
			n := 0
			for _, r := range res.Rows {
				if r.Metric != m {
					continue
				}
				if got := float64(r.Sessions) / float64(r.Tasks); math.Abs(got-d.perTask) > 1e-9 {
					t.Fatalf("%s: %s has %v sessions per task, want %v", d.name, r.System, got, d.perTask)
				}
				ratio := r.Detectable / r.ClosedDetectable
				if math.IsNaN(ratio) || math.Abs(ratio-1) > 0.08 {
					t.Errorf("%s %s %s: simulated detectable delta %.4f, closed form %.4f (ratio %.3f)", d.name, r.System, m, r.Detectable, r.ClosedDetectable, ratio)
				}
				simSum += r.Detectable
				closedSum += r.ClosedDetectable
				oldSum += oldFormula(sim, r.System, m)
				n++
			}
			s, c, o := simSum/float64(n), closedSum/float64(n), oldSum/float64(n)
			t.Logf("%s, %s: simulated %.4f, closed form %.4f (ratio %.3f); old formula %.4f (ratio %.3f)", d.name, m, s, c, s/c, o, s/o)
			if math.Abs(s/c-1) > 0.05 {
				t.Errorf("%s, %s: simulated detectable delta %.4f, closed form %.4f: %.1f%% apart, want within 5%%", d.name, m, s, c, 100*math.Abs(s/c-1))
			}
		}
	}
}

// oldFormula is the planning formula the report used before: (z_.975 + z_.8)·√(s²(1 + 1/k)/n)
// with s² the mean within-task variance of a synthetic run and n the system's human sessions.
func oldFormula(sim *Simulator, system string, m report.Metric) float64 {
	k, _ := kindOf(m)
	j := 0
	for i, s := range sim.systems {
		if s == system {
			j = i
		}
	}
	var s2 float64
	cal := sim.cal[j]
	for i, c := range cal.cells {
		if k == metricWS {
			s2 += c.WS * (1 - c.WS)
		} else {
			s2 += afaVariance(cal.afaC[i], sim.model.SessionSD, 0, c.Fields)
		}
	}
	s2 /= float64(len(cal.cells))
	kk := float64(sim.design.SyntheticRuns)
	return 2.8015852 * math.Sqrt(s2*(1+1/kk)/float64(len(sim.humans[j])))
}

// A simulation is a pure function of its seed: the same seed gives the same rows whatever the
// number of workers; another seed moves the simulated figures but not the closed-form ones.
func TestRunIsDeterministic(t *testing.T) {
	tasks, anchors := suiteTasks()
	systems := systemLabels(3)
	plan := mustPlan(t, systems, tasks[:12], anchors[:3], 3, 5, "P")
	sim, err := NewSimulator(Design{Plan: plan, SyntheticRuns: 2, Exclusion: 0.1}, spreadModel(systems, tasks[:12], 0.5, 0.9, 0.6, 0.9, 0.5, 0.8))
	if err != nil {
		t.Fatal(err)
	}
	run := func(seed uint64, workers int) *Result {
		res, err := sim.Run(Options{Studies: 60, Resamples: 300, Delta: -0.2, Seed: seed, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b, c := run(4, 1), run(4, 3), run(5, 2)
	if len(a.Rows) != 8 { // 3 systems and the pooled row, WS and AFA
		t.Fatalf("%d rows, want 8", len(a.Rows))
	}
	moved := false
	for i := range a.Rows {
		x, y, z := a.Rows[i], b.Rows[i], c.Rows[i]
		if !sameRow(x, y) {
			t.Errorf("row %d differs with the number of workers:\n%+v\n%+v", i, x, y)
		}
		if x.ClosedDetectable != z.ClosedDetectable {
			t.Errorf("row %d: closed form depends on the seed", i)
		}
		if x.Power != z.Power || x.Detectable != z.Detectable {
			moved = true
		}
	}
	if !moved {
		t.Errorf("another seed gave the same simulated figures")
	}
}

func sameRow(x, y Row) bool {
	eq := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
	return x.System == y.System && x.Metric == y.Metric && eq(x.Power, y.Power) && eq(x.Detectable, y.Detectable) &&
		eq(x.MeanEstimate, y.MeanEstimate) && eq(x.SDEstimate, y.SDEstimate) && eq(x.ClosedDetectable, y.ClosedDetectable)
}

// With common random numbers a study's interval bound moves monotonically with the delta, which
// the search relies on: a study that detects a delta detects every larger one.
func TestDetectionIsMonotoneInDelta(t *testing.T) {
	tasks, anchors := suiteTasks()
	systems := systemLabels(2)
	plan := mustPlan(t, systems, tasks, anchors, 4, 5, "P")
	sim, err := NewSimulator(Design{Plan: plan, SyntheticRuns: 3, Exclusion: 0.05}, spreadModel(systems, tasks, 0.6, 0.95, 0.6, 0.9, 0.7, 0.8))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		for _, m := range []report.Metric{report.MetricWS, report.MetricAFA} {
			prev := math.Inf(1)
			for _, d := range []float64{-0.02, -0.06, -0.1, -0.14, -0.2, -0.3} {
				ds, err := sim.Analyse(3, i, d, []string{"sys-a"}, []report.Metric{m}, 500, 0.95)
				if err != nil {
					t.Fatal(err)
				}
				hi := float64(ds[0].Diff.High)
				if hi > prev+1e-12 {
					t.Fatalf("study %d %s: the upper bound rose from %v to %v as the delta fell to %v", i, m, prev, hi, d)
				}
				prev = hi
			}
		}
	}
}

func TestValidation(t *testing.T) {
	tasks, anchors := suiteTasks()
	systems := systemLabels(2)
	plan := mustPlan(t, systems, tasks, anchors, 4, 5, "P")
	good := spreadModel(systems, tasks, 0.6, 0.95, 0.6, 0.9, 0.5, 0.8)
	bad := spreadModel(systems, tasks, 0.6, 0.95, 0.6, 0.9, 0.5, 0.8)
	bad.Cells["sys-b"]["task-03"] = Cell{WS: 1, AFA: 0.5, Fields: 4}
	missing := spreadModel(systems[:1], tasks, 0.6, 0.95, 0.6, 0.9, 0.5, 0.8)
	for _, c := range []struct {
		name   string
		design Design
		model  Model
		want   error
		text   string
	}{
		{"a rate of 1 cannot move", Design{Plan: plan, SyntheticRuns: 3}, bad, ErrInvalidModel, "system sys-b task task-03: ws 1"},
		{"a system without rates", Design{Plan: plan, SyntheticRuns: 3}, missing, ErrInvalidModel, "no rates for system sys-b"},
		{"no synthetic runs", Design{Plan: plan}, good, ErrInvalidDesign, "0 synthetic runs"},
		{"an exclusion rate of 1", Design{Plan: plan, SyntheticRuns: 3, Exclusion: 1}, good, ErrInvalidDesign, "exclusion rate 1"},
	} {
		_, err := NewSimulator(c.design, c.model)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: err %v, want %v naming %q", c.name, err, c.want, c.text)
		}
	}
	sim, _ := NewSimulator(Design{Plan: plan, SyntheticRuns: 3}, good)
	if _, err := sim.Run(Options{Studies: 20, Delta: -0.9}); !errors.Is(err, ErrInvalidDesign) || !strings.Contains(err.Error(), "out of reach") {
		t.Errorf("a delta beyond the rates: %v", err)
	}
	if _, err := sim.Run(Options{Studies: 20, Delta: 0}); !errors.Is(err, ErrInvalidDesign) {
		t.Errorf("a zero delta: %v", err)
	}
}

// Off a terminal the progress display writes a line per tenth of each phase and never redraws.
func TestProgressLines(t *testing.T) {
	tasks, anchors := suiteTasks()
	systems := systemLabels(2)
	plan := mustPlan(t, systems, tasks[:8], anchors[:2], 4, 5, "P")
	sim, err := NewSimulator(Design{Plan: plan, SyntheticRuns: 2}, spreadModel(systems, tasks[:8], 0.5, 0.9, 0.6, 0.9, 0.5, 0.8))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	bar := NewBar(&out)
	if _, err := sim.Run(Options{Studies: 100, Resamples: 200, Delta: -0.3, Metrics: []report.Metric{report.MetricWS}, Progress: bar.Update}); err != nil {
		t.Fatal(err)
	}
	bar.Done()
	s := out.String()
	if strings.Contains(s, "\r") {
		t.Errorf("progress on a non-terminal redraws: %q", s)
	}
	for _, want := range []string{"] 0/100 studies analysed at delta -0.300", "] 100/100 studies analysed", "] 3/3 rows searched for the delta detected with 80% power: (all systems) ws"} {
		if !strings.Contains(s, want) {
			t.Errorf("progress lacks %q:\n%s", want, s)
		}
	}
	if n := strings.Count(s, "studies analysed"); n > 11 {
		t.Errorf("%d progress lines for 100 studies, want one per tenth:\n%s", n, s)
	}
}

// On a terminal the display redraws one line per phase in place and ends each with a newline.
func TestProgressBarOnATerminal(t *testing.T) {
	var out bytes.Buffer
	bar := &Bar{w: &out, tty: true}
	for i := 0; i <= 4; i++ {
		bar.Update(Progress{Phase: "studies", Done: i, Total: 4})
	}
	bar.Update(Progress{Phase: "rows", Label: "sys-a ws", Done: 1, Total: 2})
	bar.Done()
	s := out.String()
	if strings.Count(s, "\r") != 6 || strings.Count(s, "\n") != 2 || !strings.Contains(s, "[##############################] 4/4 studies") ||
		!strings.Contains(s, "1/2 rows: sys-a ws") {
		t.Errorf("terminal progress %q", s)
	}
}
