package report

import (
	"bytes"
	"fmt"
	"html/template"
	"strconv"
	"strings"
	ttemplate "text/template"
)

// The report's text is built once as a list of blocks, then rendered as Markdown and as HTML, so
// both say exactly the same.
type (
	heading struct {
		level int
		text  string
	}
	para    string
	bullets []string
	table   struct {
		head  []string
		rows  [][]string
		right []bool // right-aligned columns (numbers)
	}
	figureBlock struct{ fig Figure }
)

// document lays out the report.
func document(r *Report, figs []Figure) []any {
	var d []any
	fig := func(name string) {
		for _, f := range figs {
			if f.Name == name {
				d = append(d, figureBlock{f})
			}
		}
	}
	title := "Audit report: " + r.Study.ID
	if r.Study.Name != "" && r.Study.Name != r.Study.ID {
		title += " (" + r.Study.Name + ")"
	}
	d = append(d, heading{1, title})
	d = append(d, para(fmt.Sprintf("Bootstrap: %d resamples per interval, seed %d, %.0f%% %s intervals over tasks (BCa beside the deltas). Grader: %s.",
		r.Resamples, r.Seed, 100*r.Level, r.IntervalMethod, strings.Join(orNone(r.Graders), ", "))))

	d = append(d, heading{2, "Sessions"})
	t := table{head: []string{"mode", "sessions", "included", "excluded", "ungraded", "unfinished"}, right: rightFrom(1, 6)}
	for _, c := range r.Counts {
		t.rows = append(t.rows, []string{string(c.Mode), itoa(c.Sessions), itoa(c.Included), itoa(c.Excluded), itoa(c.Ungraded), itoa(c.Unfinished)})
	}
	d = append(d, t)

	d = append(d, heading{2, "Headline: completion, latency and cost per system and mode"})
	d = append(d, para(fmt.Sprintf("Completion is Workflow Success (WS) with its %.0f%% Wilson interval over the n sessions counted (included and graded); latency is the median response latency over the mode's calls; cost is the mean priced cost per call (n/a without usage or a price).", 100*r.Level)))
	d = append(d, headlineTable(r))
	fig("ws_latency")
	fig("ws_cost")

	d = append(d, heading{2, "Results per system: human and synthetic"})
	d = append(d, para("Workflow Success (WS) and the four gates (TS Target State, PV Process Validity, AC Action Completion, AV Artifact Validity) are proportions of sessions with Wilson intervals; pass@1, AFA (Artifact Field Accuracy) and mean TTR average the task means with task-level bootstrap intervals. The delta column is human minus synthetic, paired by task."))
	for _, sr := range r.Systems {
		d = append(d, heading{3, systemTitle(sr.System)})
		d = append(d, systemTable(r, sr))
	}

	d = append(d, heading{2, "Human-minus-synthetic deltas"})
	d = append(d, para(intervalChoice))
	t = table{head: []string{"system", "metric", "tasks", "human", "synthetic", "delta", "CI low", "CI high", "BCa CI"}, right: rightFrom(2, 9)}
	for _, x := range r.Deltas {
		dec := 3
		if x.Metric == MetricTTR {
			dec = 1
		}
		t.rows = append(t.rows, []string{x.System, metricLabel[x.Metric], itoa(x.Diff.Clusters), x.Human.fixed(dec), x.Synthetic.fixed(dec),
			x.Diff.Estimate.signed(dec), x.Diff.Low.signed(dec), x.Diff.High.signed(dec), bcaCell(x.Diff, dec)})
	}
	d = append(d, t)
	fig("forest")

	d = append(d, heading{2, "Gate decomposition"})
	fig("gates")

	d = append(d, heading{2, "Time-to-resolution against reliability"})
	fig("ttr_reliability")
	t = table{head: []string{"system", "mode", "median TTR (s)", "WS", "Pareto front"}, right: []bool{false, false, true, true, false}}
	for _, p := range TradeoffPoints(r) {
		t.rows = append(t.rows, []string{p.System, string(p.Mode), Num(p.TTR).fixed(1), Num(p.WS).fixed(3), yesNo(p.Front)})
	}
	d = append(d, t)

	d = append(d, heading{2, "Anchor subset: agreement between participants"})
	if r.AnchorRepeats == 0 {
		d = append(d, para(fmt.Sprintf("Study %s's plan has no anchor repeats, so there is no agreement between participants to report: two sessions of the same task are a repeat only when the plan makes one (audit study plan --anchor anchor).", r.Study.ID)))
	} else if len(r.Anchor) == 0 {
		d = append(d, para(fmt.Sprintf("The plan has %s; none has been run by its second participant yet.", plural(r.AnchorRepeats, "anchor repeat", "anchor repeats"))))
	} else {
		d = append(d, para("Each anchor cell (task × system) was called by two different participants. WS agreement counts the pairs whose Workflow Success agreed; alpha is Krippendorff's alpha over the pairs (nominal for WS, interval for AFA)."))
		t = table{head: []string{"system", "pairs", "WS agreement", "WS alpha", "mean |AFA diff|", "AFA alpha"}, right: rightFrom(1, 6)}
		for _, a := range r.Anchor {
			t.rows = append(t.rows, []string{a.System, itoa(a.Pairs), prop(a.WSAgree), a.WSAlpha.fixed(3), a.AFAMeanAbsDiff.fixed(3), a.AFAAlpha.fixed(3)})
		}
		d = append(d, t)
		var notes []string
		for _, a := range r.Anchor {
			if a.WSNote != "" {
				notes = append(notes, a.System+", WS alpha: "+a.WSNote)
			}
			if a.AFANote != "" {
				notes = append(notes, a.System+", AFA alpha: "+a.AFANote)
			}
		}
		if len(notes) > 0 {
			d = append(d, bullets(notes))
		}
	}

	d = append(d, participantBlocks(r.Participants)...)

	d = append(d, heading{2, "Annotator study of the frozen caller utterances"})
	if a := r.Annotators; a == nil {
		d = append(d, para("No ratings yet."))
	} else {
		d = append(d, para(fmt.Sprintf("%s of %s (%s) by %s. Means and the leakage rate pool all ratings with task-level bootstrap intervals; alpha intervals resample items.",
			plural(a.Ratings, "rating", "ratings"), plural(a.Items, "item", "items"), plural(a.Tasks, "task", "tasks"), plural(a.Annotators, "annotator", "annotators"))))
		t = table{head: []string{"measure", "estimate", "CI low", "CI high", "agreement", "agreement CI"}, right: rightFrom(1, 6)}
		t.rows = append(t.rows,
			[]string{"semantic fidelity (1-5)", a.Fidelity.Estimate.fixed(2), a.Fidelity.Low.fixed(2), a.Fidelity.High.fixed(2),
				"alpha (ordinal) " + a.FidelityAlpha.Alpha.fixed(3), ci(a.FidelityAlpha.Interval, 3)},
			[]string{"naturalness (1-5)", a.Naturalness.Estimate.fixed(2), a.Naturalness.Low.fixed(2), a.Naturalness.High.fixed(2),
				"alpha (ordinal) " + a.NaturalnessAlpha.Alpha.fixed(3), ci(a.NaturalnessAlpha.Interval, 3)},
			[]string{"leakage rate", a.Leakage.Estimate.fixed(3), a.Leakage.Low.fixed(3), a.Leakage.High.fixed(3),
				"Fleiss kappa " + a.LeakageKappa.Kappa.fixed(3), fmt.Sprintf("z %s, p %s", a.LeakageKappa.Z.fixed(2), a.LeakageKappa.PValue.fixed(4))},
		)
		d = append(d, t)
		var notes []string
		notes = append(notes, fmt.Sprintf("%s flagged leakage; %s flagged by a majority of %s raters.", plural(a.LeakRatings, "rating", "ratings"),
			plural(a.LeakItems, "item was", "items were"), map[bool]string{true: "its", false: "their"}[a.LeakItems == 1]))
		for _, n := range []struct{ what, note string }{{"fidelity alpha", a.FidelityAlpha.Note}, {"naturalness alpha", a.NaturalnessAlpha.Note}, {"leakage kappa", a.LeakageKappa.Note}} {
			if n.note != "" {
				notes = append(notes, n.what+": "+n.note)
			}
		}
		d = append(d, bullets(notes))
	}

	d = append(d, heading{2, "Slices"})
	d = append(d, para("Workflow Success per stratum of the tasks; the delta is paired by task with a task-level bootstrap interval. Required-field counts are binned."))
	for _, dim := range SliceDimensions {
		t = table{head: []string{"value", "system", "tasks", "human WS", "synthetic WS", "delta", "CI"}, right: []bool{false, false, true, true, true, true, true}}
		for _, s := range r.Slices {
			if s.Dimension != dim {
				continue
			}
			t.rows = append(t.rows, []string{s.Value, s.System, itoa(s.Tasks), frac(s.Human), frac(s.Synthetic), s.Delta.Estimate.signed(3), ci(s.Delta, 3)})
		}
		if len(t.rows) > 0 {
			d = append(d, heading{3, strings.ReplaceAll(dim, "_", " ")}, t)
		}
	}

	if len(r.Conditions) > 0 {
		d = append(d, heading{2, "Listening conditions"}, para(conditionNote(r)))
		t = table{head: []string{"condition", "system", "tasks", "human WS", "95% CI", "synthetic WS", "95% CI", "delta", "CI", "paired tasks", "human AFA", "synthetic AFA"},
			right: []bool{false, false, true, true, true, true, true, true, true, true, true, true}}
		for _, c := range r.Conditions {
			t.rows = append(t.rows, []string{c.Condition, c.System, itoa(c.Tasks), frac(c.Human), wilsonCI(c.Human), frac(c.Synthetic), wilsonCI(c.Synthetic),
				c.Delta.Estimate.signed(3), ci(c.Delta, 3), itoa(c.Paired), c.HumanAFA.fixed(3), c.SynthAFA.fixed(3)})
		}
		d = append(d, t)
		fig("conditions")
	}
	if len(r.SoundAlike) > 0 {
		d = append(d, heading{2, "Sound-alike verification"},
			para("On the tasks whose verification accepts a name that sounds the same (a phonetic column: Soundex or Double Metaphone, as the task names): passes (WS = 1) whose caller was verified only through a sound-alike match, never as written."))
		t = table{head: []string{"system", "mode", "sessions", "passes", "verified only by sound", "share of passes", "95% CI", "all sessions verified only by sound"}, right: rightFrom(2, 8)}
		for _, s := range r.SoundAlike {
			t.rows = append(t.rows, []string{s.System, string(s.Mode), itoa(s.Sessions), itoa(s.Passes), itoa(s.SoundAlikeOnly.Successes),
				s.SoundAlikeOnly.P.fixed(3), wilsonCI(s.SoundAlikeOnly), itoa(s.SoundAlikeAll)})
		}
		d = append(d, t)
	}
	if len(r.Transfers) > 0 {
		d = append(d, heading{2, "Transfers to a human"},
			para("Calls the agent handed to a person (a transfer tool), by behaviour profile of the task and system, with Wilson intervals; forbidden counts transfers on tasks whose rule forbids them, missed the calls of tasks that require one where none came."))
		t = table{head: []string{"mode", "system", "behaviour profile", "sessions", "transferred", "rate", "95% CI", "forbidden", "missed"}, right: rightFrom(3, 9)}
		for _, x := range r.Transfers {
			t.rows = append(t.rows, []string{string(x.Mode), x.System, x.Behavior, itoa(x.Sessions), itoa(x.Transfers.Successes), x.Transfers.P.fixed(3),
				wilsonCI(x.Transfers), itoa(x.Wrong), itoa(x.Missed)})
		}
		d = append(d, t)
		fig("transfers")
	}

	d = append(d, heading{2, "Field misses per task"})
	t = table{head: []string{"task", "field", "required", "human misses", "synthetic misses"}, right: []bool{false, false, false, true, true}}
	shown := 0
	for _, f := range r.FieldMiss {
		if f.HumanMiss == 0 && f.SynthMiss == 0 {
			continue
		}
		shown++
		t.rows = append(t.rows, []string{f.Task, f.Field, yesNo(f.Required), fmt.Sprintf("%d/%d", f.HumanMiss, f.HumanN), fmt.Sprintf("%d/%d", f.SynthMiss, f.SynthN)})
	}
	if shown == 0 {
		d = append(d, para("No graded field was missed."))
	} else {
		d = append(d, para("Fields missed at least once (field_misses.csv lists every graded field)."), t)
	}

	d = append(d, deliverySection(r)...)

	d = append(d, heading{2, "Exclusions"})
	ex := r.Exclusions
	d = append(d, para(fmt.Sprintf("%s excluded; %d of them had passed (WS = 1) before exclusion. Excluded sessions are left out of every number above.", plural(ex.Total, "session", "sessions"), ex.Passed)))
	if ex.Total > 0 {
		t = table{head: []string{"reason", "human", "synthetic", "had passed"}, right: rightFrom(1, 4)}
		for _, rc := range ex.ByReason {
			t.rows = append(t.rows, []string{rc.Reason, itoa(rc.Human), itoa(rc.Synth), itoa(rc.Passed)})
		}
		d = append(d, t)
		t = table{head: []string{"session", "mode", "system", "task", "reason", "by", "passed", "note"}}
		for _, s := range ex.Sessions {
			passed := "ungraded"
			if s.Graded {
				passed = yesNo(s.Passed)
			}
			t.rows = append(t.rows, []string{s.Session, string(s.Mode), s.System, s.Task, s.Reason, s.By, passed, s.Note})
		}
		d = append(d, t)
	}

	d = append(d, heading{2, "Response latency and cost"})
	d = append(d, para("Latency is on the media clock, from the end of caller speech to the start of the agent's next speech, pooled over calls. Usage is what the provider reported, averaged over the calls that reported it; a price is applied only where one was given."))
	t = table{head: []string{"system", "mode", "responses", "median ms", "p25 ms", "p75 ms", "p90 ms", "calls with usage", "input tok/call", "output tok/call", "USD/call"}, right: rightFrom(2, 11)}
	for _, sr := range r.Systems {
		for mode, res := range sr.ByMode() {
			l, c := res.Latency, res.Cost
			t.rows = append(t.rows, []string{sr.System.Label, string(mode), itoa(l.Responses), l.MedianMS.fixed(0), l.P25MS.fixed(0), l.P75MS.fixed(0), l.P90MS.fixed(0),
				itoa(c.CallsWithUsage), c.InputTokensPerCall.fixed(0), c.OutputTokensPerCall.fixed(0), c.USDPerCall.fixed(4)})
		}
	}
	d = append(d, t)

	if p := r.Planning; p != nil {
		d = append(d, heading{2, "Planning: minimum detectable delta"})
		d = append(d, para(fmt.Sprintf("For %d participants × %d sessions = %d human sessions: %d per system (rounded down; %d left over), laid out as the planner does (every task once, anchor tasks first for a second run). MDD is the smallest true human-minus-synthetic difference a two-sided test at alpha %.2f detects with power %.0f%%: (t₁₋α/₂ + t_power)·√Var(Δ) with tasks − 1 degrees of freedom, where Var(Δ) = Σ_t w_t²·s²·(1/n_t + 1/k_t) sums each task's planned human sessions n_t and synthetic runs k_t (w_t = 1/T; 1/(T·S_t) per system in the pooled row), if humans vary within a task as the synthetic caller does (s², its pooled within-task variance). Participants who run several sessions add a covariance this formula leaves out; audit study plan --power simulates the plan with a participant effect.",
			p.Participants, p.SessionsPerParticipant, p.Participants*p.SessionsPerParticipant, p.SessionsPerSystem, p.Leftover, p.Alpha, 100*p.Power)))
		t = table{head: []string{"system", "metric", "human sessions", "tasks", "within-task variance", "synthetic per task", "Var(delta)", "MDD", "note"},
			right: []bool{false, false, true, true, true, true, true, true, false}}
		for _, row := range p.Rows {
			t.rows = append(t.rows, []string{row.System, metricLabel[row.Metric], itoa(row.HumanSessions), itoa(row.Tasks), row.WithinVariance.fixed(4), row.Seeds.fixed(2),
				row.DeltaVariance.fixed(5), row.MDD.fixed(3), row.Note})
		}
		d = append(d, t)
	}

	d = append(d, heading{2, "Notes"}, bullets(r.Notes))
	return d
}

