package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/voicebench/humanaudit/internal/task"
)

func runTasksValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tasks validate", stderr)
	paths, err := taskPaths(fs, args)
	if err != nil {
		return err
	}
	tasks, probs := task.LoadAll(paths...)
	for _, p := range probs {
		fmt.Fprintln(stdout, p.String())
	}
	if len(probs) > 0 {
		fmt.Fprintf(stderr, "%d problem(s); %d task(s) valid\n", len(probs), len(tasks))
		return exitError{1}
	}
	fmt.Fprintf(stderr, "%d task(s) valid\n", len(tasks))
	return nil
}

// taskSummary is one row of `audit tasks list`.
type taskSummary struct {
	ID             string `json:"id"`
	Version        int    `json:"version"`
	Title          string `json:"title"`
	Archetype      string `json:"archetype"`
	Industry       string `json:"industry"`
	Authorization  string `json:"authorization"`
	ToolBurden     string `json:"tool_burden"`
	Knowledge      string `json:"knowledge_requirement"`
	Behavior       string `json:"behavior_profile"`
	RiskTier       string `json:"risk_tier"`
	RequiredFields int    `json:"required_fields"`
	Corrections    int    `json:"corrections"`
	Revocations    int    `json:"revocations"`
	Verification   bool   `json:"verification"`
	Audit24        bool   `json:"audit24"`
	Anchor         bool   `json:"anchor"`
	// Transfer is the task's transfer rule when it has a transfer tool.
	Transfer string `json:"transfer,omitempty"`
}

func summarise(t *task.Task) taskSummary {
	s := taskSummary{ID: t.ID, Version: t.Version, Title: t.Title, Archetype: t.Archetype, Industry: t.Industry,
		Authorization: string(t.Authorization), ToolBurden: t.ToolBurden, Knowledge: t.Knowledge, Behavior: t.Behavior,
		RiskTier: t.RiskTier, RequiredFields: len(t.RequiredFields()), Audit24: t.InSubset(task.SubsetAudit24), Anchor: t.InSubset(task.SubsetAnchor)}
	for _, tl := range t.Agent.Tools {
		if tl.Kind == task.ToolTransfer {
			s.Transfer = string(t.TransferRuleOf())
		}
	}
	for _, e := range t.Events {
		switch e.Kind {
		case task.Correction:
			s.Corrections++
		case task.Revocation:
			s.Revocations++
		case task.BargeIn:
			if e.Fact != "" {
				s.Corrections++
			}
		}
	}
	for _, tl := range t.Agent.Tools {
		if tl.Kind == task.ToolVerify {
			s.Verification = true
		}
	}
	return s
}

func runTasksList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tasks list", stderr)
	asJSON := fs.Bool("json", false, "print a JSON array")
	paths, err := taskPaths(fs, args)
	if err != nil {
		return err
	}
	tasks, probs := task.LoadAll(paths...)
	if len(probs) > 0 {
		for _, p := range probs {
			fmt.Fprintln(stderr, p.String())
		}
		return errors.New("some task files are invalid (run audit tasks validate)")
	}
	rows := make([]taskSummary, len(tasks))
	for i, t := range tasks {
		rows[i] = summarise(t)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	fmt.Fprintf(stdout, "%-32s %-22s %-15s %-9s %-18s %-7s %4s %s\n", "ID", "ARCHETYPE", "AUTHORIZATION", "TOOLS", "BEHAVIOR", "RISK", "REQ", "SUBSETS")
	for _, r := range rows {
		subsets := ""
		if r.Audit24 {
			subsets += "audit24 "
		}
		if r.Anchor {
			subsets += "anchor"
		}
		fmt.Fprintf(stdout, "%-32s %-22s %-15s %-9s %-18s %-7s %4d %s\n", r.ID, r.Archetype, r.Authorization, r.ToolBurden, r.Behavior, r.RiskTier, r.RequiredFields, subsets)
	}
	return nil
}

// loadSuite loads the task suite for a bank command; invalid tasks stop it.
func loadSuite(dir string, stderr io.Writer) ([]*task.Task, error) {
	tasks, probs := task.LoadAll(dir)
	if len(probs) > 0 {
		for _, p := range probs {
			fmt.Fprintln(stderr, p.String())
		}
		return nil, errors.New("some task files are invalid (run audit tasks validate)")
	}
	return tasks, nil
}

// parseSuite parses a command's flags (positional arguments are ignored) and loads the task suite
// of its --tasks directory; invalid tasks stop it.
func parseSuite(fs *flag.FlagSet, args []string, dir *string, stderr io.Writer) ([]*task.Task, error) {
	if _, err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	return loadSuite(*dir, stderr)
}

// loadTaskDir loads the tasks of dir for a command that runs them: a problem in any file stops it
// with the first one.
func loadTaskDir(dir string) ([]*task.Task, error) {
	tasks, probs := task.LoadAll(dir)
	if len(probs) > 0 {
		return nil, fmt.Errorf("%d problem(s) in %s, first: %s (run audit tasks validate)", len(probs), dir, probs[0])
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("no tasks in %s", dir)
	}
	return tasks, nil
}

// taskPaths parses a command's flags and returns its task files and directories (default tasks/).
func taskPaths(fs *flag.FlagSet, args []string) ([]string, error) {
	paths, err := parseFlags(fs, args)
	if len(paths) == 0 && err == nil {
		paths = []string{"tasks"}
	}
	return paths, err
}
