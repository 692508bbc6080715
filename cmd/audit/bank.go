package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/voicebench/humanaudit/internal/bank"
)

func runBankCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bank check", stderr)
	tasksDir := addTasksFlag(fs)
	tasks, err := parseSuite(fs, args, tasksDir, stderr)
	if err != nil {
		return err
	}
	probs := bank.Check(tasks)
	for _, p := range probs {
		fmt.Fprintln(stdout, p.String())
	}
	variants, plans := 0, 0
	for _, t := range tasks {
		variants += len(bank.Variants(t))
		plans += len(t.Bank)
	}
	if len(probs) > 0 {
		fmt.Fprintf(stderr, "%d problem(s) in %d variants of %d plans\n", len(probs), variants, plans)
		return exitError{1}
	}
	fmt.Fprintf(stderr, "bank ok: %d tasks, %d plans, %d variants\n", len(tasks), plans, variants)
	return nil
}

func runBankBuild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bank build", stderr)
	tasksDir, dir := addTasksFlag(fs), addBankDirFlag(fs, "bank audio directory")
	flite := fs.String("flite", bank.DefaultFlite, "CMU Flite binary")
	workers := fs.Int("workers", 2, "Flite processes in parallel")
	only := fs.String("task", "", "render only this task's variants")
	tasks, err := parseSuite(fs, args, tasksDir, stderr)
	if err != nil {
		return err
	}
	opts := bank.BuildOptions{Dir: *dir, Flite: *flite, Workers: *workers, Progress: stderr}
	if *only != "" {
		id := *only
		opts.Only = func(v bank.Variant) bool { return v.Task == id }
	}
	rep, err := bank.Build(ctx, tasks, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "rendered %d, unchanged %d; manifest %s\n", rep.Rendered, rep.Skipped, filepath.Join(*dir, bank.ManifestFile))
	return nil
}

func runBankImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bank import", stderr)
	tasksDir, dir := addTasksFlag(fs), addBankDirFlag(fs, "bank audio directory")
	pos, err := exactArgs(fs, args, 1, "usage: audit bank import DIR [--dir audit_data/bank] [--tasks tasks]")
	if err != nil {
		return err
	}
	tasks, err := loadSuite(*tasksDir, stderr)
	if err != nil {
		return err
	}
	rep, err := bank.Import(tasks, pos[0], *dir)
	var probs bank.AudioProblems
	if errors.As(err, &probs) {
		for _, p := range probs {
			fmt.Fprintln(stdout, p.String())
		}
		fmt.Fprintf(stderr, "%d problem(s); nothing imported\n", len(probs))
		return exitError{1}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "imported %d variants from %s into %s\n", rep.Imported, pos[0], *dir)
	return nil
}

func runBankRatingSet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bank rating-set", stderr)
	tasksDir, dir := addTasksFlag(fs), addBankDirFlag(fs, "bank audio directory the audio paths point into")
	asJSON := fs.Bool("json", false, "print a JSON array")
	tasks, err := parseSuite(fs, args, tasksDir, stderr)
	if err != nil {
		return err
	}
	items, err := bank.RatingSet(tasks)
	if err != nil {
		return err
	}
	for i := range items {
		items[i].Audio = filepath.ToSlash(filepath.Join(*dir, items[i].Audio))
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(items)
	}
	missing := 0
	for _, it := range items {
		if _, err := os.Stat(it.Audio); err != nil {
			missing++
		}
		fmt.Fprintf(stdout, "%-31s %-28s %d  %s\n", it.Task, it.Plan, it.Variant, strings.ReplaceAll(it.Transcript, "\n", " "))
	}
	if missing > 0 {
		fmt.Fprintf(stderr, "%d of %d audio files are not rendered yet (run audit bank build)\n", missing, len(items))
	}
	return nil
}
