package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// File is one output file of a report, by its path relative to the output directory.
type File struct {
	Path string
	Data []byte
}

// Render produces every file of the report: report.md, report.html, report.json, the CSV tables
// and the figures (SVG, PNG and PDF). It is a pure function of the report: the same report gives
// the same bytes.
func Render(r *Report) ([]File, error) {
	figs, err := Figures(r)
	if err != nil {
		return nil, err
	}
	doc := document(r, figs)
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode report.json: %w", err)
	}
	md, err := markdown(doc)
	if err != nil {
		return nil, err
	}
	page, err := htmlDoc(doc, "Audit report: "+r.Study.ID)
	if err != nil {
		return nil, err
	}
	files := []File{{"report.md", md}, {"report.html", page}, {"report.json", append(js, '\n')}}
	tables, err := csvTables(r)
	if err != nil {
		return nil, err
	}
	files = append(files, tables...)
	for _, f := range figs {
		files = append(files, File{"figures/" + f.Name + ".svg", f.SVG}, File{"figures/" + f.Name + ".png", f.PNG}, File{"figures/" + f.Name + ".pdf", f.PDF})
	}
	return files, nil
}

// Write renders the report into dir (created if needed) and returns the files written.
func Write(dir string, r *Report) ([]File, error) {
	files, err := Render(r)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("write report: %w", err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return nil, fmt.Errorf("write report: %w", err)
		}
	}
	return files, nil
}

// csvTable accumulates one CSV file.
type csvTable struct {
	name string
	rows [][]string
}

func (t *csvTable) add(cells ...string) { t.rows = append(t.rows, cells) }

func propCells(p Proportion) []string {
	return []string{itoa(p.Successes), itoa(p.N), p.P.csv(), p.Low.csv(), p.High.csv()}
}

func propHead(prefix string) []string {
	return []string{prefix + "_successes", prefix + "_n", prefix, prefix + "_low", prefix + "_high"}
}

func ivCells(iv Interval) []string {
	return []string{iv.Estimate.csv(), iv.Low.csv(), iv.High.csv(), itoa(iv.Clusters), itoa(iv.Undefined)}
}

func ivHead(prefix string) []string {
	return []string{prefix, prefix + "_low", prefix + "_high", prefix + "_tasks", prefix + "_undefined_resamples"}
}

