package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/report/reporttest"
	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/storetest"
)

func reportTaskFiles() []string {
	var out []string
	for _, id := range []string{"fnol-auto-glass", "it-vpn-incident"} {
		out = append(out, filepath.Join("..", "..", "internal", "grade", "testdata", "tasks", id+".json"))
	}
	return out
}

// audit report writes every file of the report, and writes the same bytes again from the same data
// and seed.
func TestReportCommandRegeneratesByteIdentically(t *testing.T) {
	url := storetest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	ctx := context.Background()
	db, err := store.Open(ctx, store.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reporttest.Populate(t, db, reporttest.Spec{StudyID: "cli", Seed: 4, Systems: []string{"one", "two"},
		TaskFiles: reportTaskFiles(), Seeds: 2, Annotators: 3})

	dirs := []string{t.TempDir(), t.TempDir()}
	for _, dir := range dirs {
		var out, errb bytes.Buffer
		if err := run(ctx, []string{"report", "--study", "cli", "--out", dir, "--resamples", "300", "--planning", "--participants", "10"}, &out, &errb); err != nil {
			t.Fatalf("audit report: %v\n%s", err, errb.String())
		}
		for _, want := range []string{"human     sessions 6, included 5, excluded 1", "WS delta (all systems)", "wrote 34 files", "bootstrap seed 4"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, out.String())
			}
		}
	}
	var n int
	err = filepath.WalkDir(dirs[0], func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		rel, _ := filepath.Rel(dirs[0], p)
		a, _ := os.ReadFile(p)
		b, err := os.ReadFile(filepath.Join(dirs[1], rel))
		if err != nil {
			t.Errorf("second run lacks %s", rel)
		} else if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs", rel)
		}
		return nil
	})
	if err != nil || n != 34 {
		t.Errorf("walked %d files (%v), want 34 (icc.csv, delta_sensitivity.csv, headline.csv and five figures in SVG, PNG and PDF among them)", n, err)
	}
	md, _ := os.ReadFile(filepath.Join(dirs[0], "report.md"))
	for _, want := range []string{"## Human-minus-synthetic deltas", "## Anchor subset", "## Annotator study", "## Slices", "## Exclusions",
		"caller_broke_script", "## Planning: minimum detectable delta", "## Participants: share of variance", "figures/forest.svg",
		"## Headline: completion, latency and cost per system and mode", "figures/ws_latency.svg", "figures/forest.pdf"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

func TestReportCommandErrors(t *testing.T) {
	url := storetest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	ctx := context.Background()
	var out, errb bytes.Buffer
	if err := run(ctx, []string{"report", "--study", "x"}, &out, &errb); err != errUsage {
		t.Errorf("no --out: %v, want usage", err)
	}
	if err := run(ctx, []string{"report", "--study", "x", "--out", t.TempDir(), "--planning"}, &out, &errb); err != errUsage {
		t.Errorf("--planning without --participants: %v, want usage", err)
	}
	err := run(ctx, []string{"report", "--study", "nosuch", "--out", t.TempDir()}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "nosuch") || !strings.Contains(err.Error(), "not found") {
		t.Errorf("unknown study: %v", err)
	}
}
