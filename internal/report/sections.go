package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/voicebench/humanaudit/internal/stats"
)

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (b *builder) fieldMisses() {
	type acc struct {
		required  bool
		hMiss, hN int
		sMiss, sN int
	}
	var taskIDs []string
	for _, t := range b.in.Tasks {
		taskIDs = append(taskIDs, t.ID)
	}
	sort.Strings(taskIDs)
	for _, id := range taskIDs {
		per := map[string]*acc{}
		var order []string
		for _, f := range b.tasks[id].Fields {
			if per[f] == nil {
				per[f] = &acc{}
				order = append(order, f)
			}
		}
		var extra []string
		for i := range b.in.Sessions {
			s := &b.in.Sessions[i]
			if s.Task != id || !included(s) {
				continue
			}
			for _, fr := range s.Grade.Fields {
				a := per[fr.Field]
				if a == nil {
					a = &acc{}
					per[fr.Field] = a
					extra = append(extra, fr.Field)
				}
				a.required = a.required || fr.Required
				if s.Mode == Human {
					a.hN++
					if !fr.Pass {
						a.hMiss++
					}
				} else {
					a.sN++
					if !fr.Pass {
						a.sMiss++
					}
				}
			}
		}
		sort.Strings(extra)
		for _, f := range append(order, extra...) {
			a := per[f]
			if a.hN == 0 && a.sN == 0 {
				continue
			}
			b.rep.FieldMiss = append(b.rep.FieldMiss, FieldMiss{Task: id, Field: f, Required: a.required,
				HumanMiss: a.hMiss, HumanN: a.hN, SynthMiss: a.sMiss, SynthN: a.sN,
				HumanRate: rate(a.hMiss, a.hN), SynthRate: rate(a.sMiss, a.sN)})
		}
	}
}

func rate(k, n int) Num {
	if n == 0 {
		return NaN()
	}
	return Num(float64(k) / float64(n))
}

func (b *builder) exclusions() {
	er := &b.rep.Exclusions
	by := map[string]*ReasonCount{}
	for i := range b.in.Sessions {
		s := &b.in.Sessions[i]
		if s.Exclusion == nil {
			continue
		}
		passed := s.Grade != nil && s.Grade.WS == 1
		er.Sessions = append(er.Sessions, ExcludedSession{Session: s.ID, Mode: s.Mode, System: s.System, Task: s.Task,
			Reason: s.Exclusion.Reason, Note: s.Exclusion.Note, By: s.Exclusion.By, Graded: s.Grade != nil, Passed: passed})
		rc := by[s.Exclusion.Reason]
		if rc == nil {
			rc = &ReasonCount{Reason: s.Exclusion.Reason}
			by[s.Exclusion.Reason] = rc
		}
		if s.Mode == Human {
			rc.Human++
		} else {
			rc.Synth++
		}
		er.Total++
		if passed {
			rc.Passed++
			er.Passed++
		}
	}
	slices.SortFunc(er.Sessions, func(x, y ExcludedSession) int {
		return cmp.Or(cmp.Compare(x.Reason, y.Reason), cmp.Compare(x.Mode, y.Mode), cmp.Compare(x.System, y.System),
			cmp.Compare(x.Task, y.Task), cmp.Compare(x.Session, y.Session))
	})
	for _, r := range sortedKeys(by) {
		er.ByReason = append(er.ByReason, *by[r])
	}
}

// planning gives the minimum detectable delta for the planned study. A human session's difference
// from its task's synthetic mean has, if humans and the synthetic caller agree, the variance of one
// session's outcome around its task mean (estimated from the synthetic repeats) plus that of the
// synthetic mean itself; the between-task variance cancels in the pairing.
func (b *builder) planning() error {
	po := b.opts.Planning
	if po == nil {
		return nil
	}
	p := *po
	if p.Alpha == 0 {
		p.Alpha = 0.05
	}
	if p.Power == 0 {
		p.Power = 0.8
	}
	if p.SessionsPerParticipant == 0 {
		p.SessionsPerParticipant = b.in.SessionsPerParticipant
	}
	if p.Participants < 1 {
		return fmt.Errorf("planning: participants %d: want at least 1: %w", p.Participants, ErrInvalidOption)
	}
	if p.SessionsPerParticipant < 1 {
		return fmt.Errorf("planning: sessions per participant unknown (the study has no plan): give it: %w", ErrInvalidOption)
	}
	if len(b.in.Systems) == 0 {
		return fmt.Errorf("planning: no systems: %w", ErrInvalidOption)
	}
	pr := &PlanningResult{Participants: p.Participants, SessionsPerParticipant: p.SessionsPerParticipant, Alpha: p.Alpha, Power: p.Power}
	total := p.Participants * p.SessionsPerParticipant
	perSystem := total / len(b.in.Systems)
	for _, m := range []Metric{MetricWS, MetricAFA} {
		var all []*group
		for _, sys := range b.in.Systems {
			g := b.group(sys.Label, Synthetic)
			all = append(all, g)
			row, err := planRow(sys.Label, m, perSystem, []*group{g}, p)
			if err != nil {
				return err
			}
			pr.Rows = append(pr.Rows, row)
		}
		if len(b.in.Systems) > 1 {
			row, err := planRow(AllSystems, m, total, all, p)
			if err != nil {
				return err
			}
			pr.Rows = append(pr.Rows, row)
		}
	}
	b.rep.Planning = pr
	return nil
}

