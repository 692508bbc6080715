package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/voicebench/humanaudit/internal/stats"
)

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
	for _, r := range slices.Sorted(maps.Keys(by)) {
		er.ByReason = append(er.ByReason, *by[r])
	}
}

// planning gives the minimum detectable delta for the planned study. The delta is a mean over
// tasks of (human task mean − synthetic task mean); if humans vary within a task as the synthetic
// caller does (variance s², the pooled within-task variance of the synthetic runs), a task with n_t
// planned human sessions and k_t synthetic runs adds s²·(1/n_t + 1/k_t)/T² to its variance. The
// between-task variance cancels in the pairing. docs/analysis.md derives it.
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
	if !(p.Alpha > 0 && p.Alpha < 1) || !(p.Power > 0 && p.Power < 1) {
		return fmt.Errorf("planning: alpha %v, power %v: want both between 0 and 1: %w", p.Alpha, p.Power, ErrInvalidOption)
	}
	total := p.Participants * p.SessionsPerParticipant
	perSystem := total / len(b.in.Systems)
	pr := &PlanningResult{Participants: p.Participants, SessionsPerParticipant: p.SessionsPerParticipant, Alpha: p.Alpha, Power: p.Power,
		SessionsPerSystem: perSystem, Leftover: total - perSystem*len(b.in.Systems)}
	planned := b.plannedPerTask(perSystem)
	for _, m := range []Metric{MetricWS, MetricAFA} {
		var cells []planCell
		for _, sys := range b.in.Systems {
			cs, s2, note := b.planCells(sys.Label, m, planned)
			row, err := planRow(sys.Label, m, perSystem, cs, s2, note, p, false)
			if err != nil {
				return err
			}
			pr.Rows = append(pr.Rows, row)
			cells = append(cells, cs...)
		}
		if len(b.in.Systems) > 1 {
			row, err := planRow(AllSystems, m, perSystem*len(b.in.Systems), cells, math.NaN(), "", p, true)
			if err != nil {
				return err
			}
			pr.Rows = append(pr.Rows, row)
		}
	}
	b.rep.Planning = pr
	return nil
}

// plannedPerTask lays a system's planned human sessions over the report's tasks as the planner
// does: every task once (in the order of their ids), then a second run for the anchor tasks,
// then for the other tasks (and round again when there are more sessions than that).
func (b *builder) plannedPerTask(perSystem int) map[string]int {
	var ids, anchors, others []string
	for _, t := range b.in.Tasks {
		ids = append(ids, t.ID)
		if t.Anchor {
			anchors = append(anchors, t.ID)
		} else {
			others = append(others, t.ID)
		}
	}
	sort.Strings(ids)
	sort.Strings(anchors)
	sort.Strings(others)
	repeats := append(anchors, others...)
	out := map[string]int{}
	for i := range perSystem {
		if len(ids) == 0 {
			break
		}
		if i < len(ids) {
			out[ids[i]]++
		} else {
			out[repeats[(i-len(ids))%len(repeats)]]++
		}
	}
	return out
}

// planCell is one system–task cell of a planned delta.
type planCell struct {
	task     string
	human    int
	synth    int
	variance float64 // s² of the cell's system
}

// planCells lists a system's cells with planned human sessions and synthetic runs of the measure,
// and the system's pooled within-task variance Σ(k_t − 1)·s²_t / Σ(k_t − 1).
func (b *builder) planCells(system string, m Metric, planned map[string]int) ([]planCell, float64, string) {
	g := b.group(system, Synthetic)
	var ss, df float64
	var every []float64
	var cells []planCell
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
		if len(xs) >= 2 {
			ss += stats.Variance(xs) * float64(len(xs)-1)
			df += float64(len(xs) - 1)
		}
		if planned[t] > 0 {
			cells = append(cells, planCell{task: t, human: planned[t], synth: len(xs)})
		}
	}
	var v float64
	note := ""
	switch {
	case df > 0:
		v = ss / df
	case len(every) >= 2:
		v = stats.Variance(every)
		note = "no synthetic repeats: the variance across all sessions (between tasks too) is used, which overstates the delta"
	default:
		return nil, math.NaN(), "no synthetic repeats to estimate a variance from"
	}
	for i := range cells {
		cells[i].variance = v
	}
	return cells, v, note
}

