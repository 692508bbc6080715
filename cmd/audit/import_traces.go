package main

import (
	"context"
	"fmt"
	"io"

	"github.com/voicebench/humanaudit/internal/synth"
)

func runImportTraces(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("import-traces", stderr)
	label := fs.String("system", "", "system label for traces whose session.start names none")
	family := fs.String("family", "", "protocol family stored for a system the database does not know yet")
	tasksDir := addTasksFlag(fs)
	allowUnknown := fs.Bool("allow-unknown", false, "import traces with event types or fields the trace format does not have (they are not graded)")
	dbf := addDataFlag(fs, "data directory (the private database cluster lives in its pg subdirectory); DATABASE_URL overrides")
	jf := addJudgeFlags(fs)
	pos, err := exactArgs(fs, args, 1, "usage: audit import-traces DIR [--system LABEL] [--tasks DIR]")
	if err != nil {
		return err
	}
	tasks, err := loadTaskDir(*tasksDir)
	if err != nil {
		return err
	}
	gopts, err := jf.options()
	if err != nil {
		return err
	}
	log := warnLogger(stderr)
	db, err := dbf.open(ctx, log)
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := synth.Import(ctx, synth.ImportConfig{Store: db, Tasks: tasks, System: *label, Family: *family, Grade: gopts, AllowUnknown: *allowUnknown}, pos[0])
	counts := map[string]int{}
	for _, r := range res {
		counts[r.Status]++
		switch r.Status {
		case "imported":
			ws := "ungraded"
			if r.Grade != nil {
				ws = fmt.Sprintf("WS=%d AFA=%.2f", r.Grade.WS, r.Grade.AFA.Value)
			}
			fmt.Fprintf(stdout, "imported %s: session %s, %s seed %d, system %s, %s", r.File, r.Session, r.Task, r.Seed, r.System, ws)
			if r.Reason != "" {
				fmt.Fprintf(stdout, " (%s)", r.Reason)
			}
			fmt.Fprintln(stdout)
		case "skipped":
			fmt.Fprintf(stdout, "skipped %s: %s\n", r.File, r.Reason)
		default:
			fmt.Fprintf(stderr, "%s: %s\n", r.File, r.Reason)
		}
	}
	fmt.Fprintf(stdout, "%d imported, %d skipped, %d refused\n", counts["imported"], counts["skipped"], counts["refused"])
	if err != nil {
		return err
	}
	if counts["refused"] > 0 {
		return exitError{1}
	}
	return nil
}
