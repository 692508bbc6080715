package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/annotate"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/storetest"
	"github.com/voicebench/humanaudit/internal/task"
)

// TestAnnotateCreateAndExport feeds `audit bank rating-set --json` to `audit annotate create`,
// rates through the store, and exports ratings.csv.
func TestAnnotateCreateAndExport(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	t.Setenv("DATABASE_URL", storetest.NewURL(t))
	dir := t.TempDir()
	bankDir := filepath.Join(dir, "bank")
	tasksDir := filepath.Join("..", "..", "tasks")
	itemsFile := filepath.Join(dir, "rating-set.json")
	out, stderr, err := runAudit(t, "bank", "rating-set", "--json", "--tasks", tasksDir, "--dir", bankDir)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	os.WriteFile(itemsFile, []byte(out), 0o644)
	var items []annotate.BankItem
	if err := json.Unmarshal([]byte(out), &items); err != nil || len(items) != 72 {
		t.Fatalf("rating set: %d items, %v", len(items), err)
	}
	// The bank's audio, where audit bank build would write it.
	for _, it := range items {
		os.MkdirAll(filepath.Dir(it.Audio), 0o755)
		os.WriteFile(it.Audio, []byte("RIFF....WAVE"), 0o644)
	}

	ctx := context.Background()
	db, err := store.Open(ctx, store.Config{URL: os.Getenv("DATABASE_URL")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateStudy(ctx, audit.Study{ID: "rate", Name: "Rating", Seed: 4, Config: json.RawMessage(`{"title":"Rating"}`)}); err != nil {
		t.Fatal(err)
	}

	// An item whose transcript gives away a gold-only value is refused, and nothing is stored.
	var leaky []map[string]any
	json.Unmarshal([]byte(out), &leaky)
	i, gold := goldOnly(t, tasksDir, leaky)
	leaky[i]["transcript"] = "Hi, I'm calling and the answer is " + gold
	b, _ := json.Marshal(leaky)
	leakyFile := filepath.Join(dir, "leaky.json")
	os.WriteFile(leakyFile, b, 0o644)
	_, stderr, err = runAudit(t, "annotate", "create", "--study", "rate", "--annotators", "1", "--items", leakyFile, "--tasks-dir", tasksDir, "--bank-dir", bankDir)
	if err == nil || !strings.Contains(stderr, "leaks hidden task content") || !strings.Contains(err.Error(), "was not stored") {
		t.Fatalf("leaky set: %v\n%s", err, stderr)
	}
	if stored, _ := db.RatingItems(ctx); len(stored) != 0 {
		t.Fatalf("%d items stored from a refused set", len(stored))
	}

	out, stderr, err = runAudit(t, "annotate", "create", "--study", "rate", "--annotators", "3", "--items", itemsFile, "--tasks-dir", tasksDir,
		"--bank-dir", bankDir, "--base-url", "https://audit.example")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	links := regexp.MustCompile(`(?m)^annotator: https://audit\.example/a/([A-Za-z0-9_-]{22,})$`).FindAllStringSubmatch(out, -1)
	if len(links) != 3 || !strings.Contains(stderr, "study rate: 72 rating items of 24 tasks, blinded and checked") {
		t.Fatalf("create:\n%s\n%s", out, stderr)
	}
	st, _ := db.Study(ctx, "rate")
	set := annotate.StudySet(st.Config).Items
	var cfg struct{ Title string }
	json.Unmarshal(st.Config, &cfg)
	if len(set) != 72 || cfg.Title != "Rating" {
		t.Fatalf("study config after create: %s", st.Config)
	}
	// An empty rating set is refused and the stored set stays (it would take the study's items
	// away from its annotators).
	emptyFile := filepath.Join(dir, "empty.json")
	os.WriteFile(emptyFile, []byte("[]\n"), 0o644)
	_, stderr, err = runAudit(t, "annotate", "create", "--study", "rate", "--annotators", "1", "--items", emptyFile, "--tasks-dir", tasksDir, "--bank-dir", bankDir)
	if err == nil || !strings.Contains(err.Error(), "empty.json: the rating set is empty") {
		t.Fatalf("empty set: %v\n%s", err, stderr)
	}
	if st, _ := db.Study(ctx, "rate"); len(annotate.StudySet(st.Config).Items) != 72 {
		t.Fatalf("the empty set replaced the stored one: %s", st.Config)
	}
	// Another link later keeps the set and takes the next seed position.
	out, _, err = runAudit(t, "annotate", "create", "--study", "rate", "--annotators", "1")
	if err != nil || strings.Count(out, "annotator: ") != 1 {
		t.Fatalf("one more annotator: %v %s", err, out)
	}
	anns, _ := db.Annotators(ctx, "rate")
	if len(anns) != 4 || anns[3].SeedPosition != 3 {
		t.Fatalf("annotators %+v", anns)
	}
	// --title names the annotation task on the annotators' page; the set and the study's own title stay.
	if _, stderr, err := runAudit(t, "annotate", "create", "--study", "rate", "--title", "Caller speech ratings"); err != nil {
		t.Fatalf("--title: %v\n%s", err, stderr)
	}
	st, _ = db.Study(ctx, "rate")
	json.Unmarshal(st.Config, &cfg)
	if s := annotate.StudySet(st.Config); s.Title != "Caller speech ratings" || len(s.Items) != 72 || cfg.Title != "Rating" {
		t.Fatalf("study config after --title: %s", st.Config)
	}

	// Two annotators rate; the export is their ratings in long format.
	a1, _ := db.AnnotatorByToken(ctx, links[0][1])
	a2, _ := db.AnnotatorByToken(ctx, links[1][1])
	db.SaveRating(ctx, audit.Rating{AnnotatorID: a1.ID, ItemID: set[0], Fidelity: 4, Naturalness: 5, Leakage: false})
	db.SaveRating(ctx, audit.Rating{AnnotatorID: a2.ID, ItemID: set[0], Fidelity: 2, Naturalness: 3, Leakage: true, Note: "names the premium, \"which\" it can't know"})
	db.SaveRating(ctx, audit.Rating{AnnotatorID: a2.ID, ItemID: set[1], Fidelity: 5, Naturalness: 1, Leakage: false})
	csvPath := filepath.Join(dir, "ratings.csv")
	if _, stderr, err := runAudit(t, "annotate", "export", "--study", "rate", "--out", csvPath); err != nil || !strings.Contains(stderr, "3 ratings") {
		t.Fatalf("export: %v %s", err, stderr)
	}
	f, _ := os.Open(csvPath)
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	it0, _ := db.RatingItem(ctx, set[0])
	got := map[string]string{}
	for _, r := range recs[1:] {
		got[r[0]+"/"+r[3]] = strings.Join(r[1:8], "|")
	}
	want := map[string]string{
		set[0] + "/" + strconv.FormatInt(a1.ID, 10): it0.TaskID + "|" + it0.PlanID + "|" + strconv.FormatInt(a1.ID, 10) + "|4|5|no|",
		set[0] + "/" + strconv.FormatInt(a2.ID, 10): it0.TaskID + "|" + it0.PlanID + "|" + strconv.FormatInt(a2.ID, 10) + "|2|3|yes|names the premium, \"which\" it can't know",
	}
	if strings.Join(recs[0][:7], ",") != "item,task,plan,annotator,fidelity,naturalness,leakage" || len(recs) != 4 {
		t.Fatalf("ratings.csv: %v", recs)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("ratings.csv %s: %q, want %q", k, got[k], w)
		}
	}
}

// goldOnly finds an item whose task has a gold-only value (one no caller fact holds) and returns
// the item's index and the value.
func goldOnly(t *testing.T, tasksDir string, items []map[string]any) (int, string) {
	t.Helper()
	for i, it := range items {
		tk, err := task.Find(it["task"].(string), tasksDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range annotate.HiddenValues(tk) {
			if strings.HasPrefix(h.Source, "gold-only") {
				return i, h.Text
			}
		}
	}
	t.Fatal("no task of the rating set has a gold-only value")
	return 0, ""
}
