package main

import (
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"text/tabwriter"

	"github.com/voicebench/humanaudit/internal/power"
	"github.com/voicebench/humanaudit/internal/report"
	"github.com/voicebench/humanaudit/internal/study"
	"github.com/voicebench/humanaudit/internal/task"
)

// powerFlags are the flags of audit study plan --power: simulate the plan just made.
type powerFlags struct {
	on                                        *bool
	delta, alpha, target, exclusion           *float64
	participantSD, sessionSD, wsRate, afaRate *float64
	studies, resamples, runs                  *int
	seed                                      *int64
	pilot, rates, csvOut                      *string
	db                                        dbFlags
}

func addPowerFlags(fs *flag.FlagSet) powerFlags {
	return powerFlags{
		on:            fs.Bool("power", false, "simulate the plan: power to detect --delta per system and the delta detectable at --target-power"),
		delta:         fs.Float64("delta", -0.15, "with --power: the true human − synthetic delta (WS and AFA alike; negative: humans below the caller)"),
		alpha:         fs.Float64("alpha", 0.05, "with --power: two-sided significance (the report's interval at 1 − alpha)"),
		target:        fs.Float64("target-power", 0.8, "with --power: the power at which the detectable delta is found"),
		exclusion:     fs.Float64("exclusion", 0.05, "with --power: share of planned human sessions excluded and lost"),
		participantSD: fs.Float64("participant-sd", 0.5, "with --power: SD of a participant's effect on the logit scale (0.5: latent ICC 0.07)"),
		sessionSD:     fs.Float64("session-sd", 0.8, "with --power and stated rates: SD of a session's effect on the logit of its fields' accuracy (a pilot estimates it)"),
		wsRate:        fs.Float64("ws-rate", 0.7, "with --power and no --pilot: the synthetic caller's WS rate for every cell --rates does not state"),
		afaRate:       fs.Float64("afa-rate", 0.85, "with --power and no --pilot: the synthetic caller's AFA for every cell --rates does not state"),
		studies:       fs.Int("studies", power.DefaultStudies, "with --power: simulated studies"),
		resamples:     fs.Int("power-resamples", power.DefaultResamples, "with --power: bootstrap resamples per interval of each simulated study"),
		runs:          fs.Int("synthetic-runs", 3, "with --power: synthetic runs (seeds) per system and task"),
		seed:          fs.Int64("power-seed", -1, "with --power: simulation seed (default: the plan's --seed)"),
		pilot:         fs.String("pilot", "", "with --power: draw the rates from this study's synthetic sessions in the database"),
		rates:         fs.String("rates", "", "with --power: CSV of stated rates (system,task,ws,afa; * for any)"),
		csvOut:        fs.String("power-csv", "", "with --power: also write the rows to this CSV file"),
		db:            addDBFlags(fs),
	}
}

// runPower simulates the plan and writes the power table to w, the progress to progress.
func (pf powerFlags) runPower(ctx context.Context, plan *study.Plan, tasks []*task.Task, w, progress io.Writer) error {
	systems := plan.Request.Systems
	var taskIDs []string
	fields := map[string]int{}
	for _, t := range tasks {
		taskIDs = append(taskIDs, t.ID)
		fields[t.ID] = len(t.Grader.Fields)
	}
	var model power.Model
	var notes []string
	source := ""
	switch {
	case *pf.pilot != "" && *pf.rates != "":
		return fmt.Errorf("--pilot and --rates: give one source of rates, not both")
	case *pf.pilot != "":
		db, err := pf.db.open(ctx, nil)
		if err != nil {
			return err
		}
		in, err := report.Load(ctx, db, *pf.pilot)
		db.Close()
		if err != nil {
			return fmt.Errorf("--pilot %s: %w", *pf.pilot, err)
		}
		model, notes, err = power.PilotModel(in, systems, taskIDs, fields, *pf.participantSD)
		if err != nil {
			return fmt.Errorf("--pilot %s: %w", *pf.pilot, err)
		}
		source = "pilot study " + *pf.pilot
	default:
		var overrides []power.RateOverride
		if *pf.rates != "" {
			f, err := os.Open(*pf.rates)
			if err != nil {
				return fmt.Errorf("--rates: %w", err)
			}
			overrides, err = power.ReadRates(*pf.rates, f)
			f.Close()
			if err != nil {
				return err
			}
		}
		var err error
		model, err = power.StatedModel(systems, taskIDs, fields, 8, *pf.wsRate, *pf.afaRate, overrides, *pf.participantSD, *pf.sessionSD)
		if err != nil {
			return fmt.Errorf("--ws-rate/--afa-rate/--rates: %w", err)
		}
		source = fmt.Sprintf("stated rates (WS %.2f, AFA %.2f", *pf.wsRate, *pf.afaRate)
		if *pf.rates != "" {
			source += ", overridden by " + *pf.rates
		}
		source += ")"
	}
	sim, err := power.NewSimulator(power.Design{Plan: plan.Sessions, SyntheticRuns: *pf.runs, Exclusion: *pf.exclusion}, model)
	if err != nil {
		return err
	}
	seed := *pf.seed
	if seed < 0 {
		seed = plan.Request.Seed
	}
	bar := power.NewBar(progress)
	res, err := sim.Run(power.Options{Studies: *pf.studies, Delta: *pf.delta, Alpha: *pf.alpha, Target: *pf.target,
		Resamples: *pf.resamples, Seed: uint64(seed), Progress: bar.Update})
	bar.Done()
	if err != nil {
		return err
	}
	writePowerTable(w, res, source, notes)
	if *pf.csvOut != "" {
		f, err := os.Create(*pf.csvOut)
		if err != nil {
			return fmt.Errorf("--power-csv: %w", err)
		}
		if err := writePowerCSV(f, res); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", *pf.csvOut, err)
		}
		return f.Close()
	}
	return nil
}

