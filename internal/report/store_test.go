package report_test

import (
	"context"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/report"
	"github.com/voicebench/humanaudit/internal/report/reporttest"
	"github.com/voicebench/humanaudit/internal/store/storetest"
	"github.com/voicebench/humanaudit/internal/trace"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func taskFiles() []string {
	var out []string
	for _, id := range []string{"fnol-auto-glass", "it-vpn-incident", "utility-payment-arrangement"} {
		out = append(out, filepath.Join("..", "grade", "testdata", "tasks", id+".json"))
	}
	return out
}

// TestStudyReportEndToEnd builds a small study in PostgreSQL (human sessions through the plan with
// anchor repeats, synthetic repeats, exclusions, three annotators), loads it and checks the
// report's numbers against a computation made here, from what was stored, without the report's
// code.
func TestStudyReportEndToEnd(t *testing.T) {
	db := storetest.New(t)
	made := reporttest.Populate(t, db, reporttest.Spec{StudyID: "e2e", Seed: 9, Systems: []string{"alpha", "beta"},
		TaskFiles: taskFiles(), Seeds: 2, Annotators: 3})
	ctx := context.Background()
	in, err := report.Load(ctx, db, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	r, err := report.Build(in, report.Options{Seed: 3, Resamples: 2000, Planning: &report.PlanningOptions{Participants: 12}})
	if err != nil {
		t.Fatal(err)
	}

	type key struct {
		sys  string
		mode audit.Mode
	}
	counted := map[key][]reporttest.Session{}
	excluded, excludedPassed := 0, 0
	for _, s := range made.Sessions {
		if s.Exclusion != "" {
			excluded++
			if s.Grade.WS == 1 {
				excludedPassed++
			}
			continue
		}
		counted[key{s.System, s.Mode}] = append(counted[key{s.System, s.Mode}], s)
	}
	if excluded != 2 || r.Exclusions.Total != 2 || r.Exclusions.Passed != excludedPassed || excludedPassed < 1 {
		t.Errorf("exclusions: report %d (passed %d), stored %d (passed %d)", r.Exclusions.Total, r.Exclusions.Passed, excluded, excludedPassed)
	}
	if r.Counts[0].Mode != report.Human || r.Counts[0].Sessions != 8 || r.Counts[0].Excluded != 1 || r.Counts[0].Included != 7 {
		t.Errorf("human counts %+v, want 8 sessions (6 cells + 2 anchor repeats), 1 excluded", r.Counts[0])
	}

	// Workflow Success and the gates, with Wilson intervals computed here.
	for _, sr := range r.Systems {
		for _, m := range []struct {
			mode audit.Mode
			res  report.ModeResult
		}{{audit.ModeHuman, sr.Human}, {audit.ModeSynthetic, sr.Synthetic}} {
			ss := counted[key{sr.System.Label, m.mode}]
			ws := 0
			for _, s := range ss {
				ws += s.Grade.WS
			}
			lo, hi := wilson(ws, len(ss))
			got := m.res.WS
			if got.Successes != ws || got.N != len(ss) || !near(float64(got.Low), lo) || !near(float64(got.High), hi) {
				t.Errorf("%s %s WS = %+v, want %d/%d [%.6f, %.6f]", sr.System.Label, m.mode, got, ws, len(ss), lo, hi)
			}
			pv := 0
			for _, s := range ss {
				pv += s.Grade.PV
			}
			if m.res.PV.Successes != pv {
				t.Errorf("%s %s PV successes %d, want %d", sr.System.Label, m.mode, m.res.PV.Successes, pv)
			}
		}
	}

	// Deltas paired by task: WS, AFA and TTR, per system and pooled.
	taskMean := func(ss []reporttest.Session, task string, f func(reporttest.Session) (float64, bool)) (float64, bool) {
		var sum float64
		n := 0
		for _, s := range ss {
			if s.Task != task {
				continue
			}
			if v, ok := f(s); ok {
				sum += v
				n++
			}
		}
		return sum / float64(n), n > 0
	}
	measures := map[report.Metric]func(reporttest.Session) (float64, bool){
		report.MetricWS:  func(s reporttest.Session) (float64, bool) { return float64(s.Grade.WS), true },
		report.MetricAFA: func(s reporttest.Session) (float64, bool) { return s.Grade.AFA.Value, s.Grade.AFA.Total > 0 },
		report.MetricTTR: func(s reporttest.Session) (float64, bool) {
			if s.Grade.TTRMS == nil {
				return 0, false
			}
			return float64(*s.Grade.TTRMS) / 1000, true
		},
	}
	for m, f := range measures {
		pooled := map[string][]float64{}
		for _, sys := range []string{"alpha", "beta"} {
			var diffs []float64
			for _, tk := range made.Tasks {
				h, ok1 := taskMean(counted[key{sys, audit.ModeHuman}], tk.ID, f)
				s, ok2 := taskMean(counted[key{sys, audit.ModeSynthetic}], tk.ID, f)
				if ok1 && ok2 {
					diffs = append(diffs, h-s)
					pooled[tk.ID] = append(pooled[tk.ID], h-s)
				}
			}
			checkDelta(t, r, sys, m, diffs)
		}
		var perTask []float64
		for _, tk := range made.Tasks {
			if d := pooled[tk.ID]; len(d) > 0 {
				perTask = append(perTask, mean(d))
			}
		}
		checkDelta(t, r, report.AllSystems, m, perTask)
	}

	// pass@k and pass^k of the synthetic repeats (k = 2, over tasks with two sessions).
	for _, sr := range r.Systems {
		var at, hat float64
		n := 0
		for _, tk := range made.Tasks {
			var c, tot int
			for _, s := range counted[key{sr.System.Label, audit.ModeSynthetic}] {
				if s.Task == tk.ID {
					tot++
					c += s.Grade.WS
				}
			}
			if tot < 2 {
				continue
			}
			pairs := float64(tot * (tot - 1) / 2)
			at += 1 - float64((tot-c)*(tot-c-1)/2)/pairs
			hat += float64(c*(c-1)/2) / pairs
			n++
		}
		pk := sr.Synthetic.PassK
		if pk == nil || pk.K != 2 || pk.Tasks != n || !near(float64(pk.PassAtK), at/float64(n)) || !near(float64(pk.PassHatK), hat/float64(n)) {
			t.Errorf("%s synthetic pass@k = %+v, want k=2 over %d tasks: %.4f / %.4f", sr.System.Label, pk, n, at/float64(n), hat/float64(n))
		}
	}

	// Anchor agreement: fnol-auto-glass is the anchor task; each system's two human sessions.
	for _, a := range r.Anchor {
		var ws []int
		for _, s := range counted[key{a.System, audit.ModeHuman}] {
			if s.Task == "fnol-auto-glass" {
				ws = append(ws, s.Grade.WS)
			}
		}
		if len(ws) != 2 || a.Pairs != 1 || (a.WSAgree.Successes == 1) != (ws[0] == ws[1]) {
			t.Errorf("%s anchor %+v, stored WS %v", a.System, a, ws)
		}
	}
	if len(r.Anchor) == 0 {
		t.Errorf("no anchor agreement reported")
	}

	// Annotators: means, leakage, Krippendorff's alpha (ordinal) and Fleiss' kappa computed here.
	a := r.Annotators
	var fid, nat, leak float64
	for _, x := range made.Ratings {
		fid += float64(x.Fidelity)
		nat += float64(x.Naturalness)
		if x.Leakage {
			leak++
		}
	}
	n := float64(len(made.Ratings))
	if a == nil || a.Ratings != len(made.Ratings) || a.Annotators != 3 || !near(float64(a.Fidelity.Estimate), fid/n) ||
		!near(float64(a.Naturalness.Estimate), nat/n) || !near(float64(a.Leakage.Estimate), leak/n) {
		t.Fatalf("annotators %+v, want means %.4f %.4f leakage %.4f", a, fid/n, nat/n, leak/n)
	}
	units := map[string][]int{}
	leakVotes := map[string][2]int{}
	for _, x := range made.Ratings {
		units[x.Item] = append(units[x.Item], x.Fidelity)
		v := leakVotes[x.Item]
		if x.Leakage {
			v[1]++
		} else {
			v[0]++
		}
		leakVotes[x.Item] = v
	}
	if want := ordinalAlpha(units); !near(float64(a.FidelityAlpha.Alpha), want) {
		t.Errorf("fidelity alpha %v, want %v", a.FidelityAlpha.Alpha, want)
	}
	if want := fleiss(leakVotes, 3); !near(float64(a.LeakageKappa.Kappa), want) {
		t.Errorf("leakage kappa %v, want %v", a.LeakageKappa.Kappa, want)
	}

	// Response latency: caller.speech_end to the next agent.speech_start, pooled per system/mode.
	for _, sr := range r.Systems {
		var lat []float64
		for _, s := range counted[key{sr.System.Label, audit.ModeSynthetic}] {
			lat = append(lat, latencies(s.Events)...)
		}
		sort.Float64s(lat)
		if sr.Synthetic.Latency.Responses != len(lat) || !near(float64(sr.Synthetic.Latency.MedianMS), median(lat)) {
			t.Errorf("%s synthetic latency %+v, want %d responses, median %v", sr.System.Label, sr.Synthetic.Latency, len(lat), median(lat))
		}
	}

	// Cost: the first system's provider reported usage, the second's did not.
	var in0 float64
	calls := 0
	for _, s := range counted[key{"alpha", audit.ModeSynthetic}] {
		calls++
		for _, e := range s.Events {
			if e.Type == trace.AgentUsage {
				v, _ := strconv.Atoi(e.Meta["input_tokens"])
				in0 += float64(v)
			}
		}
	}
	if c := r.Systems[0].Synthetic.Cost; c.CallsWithUsage != calls || !near(float64(c.InputTokensPerCall), in0/float64(calls)) {
		t.Errorf("alpha cost %+v, want %d calls, %.2f input tokens per call", c, calls, in0/float64(calls))
	}
	if c := r.Systems[1].Synthetic.Cost; c.CallsWithUsage != 0 || !c.InputTokensPerCall.IsNaN() {
		t.Errorf("beta reported no usage, cost %+v", c)
	}

	// Field misses of one task, both modes.
	for _, fm := range r.FieldMiss {
		var hm, hn, sm, sn int
		for k, ss := range counted {
			for _, s := range ss {
				if s.Task != fm.Task {
					continue
				}
				for _, f := range s.Grade.Fields {
					if f.Field != fm.Field {
						continue
					}
					if k.mode == audit.ModeHuman {
						hn++
						if !f.Pass {
							hm++
						}
					} else {
						sn++
						if !f.Pass {
							sm++
						}
					}
				}
			}
		}
		if fm.HumanMiss != hm || fm.HumanN != hn || fm.SynthMiss != sm || fm.SynthN != sn {
			t.Errorf("field misses %+v, want human %d/%d synthetic %d/%d", fm, hm, hn, sm, sn)
		}
	}
	if r.Planning == nil || r.Planning.SessionsPerParticipant != 3 {
		t.Errorf("planning %+v: want the plan's 3 sessions per participant", r.Planning)
	}

	// Loading and building again gives the same files, byte for byte.
	in2, err := report.Load(ctx, db, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := report.Build(in2, report.Options{Seed: 3, Resamples: 2000, Planning: &report.PlanningOptions{Participants: 12}, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	f1, _ := report.Render(r)
	f2, _ := report.Render(r2)
	for i := range f1 {
		if string(f1[i].Data) != string(f2[i].Data) {
			t.Errorf("%s differs when regenerated", f1[i].Path)
		}
	}
}

func checkDelta(t *testing.T, r *report.Report, sys string, m report.Metric, diffs []float64) {
	t.Helper()
	for _, d := range r.Deltas {
		if d.System != sys || d.Metric != m {
			continue
		}
		if d.Diff.Clusters != len(diffs) || !near(float64(d.Diff.Estimate), mean(diffs)) {
			t.Errorf("%s %s delta %+v, want %.6f over %d tasks", sys, m, d.Diff, mean(diffs), len(diffs))
		}
		if !d.Diff.Low.IsNaN() && (d.Diff.Low > d.Diff.Estimate || d.Diff.High < d.Diff.Estimate) {
			t.Errorf("%s %s interval [%v, %v] excludes %v", sys, m, d.Diff.Low, d.Diff.High, d.Diff.Estimate)
		}
		if !near(float64(d.Human-d.Synthetic), mean(diffs)) {
			t.Errorf("%s %s: human %v − synthetic %v ≠ delta %v", sys, m, d.Human, d.Synthetic, mean(diffs))
		}
		return
	}
	t.Errorf("no delta for %s %s", sys, m)
}

func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) < 1e-9
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// wilson is the Wilson score interval at 95% (Newcombe 1998, method 3).
func wilson(k, n int) (float64, float64) {
	z := 1.959963984540054
	p, nf := float64(k)/float64(n), float64(n)
	c := (p + z*z/(2*nf)) / (1 + z*z/nf)
	h := z / (1 + z*z/nf) * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	return math.Max(0, c-h), math.Min(1, c+h)
}

// latencies pairs each end of caller speech with the agent's next speech start, unless the caller
// spoke again first (text-level traces are in time order).
func latencies(ev []trace.Event) []float64 {
	var out []float64
	for i, e := range ev {
		if e.Type != trace.CallerSpeechEnd {
			continue
		}
		for _, f := range ev[i+1:] {
			if f.Type == trace.CallerSpeechStart {
				break
			}
			if f.Type == trace.AgentSpeechStart {
				out = append(out, float64(f.T-e.T))
				break
			}
		}
	}
	return out
}

// ordinalAlpha is Krippendorff's alpha with the ordinal metric, from the coincidence matrix
// (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability").
func ordinalAlpha(units map[string][]int) float64 {
	o := map[[2]int]float64{}
	for _, vs := range units {
		m := float64(len(vs))
		if m < 2 {
			continue
		}
		for i := range vs {
			for j := range vs {
				if i != j {
					o[[2]int{vs[i], vs[j]}] += 1 / (m - 1)
				}
			}
		}
	}
	nc := map[int]float64{}
	var n float64
	for k, v := range o {
		nc[k[0]] += v
		n += v
	}
	var vals []int
	for v := range nc {
		vals = append(vals, v)
	}
	sort.Ints(vals)
	delta := func(c, k int) float64 {
		if c > k {
			c, k = k, c
		}
		var s float64
		for _, g := range vals {
			if g >= c && g <= k {
				s += nc[g]
			}
		}
		s -= (nc[c] + nc[k]) / 2
		return s * s
	}
	var do, de float64
	for _, c := range vals {
		for _, k := range vals {
			do += o[[2]int{c, k}] * delta(c, k)
			de += nc[c] * nc[k] * delta(c, k)
		}
	}
	return 1 - (n-1)*do/de
}

// fleiss is Fleiss' kappa (1971) of two categories with m ratings per item.
func fleiss(votes map[string][2]int, m int) float64 {
	var pbar, p1 float64
	for _, v := range votes {
		pbar += float64(v[0]*v[0]+v[1]*v[1]-m) / float64(m*(m-1))
		p1 += float64(v[1])
	}
	N := float64(len(votes))
	pbar /= N
	p1 /= N * float64(m)
	pe := p1*p1 + (1-p1)*(1-p1)
	return (pbar - pe) / (1 - pe)
}
