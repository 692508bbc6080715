package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// audit grade leaves out a last line a crash tore only with --allow-incomplete, and says so naming
// the line; any other malformed line stays an error naming the file and the line.
func TestGradeTornTrace(t *testing.T) {
	golden := filepath.Join("..", "..", "internal", "grade", "testdata", "golden")
	tasks := filepath.Join("..", "..", "internal", "grade", "testdata", "tasks")
	b, _ := os.ReadFile(filepath.Join(golden, "clean-success.trace.jsonl"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	dir := t.TempDir()
	torn := filepath.Join(dir, "torn.jsonl")
	n := len(lines) - 3 // a crash mid-call: the 4th line from the end was being written
	os.WriteFile(torn, []byte(strings.Join(lines[:n], "\n")+"\n"+lines[n][:len(lines[n])/2]), 0o644)
	garbled := filepath.Join(dir, "garbled.jsonl")
	os.WriteFile(garbled, []byte(strings.Join(lines[:3], "\n")+"\n"+lines[3][:20]+"\n"+strings.Join(lines[4:], "\n")+"\n"), 0o644)
	grade := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"grade", "--tasks", tasks}, args...), &out, &errOut)
		return out.String(), errOut.String(), err
	}
	line := "line " + strconv.Itoa(n+1)
	if _, _, err := grade(torn); err == nil || !strings.Contains(err.Error(), line+" is torn") || !strings.Contains(err.Error(), "--allow-incomplete") {
		t.Errorf("without --allow-incomplete: %v", err)
	}
	out, errOut, err := grade("--allow-incomplete", torn)
	if err != nil || !strings.Contains(errOut, "torn.jsonl: "+line+" is torn") || !strings.Contains(out, `"partial": "partial: the trace has no session.end`) {
		t.Errorf("--allow-incomplete: %v\nstderr: %s\nstdout: %.400s", err, errOut, out)
	}
	for _, args := range [][]string{{garbled}, {"--allow-incomplete", garbled}} {
		if _, _, err := grade(args...); err == nil || !strings.Contains(err.Error(), "garbled.jsonl: line 4:") {
			t.Errorf("%v: %v; want an error naming garbled.jsonl line 4", args, err)
		}
	}
}