func cat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func csvTables(r *Report) ([]File, error) {
	var ts []*csvTable
	table := func(name string, head ...string) *csvTable {
		t := &csvTable{name: name, rows: [][]string{head}}
		ts = append(ts, t)
		return t
	}

	t := table("counts.csv", "mode", "sessions", "included", "excluded", "ungraded", "unfinished")
	for _, c := range r.Counts {
		t.add(string(c.Mode), itoa(c.Sessions), itoa(c.Included), itoa(c.Excluded), itoa(c.Ungraded), itoa(c.Unfinished))
	}

	t = table("systems.csv", cat([]string{"system", "alias", "family", "mode", "sessions", "tasks"}, propHead("ws"), ivHead("pass_at_1"),
		[]string{"pass_k", "pass_k_tasks", "pass_at_k", "pass_hat_k"}, propHead("ts"), propHead("pv"), propHead("ac"), propHead("av"),
		ivHead("afa"), propHead("resolved"), []string{"ttr_median_s"}, ivHead("ttr_mean_s"),
		[]string{"latency_responses", "latency_median_ms", "latency_p25_ms", "latency_p75_ms", "latency_p90_ms",
			"calls_with_usage", "input_tokens_per_call", "output_tokens_per_call", "input_audio_tokens_per_call", "output_audio_tokens_per_call",
			"audio_seconds_per_call", "usd_per_call"})...)
	for _, sr := range r.Systems {
		for mode, x := range sr.ByMode() {
			pk := []string{"", "", "", ""}
			if x.PassK != nil {
				pk = []string{itoa(x.PassK.K), itoa(x.PassK.Tasks), x.PassK.PassAtK.csv(), x.PassK.PassHatK.csv()}
			}
			l, c := x.Latency, x.Cost
			t.add(cat([]string{sr.System.Label, sr.System.Alias, sr.System.Family, string(mode), itoa(x.Sessions), itoa(x.Tasks)},
				propCells(x.WS), ivCells(x.PassAt1), pk, propCells(x.TS), propCells(x.PV), propCells(x.AC), propCells(x.AV),
				ivCells(x.AFA), propCells(x.TTR.Resolved), []string{x.TTR.MedianS.csv()}, ivCells(x.TTR.MeanS),
				[]string{itoa(l.Responses), l.MedianMS.csv(), l.P25MS.csv(), l.P75MS.csv(), l.P90MS.csv(),
					itoa(c.CallsWithUsage), c.InputTokensPerCall.csv(), c.OutputTokensPerCall.csv(), c.InputAudioTokensCall.csv(),
					c.OutputAudioTokensCall.csv(), c.AudioSecondsPerCall.csv(), c.USDPerCall.csv()})...)
		}
	}

	t = table("headline.csv", cat([]string{"system", "mode"}, propHead("ws"), []string{"latency_median_ms", "usd_per_call"})...)
	for _, h := range Headline(r) {
		t.add(cat([]string{h.System, string(h.Mode)}, propCells(h.WS), []string{h.LatencyMS.csv(), h.USDPerCall.csv()})...)
	}

	t = table("deltas.csv", cat([]string{"system", "metric", "human", "synthetic"}, ivHead("delta"), []string{"delta_bca_low", "delta_bca_high"})...)
	for _, d := range r.Deltas {
		t.add(cat([]string{d.System, string(d.Metric), d.Human.csv(), d.Synthetic.csv()}, ivCells(d.Diff), []string{d.Diff.BCaLow.csv(), d.Diff.BCaHigh.csv()})...)
	}

	t = table("tradeoff.csv", "system", "mode", "ttr_median_s", "ws", "pareto_front")
	for _, p := range TradeoffPoints(r) {
		t.add(p.System, string(p.Mode), Num(p.TTR).csv(), Num(p.WS).csv(), strconv.FormatBool(p.Front))
	}

	t = table("anchor.csv", cat([]string{"system", "pairs"}, propHead("ws_agree"), []string{"ws_alpha", "ws_alpha_note", "afa_mean_abs_diff", "afa_alpha", "afa_alpha_note"})...)
	tp := table("anchor_pairs.csv", "system", "task", "session_1", "session_2", "ws_1", "ws_2", "afa_1", "afa_2")
	for _, a := range r.Anchor {
		t.add(cat([]string{a.System, itoa(a.Pairs)}, propCells(a.WSAgree), []string{a.WSAlpha.csv(), a.WSNote, a.AFAMeanAbsDiff.csv(), a.AFAAlpha.csv(), a.AFANote})...)
		for _, p := range a.Tasks {
			tp.add(a.System, p.Task, p.Sessions[0], p.Sessions[1], itoa(p.WS[0]), itoa(p.WS[1]), p.AFA[0].csv(), p.AFA[1].csv())
		}
	}

	t = table("annotators.csv", "measure", "estimate", "low", "high", "tasks_or_units", "undefined_resamples", "n", "note")
	ti := table("annotator_items.csv", "item", "task", "plan", "ratings", "fidelity_mean", "naturalness_mean", "leak_votes")
	if a := r.Annotators; a != nil {
		t.add("items", itoa(a.Items), "", "", "", "", "", "")
		t.add("annotators", itoa(a.Annotators), "", "", "", "", "", "")
		t.add("ratings", itoa(a.Ratings), "", "", "", "", "", "")
		t.add(cat([]string{"fidelity_mean"}, ivCells(a.Fidelity), []string{itoa(a.Ratings), ""})...)
		t.add(cat([]string{"naturalness_mean"}, ivCells(a.Naturalness), []string{itoa(a.Ratings), ""})...)
		t.add(cat([]string{"leakage_rate"}, ivCells(a.Leakage), []string{itoa(a.Ratings), fmt.Sprintf("%d leak ratings, %d items flagged by a majority", a.LeakRatings, a.LeakItems)})...)
		t.add("fidelity_alpha_ordinal", a.FidelityAlpha.Alpha.csv(), a.FidelityAlpha.Interval.Low.csv(), a.FidelityAlpha.Interval.High.csv(),
			itoa(a.FidelityAlpha.Units), itoa(a.FidelityAlpha.Interval.Undefined), itoa(a.FidelityAlpha.Values), a.FidelityAlpha.Note)
		t.add("naturalness_alpha_ordinal", a.NaturalnessAlpha.Alpha.csv(), a.NaturalnessAlpha.Interval.Low.csv(), a.NaturalnessAlpha.Interval.High.csv(),
			itoa(a.NaturalnessAlpha.Units), itoa(a.NaturalnessAlpha.Interval.Undefined), itoa(a.NaturalnessAlpha.Values), a.NaturalnessAlpha.Note)
		k := a.LeakageKappa
		t.add("leakage_fleiss_kappa", k.Kappa.csv(), "", "", itoa(k.Subjects), "", itoa(k.Raters),
			joinNote(fmt.Sprintf("z=%s p=%s", k.Z.csv(), k.PValue.csv()), k.Note))
		for _, it := range a.PerItem {
			ti.add(it.Item, it.Task, it.Plan, itoa(it.Ratings), it.Fidelity.csv(), it.Naturalness.csv(), itoa(it.LeakVotes))
		}
	}

	t = table("slices.csv", cat([]string{"dimension", "value", "system", "tasks"}, propHead("human_ws"), propHead("synthetic_ws"),
		[]string{"human_afa", "synthetic_afa"}, ivHead("ws_delta"))...)
	for _, s := range r.Slices {
		t.add(cat([]string{s.Dimension, s.Value, s.System, itoa(s.Tasks)}, propCells(s.Human), propCells(s.Synthetic),
			[]string{s.HumanAFA.csv(), s.SynthAFA.csv()}, ivCells(s.Delta))...)
	}

	if len(r.Conditions) > 0 {
		t = table("conditions.csv", cat([]string{"condition", "system", "tasks", "paired_tasks"}, propHead("human_ws"), propHead("synthetic_ws"), ivHead("ws_delta"),
			[]string{"human_afa", "synthetic_afa"})...)
		for _, c := range r.Conditions {
			t.add(cat([]string{c.Condition, c.System, itoa(c.Tasks), itoa(c.Paired)}, propCells(c.Human), propCells(c.Synthetic), ivCells(c.Delta),
				[]string{c.HumanAFA.csv(), c.SynthAFA.csv()})...)
		}
	}
	if len(r.SoundAlike) > 0 {
		t = table("sound_alike.csv", cat([]string{"system", "mode", "sessions", "passes", "sound_alike_sessions"}, propHead("sound_alike_only_of_passes"))...)
		for _, s := range r.SoundAlike {
			t.add(cat([]string{s.System, string(s.Mode), itoa(s.Sessions), itoa(s.Passes), itoa(s.SoundAlikeAll)}, propCells(s.SoundAlikeOnly))...)
		}
	}
	if len(r.Transfers) > 0 {
		t = table("transfers.csv", cat([]string{"mode", "system", "behavior_profile", "sessions"}, propHead("transfers"), []string{"forbidden_transfers", "missed_required_transfers"})...)
		for _, x := range r.Transfers {
			t.add(cat([]string{string(x.Mode), x.System, x.Behavior, itoa(x.Sessions)}, propCells(x.Transfers), []string{itoa(x.Wrong), itoa(x.Missed)})...)
		}
	}

	t = table("field_misses.csv", "task", "field", "required", "human_misses", "human_sessions", "human_miss_rate", "synthetic_misses", "synthetic_sessions", "synthetic_miss_rate")
	for _, f := range r.FieldMiss {
		t.add(f.Task, f.Field, strconv.FormatBool(f.Required), itoa(f.HumanMiss), itoa(f.HumanN), f.HumanRate.csv(), itoa(f.SynthMiss), itoa(f.SynthN), f.SynthRate.csv())
	}

	t = table("exclusion_reasons.csv", "reason", "human", "synthetic", "had_passed")
	for _, rc := range r.Exclusions.ByReason {
		t.add(rc.Reason, itoa(rc.Human), itoa(rc.Synth), itoa(rc.Passed))
	}
	t = table("exclusions.csv", "session", "mode", "system", "task", "reason", "note", "by", "graded", "passed")
	for _, s := range r.Exclusions.Sessions {
		t.add(s.Session, string(s.Mode), s.System, s.Task, s.Reason, s.Note, s.By, strconv.FormatBool(s.Graded), strconv.FormatBool(s.Passed))
	}

	if p := r.Participants; p != nil {
		t = table("icc.csv", cat([]string{"metric", "participants", "sessions", "sessions_per_participant"}, ivHead("icc"),
			[]string{"between_participant_variance", "within_participant_variance", "note"})...)
		for _, x := range p.ICC {
			t.add(cat([]string{string(x.Metric), itoa(x.Participants), itoa(x.Sessions), x.MeanSessions.csv()}, ivCells(x.ICC),
				[]string{x.Between.csv(), x.Within.csv(), x.Note})...)
		}
		t = table("delta_sensitivity.csv", cat([]string{"system", "metric"}, ivHead("task_level"), []string{"participants"}, ivHead("participant_level"))...)
		for _, x := range p.Sensitivity {
			t.add(cat([]string{x.System, string(x.Metric)}, ivCells(x.TaskLevel), []string{itoa(x.Participants)}, ivCells(x.ParticipantLevel))...)
		}
	}

	if p := r.Planning; p != nil {
		t = table("planning.csv", "system", "metric", "participants", "sessions_per_participant", "sessions_per_system", "leftover_sessions",
			"human_sessions", "tasks", "alpha", "power", "within_task_variance", "synthetic_sessions_per_task", "delta_variance",
			"degrees_of_freedom", "min_detectable_delta", "note")
		for _, row := range p.Rows {
			t.add(row.System, string(row.Metric), itoa(p.Participants), itoa(p.SessionsPerParticipant), itoa(p.SessionsPerSystem), itoa(p.Leftover),
				itoa(row.HumanSessions), itoa(row.Tasks), Num(p.Alpha).csv(), Num(p.Power).csv(), row.WithinVariance.csv(), row.Seeds.csv(),
				row.DeltaVariance.csv(), itoa(row.DF), row.MDD.csv(), row.Note)
		}
	}

	out := make([]File, 0, len(ts))
	for _, t := range ts {
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		if err := w.WriteAll(t.rows); err != nil {
			return nil, fmt.Errorf("write %s: %w", t.name, err)
		}
		out = append(out, File{t.name, b.Bytes()})
	}
	return out, nil
}
