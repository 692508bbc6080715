package power

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/voicebench/humanaudit/internal/parallel"
	"github.com/voicebench/humanaudit/internal/report"
)

// Run simulates opts.Studies studies of the design. First every study is drawn at opts.Delta and
// analysed for every row (each system, the pooled row) and metric: the power is the share whose
// interval excludes 0. Then, for each row and metric, the delta detectable with the target power
// is found by bisection on |delta| in opts.Delta's direction. With common random numbers a
// study's interval bound moves monotonically with the delta, so each study detects every delta
// beyond a threshold of its own; a study whose answer at some |delta| is known from an earlier
// step is not analysed again, which leaves only the studies whose threshold lies inside the
// bracket to analyse at each step.
func (s *Simulator) Run(opts Options) (*Result, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	res := &Result{Studies: opts.Studies, Resamples: opts.Resamples, Delta: opts.Delta, Alpha: opts.Alpha, Target: opts.Target,
		Exclusion: s.design.Exclusion, ParticipantSD: s.model.ParticipantSD, SessionSD: s.model.SessionSD,
		SyntheticRuns: s.design.SyntheticRuns, Participants: len(s.slots), Sessions: len(s.design.Plan), Seed: opts.Seed}
	rows := opts.Rows
	if rows == nil {
		rows = append([]string(nil), s.systems...)
		if len(s.systems) > 1 {
			rows = append(rows, report.AllSystems)
		}
	}
	level := 1 - opts.Alpha
	sign := math.Copysign(1, opts.Delta)
	mag := math.Abs(opts.Delta)
	for j := range s.systems {
		for _, m := range opts.Metrics {
			k, _ := kindOf(m)
			if _, ok := s.shift(j, k, opts.Delta); !ok {
				return nil, fmt.Errorf("power: a delta of %+.3f is out of reach for system %s %s (the human outcomes would leave [0, 1]): %w",
					opts.Delta, s.systems[j], m, ErrInvalidDesign)
			}
		}
	}

	// Phase 1: every study, every row, at the delta asked.
	type outcome struct{ est, low, high float64 }
	at := make([][]outcome, opts.Studies) // [study][row × metric]
	progress := func(phase, label string, done, total int) {
		if opts.Progress != nil {
			opts.Progress(Progress{Phase: phase, Label: label, Done: done, Total: total})
		}
	}
	phase := fmt.Sprintf("studies analysed at delta %+.3f", opts.Delta)
	progress(phase, "", 0, opts.Studies)
	var done atomic.Int64
	var progressMu sync.Mutex
	shown := 0 // the last count shown: workers finish out of order, the display never goes back
	err := s.parallel(opts.Workers, opts.Studies, func(w *worker, i int) error {
		ds, err := w.analyse(opts.Seed, i, opts.Delta, rows, opts.Metrics, opts.Resamples, level)
		if err != nil {
			return err
		}
		at[i] = make([]outcome, len(ds))
		for x, d := range ds {
			at[i][x] = outcome{float64(d.Diff.Estimate), float64(d.Diff.Low), float64(d.Diff.High)}
		}
		n := int(done.Add(1))
		if opts.Progress != nil && (n%10 == 0 || n == opts.Studies) {
			progressMu.Lock()
			if n > shown {
				shown = n
				progress(phase, "", n, opts.Studies)
			}
			progressMu.Unlock()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.Analyses = opts.Studies

	searches := len(rows) * len(opts.Metrics)
	x := 0
	for _, row := range rows {
		for _, m := range opts.Metrics {
			k, _ := kindOf(m)
			col := x
			x++
			r := Row{System: row, Metric: m}
			// Power and the estimates' spread at the delta asked.
			var rej int
			var sum, sum2 float64
			n := 0
			st := make([]threshold, opts.Studies)
			for i := range at {
				o := at[i][col]
				st[i] = threshold{rejectAt: math.Inf(1)}
				if o.low > 0 || o.high < 0 {
					rej++
				}
				if directional(o.low, o.high, sign) {
					st[i].rejectAt = mag
				} else {
					st[i].failAt = mag
				}
				if !math.IsNaN(o.est) {
					sum += o.est
					sum2 += o.est * o.est
					n++
				}
			}
			r.Power = float64(rej) / float64(opts.Studies)
			r.PowerSE = math.Sqrt(r.Power * (1 - r.Power) / float64(opts.Studies))
			if n > 1 {
				r.MeanEstimate = sum / float64(n)
				r.SDEstimate = math.Sqrt(max(0, (sum2-sum*sum/float64(n))/float64(n-1)))
			}
			v, tasks, _ := s.closedForm(row, k, opts.Delta)
			r.Tasks = tasks
			r.Sessions = s.plannedSessions(row)
			r.ClosedSE = math.Sqrt(v)
			r.ClosedPower = closedPower(opts.Delta, r.ClosedSE, tasks, opts.Alpha)
			r.ClosedDetectable = s.closedDetectable(row, k, sign, opts.Alpha, opts.Target)

			phase := fmt.Sprintf("rows searched for the delta detected with %.0f%% power", 100*opts.Target)
			label := fmt.Sprintf("%s %s", row, m)
			progress(phase, label, col, searches)
			n, err := s.search(&r, st, opts, row, m, sign, level)
			if err != nil {
				return nil, err
			}
			res.Analyses += n
			progress(phase, label, col+1, searches)
			res.Rows = append(res.Rows, r)
		}
	}
	return res, nil
}

// threshold is what is known of one study's detection threshold: it detects every |delta| ≥
// rejectAt and no |delta| ≤ failAt.
type threshold struct{ rejectAt, failAt float64 }

// directional says whether an interval excludes 0 on the side of sign.
func directional(low, high, sign float64) bool {
	if sign < 0 {
		return high < 0
	}
	return low > 0
}

// plannedSessions counts a row's planned human sessions.
func (s *Simulator) plannedSessions(row string) int {
	if row == report.AllSystems {
		return len(s.design.Plan)
	}
	for j, sys := range s.systems {
		if sys == row {
			return len(s.humans[j])
		}
	}
	return 0
}

// search finds the row's detectable delta at the target power by bisection on |delta|, and
// returns the number of studies it analysed.
func (s *Simulator) search(r *Row, st []threshold, opts Options, row string, m report.Metric, sign, level float64) (analyses int, err error) {
	k, _ := kindOf(m)
	reach := math.Inf(1)
	for j, sys := range s.systems {
		if row == report.AllSystems || sys == row {
			reach = math.Min(reach, s.cal[j].reach(s.model, k, sign))
		}
	}
	need := int(math.Ceil(opts.Target * float64(len(st))))
	// powerAt counts the studies detecting |delta| = d, analysing only those not yet known.
	powerAt := func(d float64) (int, error) {
		var unknown []int
		count := 0
		for i, t := range st {
			switch {
			case d >= t.rejectAt:
				count++
			case d <= t.failAt:
			default:
				unknown = append(unknown, i)
			}
		}
		analyses += len(unknown)
		hits := make([]bool, len(unknown))
		err := s.parallel(opts.Workers, len(unknown), func(w *worker, x int) error {
			ds, err := w.analyse(opts.Seed, unknown[x], sign*d, []string{row}, []report.Metric{m}, opts.Resamples, level)
			if err != nil {
				return err
			}
			hits[x] = directional(float64(ds[0].Diff.Low), float64(ds[0].Diff.High), sign)
			return nil
		})
		if err != nil {
			return 0, err
		}
		for x, i := range unknown {
			if hits[x] {
				st[i].rejectAt = d
				count++
			} else {
				st[i].failAt = d
			}
		}
		return count, nil
	}
	guess := r.ClosedDetectable
	if math.IsNaN(guess) || guess <= 0 {
		guess = math.Abs(opts.Delta)
	}
	guess = math.Min(guess, reach)
	lo, hi := 0.0, math.NaN()
	c, err := powerAt(guess)
	if err != nil {
		return analyses, err
	}
	const step = 1.15
	if c >= need {
		hi = guess
		for d := guess / step; ; d /= step {
			c, err := powerAt(d)
			if err != nil {
				return analyses, err
			}
			if c < need {
				lo = d
				break
			}
			hi = d
			if d < 1e-4 {
				break
			}
		}
	} else {
		lo = guess
		for d := guess * step; ; d *= step {
			if d >= reach {
				d = reach
			}
			c, err := powerAt(d)
			if err != nil {
				return analyses, err
			}
			if c >= need {
				hi = d
				break
			}
			lo = d
			if d >= reach {
				break
			}
		}
	}
	if math.IsNaN(hi) {
		r.Detectable, r.DetectableLow, r.DetectableHigh = math.NaN(), lo, math.NaN()
		r.Note = fmt.Sprintf("%.0f%% power is not reached within the deltas the rates allow (up to %.3f)", 100*opts.Target, reach)
		return analyses, nil
	}
	for hi-lo > math.Max(1e-4, 0.002*hi) {
		mid := (lo + hi) / 2
		c, err := powerAt(mid)
		if err != nil {
			return analyses, err
		}
		if c >= need {
			hi = mid
		} else {
			lo = mid
		}
	}
	r.Detectable, r.DetectableLow, r.DetectableHigh = (lo+hi)/2, lo, hi
	return analyses, nil
}

// parallel runs f for items 0..n−1 on up to workers goroutines, each with its own worker, and
// returns the first error.
func (s *Simulator) parallel(workers, n int, f func(w *worker, i int) error) error {
	return parallel.Run(workers, n, func() (*worker, error) { return s.workers.Get().(*worker), nil },
		func(w *worker) { s.workers.Put(w) }, f)
}
