package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/store/storetest"
	"github.com/voicebench/humanaudit/internal/textcall"
	"github.com/voicebench/humanaudit/internal/trace"
)

const testTasksDir = "../../internal/grade/testdata/tasks"

// audit synth runs one frozen-caller call against a protocol fake named in a systems file, stores
// and exports it; run again, it skips the finished pair.
func TestSynthCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("a real-time call; skipped with -short")
	}
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed")
	}
	t.Setenv("DATABASE_URL", storetest.NewURL(t))
	var replies []agenttest.Reply
	for range 10 {
		replies = append(replies, agenttest.Reply{Text: "Thank you. Goodbye!", AudioMS: 500})
	}
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: replies})
	dir := t.TempDir()
	sysFile := filepath.Join(dir, "systems.json")
	b, _ := json.Marshal(map[string]any{"systems": []map[string]any{{"label": "fake-ga", "family": "openai", "endpoint": fake.URL(), "model": "gpt-realtime", "voice": "marin", "key_label": "FAKE_REALTIME_KEY"}}})
	os.WriteFile(sysFile, b, 0o644)
	os.WriteFile(filepath.Join(dir, "secrets.txt"), []byte("FAKE_REALTIME_KEY=sk-test-not-a-real-key\n"), 0o600)
	out := filepath.Join(dir, "out")
	args := []string{"synth", "--system", "fake-ga", "--tasks", "it-vpn-incident", "--seeds", "1", "--out", out, "--systems", sysFile,
		"--tasks-dir", testTasksDir, "--data", filepath.Join(dir, "data"), "--secrets", filepath.Join(dir, "secrets.txt"), "--render-missing", "--time-limit", "45s"}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("audit synth: %v\n%s", err, stderr.String())
	}
	t.Logf("stderr:\n%s", stderr.String())
	if !strings.Contains(stdout.String(), "fake-ga: 1 pairs, 0 skipped (finished earlier), 1 ran, 0 excluded, 0 failed") {
		t.Errorf("stdout %q", stdout.String())
	}
	for _, want := range []string{"1 to run", "done  it-vpn-incident seed 1 (syn-fake-ga-it-vpn-incident-s1-1)"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("progress lacks %q", want)
		}
	}
	ev, err := trace.ReadFile(filepath.Join(out, "traces", "syn-fake-ga-it-vpn-incident-s1-1.jsonl"))
	if err != nil || ev[len(ev)-1].Type != trace.SessionEnd {
		t.Errorf("exported trace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "recordings", "syn-fake-ga-it-vpn-incident-s1-1.wav")); err != nil {
		t.Errorf("recording: %v", err)
	}
	stdout.Reset()
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "1 pairs, 1 skipped (finished earlier), 0 ran") {
		t.Errorf("second run: %q", stdout.String())
	}

	// Without --render-missing and without a built bank the frozen caller has nothing to say: the
	// run refuses to start rather than substitute a voice.
	err = run(context.Background(), args[:len(args)-3], &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "audit bank build") {
		t.Errorf("no bank: %v", err)
	}
}

func TestImportTracesCommand(t *testing.T) {
	t.Setenv("DATABASE_URL", storetest.NewURL(t))
	tasks, err := loadTaskDir(testTasksDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, tk := range tasks[:2] {
		ev, err := textcall.Run(context.Background(), tk, textcall.NewScripted(tk, textcall.Flaws{}), textcall.Options{Seed: int64(i + 1)})
		if err != nil {
			t.Fatal(err)
		}
		trace.WriteFile(filepath.Join(dir, tk.ID+".jsonl"), ev)
	}
	os.WriteFile(filepath.Join(dir, "broken.jsonl"), []byte("{}\n"), 0o644)
	var stdout, stderr bytes.Buffer
	args := []string{"import-traces", dir, "--system", "vendor-y", "--tasks", testTasksDir}
	err = run(context.Background(), args, &stdout, &stderr)
	if ee, ok := err.(exitError); !ok || ee.code != 1 {
		t.Errorf("a refused file: %v, want exit status 1", err)
	}
	t.Logf("%s%s", stdout.String(), stderr.String())
	if !strings.Contains(stdout.String(), "2 imported, 0 skipped, 1 refused") || !strings.Contains(stdout.String(), "WS=1") ||
		!strings.Contains(stderr.String(), "broken.jsonl: events do not decode: line 1: event has no type") {
		t.Errorf("import output:\n%s\n%s", stdout.String(), stderr.String())
	}
	os.Remove(filepath.Join(dir, "broken.jsonl"))
	stdout.Reset()
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "0 imported, 2 skipped, 0 refused") {
		t.Errorf("second import: %s", stdout.String())
	}
}
