package synth

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/store/storetest"
	"github.com/voicebench/humanaudit/internal/textcall"
	"github.com/voicebench/humanaudit/internal/trace"
)

// A trace whose last line a crash tore is judged on the lines before it, with a note naming the
// torn line; any other malformed line refuses the file, naming the line.
func TestImportToleratesATornLastLine(t *testing.T) {
	db := storetest.New(t)
	ctx := context.Background()
	tasks := loadTasks(t, "it-vpn-incident")
	dir := t.TempDir()
	encode := func(seed int64) []string {
		ev, err := textcall.Run(ctx, tasks[0], textcall.NewScripted(tasks[0], textcall.Flaws{}), textcall.Options{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, e := range ev {
			b, _ := trace.MarshalEvent(e)
			lines = append(lines, string(b))
		}
		return lines
	}
	whole := encode(1)
	// A writer killed after session.end, mid-way through a line it appended (a footer, say).
	os.WriteFile(filepath.Join(dir, "ended-then-torn.jsonl"), []byte(strings.Join(whole, "\n")+"\n"+`{"seq":999,"t_ms":1`), 0o644)
	mid := encode(2)
	n := len(mid) / 2
	os.WriteFile(filepath.Join(dir, "torn-mid-call.jsonl"), []byte(strings.Join(mid[:n], "\n")+"\n"+mid[n][:len(mid[n])/2]), 0o644)
	bad := encode(3)
	bad[4] = bad[4][:len(bad[4])/2]
	os.WriteFile(filepath.Join(dir, "garbled-line-5.jsonl"), []byte(strings.Join(bad, "\n")+"\n"), 0o644)

	res, err := Import(ctx, ImportConfig{Store: db, Tasks: tasks, System: "vendor-x"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range res {
		got[filepath.Base(r.File)] = r.Status + ": " + r.Reason
		t.Logf("%s: %s %s", filepath.Base(r.File), r.Status, r.Reason)
	}
	for file, want := range map[string][]string{
		"ended-then-torn.jsonl": {"imported", "line " + strconv.Itoa(len(whole)+1) + " is torn"},
		"torn-mid-call.jsonl":   {"refused", "want session.end", "line " + strconv.Itoa(n+1) + " is torn"},
		"garbled-line-5.jsonl":  {"refused", "do not decode", "line 5"},
	} {
		for _, w := range want {
			if !strings.Contains(got[file], w) {
				t.Errorf("%s: %q, want it to say %q", file, got[file], w)
			}
		}
	}
}
