package console_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/systems"
	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/console"
	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/media"
	"github.com/voicebench/humanaudit/internal/media/libopus"
	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/storetest"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

type kit struct {
	db   *store.DB
	data string
	task *task.Task
	p    audit.Participant
}

func newKit(t *testing.T) *kit {
	t.Helper()
	ctx := context.Background()
	db := storetest.New(t)
	tk, err := task.LoadFile(filepath.Join("..", "grade", "testdata", "tasks", "it-vpn-incident.json"))
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := os.ReadFile(tk.Path)
	if _, err := db.PutTask(ctx, tk.ID, tk.Version, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UpsertSystem(ctx, audit.System{Label: "sys-a", Family: "reference"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateStudy(ctx, audit.Study{ID: "s1", Name: "S1", Seed: 1, Config: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AddPlan(ctx, "s1", []audit.PlanRow{{Slot: "P1", Position: 1, Task: tk.ID, System: "sys-a", Repeat: 1}}); err != nil {
		t.Fatal(err)
	}
	p, err := db.CreateParticipant(ctx, audit.NewParticipant{StudyID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	for _, d := range []string{"recordings", "traces"} {
		os.MkdirAll(filepath.Join(data, d), 0o755)
	}
	return &kit{db: db, data: data, task: tk, p: p}
}

// stranded leaves what a console killed mid-call leaves: a running session of consoleID with
// events up to 1.9 s, a recording of 2 s whose header was never patched, and a journal whose
// last line is torn.
func (k *kit) stranded(t *testing.T, consoleID string) audit.Session {
	t.Helper()
	ctx := context.Background()
	a, err := k.db.ClaimNext(ctx, k.p.ID)
	if err != nil {
		t.Fatal(err)
	}
	s, err := k.db.CreateSession(ctx, audit.NewSession{AssignmentID: a.ID, TaskVersion: k.task.Version, ConsoleID: consoleID})
	if err != nil {
		t.Fatal(err)
	}
	k.db.StartSession(ctx, s.ID)
	j, err := trace.CreateJournal(filepath.Join(k.data, "traces", s.ID+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	log := trace.NewLog(nil, k.db.EventSink(s.ID), j)
	wall := time.Now()
	for _, e := range []trace.Event{
		{Type: trace.SessionStart, T: -1, Meta: map[string]string{"task": k.task.ID, "task_version": "1", "mode": "human", "attempt": "1"}},
		{Type: trace.CallerAudioStart, T: 120},
		{Type: trace.ToolCall, T: 1500, Tool: "record_incident", CallID: "c1", Args: json.RawMessage(`{"employee_id":"417"}`)},
		{Type: trace.ArtifactUpdate, T: 1500, Field: "employee_id", Value: json.RawMessage(`"417"`)},
		{Type: trace.CallerSpeechStart, T: 1900},
	} {
		e.Wall = wall
		if _, err := log.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	f, _ := os.OpenFile(j.Path(), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"seq":6,"t_ms":1960,"wall":"2026`) // the write the kill cut short
	f.Close()
	wav := filepath.Join(k.data, "recordings", s.ID+".wav")
	if err := audio.WriteWAV(wav, audio.RecordRate, 2, make([]int16, 2*2*audio.RecordRate)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(wav)
	binary.LittleEndian.PutUint32(b[4:], 36) // the header as created: no data yet
	binary.LittleEndian.PutUint32(b[40:], 0)
	os.WriteFile(wav, b, 0o644)
	return s
}

func (k *kit) console(t *testing.T) *console.Service {
	t.Helper()
	sys, _ := systems.Parse("systems.json", []byte(`{"systems":[{"label":"sys-a","family":"reference"}]}`))
	svc, err := console.New(context.Background(), console.Config{NewEncoder: media.Encoders(libopus.NewEncoder), Store: k.db, Tasks: []*task.Task{k.task}, Systems: sys, DataDir: k.data})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

func TestReconcileClosesWhatACrashedConsoleLeftRunning(t *testing.T) {
	ctx := context.Background()
	k := newKit(t)
	s := k.stranded(t, "c_dead")
	svc := k.console(t)
	counts, err := svc.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if counts.Closed != 1 || counts.Recordings != 1 || counts.Repaired != 1 || counts.Graded != 1 || counts.Rerun != 1 ||
		counts.TornTraces != 1 || counts.Failed != 0 {
		t.Fatalf("counts %+v", counts)
	}
	got, err := k.db.Session(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != audit.SessionEnded || got.EndReason != "console_crash" || got.Exclusion == nil ||
		got.Exclusion.Reason != audit.ReasonPlatformLost || got.Exclusion.Note != console.NoteConsoleStopped {
		t.Fatalf("reconciled session %+v (exclusion %+v)", got, got.Exclusion)
	}
	events, _ := k.db.Events(ctx, s.ID)
	n := len(events)
	if n != 7 || events[n-2].Type != trace.Exclusion || events[n-2].Text != "platform_lost" ||
		events[n-1].Type != trace.SessionEnd || events[n-1].Text != "console_crash" || events[n-1].T != 1900 {
		t.Fatalf("trace after reconcile: %+v", events[max(0, n-3):])
	}
	recs, _ := k.db.Recordings(ctx, s.ID)
	if len(recs) != 1 || recs[0].DurationMS != 2000 {
		t.Fatalf("recordings %+v; want the 2 s file registered", recs)
	}
	if w, err := audio.ReadWAV(recs[0].Path); err != nil || w.Duration() != 2*time.Second {
		t.Fatalf("repaired recording: %v", err)
	}
	scores, _ := k.db.Scores(ctx, s.ID)
	if len(scores) != 1 {
		t.Fatalf("scores %+v", scores)
	}
	var g grade.Result
	json.Unmarshal(scores[0].Grade, &g)
	if !strings.Contains(g.Partial, "console_crash") {
		t.Errorf("grade does not say it is partial: %q", g.Partial)
	}
	// The journal is now the whole trace, byte for byte what the database holds.
	jev, torn, err := trace.ReadFileTolerant(filepath.Join(k.data, "traces", s.ID+".jsonl"))
	if err != nil || torn != nil || len(jev) != n {
		t.Fatalf("journal after reconcile: %d events, torn %+v, %v", len(jev), torn, err)
	}
	a, _ := k.db.Assignment(ctx, got.AssignmentID)
	if a.Status != audit.StatusPending || a.ParticipantID != k.p.ID || a.SessionID != "" {
		t.Fatalf("assignment %+v; want it back with the participant", a)
	}
	// A second start finds nothing left to do.
	if again, err := svc.Reconcile(ctx); err != nil || again.Closed != 0 {
		t.Fatalf("second reconcile %+v, %v", again, err)
	}
}

func TestReconcileLeavesSessionsOfRunningConsolesAlone(t *testing.T) {
	ctx := context.Background()
	k := newKit(t)
	other, err := k.db.HoldConsole(ctx, "c_other")
	if err != nil {
		t.Fatal(err)
	}
	s := k.stranded(t, "c_other")
	svc := k.console(t)
	counts, err := svc.Reconcile(ctx)
	if err != nil || counts.Closed != 0 || counts.LiveElsewhere != 1 {
		t.Fatalf("counts %+v, %v", counts, err)
	}
	if got, _ := k.db.Session(ctx, s.ID); got.Status != audit.SessionRunning {
		t.Fatalf("a session of a running console was touched: %+v", got)
	}
	// The participant asks for the call while the other console still runs it.
	if err := svc.Settle(ctx, s.ID); err == nil || !strings.Contains(err.Error(), "another console") {
		t.Fatalf("settle a session live elsewhere: %v", err)
	}
	// That console dies: the participant's next request closes the session at once.
	other.Release(ctx)
	if err := svc.Settle(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := k.db.Session(ctx, s.ID); got.EndReason != "console_crash" {
		t.Fatalf("after settle: %+v", got)
	}
}

// A journal that holds events the database lacks (a database restored from a backup) completes
// the stored trace before it is closed.
func TestReconcileTakesEventsTheDatabaseLostFromTheJournal(t *testing.T) {
	ctx := context.Background()
	k := newKit(t)
	s := k.stranded(t, "c_dead")
	jpath := filepath.Join(k.data, "traces", s.ID+".jsonl")
	jev, _, _ := trace.ReadFileTolerant(jpath)
	extra := trace.Event{Seq: 6, T: 1960, Wall: time.Now().UTC(), Type: trace.CallerSpeechEnd, Actor: trace.ActorCaller}
	if err := trace.ReplaceFile(jpath, append(jev, extra)); err != nil {
		t.Fatal(err)
	}
	svc := k.console(t)
	if _, err := svc.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	events, _ := k.db.Events(ctx, s.ID)
	if len(events) != 8 || events[5].Type != trace.CallerSpeechEnd || events[7].T != 1960 {
		t.Fatalf("trace %+v; want the journal's caller.speech_end before the closing events", events[4:])
	}
}
