package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/voicebench/humanaudit/internal/report"
)

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("report", stderr)
	studyID := fs.String("study", "", "study id")
	out := fs.String("out", "", "output directory")
	seed := fs.Int64("seed", -1, "bootstrap seed (default: the study's seed)")
	resamples := fs.Int("resamples", report.DefaultResamples, "bootstrap resamples per interval")
	level := fs.Float64("level", 0.95, "confidence level of every interval")
	planning := fs.Bool("planning", false, "add the minimum detectable delta at 80% power for a planned study size")
	participants := fs.Int("participants", 0, "planned participants (with --planning)")
	perParticipant := fs.Int("sessions-per-participant", 0, "planned sessions per participant (with --planning; default: the study plan's)")
	power := fs.Float64("power", 0.8, "power for --planning")
	prices := fs.String("prices", "", `JSON file of prices per system label: {"LABEL": {"input_text_per_mtok": 4, "input_audio_per_mtok": 32, "output_text_per_mtok": 16, "output_audio_per_mtok": 64}}`)
	dbf := addDataFlag(fs, "data directory (the private database cluster lives in its pg subdirectory); DATABASE_URL overrides")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *studyID == "" || *out == "" || len(pos) > 0 {
		fmt.Fprintln(stderr, "usage: audit report --study ID --out DIR [--seed S] [--resamples 10000] [--planning --participants N]")
		return errUsage
	}
	if *planning && *participants < 1 {
		fmt.Fprintln(stderr, "audit report: --planning needs --participants N (N ≥ 1)")
		return errUsage
	}
	opts := report.Options{Resamples: *resamples, Level: *level}
	if *planning {
		opts.Planning = &report.PlanningOptions{Participants: *participants, SessionsPerParticipant: *perParticipant, Power: *power}
	}
	if *prices != "" {
		b, err := os.ReadFile(*prices)
		if err != nil {
			return fmt.Errorf("prices: %w", err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&opts.Prices); err != nil {
			return fmt.Errorf("prices %s: want {\"SYSTEM\": {\"input_text_per_mtok\": …}}: %w", *prices, err)
		}
	}

	log := warnLogger(stderr)
	db, err := dbf.open(ctx, log)
	if err != nil {
		return err
	}
	defer db.Close()
	in, err := report.Load(ctx, db, *studyID)
	if err != nil {
		return err
	}
	opts.Seed = uint64(in.Study.Seed)
	if *seed >= 0 {
		opts.Seed = uint64(*seed)
	}
	rep, err := report.Build(in, opts)
	if err != nil {
		return fmt.Errorf("report %s: %w", *studyID, err)
	}
	files, err := report.Write(*out, rep)
	if err != nil {
		return err
	}
	for _, c := range rep.Counts {
		fmt.Fprintf(stdout, "%-9s sessions %d, included %d, excluded %d\n", c.Mode, c.Sessions, c.Included, c.Excluded)
	}
	for _, d := range rep.Deltas {
		if d.Metric == report.MetricWS && !d.Diff.Estimate.IsNaN() {
			tasks := "tasks"
			if d.Diff.Clusters == 1 {
				tasks = "task"
			}
			fmt.Fprintf(stdout, "WS delta %-22s %+.3f [%+.3f, %+.3f] over %d %s\n", d.System, float64(d.Diff.Estimate), float64(d.Diff.Low), float64(d.Diff.High), d.Diff.Clusters, tasks)
		}
	}
	fmt.Fprintf(stdout, "wrote %d files to %s (bootstrap seed %d, %d resamples)\n", len(files), *out, opts.Seed, opts.Resamples)
	return nil
}