func planRow(system string, m Metric, n int, groups []*group, p PlanningOptions) (PlanningRow, error) {
	row := PlanningRow{System: system, Metric: m, HumanSessions: n, WithinVariance: NaN(), Seeds: NaN(), DiffVariance: NaN(), MDD: NaN()}
	// Pooled within-task variance: Σ(n_t − 1)·s²_t / Σ(n_t − 1) over (system, task) cells.
	var ss, df, cells, sessions float64
	var every []float64
	for _, g := range groups {
		for _, t := range g.tasks {
			var xs []float64
			for _, s := range g.byTask[t] {
				if v := value(s, m); !math.IsNaN(v) {
					xs = append(xs, v)
				}
			}
			every = append(every, xs...)
			if len(xs) == 0 {
				continue
			}
			cells++
			sessions += float64(len(xs))
			if len(xs) >= 2 {
				ss += stats.Variance(xs) * float64(len(xs)-1)
				df += float64(len(xs) - 1)
			}
		}
	}
	if cells == 0 {
		row.Note = "no synthetic sessions"
		return row, nil
	}
	row.Seeds = Num(sessions / cells)
	var v float64
	if df > 0 {
		v = ss / df
	} else {
		v = stats.Variance(every)
		row.Note = "no synthetic repeats: the variance across all sessions (between tasks too) is used, which overstates the delta"
		if math.IsNaN(v) {
			row.Note = "one synthetic session: no variance"
			return row, nil
		}
	}
	row.WithinVariance = Num(v)
	dv := v * (1 + 1/float64(row.Seeds))
	row.DiffVariance = Num(dv)
	if n < 1 {
		row.Note = joinNote(row.Note, "fewer planned sessions than systems")
		return row, nil
	}
	if dv == 0 {
		// A zero variance would give a zero delta: the normal approximation has nothing to say.
		row.Note = joinNote(row.Note, "undefined: the synthetic caller's outcomes never vary within a task")
		return row, nil
	}
	mdd, err := stats.MinDetectableDifference(dv, n, p.Alpha, p.Power)
	if err != nil {
		return row, fmt.Errorf("planning: %w", err)
	}
	row.MDD = Num(mdd)
	return row, nil
}

// notes explains the definitions and flags data problems.
func (b *builder) notes() {
	r := b.rep
	add := func(format string, args ...any) { r.Notes = append(r.Notes, fmt.Sprintf(format, args...)) }
	add("Main numbers count only sessions that ended, were graded and were not excluded.")
	add("Proportions carry Wilson score %.0f%% intervals; means and deltas carry task-level (cluster) percentile bootstrap %.0f%% intervals with %d resamples, seed %d.",
		100*b.opts.Level, 100*b.opts.Level, b.opts.Resamples, b.opts.Seed)
	add("A delta is human minus synthetic, averaged over the tasks where both modes have the measure, each task weighted equally (the mean of the task means' differences); the pooled row averages, per task, the paired differences of the systems.")
	add("pass@1 averages the tasks' success rates; pass@k and pass^k (tau-bench) use the unbiased estimators over the tasks with at least k sessions.")
	add("Response latency is the media time from the end of caller speech to the start of the agent's next speech, when the caller did not speak again first.")
	for _, c := range r.Counts {
		if c.Ungraded > 0 {
			add("%d %s session(s) ended without a grade and are left out.", c.Ungraded, c.Mode)
		}
		if c.Unfinished > 0 {
			add("%d %s session(s) have not ended and are left out.", c.Unfinished, c.Mode)
		}
	}
	if len(r.Graders) > 1 {
		add("Sessions were graded by different grader versions: %v.", r.Graders)
	}
	if a := r.Annotators; a != nil && a.LeakageKappa.Note != "" {
		add("Leakage kappa: %s.", a.LeakageKappa.Note)
	}
}