// headlineTable is VAmoS's headline table: per system and mode, WS with its Wilson interval, the
// sessions counted, the median response latency and the mean cost per call.
func headlineTable(r *Report) table {
	t := table{head: []string{"system", "mode", "n", "WS", fmt.Sprintf("%.0f%% CI", 100*r.Level), "median response latency (ms)", "mean cost per call (USD)"}, right: rightFrom(2, 7)}
	for _, h := range Headline(r) {
		t.rows = append(t.rows, []string{h.System, string(h.Mode), itoa(h.WS.N), h.WS.P.fixed(3), wilsonCI(h.WS), h.LatencyMS.fixed(0), h.USDPerCall.fixed(4)})
	}
	return t
}

// intervalChoice says which interval the report uses and why.
const intervalChoice = "Intervals are task-level bootstrap percentile intervals, expanded for the number of tasks T: the bounds are read at the tail Φ(−√(T/(T−1))·t_{0.975,T−1}) (1.73% and 98.27% for 24 tasks) instead of 2.5% and 97.5%. The plain percentile interval of a mean over 24 tasks is too narrow by √(23/24) and uses normal rather than t quantiles: in 1,200 simulated studies of this suite's shape it covered 92.7% (WS) and 93.0% (AFA) at a nominal 95%, the expanded one 94.6% and 94.5%. BCa bounds from the same resamples, expanded alike, are shown beside (they covered 95.0% and 94.6%, no better in a way that matters for means over 24 tasks); the report uses the percentile bounds because they move monotonically with the data, which the power simulation relies on. See docs/analysis.md."

