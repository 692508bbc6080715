package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTaskSuiteStrata counts the strata of the 24-task suite in `audit tasks list --json`.
func TestTaskSuiteStrata(t *testing.T) {
	if _, errOut, err := bankRun("tasks", "validate", suiteTasks); err != nil {
		t.Fatalf("tasks validate: %v\n%s", err, errOut)
	}
	out, errOut, err := bankRun("tasks", "list", "--json", suiteTasks)
	if err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	var rows []taskSummary
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	count := func(pred func(taskSummary) bool) int {
		n := 0
		for _, r := range rows {
			if pred(r) {
				n++
			}
		}
		return n
	}
	distinct := func(key func(taskSummary) string, rs []taskSummary) map[string]int {
		m := map[string]int{}
		for _, r := range rs {
			m[key(r)]++
		}
		return m
	}
	atLeast := func(what string, got, want int) {
		t.Helper()
		if got < want {
			t.Errorf("%s: %d, want at least %d", what, got, want)
		}
	}
	// The strata are the audit24 suite's; the transfer tasks stay outside it.
	var all = rows
	rows = nil
	transfer := 0
	for _, r := range all {
		if r.Audit24 {
			rows = append(rows, r)
		} else if r.Transfer != "" {
			transfer++
		}
	}
	if len(rows) != 24 || transfer != 3 || len(all) != 27 {
		t.Fatalf("%d tasks: %d audit24, %d transfer; want 24 and 3", len(all), len(rows), transfer)
	}
	atLeast("archetypes", len(distinct(func(r taskSummary) string { return r.Archetype }, rows)), 8)
	atLeast("prepare_only tasks", count(func(r taskSummary) bool { return r.Authorization == "prepare_only" }), 8)
	atLeast("approval_gated tasks", count(func(r taskSummary) bool { return r.Authorization == "approval_gated" }), 8)
	atLeast("light tasks", count(func(r taskSummary) bool { return r.ToolBurden == "light" }), 1)
	atLeast("moderate tasks", count(func(r taskSummary) bool { return r.ToolBurden == "moderate" }), 1)
	atLeast("behaviour profiles", len(distinct(func(r taskSummary) string { return r.Behavior }, rows)), 4)
	atLeast("risk tiers", len(distinct(func(r taskSummary) string { return r.RiskTier }, rows)), 3)
	atLeast("tasks with a correction", count(func(r taskSummary) bool { return r.Corrections > 0 }), 6)
	atLeast("tasks with a revocation", count(func(r taskSummary) bool { return r.Revocations > 0 }), 4)
	atLeast("tasks verifying the caller", count(func(r taskSummary) bool { return r.Verification }), 3)
	atLeast("tasks whose gold needs a KB computation", count(func(r taskSummary) bool { return r.Knowledge == "policy_compute" }), 3)
	minReq, maxReq := 100, 0
	for _, r := range rows {
		minReq, maxReq = min(minReq, r.RequiredFields), max(maxReq, r.RequiredFields)
	}
	if minReq > 5 || maxReq < 14 {
		t.Errorf("required fields range %d..%d, want from about 4 to about 15", minReq, maxReq)
	}
	if n := count(func(r taskSummary) bool { return r.Audit24 }); n != 24 {
		t.Errorf("%d audit24 tasks, want 24", n)
	}
	var anchors []taskSummary
	for _, r := range rows {
		if r.Anchor {
			anchors = append(anchors, r)
		}
	}
	if len(anchors) != 6 {
		t.Fatalf("%d anchors, want 6", len(anchors))
	}
	// Stratified: the anchors span both authorizations and tool burdens, four or more behaviour
	// profiles and archetypes, and every risk tier.
	auth := distinct(func(r taskSummary) string { return r.Authorization }, anchors)
	burden := distinct(func(r taskSummary) string { return r.ToolBurden }, anchors)
	if auth["prepare_only"] != 3 || auth["approval_gated"] != 3 || burden["light"] != 3 || burden["moderate"] != 3 {
		t.Errorf("anchors by authorization %v and burden %v, want 3 and 3 each", auth, burden)
	}
	atLeast("anchor behaviour profiles", len(distinct(func(r taskSummary) string { return r.Behavior }, anchors)), 4)
	atLeast("anchor archetypes", len(distinct(func(r taskSummary) string { return r.Archetype }, anchors)), 6)
	atLeast("anchor risk tiers", len(distinct(func(r taskSummary) string { return r.RiskTier }, anchors)), 3)
}

// TestTasksReadmeListsEveryTask keeps tasks/README.md's table in step with the task files.
func TestTasksReadmeListsEveryTask(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(suiteTasks, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := bankRun("tasks", "list", "--json", suiteTasks)
	if err != nil {
		t.Fatal(err)
	}
	var rows []taskSummary
	json.Unmarshal([]byte(out), &rows)
	for _, r := range rows {
		row := fmt.Sprintf("| `%s` | %s | %s | %s | %s | %s | %s | %d |", r.ID, r.Archetype, r.Authorization, r.ToolBurden, r.Knowledge, r.Behavior, r.RiskTier, r.RequiredFields)
		if !strings.Contains(string(readme), row) {
			t.Errorf("tasks/README.md has no row %q", row)
		}
	}
}
