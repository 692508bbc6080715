package synth

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/store/storetest"
	"github.com/voicebench/humanaudit/internal/textcall"
	"github.com/voicebench/humanaudit/internal/trace"
)

// Traces made elsewhere (here by text-level calls) are checked, graded with the same grader and
// stored as synthetic sessions; bad files are refused with the reason; a second import skips what
// is stored.
func TestImportTraces(t *testing.T) {
	db := storetest.New(t)
	ctx := context.Background()
	tasks := loadTasks(t, "it-vpn-incident", "fnol-auto-glass")
	dir := t.TempDir()
	write := func(name string, events []trace.Event) {
		t.Helper()
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := trace.WriteFile(filepath.Join(dir, name), events); err != nil {
			t.Fatal(err)
		}
	}
	run := func(i int, seed int64, flaws textcall.Flaws) []trace.Event {
		ev, err := textcall.Run(ctx, tasks[i], textcall.NewScripted(tasks[i], flaws), textcall.Options{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	good := run(0, 1, textcall.Flaws{})
	flawed := run(1, 2, textcall.Flaws{IgnoreCorrections: true})
	write("a/vpn-1.jsonl", good)
	write("a/fnol-2.jsonl", flawed)
	os.WriteFile(filepath.Join(dir, "a", "fnol-2.wav"), wavBytes(t), 0o644)

	unknown := run(0, 3, textcall.Flaws{})
	unknown[0].Meta = map[string]string{"task": "no-such-task", "seed": "3", "mode": "synthetic"}
	write("b/unknown-task.jsonl", unknown)
	human := run(0, 4, textcall.Flaws{})
	human[0].Meta = map[string]string{"task": "it-vpn-incident", "seed": "4", "mode": "human"}
	write("b/human.jsonl", human)
	write("b/unfinished.jsonl", run(0, 5, textcall.Flaws{})[:10])
	noSeed := run(0, 6, textcall.Flaws{})
	noSeed[0].Meta = map[string]string{"task": "it-vpn-incident", "mode": "synthetic"}
	write("b/no-seed.jsonl", noSeed)
	os.WriteFile(filepath.Join(dir, "b", "garbage.jsonl"), []byte("{\"seq\":1,\"type\":\"session.start\"}\nnot json\n"), 0o644)
	// Imported traces are verified: a recorded value the tool call did not send, an unknown event
	// type and a duplicate seq are refused.
	forged := run(0, 7, textcall.Flaws{})
	for i := range forged {
		if forged[i].Type == trace.ArtifactUpdate {
			forged[i].Value = json.RawMessage(`"something else"`)
			break
		}
	}
	write("b/forged.jsonl", forged)
	odd := run(0, 8, textcall.Flaws{})
	odd[3].Type = "agent.mood"
	write("b/unknown-type.jsonl", odd)
	dup := run(0, 9, textcall.Flaws{})
	dup[5].Seq = 5
	write("b/duplicate-seq.jsonl", dup)

	cfg := ImportConfig{Store: db, Tasks: tasks, System: "vendor-x", Family: "openai"}
	res, err := Import(ctx, cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]ImportResult{}
	for _, r := range res {
		rel, _ := filepath.Rel(dir, r.File)
		status[rel] = r
		t.Logf("%s: %s %s", rel, r.Status, r.Reason)
	}
	for file, want := range map[string]string{
		"a/vpn-1.jsonl":         "imported",
		"a/fnol-2.jsonl":        "imported",
		"b/unknown-task.jsonl":  "not among the loaded tasks",
		"b/human.jsonl":         "only synthetic traces",
		"b/unfinished.jsonl":    "want session.end",
		"b/no-seed.jsonl":       "seed",
		"b/garbage.jsonl":       "do not decode",
		"b/forged.jsonl":        "differ from a replay of the trace's tool calls",
		"b/unknown-type.jsonl":  `unknown event type "agent.mood"`,
		"b/duplicate-seq.jsonl": "duplicate seq 5",
	} {
		r := status[file]
		if got := r.Status + " " + r.Reason; !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", file, got, want)
		}
	}

	ss, err := db.ListSessions(ctx, audit.SessionFilter{Mode: audit.ModeSynthetic, System: "vendor-x"})
	if err != nil || len(ss) != 2 {
		t.Fatalf("stored %d sessions (%v), want 2", len(ss), err)
	}
	for _, s := range ss {
		events, err := db.Events(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		src := good
		if s.TaskID == "fnol-auto-glass" {
			src = flawed
		}
		var a, b bytes.Buffer
		trace.WriteJSONL(&a, events)
		trace.WriteJSONL(&b, src)
		if a.String() != b.String() {
			t.Errorf("%s: stored trace differs from the file", s.ID)
		}
		want, _ := grade.Grade(ctx, tasks[map[string]int{"it-vpn-incident": 0, "fnol-auto-glass": 1}[s.TaskID]], src, grade.Options{})
		var got grade.Result
		if s.Score == nil || json.Unmarshal(s.Score.Grade, &got) != nil || got.WS != want.WS || got.AV != want.AV || got.AFA != want.AFA {
			t.Errorf("%s: stored grade %+v, want %+v", s.ID, got, want)
		}
		if s.Status != audit.SessionEnded || s.EndReason != "caller_hung_up" || s.Seed == 0 {
			t.Errorf("%s: status %s reason %s seed %d", s.ID, s.Status, s.EndReason, s.Seed)
		}
		if (s.TaskID == "fnol-auto-glass") != (s.RecordingPath != "") {
			t.Errorf("%s: recording %q", s.ID, s.RecordingPath)
		}
	}
	if status["a/fnol-2.jsonl"].Grade == nil || status["a/fnol-2.jsonl"].Grade.AV != 0 {
		t.Errorf("ignoring a correction should fail Artifact Validity: %+v", status["a/fnol-2.jsonl"].Grade)
	}

	again, err := Import(ctx, cfg, filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range again {
		if r.Status != "skipped" {
			t.Errorf("second import of %s: %s %s", r.File, r.Status, r.Reason)
		}
	}
	if _, err := Import(ctx, ImportConfig{Store: db, Tasks: tasks}, filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	} else if r, _ := Import(ctx, ImportConfig{Store: db, Tasks: tasks}, filepath.Join(dir, "a")); r[0].Status != "refused" || !strings.Contains(r[0].Reason, "--system") {
		t.Errorf("no system anywhere: %+v", r[0])
	}
}

// wavBytes is a short valid 24 kHz stereo WAV, standing in for a recording made elsewhere.
func wavBytes(t *testing.T) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "r.wav")
	if err := audio.WriteWAV(p, audio.RecordRate, 2, make([]int16, 4800)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	return b
}