// bcaCell formats an interval's BCa bounds.
func bcaCell(iv Interval, dec int) string {
	if iv.BCaLow.IsNaN() || iv.BCaHigh.IsNaN() {
		return "n/a"
	}
	return fmt.Sprintf("[%s, %s]", iv.BCaLow.signed(dec), iv.BCaHigh.signed(dec))
}

// participantBlocks lays out the share of variance due to participants and the delta's
// sensitivity to resampling them.
func participantBlocks(p *ParticipantResult) []any {
	d := []any{heading{2, "Participants: share of variance and sensitivity of the deltas"}}
	if p == nil {
		return append(d, para("No human sessions yet."))
	}
	d = append(d, para(fmt.Sprintf("%s by %s. The intra-class correlation is the share of the variance of a human session's residual (its outcome minus the synthetic mean of its system and task) that lies between participants: one-way ANOVA estimate with a participant-level bootstrap interval. It can fall below 0 by chance when participants do not differ.",
		plural(p.Sessions, "human session", "human sessions"), plural(p.Participants, "participant", "participants"))))
	t := table{head: []string{"metric", "participants", "sessions", "sessions per participant", "ICC", "CI", "between variance", "within variance", "note"},
		right: []bool{false, true, true, true, true, true, true, true, false}}
	for _, x := range p.ICC {
		t.rows = append(t.rows, []string{metricLabel[x.Metric], itoa(x.Participants), itoa(x.Sessions), x.MeanSessions.fixed(2), x.ICC.Estimate.fixed(3),
			ci(x.ICC, 3), x.Between.fixed(4), x.Within.fixed(4), x.Note})
	}
	d = append(d, t)
	d = append(d, para("Sensitivity: each delta with its task-level interval (the report's) and one from a participant-level bootstrap, which draws participants with all their human sessions and keeps the synthetic task means fixed (so without a participant effect it is a little narrower). A participant-level interval much wider than the task-level one means the delta leans on a few participants. This matters most for the pooled row, whose tasks share participants: its task-level interval treats them as independent and is then too narrow."))
	t = table{head: []string{"system", "metric", "delta", "task-level CI", "participants", "participant-level CI"}, right: []bool{false, false, true, true, true, true}}
	for _, x := range p.Sensitivity {
		t.rows = append(t.rows, []string{x.System, metricLabel[x.Metric], x.TaskLevel.Estimate.signed(3), signedCI(x.TaskLevel, 3), itoa(x.Participants), signedCI(x.ParticipantLevel, 3)})
	}
	return append(d, t)
}