// planRow computes one row: Var(Δ) over the cells (each task weighted 1/T, the systems of a
// pooled task 1/(T·S_t)), and the detectable delta with t quantiles on T − 1 degrees of freedom.
func planRow(system string, m Metric, sessions int, cells []planCell, s2 float64, note string, p PlanningOptions, pooled bool) (PlanningRow, error) {
	row := PlanningRow{System: system, Metric: m, HumanSessions: sessions, WithinVariance: Num(s2), Seeds: NaN(), DeltaVariance: NaN(), MDD: NaN(), Note: note}
	perTask := map[string]int{}
	var synth float64
	for _, c := range cells {
		perTask[c.task]++
		synth += float64(c.synth)
	}
	row.Tasks = len(perTask)
	if len(cells) == 0 {
		if row.Note == "" {
			row.Note = "no task has both planned human sessions and synthetic runs"
		}
		return row, nil
	}
	row.Seeds = Num(synth / float64(len(cells)))
	if pooled && len(cells) > 0 {
		// The pooled variance differs by system; show the cells' mean.
		var v float64
		for _, c := range cells {
			v += c.variance
		}
		row.WithinVariance = Num(v / float64(len(cells)))
	}
	dc := make([]stats.DeltaCell, len(cells))
	for i, c := range cells {
		dc[i] = stats.DeltaCell{Weight: 1 / float64(row.Tasks*perTask[c.task]), Human: c.human, Synthetic: c.synth, HumanVar: c.variance, SynthVar: c.variance}
	}
	dv, err := stats.DeltaVariance(dc)
	if err != nil {
		return row, fmt.Errorf("planning: %s %s: %w", system, m, err)
	}
	row.DeltaVariance = Num(dv)
	row.DF = row.Tasks - 1
	if dv == 0 {
		// A zero variance would give a zero delta: the approximation has nothing to say.
		row.Note = joinNote(row.Note, "undefined: the synthetic caller's outcomes never vary within a task")
		return row, nil
	}
	if row.DF < 1 {
		row.Note = joinNote(row.Note, "undefined: one task leaves no degrees of freedom for an interval")
		return row, nil
	}
	mdd, err := stats.DetectableDelta(dv, row.DF, p.Alpha, p.Power)
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
	add("Proportions carry Wilson score %.0f%% intervals; means and deltas carry task-level (cluster) bootstrap %.0f%% intervals with %d resamples, seed %d: percentile intervals expanded for the number of tasks (Hesterberg 2015), BCa bounds from the same resamples beside the deltas.",
		100*b.opts.Level, 100*b.opts.Level, b.opts.Resamples, b.opts.Seed)
	add("A delta is human minus synthetic, averaged over the tasks where both modes have the measure, each task weighted equally (the mean of the task means' differences); the pooled row averages, per task, the paired differences of the systems.")
	add("pass@1 averages the tasks' success rates; pass@k and pass^k (tau-bench) use the unbiased estimators over the tasks with at least k sessions.")
	add("Response latency is the media time from the end of caller speech to the start of the agent's next speech, when the caller did not speak again first.")
	for _, c := range r.Counts {
		if c.Ungraded > 0 {
			add("%s ended without a grade and %s left out.", plural(c.Ungraded, string(c.Mode)+" session", string(c.Mode)+" sessions"), map[bool]string{true: "is", false: "are"}[c.Ungraded == 1])
		}
		if c.Unfinished > 0 {
			add("%s not ended and %s left out.", plural(c.Unfinished, string(c.Mode)+" session has", string(c.Mode)+" sessions have"), map[bool]string{true: "is", false: "are"}[c.Unfinished == 1])
		}
	}
	if len(r.Graders) > 1 {
		add("Sessions were graded by different grader versions: %v.", r.Graders)
	}
	if a := r.Annotators; a != nil && a.LeakageKappa.Note != "" {
		add("Leakage kappa: %s.", a.LeakageKappa.Note)
	}
}