func writePowerTable(w io.Writer, r *power.Result, source string, notes []string) {
	fmt.Fprintf(w, "\nPower by simulating this plan: %d studies of %d human sessions by %d participants, %d synthetic runs per system and task, %.0f%% of human sessions excluded; outcomes from %s with a participant SD of %.2f and a session SD of %.2f (logit scale); each study analysed with the report's intervals (%d resamples, two-sided alpha %.2f); seed %d.\n",
		r.Studies, r.Sessions, r.Participants, r.SyntheticRuns, 100*r.Exclusion, source, r.ParticipantSD, r.SessionSD, r.Resamples, r.Alpha, r.Seed)
	for _, n := range notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "system\tmetric\tsessions\ttasks\tpower at %+.3f\t(closed form)\tmean estimate\tSD\t(closed-form SE)\tdelta at %.0f%% power\t(closed form)\t\n", r.Delta, 100*r.Target)
	num := func(v float64, format, undefined string) string {
		if math.IsNaN(v) {
			return undefined
		}
		return fmt.Sprintf(format, v)
	}
	for _, x := range r.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.3f ± %.3f\t%s\t%+.3f\t%.3f\t%s\t%s\t%s\t\n", x.System, x.Metric, x.Sessions, x.Tasks,
			x.Power, x.PowerSE, num(x.ClosedPower, "%.3f", "n/a"), x.MeanEstimate, x.SDEstimate, num(x.ClosedSE, "%.3f", "n/a"),
			num(x.Detectable, "%.3f", "not reached"), num(x.ClosedDetectable, "%.3f", "out of reach"))
	}
	tw.Flush()
	fmt.Fprintln(w, "  The delta at the target power is |delta| in the direction of --delta; the closed form is (t + t)·√Var(delta) from the model's second moments (docs/analysis.md). The pooled row's task-level interval ignores that participants span systems: see the report's participant-level sensitivity.")
	for _, x := range r.Rows {
		if x.Note != "" {
			fmt.Fprintf(w, "  %s %s: %s\n", x.System, x.Metric, x.Note)
		}
	}
}

func writePowerCSV(w io.Writer, r *power.Result) error {
	cw := csv.NewWriter(w)
	f := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', 8, 64)
	}
	rows := [][]string{{"system", "metric", "human_sessions", "tasks", "studies", "delta", "alpha", "power", "power_se", "closed_form_power",
		"mean_estimate", "sd_estimate", "closed_form_se", "target_power", "detectable_delta", "detectable_low", "detectable_high", "closed_form_detectable_delta", "note"}}
	for _, x := range r.Rows {
		rows = append(rows, []string{x.System, string(x.Metric), strconv.Itoa(x.Sessions), strconv.Itoa(x.Tasks), strconv.Itoa(r.Studies), f(r.Delta), f(r.Alpha),
			f(x.Power), f(x.PowerSE), f(x.ClosedPower), f(x.MeanEstimate), f(x.SDEstimate), f(x.ClosedSE), f(r.Target),
			f(x.Detectable), f(x.DetectableLow), f(x.DetectableHigh), f(x.ClosedDetectable), x.Note})
	}
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	return cw.Error()
}