func signedCI(iv Interval, dec int) string {
	if iv.Low.IsNaN() {
		return "n/a"
	}
	return fmt.Sprintf("[%s, %s]", iv.Low.signed(dec), iv.High.signed(dec))
}

func systemTitle(s SystemInfo) string {
	t := s.Label
	var extra []string
	if s.Alias != "" {
		extra = append(extra, "shown as "+s.Alias)
	}
	if s.Family != "" {
		extra = append(extra, "family "+s.Family)
	}
	if len(extra) > 0 {
		t += " (" + strings.Join(extra, ", ") + ")"
	}
	return t
}

func (r *Report) delta(system string, m Metric) (Delta, bool) {
	for _, d := range r.Deltas {
		if d.System == system && d.Metric == m {
			return d, true
		}
	}
	return Delta{}, false
}

func systemTable(r *Report, sr SystemResult) table {
	t := table{head: []string{"measure", "human", "synthetic", "delta [CI] (tasks)"}, right: []bool{false, true, true, true}}
	h, s := sr.Human, sr.Synthetic
	dcell := func(m Metric, dec int) string {
		d, ok := r.delta(sr.System.Label, m)
		if !ok || d.Diff.Estimate.IsNaN() {
			return "n/a"
		}
		return fmt.Sprintf("%s [%s, %s] (%d)", d.Diff.Estimate.signed(dec), d.Diff.Low.signed(dec), d.Diff.High.signed(dec), d.Diff.Clusters)
	}
	add := func(row ...string) { t.rows = append(t.rows, row) }
	add("sessions (tasks)", fmt.Sprintf("%d (%d)", h.Sessions, h.Tasks), fmt.Sprintf("%d (%d)", s.Sessions, s.Tasks), "")
	add("WS", prop(h.WS), prop(s.WS), dcell(MetricWS, 3))
	add("WS pass@1 (task mean)", ival(h.PassAt1, 3), ival(s.PassAt1, 3), "")
	add("pass@k / pass^k", passKCell(h.PassK), passKCell(s.PassK), "")
	add("TS", prop(h.TS), prop(s.TS), dcell(MetricTS, 3))
	add("PV", prop(h.PV), prop(s.PV), dcell(MetricPV, 3))
	add("AC", prop(h.AC), prop(s.AC), dcell(MetricAC, 3))
	add("AV", prop(h.AV), prop(s.AV), dcell(MetricAV, 3))
	add("AFA", ival(h.AFA, 3), ival(s.AFA, 3), dcell(MetricAFA, 3))
	add("resolved", frac(h.TTR.Resolved), frac(s.TTR.Resolved), "")
	add("TTR median (s)", h.TTR.MedianS.fixed(1), s.TTR.MedianS.fixed(1), "")
	add("TTR mean of tasks (s)", ival(h.TTR.MeanS, 1), ival(s.TTR.MeanS, 1), dcell(MetricTTR, 1))
	add("response latency median (ms)", h.Latency.MedianMS.fixed(0), s.Latency.MedianMS.fixed(0), "")
	if h.Cues.Issued > 0 {
		add("cues: caller said the cued content", frac(h.Cues.Said), "", "")
		add("cues: agent applied them", frac(h.Cues.Applied), "", "")
	}
	return t
}

