package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/voicebench/humanaudit/internal/briefing"
)

func runRoleCardsBuild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("rolecards build", stderr)
	tasksDir := addTasksFlag(fs)
	out := fs.String("out", "roleCards", "role card directory")
	check := fs.Bool("check", false, "change nothing; exit 1 naming every card that regenerating would change")
	tasks, err := parseSuite(fs, args, tasksDir, stderr)
	if err != nil {
		return err
	}
	want := map[string][]byte{}
	for _, t := range tasks {
		want[filepath.Join(*out, briefing.FileName(t))] = briefing.Markdown(t)
	}
	// Cards of tasks that no longer exist (the directory's README is not a card).
	existing, _ := filepath.Glob(filepath.Join(*out, "*.md"))
	var stale []string
	for _, f := range existing {
		if _, ok := want[f]; !ok && !strings.EqualFold(filepath.Base(f), "README.md") {
			stale = append(stale, f)
		}
	}
	paths := make([]string, 0, len(want))
	for p := range want {
		paths = append(paths, p)
	}
	sort.Strings(paths)

	var changes []string
	for _, p := range paths {
		have, err := os.ReadFile(p)
		switch {
		case err != nil:
			changes = append(changes, p+": would be created")
		case !bytes.Equal(have, want[p]):
			changes = append(changes, p+": would change")
		}
	}
	for _, p := range stale {
		changes = append(changes, p+": would be removed (no task has this id)")
	}
	if *check {
		for _, c := range changes {
			fmt.Fprintln(stdout, c)
		}
		if len(changes) > 0 {
			fmt.Fprintf(stderr, "%d role card(s) out of date: run audit rolecards build and commit the result\n", len(changes))
			return exitError{1}
		}
		fmt.Fprintf(stderr, "%d role cards up to date\n", len(paths))
		return nil
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("rolecards: %w", err)
	}
	for _, p := range paths {
		if err := os.WriteFile(p, want[p], 0o644); err != nil {
			return fmt.Errorf("rolecards: %w", err)
		}
	}
	for _, p := range stale {
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("rolecards: %w", err)
		}
	}
	fmt.Fprintf(stdout, "%d role cards in %s (%d changed)\n", len(paths), *out, len(changes))
	return nil
}
