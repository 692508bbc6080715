package synth

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/systems"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/report"
	"github.com/voicebench/humanaudit/internal/session"
	"github.com/voicebench/humanaudit/internal/store/storetest"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func loadTasks(t testing.TB, ids ...string) []*task.Task {
	t.Helper()
	var out []*task.Task
	for _, id := range ids {
		tk, err := task.LoadFile(filepath.Join("..", "grade", "testdata", "tasks", id+".json"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tk)
	}
	return out
}

func TestOrderIsCoverageFirst(t *testing.T) {
	tasks := loadTasks(t, "utility-payment-arrangement", "it-vpn-incident", "fnol-auto-glass")
	var got []string
	for _, p := range Order(tasks, 3) {
		got = append(got, p.String())
	}
	want := []string{
		"fnol-auto-glass seed 1", "it-vpn-incident seed 1", "utility-payment-arrangement seed 1",
		"fnol-auto-glass seed 2", "it-vpn-incident seed 2", "utility-payment-arrangement seed 2",
		"fnol-auto-glass seed 3", "it-vpn-incident seed 3", "utility-payment-arrangement seed 3",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("order\n got %v\nwant %v", got, want)
	}
}

// syncBuffer collects the progress lines written by concurrent calls.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRunAgainstProtocolFake runs the frozen caller (Flite audio for plans the test bank lacks)
// through the real session pipeline against a faithful OpenAI-Realtime fake, on real PostgreSQL:
// the first run calls seed 1 of both tasks, a second run with more seeds skips them and calls only
// seed 2, an excluded session is called again, a second run of the same system is refused while
// another system runs freely, and the traces, grades and recordings land where human sessions'
// do.
func TestRunAgainstProtocolFake(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time calls; skipped with -short")
	}
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed (scripts/deps.sh installs it)")
	}
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	db := storetest.New(t)
	ctx := context.Background()
	var replies []agenttest.Reply
	for range 40 {
		replies = append(replies, agenttest.Reply{Text: "Thanks for calling. Goodbye!", AudioMS: 600})
	}
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: replies})
	sys := systems.System{Label: "fake-ga", Family: systems.FamilyOpenAI, Endpoint: fake.URL(), Model: "gpt-realtime", Voice: "marin"}
	tasks := loadTasks(t, "it-vpn-incident", "utility-payment-arrangement")
	data, out := t.TempDir(), t.TempDir()
	flite := &Flite{}
	cfg := func(seeds int, progress io.Writer) Config {
		return Config{Store: db, System: sys, Tasks: tasks, Seeds: seeds, Out: out, DataDir: data, Parallel: 2,
			Voice: func(tk *task.Task, seed int64) session.CallerVoice {
				return &BankVoice{Task: tk, Seed: seed, Dir: filepath.Join(data, "bank"), Render: flite}
			},
			TimeLimit: 45 * time.Second, Progress: progress}
	}

	var p1 syncBuffer
	sum, err := Run(ctx, cfg(1, &p1))
	if err != nil {
		t.Fatalf("run 1: %v\n%s", err, p1.String())
	}
	t.Logf("run 1:\n%s", p1.String())
	if sum.Planned != 2 || sum.Skipped != 0 || sum.Ran != 2 || sum.Failed != 0 {
		t.Fatalf("run 1 summary %+v", sum)
	}
	for _, o := range sum.Outcomes {
		if o.Reason != session.EndCallerHungUp || o.Grade == nil || o.Exclusion != "" {
			t.Errorf("%s: reason %s exclusion %q grade %v", o.Session, o.Reason, o.Exclusion, o.Grade)
		}
	}

	var p2 syncBuffer
	sum, err = Run(ctx, cfg(2, &p2))
	if err != nil {
		t.Fatalf("run 2: %v\n%s", err, p2.String())
	}
	if sum.Planned != 4 || sum.Skipped != 2 || sum.Ran != 2 {
		t.Fatalf("run 2 summary %+v", sum)
	}
	if starts := regexp.MustCompile(`start (\S+ seed \d)`).FindAllStringSubmatch(p2.String(), -1); len(starts) != 2 ||
		!strings.HasSuffix(starts[0][1], "seed 2") || !strings.HasSuffix(starts[1][1], "seed 2") {
		t.Errorf("run 2 started %v, want only seed 2:\n%s", starts, p2.String())
	}

	// What a synthetic session leaves is what a human one does: a sealed trace in the store, a
	// stereo recording, a score.
	ss, err := db.ListSessions(ctx, audit.SessionFilter{Mode: audit.ModeSynthetic, System: "fake-ga"})
	if err != nil || len(ss) != 4 {
		t.Fatalf("stored sessions %d (%v), want 4", len(ss), err)
	}
	first := ss[0]
	if first.Score == nil || first.Status != audit.SessionEnded || first.RecordingPath == "" {
		t.Errorf("session %+v lacks score, end or recording", first)
	}
	if st, err := os.Stat(first.RecordingPath); err != nil || st.Size() < 24000*4 {
		t.Errorf("recording %s: %v", first.RecordingPath, err)
	}
	events, err := db.Events(ctx, first.ID)
	if err != nil || len(events) == 0 {
		t.Fatal(err)
	}
	// Invariant: a trace the console wrote verifies; its workspace events are what a replay of its
	// tool calls and authorization acts produces.
	for _, s := range ss {
		ev, err := db.Events(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range tasks {
			if tk.ID == s.TaskID {
				if err := grade.New(tk, grade.Options{}).Check(ev, grade.CheckOptions{}); err != nil {
					t.Errorf("console trace of %s does not verify: %v", s.ID, err)
				}
			}
		}
	}
	if m := events[0].Meta; events[0].Type != trace.SessionStart || m["mode"] != "synthetic" || m["seed"] != "1" || m["system"] != "fake-ga" {
		t.Errorf("first event %+v", events[0])
	}
	var sawRender bool
	for _, e := range events {
		if e.Type == trace.CallerUtterance && e.Source == SourceRender {
			sawRender = true
		}
	}
	if !sawRender {
		t.Errorf("no caller utterance from the renderer in %s", first.ID)
	}
	exported, err := trace.ReadFile(filepath.Join(out, "traces", first.ID+".jsonl"))
	if err != nil || len(exported) != len(events) {
		t.Errorf("exported trace: %d events (%v), want %d", len(exported), err, len(events))
	}
	if _, err := os.Stat(filepath.Join(out, "grades", first.ID+".json")); err != nil {
		t.Errorf("exported grade: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "runs.csv")); err != nil || bytes.Count(b, []byte("\n")) != 5 {
		t.Errorf("runs.csv: %q %v", b, err)
	}

	// An excluded pair is not finished: the next run calls it again under a new session id.
	if _, err := db.ExcludeSession(ctx, audit.Exclusion{SessionID: first.ID, Reason: audit.ReasonOther, Note: "test", By: "tester"}); err != nil {
		t.Fatal(err)
	}
	sum, err = Run(ctx, cfg(2, io.Discard))
	if err != nil || sum.Ran != 1 || sum.Skipped != 3 {
		t.Fatalf("run 3: %+v %v", sum, err)
	}
	if want := strings.TrimSuffix(first.ID, "-1") + "-2"; sum.Outcomes[0].Session != want {
		t.Errorf("re-run session %s, want %s", sum.Outcomes[0].Session, want)
	}

	// The per-system lock: a second run of fake-ga is refused while one holds it; another system
	// runs meanwhile.
	lock, err := db.TryLock(ctx, "synth:fake-ga")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(ctx, cfg(2, io.Discard)); !errors.Is(err, ErrLocked) {
		t.Errorf("second run of the same system: %v, want ErrLocked", err)
	}
	other := cfg(0, io.Discard)
	other.System.Label = "other-system"
	if s, err := Run(ctx, other); err != nil || s.Planned != 0 {
		t.Errorf("another system while fake-ga is locked: %+v %v", s, err)
	}
	lock.Release(ctx)
}

// An agent that cannot be reached is recorded as platform_lost exclusions and stops the run after
// a few calls in a row.
func TestRunStopsWhenAgentIsDown(t *testing.T) {
	db := storetest.New(t)
	sys := systems.System{Label: "down", Family: systems.FamilyOpenAI, Endpoint: "ws://127.0.0.1:9/v1/realtime", Model: "gpt-realtime"}
	tasks := loadTasks(t, "it-vpn-incident", "utility-payment-arrangement", "fnol-auto-glass")
	var progress syncBuffer
	sum, err := Run(context.Background(), Config{Store: db, System: sys, Tasks: tasks, Seeds: 3, Out: t.TempDir(), DataDir: t.TempDir(),
		MaxConnectFailures: 2, Progress: &progress})
	if !errors.Is(err, ErrAgentDown) {
		t.Fatalf("err %v, want ErrAgentDown\n%s", err, progress.String())
	}
	if sum.Failed < 2 || sum.Failed > 3 || sum.Ran != 0 {
		t.Errorf("summary %+v", sum)
	}
	ss, _ := db.ListSessions(context.Background(), audit.SessionFilter{System: "down"})
	for _, s := range ss {
		if s.Exclusion == nil || s.Exclusion.Reason != audit.ReasonPlatformLost {
			t.Errorf("session %s exclusion %+v, want platform_lost", s.ID, s.Exclusion)
		}
	}
}

// An interrupted run stops at once: the call in progress is excluded (it cannot count, and the next
// run calls its pair again), no further call starts, and the run reports the interruption.
func TestRunInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time calls; skipped with -short")
	}
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed")
	}
	db := storetest.New(t)
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: []agenttest.Reply{{Text: "Let me look into that.", AudioMS: 400}}})
	sys := systems.System{Label: "fake-int", Family: systems.FamilyOpenAI, Endpoint: fake.URL(), Model: "gpt-realtime"}
	flite := &Flite{}
	ctx, cancel := context.WithCancel(context.Background())
	var progress syncBuffer
	cfg := Config{Store: db, System: sys, Tasks: loadTasks(t, "it-vpn-incident", "fnol-auto-glass"), Seeds: 2, Out: t.TempDir(),
		DataDir: t.TempDir(), Progress: &progress, TimeLimit: time.Minute,
		Voice: func(tk *task.Task, seed int64) session.CallerVoice {
			return &BankVoice{Task: tk, Seed: seed, Render: flite}
		}}
	go func() {
		for !strings.Contains(progress.String(), "start") {
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(2 * time.Second)
		cancel()
	}()
	sum, err := Run(ctx, cfg)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if sum.Ran != 1 || sum.Excluded != 1 || len(sum.Outcomes) != 1 || sum.Outcomes[0].Reason != session.EndCancelled {
		t.Fatalf("summary %+v\n%s", sum, progress.String())
	}
	ss, _ := db.ListSessions(context.Background(), audit.SessionFilter{System: "fake-int"})
	if len(ss) != 1 || ss[0].Exclusion == nil || ss[0].Exclusion.Reason != audit.ReasonOther {
		t.Fatalf("stored %+v, want one session excluded as other", ss)
	}
	checkExclusionAgrees(t, cfg.Out, ss[0].ID, string(audit.ReasonOther), cfg.Tasks)
}