func passKCell(p *PassK) string {
	if p == nil {
		return "no repeats"
	}
	return fmt.Sprintf("k=%d: %s / %s over %s", p.K, p.PassAtK.fixed(3), p.PassHatK.fixed(3), plural(p.Tasks, "task", "tasks"))
}

func prop(p Proportion) string {
	if p.N == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%s [%s, %s] (%d/%d)", p.P.fixed(3), p.Low.fixed(3), p.High.fixed(3), p.Successes, p.N)
}

// wilsonCI is a proportion's Wilson interval, "[0.12, 0.48]" ("–" without sessions).
func wilsonCI(p Proportion) string {
	if p.N == 0 || p.Low.IsNaN() {
		return "–"
	}
	return "[" + p.Low.fixed(3) + ", " + p.High.fixed(3) + "]"
}

func frac(p Proportion) string {
	if p.N == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%s (%d/%d)", p.P.fixed(3), p.Successes, p.N)
}

func ival(iv Interval, dec int) string {
	if iv.Estimate.IsNaN() {
		return "n/a"
	}
	return fmt.Sprintf("%s [%s, %s]", iv.Estimate.fixed(dec), iv.Low.fixed(dec), iv.High.fixed(dec))
}

func ci(iv Interval, dec int) string {
	if iv.Low.IsNaN() {
		return "n/a"
	}
	return fmt.Sprintf("[%s, %s]", iv.Low.fixed(dec), iv.High.fixed(dec))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func itoa(n int) string { return strconv.Itoa(n) }

// plural counts n of a noun: "1 annotator", "3 annotators", "0 annotators".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func orNone(s []string) []string {
	if len(s) == 0 {
		return []string{"none"}
	}
	return s
}

