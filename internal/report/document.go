package report

import (
	"bytes"
	"fmt"
	"html"
	"strconv"
	"strings"
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
	if len(r.Anchor) == 0 {
		d = append(d, para("No anchor task has two sessions by different participants yet."))
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
		d = append(d, para(fmt.Sprintf("%d ratings of %d items (%d tasks) by %d annotators. Means and the leakage rate pool all ratings with task-level bootstrap intervals; alpha intervals resample items.",
			a.Ratings, a.Items, a.Tasks, a.Annotators)))
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
		notes = append(notes, fmt.Sprintf("%d rating(s) flagged leakage; %d item(s) were flagged by a majority of their raters.", a.LeakRatings, a.LeakItems))
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
	d = append(d, para(fmt.Sprintf("%d session(s) excluded; %d of them had passed (WS = 1) before exclusion. Excluded sessions are left out of every number above.", ex.Total, ex.Passed)))
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
		for _, m := range []struct {
			mode Mode
			res  ModeResult
		}{{Human, sr.Human}, {Synthetic, sr.Synthetic}} {
			l, c := m.res.Latency, m.res.Cost
			t.rows = append(t.rows, []string{sr.System.Label, string(m.mode), itoa(l.Responses), l.MedianMS.fixed(0), l.P25MS.fixed(0), l.P75MS.fixed(0), l.P90MS.fixed(0),
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
	d = append(d, para(fmt.Sprintf("%d human sessions by %d participants. The intra-class correlation is the share of the variance of a human session's residual (its outcome minus the synthetic mean of its system and task) that lies between participants: one-way ANOVA estimate with a participant-level bootstrap interval. It can fall below 0 by chance when participants do not differ.",
		p.Sessions, p.Participants)))
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
	return t
}

func passKCell(p *PassK) string {
	if p == nil {
		return "no repeats"
	}
	return fmt.Sprintf("k=%d: %s / %s over %d task(s)", p.K, p.PassAtK.fixed(3), p.PassHatK.fixed(3), p.Tasks)
}

func prop(p Proportion) string {
	if p.N == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%s [%s, %s] (%d/%d)", p.P.fixed(3), p.Low.fixed(3), p.High.fixed(3), p.Successes, p.N)
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

// markdown renders the document; figures are referenced as files under figures/.
func markdown(doc []any) []byte {
	var b bytes.Buffer
	cell := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }
	for _, blk := range doc {
		switch x := blk.(type) {
		case heading:
			fmt.Fprintf(&b, "%s %s\n\n", strings.Repeat("#", x.level), x.text)
		case para:
			fmt.Fprintf(&b, "%s\n\n", x)
		case bullets:
			for _, s := range x {
				fmt.Fprintf(&b, "- %s\n", s)
			}
			b.WriteString("\n")
		case table:
			b.WriteString("|")
			for _, h := range x.head {
				b.WriteString(" " + cell(h) + " |")
			}
			b.WriteString("\n|")
			for i := range x.head {
				if i < len(x.right) && x.right[i] {
					b.WriteString("---:|")
				} else {
					b.WriteString("---|")
				}
			}
			b.WriteString("\n")
			for _, row := range x.rows {
				b.WriteString("|")
				for _, c := range row {
					b.WriteString(" " + cell(c) + " |")
				}
				b.WriteString("\n")
			}
			b.WriteString("\n")
		case figureBlock:
			fmt.Fprintf(&b, "![%s](figures/%s.svg)\n\n*%s* (PNG: [figures/%s.png](figures/%s.png))\n\n", x.fig.Title, x.fig.Name, x.fig.Caption, x.fig.Name, x.fig.Name)
		}
	}
	return b.Bytes()
}

const htmlStyle = `body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.6em}h2{font-size:1.3em;margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}h3{font-size:1.05em;margin-top:1.4em}
table{border-collapse:collapse;margin:.8em 0;font-size:.86em}th,td{border:1px solid #ddd;padding:.25em .55em;vertical-align:top}
th{background:#f4f4f4;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
figure{margin:1em 0}figure svg{max-width:100%;height:auto}figcaption{font-size:.86em;color:#555}`

// htmlDoc renders the document as one self-contained HTML page with its figures inlined as SVG.
func htmlDoc(doc []any, title string) []byte {
	var b bytes.Buffer
	esc := html.EscapeString
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n<style>\n%s\n</style>\n</head>\n<body>\n", esc(title), htmlStyle)
	for _, blk := range doc {
		switch x := blk.(type) {
		case heading:
			fmt.Fprintf(&b, "<h%d>%s</h%d>\n", x.level, esc(x.text), x.level)
		case para:
			fmt.Fprintf(&b, "<p>%s</p>\n", esc(string(x)))
		case bullets:
			b.WriteString("<ul>\n")
			for _, s := range x {
				fmt.Fprintf(&b, "<li>%s</li>\n", esc(s))
			}
			b.WriteString("</ul>\n")
		case table:
			b.WriteString("<table>\n<thead><tr>")
			for _, h := range x.head {
				fmt.Fprintf(&b, "<th>%s</th>", esc(h))
			}
			b.WriteString("</tr></thead>\n<tbody>\n")
			for _, row := range x.rows {
				b.WriteString("<tr>")
				for i, c := range row {
					if i < len(x.right) && x.right[i] {
						fmt.Fprintf(&b, "<td class=\"n\">%s</td>", esc(c))
					} else {
						fmt.Fprintf(&b, "<td>%s</td>", esc(c))
					}
				}
				b.WriteString("</tr>\n")
			}
			b.WriteString("</tbody>\n</table>\n")
		case figureBlock:
			fmt.Fprintf(&b, "<figure>\n%s<figcaption>%s</figcaption>\n</figure>\n", x.fig.SVG, esc(x.fig.Caption))
		}
	}
	b.WriteString("</body>\n</html>\n")
	return b.Bytes()
}
