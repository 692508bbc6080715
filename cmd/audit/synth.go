package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/systems"
	"github.com/voicebench/humanaudit/internal/condition"
	"github.com/voicebench/humanaudit/internal/secrets"
	"github.com/voicebench/humanaudit/internal/session"
	"github.com/voicebench/humanaudit/internal/synth"
	"github.com/voicebench/humanaudit/internal/task"
)

// selectTasks picks tasks by a subset flag ("audit24", "anchor"), "all", or a comma-separated
// list of task ids.
func selectTasks(all []*task.Task, which string) ([]*task.Task, error) {
	if which == "all" {
		return all, nil
	}
	var out []*task.Task
	if which == task.SubsetAudit24 || which == task.SubsetAnchor || which == task.SubsetTransfer {
		for _, t := range all {
			if t.InSubset(which) {
				out = append(out, t)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("no task is flagged %s", which)
		}
		return out, nil
	}
	for _, id := range strings.Split(which, ",") {
		i := slices.IndexFunc(all, func(t *task.Task) bool { return t.ID == strings.TrimSpace(id) })
		if i < 0 {
			return nil, fmt.Errorf("--tasks: no task %q (want audit24, anchor, transfer, all or task ids)", id)
		}
		out = append(out, all[i])
	}
	return out, nil
}

func runSynth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("synth", stderr)
	label := fs.String("system", "", "system label in the systems file")
	sel := addTaskSelectionFlags(fs)
	seeds := fs.Int("seeds", 3, "simulator seeds per task (1..N)")
	out := fs.String("out", "", "directory for the exported traces, grades and runs.csv")
	systemsFile := fs.String("systems", "systems.json", "systems file (a missing file means: only the reference agent)")
	parallel := fs.Int("parallel", 1, "calls at once")
	dbf := addDataFlag(fs, "data directory (database cluster, recordings, bank audio); DATABASE_URL overrides the database")
	data := dbf.data
	timeLimit := fs.Duration("time-limit", 15*time.Minute, "longest call")
	render := fs.Bool("render-missing", false, "render with Flite what the built bank lacks (recorded as source render) instead of failing")
	cond := fs.String("condition", "", "listening condition of every call (quiet, background_tv@10, phone_line+babble@5 …); a run resumes only its own condition's calls")
	jf := addJudgeFlags(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *label == "" || *out == "" || len(pos) > 0 || *seeds < 1 {
		fmt.Fprintln(stderr, "usage: audit synth --system LABEL --tasks audit24 --seeds 3 --out DIR [--systems systems.json] [--parallel N] [--condition quiet|background_tv@10|phone_line+babble@5 …]")
		return errUsage
	}
	tasks, err := sel.load()
	if err != nil {
		return err
	}
	sysFile, err := loadSystems(*systemsFile)
	if err != nil {
		return err
	}
	sys, err := sysFile.Lookup(*label)
	if err != nil {
		return err
	}
	keys, err := secrets.Load(*jf.secretsFile) // the judge flags define --secrets
	if err != nil {
		return err
	}
	gopts, err := jf.options()
	if err != nil {
		return err
	}
	log := warnLogger(stderr)
	endpoint := ""
	if sys.Family == systems.FamilyReference && sys.Endpoint == "" {
		url, closer, err := startReferenceAgent(ctx, log)
		if err != nil {
			return fmt.Errorf("reference agent: %w", err)
		}
		defer closer.Close()
		endpoint = url
	}
	db, err := dbf.open(ctx, log)
	if err != nil {
		return err
	}
	defer db.Close()
	// Sessions log only errors here: per-tick warnings would drown the progress lines.
	sessionLog := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	cfg := synth.Config{Store: db, System: sys, Keys: keys, Endpoint: endpoint, Tasks: tasks, Seeds: *seeds, Out: *out,
		DataDir: *data, Parallel: *parallel, Grade: gopts, TimeLimit: *timeLimit, Progress: stderr, Logger: sessionLog}
	if *cond != "" {
		spec, err := condition.Parse(*cond)
		if err != nil {
			return fmt.Errorf("--condition: %w", err)
		}
		cfg.Condition, cfg.Conditions = &spec, conditionLibrary(*data)
	}
	bankDir := filepath.Join(*data, "bank")
	if _, err := os.Stat(filepath.Join(bankDir, "manifest.json")); err != nil && !*render {
		return fmt.Errorf("synth: no built caller bank in %s (run audit bank build, or pass --render-missing to render with Flite at run time)", bankDir)
	}
	if *render {
		flite := &synth.Flite{}
		cfg.Voice = func(t *task.Task, seed int64) session.CallerVoice {
			return &synth.BankVoice{Task: t, Seed: seed, Dir: bankDir, Render: flite}
		}
	}
	sum, err := synth.Run(ctx, cfg)
	if errors.Is(err, synth.ErrLocked) {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d pairs, %d skipped (finished earlier), %d ran, %d excluded, %d failed; exported to %s\n",
		sys.Label, sum.Planned, sum.Skipped, sum.Ran, sum.Excluded, sum.Failed, *out)
	if err != nil {
		return err
	}
	if sum.Failed > 0 {
		return exitError{1}
	}
	return nil
}
