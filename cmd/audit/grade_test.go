package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGradeCommand(t *testing.T) {
	golden := filepath.Join("..", "..", "internal", "grade", "testdata", "golden")
	tasks := filepath.Join("..", "..", "internal", "grade", "testdata", "tasks")
	gradeCLI := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"grade", "--tasks", tasks}, args...), &out, &errOut)
		return out.String(), errOut.String(), err
	}
	t.Run("prints the grade byte for byte", func(t *testing.T) {
		out, _, err := gradeCLI(filepath.Join(golden, "commit-without-approval.trace.jsonl"))
		want, _ := os.ReadFile(filepath.Join(golden, "commit-without-approval.grade.json"))
		if err != nil || out != string(want) {
			t.Fatalf("err %v\n%s", err, out)
		}
	})
	bad := t.TempDir()
	cut := filepath.Join(bad, "cut.jsonl")
	b, _ := os.ReadFile(filepath.Join(golden, "clean-success.trace.jsonl"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	os.WriteFile(cut, []byte(strings.Join(lines[:len(lines)-1], "\n")+"\n"), 0o644)
	garbled := filepath.Join(bad, "garbled.jsonl")
	os.WriteFile(garbled, []byte(lines[0]+"\n{\"seq\":2,\"type\":\n"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"another task's trace", []string{"--task", "it-vpn-incident", filepath.Join(golden, "clean-success.trace.jsonl")}, `is a trace of task "fnol-auto-glass", not "it-vpn-incident"`},
		{"a call cut short", []string{cut}, "has no session.end"},
		{"an unreadable trace names the line", []string{garbled}, "garbled.jsonl: line 2:"},
		{"a missing trace", []string{filepath.Join(bad, "none.jsonl")}, "none.jsonl"},
		{"an unknown task", []string{"--task", "no-such-task", filepath.Join(golden, "clean-success.trace.jsonl")}, `task "no-such-task"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := gradeCLI(tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	if _, _, err := gradeCLI("--allow-incomplete", cut); err != nil {
		t.Errorf("--allow-incomplete: %v", err)
	}
}