func rightFrom(from, n int) []bool {
	r := make([]bool, n)
	for i := from; i < n; i++ {
		r[i] = true
	}
	return r
}

// view is the document as the templates see it: one entry per block, its kind named.
type view struct {
	Title  string
	Style  template.CSS
	Blocks []blockView
}

type blockView struct {
	Kind    string // heading, para, bullets, table, figure
	Level   int
	Text    string
	Items   []string
	Head    []string
	Right   []bool
	Rows    [][]cellView
	Figure  Figure
	Inline  template.HTML // the figure's SVG, for the HTML page
	Missing string
}

type cellView struct {
	Text  string
	Right bool
}

func viewOf(doc []any, title string) view {
	v := view{Title: title, Style: template.CSS(htmlStyle)}
	for _, blk := range doc {
		switch x := blk.(type) {
		case heading:
			v.Blocks = append(v.Blocks, blockView{Kind: "heading", Level: x.level, Text: x.text})
		case para:
			v.Blocks = append(v.Blocks, blockView{Kind: "para", Text: string(x)})
		case bullets:
			v.Blocks = append(v.Blocks, blockView{Kind: "bullets", Items: x})
		case table:
			b := blockView{Kind: "table", Head: x.head}
			for i := range x.head {
				b.Right = append(b.Right, i < len(x.right) && x.right[i])
			}
			for _, row := range x.rows {
				var cells []cellView
				for i, c := range row {
					cells = append(cells, cellView{Text: c, Right: i < len(x.right) && x.right[i]})
				}
				b.Rows = append(b.Rows, cells)
			}
			v.Blocks = append(v.Blocks, b)
		case figureBlock:
			v.Blocks = append(v.Blocks, blockView{Kind: "figure", Figure: x.fig, Missing: x.fig.Missing, Inline: inlineSVG(x.fig.SVG)})
		}
	}
	return v
}

