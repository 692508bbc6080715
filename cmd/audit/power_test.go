package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/report/reporttest"
	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/storetest"
)

// audit study plan --power simulates the plan it made from stated rates: a row per system and
// the pooled row for WS and AFA, progress lines on a non-terminal, the same figures again from
// the same seed, the rows in a CSV.
func TestStudyPlanPowerFromStatedRates(t *testing.T) {
	tasks := writeStudyTasks(t, 12, 3)
	dir := t.TempDir()
	rates := filepath.Join(dir, "rates.csv")
	os.WriteFile(rates, []byte("system,task,ws,afa\nbravo,*,0.55,\n*,task-01,,0.7\n"), 0o644)
	args := []string{"study", "plan", "--systems", "alpha,bravo", "--anchor", "anchor", "--sessions-per-participant", "3", "--seed", "5",
		"--out", filepath.Join(dir, "plan.csv"), "--tasks-dir", tasks, "--power", "--studies", "40", "--power-resamples", "200", "--delta", "-0.3",
		"--rates", rates, "--power-csv", filepath.Join(dir, "power.csv")}
	_, stderr, err := runAudit(t, args...)
	if err != nil {
		t.Fatalf("audit study plan --power: %v\n%s", err, stderr)
	}
	for _, want := range []string{"Power by simulating this plan: 40 studies of 30 human sessions", "overridden by " + rates,
		"] 40/40 studies analysed at delta -0.300", "] 6/6 rows searched", "(all systems)", "delta at 80% power"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("output lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "\r") {
		t.Errorf("progress redrawn on a non-terminal")
	}
	csv, err := os.ReadFile(filepath.Join(dir, "power.csv"))
	if err != nil || strings.Count(string(csv), "\n") != 7 || !strings.HasPrefix(string(csv), "system,metric,human_sessions") {
		t.Errorf("power.csv (%v):\n%s", err, csv)
	}
	_, again, err := runAudit(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	table := func(s string) string { return s[strings.Index(s, "Power by simulating"):] }
	if table(again) != table(stderr) {
		t.Errorf("the same seed gave another table:\n%s\n---\n%s", table(stderr), table(again))
	}
	bad := append(append([]string(nil), args[:len(args)-4]...), "--delta", "-0.99")
	if _, _, err := runAudit(t, bad...); err == nil || !strings.Contains(err.Error(), "out of reach") {
		t.Errorf("a delta beyond the rates: %v", err)
	}
}

// With --pilot the rates come from a stored study's synthetic sessions.
func TestStudyPlanPowerFromPilot(t *testing.T) {
	url := storetest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	ctx := context.Background()
	db, err := store.Open(ctx, store.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reporttest.Populate(t, db, reporttest.Spec{StudyID: "pilot", Seed: 4, Systems: []string{"one", "two"},
		TaskFiles: reportTaskFiles(), Seeds: 3, Annotators: 0})
	dir := t.TempDir()
	_, stderr, err := runAudit(t, "study", "plan", "--systems", "one,two", "--tasks", "fnol-auto-glass,it-vpn-incident",
		"--tasks-dir", filepath.Join("..", "..", "internal", "grade", "testdata", "tasks"), "--sessions-per-participant", "2", "--seed", "3",
		"--out", filepath.Join(dir, "plan.csv"), "--power", "--pilot", "pilot", "--studies", "20", "--power-resamples", "100", "--delta", "-0.2")
	if err != nil {
		t.Fatalf("audit study plan --power --pilot: %v\n%s", err, stderr)
	}
	for _, want := range []string{"outcomes from pilot study pilot", "note: session SD", "(all systems)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("output lacks %q:\n%s", want, stderr)
		}
	}
	_, stderr, err = runAudit(t, "study", "plan", "--systems", "one,three", "--tasks", "fnol-auto-glass,it-vpn-incident",
		"--tasks-dir", filepath.Join("..", "..", "internal", "grade", "testdata", "tasks"), "--sessions-per-participant", "2",
		"--out", filepath.Join(dir, "plan2.csv"), "--power", "--pilot", "pilot", "--studies", "20")
	if err == nil || !strings.Contains(err.Error(), "no synthetic session of system three") {
		t.Errorf("a plan system the pilot lacks: %v\n%s", err, stderr)
	}
}
