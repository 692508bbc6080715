package power

import (
	"math"
	"runtime"
	"sync"
	"testing"

	"github.com/voicebench/humanaudit/internal/report"
	"github.com/voicebench/humanaudit/internal/stats"
)

// The report's nominal 95% intervals cover the true delta 93–97% of the time in studies of the
// suite's shape: the 150-session plan (5 systems × 24 tasks + 6 anchor repeats, 30 participants),
// 3 synthetic runs per task, rates spread over the tasks, a participant effect, a known true delta
// of −0.10 for every system. 1,200 studies give 6,000 system intervals per metric: a coverage of
// 95% has a Monte Carlo standard error of 0.28 points, so the 93–97% band is ±7 standard errors
// wide, and an interval that truly covered 92% would fall outside it. The plain (unexpanded)
// percentile interval of the same data is logged beside: it covers about 93%.
func TestIntervalCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 1,200 studies")
	}
	tasks, anchors := suiteTasks()
	systems := systemLabels(5)
	plan := mustPlan(t, systems, tasks, anchors, 5, 3, "P")
	sim, err := NewSimulator(Design{Plan: plan, SyntheticRuns: 3}, spreadModel(systems, tasks, 0.6, 0.95, 0.6, 0.9, 0.5, 0.8))
	if err != nil {
		t.Fatal(err)
	}
	const studies, resamples, delta = 1200, 2000, -0.10
	metrics := []report.Metric{report.MetricWS, report.MetricAFA}
	rows := append(append([]string(nil), systems...), report.AllSystems)
	// hits[study][metric][row]: expanded percentile, BCa, plain percentile.
	type hit struct{ pct, bca, plain bool }
	hits := make([][][]hit, studies)
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	errs := make([]error, workers)
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := sim.newWorker()
			w.bca = true
			plain, _ := stats.NewClusterBootstrap(resamples, 0.95, 0)
			for i := k; i < studies; i += workers {
				ds, err := w.analyse(9, i, delta, rows, metrics, resamples, 0.95)
				if err != nil {
					errs[k] = err
					return
				}
				hits[i] = make([][]hit, len(metrics))
				for mi, m := range metrics {
					for ri, row := range rows {
						d := ds[ri*len(metrics)+mi].Diff
						if d.Clusters != 24 {
							errs[k] = errorf("study %d %s %s paired %d tasks, want 24", i, row, m, d.Clusters)
							return
						}
						h := hit{pct: d.Low <= delta && delta <= d.High, bca: d.BCaLow <= delta && delta <= d.BCaHigh}
						if row != report.AllSystems {
							hv, sv := taskMeans(w, row, m, sim.tasks)
							plain = reseed(plain, resamples, studySeed(9, i))
							iv, _ := plain.PairedDifference(hv, sv)
							if math.Abs(iv.Estimate-float64(d.Estimate)) > 1e-12 {
								errs[k] = errorf("study %d %s %s: recomputed delta %v, report %v", i, row, m, iv.Estimate, d.Estimate)
								return
							}
							h.plain = iv.Low <= delta && delta <= iv.High
						}
						hits[i][mi] = append(hits[i][mi], h)
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for mi, m := range metrics {
		var pct, bca, plain, pooledPct, pooledBCa, n int
		for i := range hits {
			for ri, h := range hits[i][mi] {
				if rows[ri] == report.AllSystems {
					pooledPct += b2i(h.pct)
					pooledBCa += b2i(h.bca)
					continue
				}
				pct += b2i(h.pct)
				bca += b2i(h.bca)
				plain += b2i(h.plain)
				n++
			}
		}
		cp, cb, cl := float64(pct)/float64(n), float64(bca)/float64(n), float64(plain)/float64(n)
		t.Logf("%s: %d system intervals: expanded percentile %.4f, expanded BCa %.4f, plain percentile %.4f (MC SE %.4f); pooled row over %d studies: percentile %.4f, BCa %.4f",
			m, n, cp, cb, cl, math.Sqrt(0.95*0.05/float64(n)), studies, float64(pooledPct)/studies, float64(pooledBCa)/studies)
		for _, c := range []struct {
			name string
			v    float64
		}{{"percentile", cp}, {"BCa", cb}} {
			if c.v < 0.93 || c.v > 0.97 {
				t.Errorf("%s %s intervals cover the true delta %.2f%% of the time, want 93–97%%", m, c.name, 100*c.v)
			}
		}
	}
}

// taskMeans are a system's human and synthetic task means in the worker's last study.
func taskMeans(w *worker, system string, m report.Metric, tasks []string) (h, s []float64) {
	sum := map[report.Mode]map[string]float64{report.Human: {}, report.Synthetic: {}}
	cnt := map[report.Mode]map[string]float64{report.Human: {}, report.Synthetic: {}}
	for _, sess := range w.sessions {
		if sess.System != system || sess.Exclusion != nil {
			continue
		}
		v := float64(sess.Grade.WS)
		if m == report.MetricAFA {
			v = sess.Grade.AFA.Value
		}
		sum[sess.Mode][sess.Task] += v
		cnt[sess.Mode][sess.Task]++
	}
	for _, t := range tasks {
		h = append(h, sum[report.Human][t]/cnt[report.Human][t])
		s = append(s, sum[report.Synthetic][t]/cnt[report.Synthetic][t])
	}
	return h, s
}

func reseed(bs *stats.ClusterBootstrap, resamples int, seed uint64) *stats.ClusterBootstrap {
	if bs.Seed() == seed {
		return bs
	}
	nb, _ := stats.NewClusterBootstrap(resamples, 0.95, seed)
	return nb
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