// inlineSVG is a figure's SVG as an element of the HTML page: without its XML prolog and
// generator comment. The SVG is ours (gonum/plot escapes every text it draws), so it is HTML.
func inlineSVG(svg []byte) template.HTML {
	s := string(svg)
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	return template.HTML(s)
}

var markdownTemplate = ttemplate.Must(ttemplate.New("report.md").Funcs(ttemplate.FuncMap{
	"hashes": func(n int) string { return strings.Repeat("#", n) },
	"cell":   func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") },
}).Parse(`{{range .Blocks}}{{if eq .Kind "heading"}}{{hashes .Level}} {{.Text}}

{{else if eq .Kind "para"}}{{.Text}}

{{else if eq .Kind "bullets"}}{{range .Items}}- {{.}}
{{end}}
{{else if eq .Kind "table"}}|{{range .Head}} {{cell .}} |{{end}}
|{{range .Right}}{{if .}}---:{{else}}---{{end}}|{{end}}
{{range .Rows}}|{{range .}} {{cell .Text}} |{{end}}
{{end}}
{{else if eq .Kind "figure"}}![{{.Figure.Title}}](figures/{{.Figure.Name}}.svg)

*{{.Figure.Caption}}*{{if .Missing}} **Empty: {{.Missing}}.**{{end}} (PNG: [figures/{{.Figure.Name}}.png](figures/{{.Figure.Name}}.png), PDF: [figures/{{.Figure.Name}}.pdf](figures/{{.Figure.Name}}.pdf))

{{end}}{{end}}`))

