package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var suiteTasks = filepath.Join("..", "..", "tasks")

func bankRun(args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

func exitCodeOf(err error) int {
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestBankCheckPassesOnTheShippedBank(t *testing.T) {
	out, errOut, err := bankRun("bank", "check", "--tasks", suiteTasks)
	if err != nil || out != "" {
		t.Fatalf("bank check: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(errOut, "bank ok: 27 tasks") {
		t.Errorf("stderr %q", errOut)
	}
}

func TestBankCheckRejectsBadVariantsWithTaskPlanVariantLines(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(suiteTasks, "fnol-auto-glass.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	json.Unmarshal(data, &doc)
	b := doc["bank"].(map[string]any)
	b["approve:submit_claim"] = []any{"Yes, please go ahead and submit it.", "Let me think about that."}
	b["answer:callback_phone"] = []any{"Best number is five oh three, five five five, oh one four seven.", "It's five oh three, five five five, oh one seven four."}
	delete(b, "close")
	dir := t.TempDir()
	data, _ = json.Marshal(doc)
	os.WriteFile(filepath.Join(dir, "fnol-auto-glass.json"), data, 0o644)

	out, _, err := bankRun("bank", "check", "--tasks", dir)
	if exitCodeOf(err) != 1 {
		t.Fatalf("exit %v, want 1\n%s", err, out)
	}
	for _, want := range []string{
		"fnol-auto-glass: approve:submit_claim: 2: does not express its plan: an approval without a yes",
		"fnol-auto-glass: answer:callback_phone: 2: states fact \"callback_phone\" version 2",
		"fnol-auto-glass: answer:callback_phone: 2: does not express its plan: never says fact \"callback_phone\" version 1",
		"fnol-auto-glass: close: -: has 0 variants, needs 2 to 5",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 4 {
		t.Errorf("%d problem lines, want 4:\n%s", n, out)
	}
}

func TestBankRatingSetPrints72ItemsThreePerTask(t *testing.T) {
	out, errOut, err := bankRun("bank", "rating-set", "--json", "--tasks", suiteTasks, "--dir", "audit_data/bank")
	if err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &items); err != nil {
		t.Fatal(err)
	}
	if len(items) != 72 {
		t.Fatalf("%d items, want 72", len(items))
	}
	perTask := map[string]int{}
	for _, it := range items {
		var task, audio string
		json.Unmarshal(it["task"], &task)
		json.Unmarshal(it["audio"], &audio)
		perTask[task]++
		for _, k := range []string{"task", "plan", "variant", "user_state", "user_plan", "transcript", "audio"} {
			if _, ok := it[k]; !ok {
				t.Errorf("item lacks %q", k)
			}
		}
		if len(it) != 7 {
			t.Errorf("item has %d keys, want exactly 7", len(it))
		}
		if !strings.HasPrefix(audio, "audit_data/bank/"+task+"/") || !strings.HasSuffix(audio, ".wav") {
			t.Errorf("audio path %q", audio)
		}
	}
	if len(perTask) != 24 {
		t.Errorf("%d tasks, want 24", len(perTask))
	}
	for task, n := range perTask {
		if n != 3 {
			t.Errorf("%s: %d items, want 3", task, n)
		}
	}
}

func TestBankBuildTwiceGivesIdenticalWAVs(t *testing.T) {
	if _, err := os.Stat("/usr/bin/flite"); err != nil {
		t.Fatalf("flite is required: %v", err)
	}
	a, b := t.TempDir(), t.TempDir()
	for _, dir := range []string{a, b} {
		out, errOut, err := bankRun("bank", "build", "--tasks", suiteTasks, "--dir", dir, "--task", "it-vpn-incident")
		if err != nil {
			t.Fatalf("%v: %s", err, errOut)
		}
		if !strings.Contains(out, "rendered ") || !strings.Contains(errOut, "] ") {
			t.Errorf("output %q, progress %q", out, errOut)
		}
	}
	files, _ := filepath.Glob(filepath.Join(a, "it-vpn-incident", "*.wav"))
	if len(files) < 30 {
		t.Fatalf("%d WAVs rendered for it-vpn-incident", len(files))
	}
	for _, f := range append(files, filepath.Join(a, "manifest.json")) {
		x, _ := os.ReadFile(f)
		y, err := os.ReadFile(filepath.Join(b, strings.TrimPrefix(f, a)))
		if err != nil || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two builds", f)
		}
	}
	out, _, err := bankRun("bank", "build", "--tasks", suiteTasks, "--dir", a, "--task", "it-vpn-incident")
	if err != nil || !strings.HasPrefix(out, "rendered 0, unchanged ") {
		t.Errorf("rebuild: %v %q", err, out)
	}
}

func TestBankImportRefusesIncompleteAudio(t *testing.T) {
	src := t.TempDir()
	out, errOut, err := bankRun("bank", "import", src, "--tasks", suiteTasks, "--dir", t.TempDir())
	if exitCodeOf(err) != 1 {
		t.Fatalf("exit %v, want 1", err)
	}
	if !strings.Contains(out, "fnol-auto-glass: open: 1: ") || !strings.Contains(out, "missing") || !strings.Contains(errOut, "nothing imported") {
		t.Errorf("output %q / %q", out[:min(len(out), 300)], errOut)
	}
	if _, _, err := bankRun("bank", "import"); !errors.Is(err, errUsage) {
		t.Errorf("import without DIR: %v, want a usage error", err)
	}
}
