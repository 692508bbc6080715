package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/storetest"
	"github.com/voicebench/humanaudit/internal/study"
)

// writeStudyTasks writes n valid task files flagged audit24 (the first anchors also anchor),
// with risk tiers and required-field counts that vary, and returns the directory.
func writeStudyTasks(t *testing.T, n, anchors int) string {
	t.Helper()
	dir := t.TempDir()
	risks := []string{"low", "medium", "high"}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("task-%02d", i+1)
		subsets := []string{"audit24"}
		if i < anchors {
			subsets = append(subsets, "anchor")
		}
		fields := []map[string]any{{"name": "caller_name", "type": "string", "required": true}}
		props := map[string]any{"caller_name": map[string]string{"type": "string"}}
		facts := []map[string]any{{"id": "name", "label": "Your name", "field": "caller_name", "reveal": "volunteer", "versions": []map[string]string{{"value": "Ann Lee"}}}}
		gold := []map[string]any{{"field": "caller_name", "gold": "Ann Lee", "grader": "casefold"}}
		for j := 0; j < 2+i%9; j++ {
			f := fmt.Sprintf("field_%d", j)
			fields = append(fields, map[string]any{"name": f, "type": "string", "required": true})
			props[f] = map[string]string{"type": "string"}
			facts = append(facts, map[string]any{"id": f, "label": "Fact " + f, "field": f, "reveal": "on_ask", "asked_as": []string{"fact " + f},
				"versions": []map[string]string{{"value": fmt.Sprintf("V-%d-%d", i, j)}}})
			gold = append(gold, map[string]any{"field": f, "gold": fmt.Sprintf("V-%d-%d", i, j), "grader": "exact"})
		}
		doc := map[string]any{"id": id, "version": 1, "title": "Task " + id, "archetype": "it_service_desk", "industry": "it",
			"artifact_class": "ticket", "authorization": "prepare_only", "tool_burden": "light", "knowledge_requirement": "none",
			"behavior_profile": "cooperative", "risk_tier": risks[i%3], "subsets": subsets,
			"user": map[string]any{"persona": map[string]string{"name": "Ann Lee", "role": "employee"}, "goals": []string{"Open a ticket"}, "facts": facts},
			"agent": map[string]any{"instructions": "Open a ticket.", "tools": []map[string]any{
				{"name": "record_fields", "kind": "record", "description": "Record fields", "parameters": map[string]any{"type": "object", "properties": props}},
				{"name": "mark_ready", "kind": "transition", "to": "ready_for_review", "description": "Mark ready", "parameters": map[string]any{"type": "object", "properties": map[string]any{}}}},
				"artifact": map[string]any{"fields": fields, "lifecycle": []string{"draft", "ready_for_review"}}},
			"grader": map[string]any{"target_state": "ready_for_review", "fields": gold},
		}
		b, _ := json.MarshalIndent(doc, "", " ")
		if err := os.WriteFile(filepath.Join(dir, id+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runAudit(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestStudyPlanAcceptance(t *testing.T) {
	tasks := writeStudyTasks(t, 24, 6)
	out := filepath.Join(t.TempDir(), "plan.csv")
	sysFile := filepath.Join(t.TempDir(), "systems.json")
	os.WriteFile(sysFile, []byte(`{"systems":[{"label":"alpha","family":"reference"},{"label":"bravo","family":"reference"},
		{"label":"charlie","family":"reference"},{"label":"delta","family":"reference"},{"label":"echo","family":"reference"}]}`), 0o644)
	for _, systemsArg := range []string{"alpha,bravo,charlie,delta,echo", sysFile} {
		_, stderr, err := runAudit(t, "study", "plan", "--tasks", "audit24", "--systems", systemsArg, "--anchor", "anchor",
			"--sessions-per-participant", "5", "--seed", "3", "--out", out, "--tasks-dir", tasks)
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		for _, want := range []string{
			"5 systems × (24 tasks + 6 anchor repeats) = 150 sessions; 5 per participant → 30 participants",
			"Sessions per system at each position (equal: yes, 6 each)",
			"ordered pairs of different systems: min 6, max 6 (balanced)",
			"Cells per participant: 5 sessions each (30 participants)",
			"every system meets the same tasks at the same positions",
			"wrote " + out + ": 150 sessions for 30 participants",
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("report lacks %q:\n%s", want, stderr)
			}
		}
		if got := len(regexp.MustCompile(`(?m)^\s+(alpha|bravo|charlie|delta|echo)\s+6\s+6\s+6\s+6\s+6\s*$`).FindAllString(stderr, -1)); got != 5 {
			t.Errorf("%d systems with 6 sessions at each of the 5 positions, want 5:\n%s", got, stderr)
		}
		sessions, err := readPlanFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(sessions) != 150 {
			t.Fatalf("%d sessions in plan.csv", len(sessions))
		}
		if problems := study.Verify(sessions); len(problems) > 0 {
			t.Fatal(problems)
		}
	}
	// The same seed gives the same file; --report sends the report to a file.
	first, _ := os.ReadFile(out)
	report := filepath.Join(t.TempDir(), "report.txt")
	_, stderr, err := runAudit(t, "study", "plan", "--systems", "alpha,bravo,charlie,delta,echo", "--anchor", "anchor",
		"--sessions-per-participant", "5", "--seed", "3", "--out", out, "--tasks-dir", tasks, "--report", report)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(out)
	if !bytes.Equal(first, again) {
		t.Fatal("plan.csv differs for the same seed")
	}
	if rep, _ := os.ReadFile(report); !strings.Contains(string(rep), "equal: yes, 6 each") || strings.Contains(stderr, "equal: yes") {
		t.Fatalf("--report: the report went to stderr or is missing from the file")
	}
}

func TestStudyPlanRefusesImpossibleRequests(t *testing.T) {
	tasks := writeStudyTasks(t, 24, 6)
	out := filepath.Join(t.TempDir(), "plan.csv")
	for k, want := range map[string]string{
		"4":  "every participant runs the same number of sessions: 150 sessions (5 systems × (24 tasks + 6 anchor repeats)) do not split into participants of 4; fix: use 5 or 3 sessions per participant instead of 4",
		"25": "no participant meets the same task twice: 25 sessions per participant but only 24 distinct tasks; fix: use 15 sessions per participant instead of 25",
	} {
		_, _, err := runAudit(t, "study", "plan", "--systems", "a,b,c,d,e", "--anchor", "anchor", "--sessions-per-participant", k, "--out", out, "--tasks-dir", tasks)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("K=%s: got %v, want %q", k, err, want)
		}
		if _, statErr := os.Stat(out); statErr == nil {
			t.Errorf("K=%s: a refused plan wrote %s", k, out)
		}
	}
	_, _, err := runAudit(t, "study", "plan", "--systems", "a,b", "--anchor", "nope", "--out", out, "--tasks-dir", tasks)
	if err == nil || !strings.Contains(err.Error(), `--anchor: "nope" is neither a task id nor a subset flag`) {
		t.Errorf("unknown anchor: %v", err)
	}
}

func TestStudyLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	t.Setenv("DATABASE_URL", storetest.NewURL(t))
	tasks := writeStudyTasks(t, 6, 1)
	dir := t.TempDir()
	planCSV, moreCSV := filepath.Join(dir, "plan.csv"), filepath.Join(dir, "more.csv")
	consent := filepath.Join(dir, "consent.txt")
	os.WriteFile(consent, []byte("I agree to take part.\n"), 0o644)
	sysFile := filepath.Join(dir, "systems.json")
	os.WriteFile(sysFile, []byte(`{"systems":[{"label":"sys-x","family":"reference"},{"label":"sys-y","family":"reference"}]}`), 0o644)
	// 2 systems × (6 tasks + 1 anchor) = 14 sessions, 2 each: 7 slots.
	if _, stderr, err := runAudit(t, "study", "plan", "--systems", "sys-x,sys-y", "--anchor", "anchor", "--seed", "5", "--out", planCSV, "--tasks-dir", tasks); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	stdout, stderr, err := runAudit(t, "study", "create", "--id", "pilot", "--plan", planCSV, "--consent", consent, "--participants", "3",
		"--tasks-dir", tasks, "--systems", sysFile, "--base-url", "https://audit.example/", "--completion-code", "C0DE")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	links := regexp.MustCompile(`(?m)^participant: https://audit\.example/p/([A-Za-z0-9_-]{22,})$`).FindAllStringSubmatch(stdout, -1)
	if len(links) != 3 {
		t.Fatalf("want 3 participant links, got:\n%s", stdout)
	}
	if !strings.Contains(stderr, "study pilot: 14 sessions in 7 participant slots") || !strings.Contains(stderr, `system sys-x is shown as "Agent`) {
		t.Fatalf("create summary:\n%s", stderr)
	}
	if _, _, err := runAudit(t, "study", "create", "--id", "pilot", "--plan", planCSV, "--consent", consent, "--tasks-dir", tasks, "--systems", sysFile); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Fatalf("second create: %v", err)
	}
	if _, _, err := runAudit(t, "study", "create", "--id", "pilot2", "--plan", planCSV, "--tasks-dir", tasks, "--systems", sysFile); err == nil || !strings.Contains(err.Error(), "--consent FILE is required") {
		t.Fatalf("create without consent: %v", err)
	}
	if _, _, err := runAudit(t, "study", "create", "--id", "pilot3", "--plan", planCSV, "--consent", consent, "--tasks-dir", tasks); err == nil || !strings.Contains(err.Error(), `plan system "sys-x" is not defined`) {
		t.Fatalf("second create: %v", err)
	}

	ctx := context.Background()
	db, err := store.Open(ctx, store.Config{URL: os.Getenv("DATABASE_URL")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := db.Study(ctx, "pilot")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Consent        string           `json:"consent"`
		CompletionCode string           `json:"completion_code"`
		Plan           study.PlanConfig `json:"plan"`
	}
	json.Unmarshal(st.Config, &cfg)
	if cfg.Plan.SessionsPerParticipant != 2 || cfg.Plan.MaxPerSystem != 1 || cfg.CompletionCode != "C0DE" {
		t.Fatalf("study config %s", st.Config)
	}
	if cfg.Consent != "I agree to take part." {
		t.Fatalf("consent text not stored: %s", st.Config)
	}
	p1, err := db.ParticipantByToken(ctx, links[0][1])
	if err != nil {
		t.Fatal(err)
	}
	// The first participant runs both sessions; the second one is excluded and returns to the pool.
	var sessions []string
	for i := 0; i < 2; i++ {
		a, err := study.NextAssignment(ctx, db, p1.ID)
		if err != nil {
			t.Fatal(err)
		}
		s, err := db.CreateSession(ctx, audit.NewSession{AssignmentID: a.ID, TaskVersion: 1})
		if err != nil {
			t.Fatal(err)
		}
		db.StartSession(ctx, s.ID)
		db.EndSession(ctx, s.ID, "hangup")
		sessions = append(sessions, s.ID)
	}
	if _, err := db.ExcludeSession(ctx, audit.Exclusion{SessionID: sessions[1], Reason: audit.ReasonPlatformLost, By: "test"}); err != nil {
		t.Fatal(err)
	}
	stdout, _, err = runAudit(t, "study", "status", "--study", "pilot")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"study pilot: 1 of 14 planned sessions done (7%), 0 running, 13 pending, 1 excluded",
		"participants: 3 links issued; 1 of 7 plan slots started; 1 excluded cells waiting in the pool"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, stdout)
		}
	}
	before, _ := db.StatusRows(ctx, "pilot")

	// Extend with a second replicate under other slot labels and two more links.
	if _, stderr, err := runAudit(t, "study", "plan", "--systems", "sys-x,sys-y", "--anchor", "anchor", "--seed", "6", "--slot-prefix", "R",
		"--out", moreCSV, "--tasks-dir", tasks); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	stdout, stderr, err = runAudit(t, "study", "extend", "--study", "pilot", "--plan", moreCSV, "--participants", "2", "--tasks-dir", tasks, "--systems", sysFile)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "added 14 sessions (7 new participant slots); 0 rows were stored already") || strings.Count(stdout, "participant: http://127.0.0.1:8080/p/") != 2 {
		t.Fatalf("extend:\n%s\n%s", stdout, stderr)
	}
	// Re-applying the first plan adds nothing and leaves finished work alone.
	if _, stderr, err = runAudit(t, "study", "extend", "--study", "pilot", "--plan", planCSV, "--tasks-dir", tasks, "--systems", sysFile); err != nil || !strings.Contains(stderr, "added 0 sessions") {
		t.Fatalf("re-extend: %v\n%s", err, stderr)
	}
	after, _ := db.StatusRows(ctx, "pilot")
	if len(after) != len(before)+14 {
		t.Fatalf("%d status rows after extending, want %d", len(after), len(before)+14)
	}
	byID := map[int64]audit.StatusRow{}
	for _, r := range after {
		byID[r.AssignmentID] = r
	}
	for _, b := range before {
		if a := byID[b.AssignmentID]; !reflect.DeepEqual(a, b) {
			t.Fatalf("extend changed an existing row:\nbefore %+v\nafter  %+v", b, a)
		}
	}

	exportPlan, exportStatus := filepath.Join(dir, "export-plan.csv"), filepath.Join(dir, "status.csv")
	if _, stderr, err := runAudit(t, "study", "export", "--study", "pilot", "--plan", exportPlan, "--status", exportStatus); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	exported, err := readPlanFile(exportPlan)
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := readPlanFile(planCSV)
	more, _ := readPlanFile(moreCSV)
	strip := func(ss []study.Session) map[string]bool {
		m := map[string]bool{}
		for _, s := range ss {
			m[fmt.Sprintf("%s/%d/%s/%s/%d", s.Participant, s.Position, s.Task, s.System, s.Repeat)] = true
		}
		return m
	}
	if !reflect.DeepEqual(strip(exported), strip(append(orig, more...))) {
		t.Fatal("exported plan.csv is not the stored plan")
	}
	status, _ := os.ReadFile(exportStatus)
	lines := strings.Split(strings.TrimSpace(string(status)), "\n")
	if lines[0] != strings.Join(statusHeader, ",") || len(lines) != 1+len(after) {
		t.Fatalf("status.csv: %d lines, header %q", len(lines), lines[0])
	}
	if !strings.Contains(string(status), ",excluded,"+sessions[1]+",") || !strings.Contains(string(status), ",platform_lost,") {
		t.Fatalf("status.csv lacks the exclusion:\n%s", status)
	}
	if stdout, _, err := runAudit(t, "study", "status", "--study", "pilot", "--csv", "-"); err != nil || stdout != string(status) {
		t.Fatalf("status --csv - differs from export --status (%v)", err)
	}
}