// checkExclusionAgrees: an excluded run is marked as such in every output: its grade file carries
// "excluded": {"reason": …}, runs.csv's excluded column names the same reason, import-traces of
// the exported trace stores it excluded for that reason, and a report built from the imported
// sessions counts it as excluded, not as a failure.
func checkExclusionAgrees(t *testing.T, out, id, reason string, tasks []*task.Task) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "grades", id+".json"))
	if err != nil {
		t.Fatalf("grade file of the excluded run: %v", err)
	}
	var g struct {
		Excluded *Excluded `json:"excluded"`
	}
	if err := json.Unmarshal(b, &g); err != nil || g.Excluded == nil || g.Excluded.Reason != reason {
		t.Errorf("grades/%s.json excluded = %+v (%v), want reason %s: %.200s", id, g.Excluded, err, reason, b)
	}
	f, err := os.Open(filepath.Join(out, "runs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rows[1:] {
		if r[0] == id {
			found = true
			if r[6] != reason || r[15] != filepath.Join("grades", id+".json") {
				t.Errorf("runs.csv row %v: excluded %q grade %q, want %q and the grade file", r, r[6], r[15], reason)
			}
		}
	}
	if !found {
		t.Errorf("runs.csv has no row for %s", id)
	}
	db := storetest.New(t)
	ctx := context.Background()
	res, err := Import(ctx, ImportConfig{Store: db, Tasks: tasks}, filepath.Join(out, "traces"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Status != "imported" || res[0].Reason != "excluded: "+reason {
		t.Errorf("import-traces: %+v, want imported, excluded: %s", res, reason)
	}
	ss, err := db.ListSessions(ctx, audit.SessionFilter{Mode: audit.ModeSynthetic})
	if err != nil || len(ss) != 1 || ss[0].Exclusion == nil || string(ss[0].Exclusion.Reason) != reason {
		t.Fatalf("imported sessions %+v (%v), want one excluded as %s", ss, err, reason)
	}
	if _, err := db.CreateStudy(ctx, audit.Study{ID: "excl", Name: "excl", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	in, err := report.Load(ctx, db, "excl")
	if err != nil {
		t.Fatal(err)
	}
	r, err := report.Build(in, report.Options{Seed: 1, Resamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	if r.Exclusions.Total != 1 {
		t.Errorf("report counts %d exclusions, want 1", r.Exclusions.Total)
	}
	for _, sys := range r.Systems {
		if sys.Synthetic.Sessions != 0 {
			t.Errorf("report counts the excluded run among %s's %d synthetic sessions", sys.System.Label, sys.Synthetic.Sessions)
		}
	}
}

// A system's max_concurrent caps a run's --parallel: the provider's limit on concurrent sessions
// wins.
func TestRunParallelCappedBySystem(t *testing.T) {
	db := storetest.New(t)
	sys := systems.System{Label: "capped", Family: systems.FamilyOpenAI, Endpoint: "ws://127.0.0.1:9/v1/realtime", Model: "gpt-realtime", MaxConcurrent: 2}
	var progress syncBuffer
	_, err := Run(context.Background(), Config{Store: db, System: sys, Tasks: loadTasks(t, "it-vpn-incident", "fnol-auto-glass"), Seeds: 3,
		Out: t.TempDir(), DataDir: t.TempDir(), Parallel: 6, MaxConnectFailures: 1, Progress: &progress})
	if !errors.Is(err, ErrAgentDown) {
		t.Fatalf("err %v", err)
	}
	if !strings.Contains(progress.String(), "6 to run, 2 at a time") {
		t.Errorf("progress %q, want the run capped to 2 at a time", progress.String())
	}
}