var htmlTemplate = template.Must(template.New("report.html").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
{{.Style}}
</style>
</head>
<body>
{{range .Blocks}}{{if eq .Kind "heading"}}{{if eq .Level 1}}<h1>{{.Text}}</h1>{{else if eq .Level 2}}<h2>{{.Text}}</h2>{{else}}<h3>{{.Text}}</h3>{{end}}
{{else if eq .Kind "para"}}<p>{{.Text}}</p>
{{else if eq .Kind "bullets"}}<ul>
{{range .Items}}<li>{{.}}</li>
{{end}}</ul>
{{else if eq .Kind "table"}}<table>
<thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr>{{range .}}{{if .Right}}<td class="n">{{.Text}}</td>{{else}}<td>{{.Text}}</td>{{end}}{{end}}</tr>
{{end}}</tbody>
</table>
{{else if eq .Kind "figure"}}<figure>
{{.Inline}}
<figcaption>{{.Figure.Caption}}{{if .Missing}} <strong>Empty: {{.Missing}}.</strong>{{end}} <a href="figures/{{.Figure.Name}}.png">PNG</a> · <a href="figures/{{.Figure.Name}}.pdf">PDF</a></figcaption>
</figure>
{{end}}{{end}}</body>
</html>
`))

// markdown renders the document with text/template; figures are referenced as files under figures/.
func markdown(doc []any) ([]byte, error) {
	var b bytes.Buffer
	if err := markdownTemplate.Execute(&b, viewOf(doc, "")); err != nil {
		return nil, fmt.Errorf("render report.md: %w", err)
	}
	return b.Bytes(), nil
}

const htmlStyle = `body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.6em}h2{font-size:1.3em;margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}h3{font-size:1.05em;margin-top:1.4em}
table{border-collapse:collapse;margin:.8em 0;font-size:.86em}th,td{border:1px solid #ddd;padding:.25em .55em;vertical-align:top}
th{background:#f4f4f4;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
figure{margin:1em 0}figure svg{max-width:100%;height:auto}figcaption{font-size:.86em;color:#555}`

// htmlDoc renders the document with html/template as one self-contained page, its figures
// inlined as SVG.
func htmlDoc(doc []any, title string) ([]byte, error) {
	var b bytes.Buffer
	if err := htmlTemplate.Execute(&b, viewOf(doc, title)); err != nil {
		return nil, fmt.Errorf("render report.html: %w", err)
	}
	return b.Bytes(), nil
}
