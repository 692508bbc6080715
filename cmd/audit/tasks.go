package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/voicebench/humanaudit/internal/task"
)

func init() {
	register("tasks validate", "validate task files (default tasks/): FILE: JSONPATH: message per problem", runTasksValidate)
	register("tasks list", "list tasks and their strata (--json)", runTasksList)
}

func runTasksValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tasks validate", stderr)
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		paths = []string{"tasks"}
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
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		paths = []string{"tasks"}
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
