package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/task"
)

func TestRoleCardsCommittedCardsAreUpToDate(t *testing.T) {
	out, errOut, err := bankRun("rolecards", "build", "--check", "--tasks", suiteTasks, "--out", filepath.Join("..", "..", "roleCards"))
	if err != nil {
		t.Fatalf("roleCards/ is out of date (run audit rolecards build): %v\n%s%s", err, out, errOut)
	}
}

func TestRoleCardsCheckNamesEveryCardThatWouldChange(t *testing.T) {
	dir := t.TempDir()
	out, _, err := bankRun("rolecards", "build", "--tasks", suiteTasks, "--out", dir)
	all, _ := task.LoadAll(suiteTasks)
	if err != nil || !strings.Contains(out, fmt.Sprintf("%d role cards", len(all))) || len(all) < 24 {
		t.Fatalf("build: %v %q", err, out)
	}
	if _, _, err := bankRun("rolecards", "build", "--check", "--tasks", suiteTasks, "--out", dir); err != nil {
		t.Fatalf("check right after build: %v", err)
	}
	card := filepath.Join(dir, "hr-leave-request.md")
	data, _ := os.ReadFile(card)
	os.WriteFile(card, append(data, "edited by hand\n"...), 0o644)
	os.Remove(filepath.Join(dir, "it-vpn-incident.md"))
	os.WriteFile(filepath.Join(dir, "retired-task.md"), []byte("# old\n"), 0o644)

	out, _, err = bankRun("rolecards", "build", "--check", "--tasks", suiteTasks, "--out", dir)
	if exitCodeOf(err) != 1 {
		t.Fatalf("check: %v, want exit 1", err)
	}
	for _, want := range []string{
		card + ": would change",
		filepath.Join(dir, "it-vpn-incident.md") + ": would be created",
		filepath.Join(dir, "retired-task.md") + ": would be removed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 3 {
		t.Errorf("%d lines, want 3:\n%s", n, out)
	}
	// Building again restores the cards and removes the stale one.
	if _, _, err := bankRun("rolecards", "build", "--tasks", suiteTasks, "--out", dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "retired-task.md")); !os.IsNotExist(err) {
		t.Error("stale card not removed")
	}
	if _, _, err := bankRun("rolecards", "build", "--check", "--tasks", suiteTasks, "--out", dir); err != nil {
		t.Errorf("check after rebuild: %v", err)
	}
}
