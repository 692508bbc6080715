package study

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/storetest"
)

// storePlan stores a built plan as a study, the way audit study create does.
func storePlan(t *testing.T, db *store.DB, id string, p *Plan) {
	t.Helper()
	ctx := context.Background()
	for _, s := range p.Request.Systems {
		if _, err := db.UpsertSystem(ctx, audit.System{Label: s}); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := WithPlanConfig(nil, PlanConfigOf(p.Sessions))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateStudy(ctx, audit.Study{ID: id, Name: id, Seed: p.Request.Seed, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	var rows []audit.PlanRow
	for _, s := range p.Sessions {
		rows = append(rows, audit.PlanRow{Slot: s.Participant, Position: s.Position, Task: s.Task, System: s.System, Repeat: s.Repeat})
	}
	if _, err := db.AddPlan(ctx, id, rows); err != nil {
		t.Fatal(err)
	}
}

// runSession claims and finishes a participant's next session; exclude marks it excluded.
func runSession(t *testing.T, db *store.DB, pid int64, exclude bool) audit.Assignment {
	t.Helper()
	ctx := context.Background()
	a, err := NextAssignment(ctx, db, pid)
	if err != nil {
		t.Fatalf("participant %d: %v", pid, err)
	}
	if _, err := db.PutTask(ctx, a.Task, 1, []byte(`{"id":"`+a.Task+`"}`)); err != nil {
		t.Fatal(err)
	}
	s, err := db.CreateSession(ctx, audit.NewSession{AssignmentID: a.ID, TaskVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.EndSession(ctx, s.ID, "hangup"); err != nil {
		t.Fatal(err)
	}
	if exclude {
		if _, err := db.ExcludeSession(ctx, audit.Exclusion{SessionID: s.ID, Reason: audit.ReasonCallerBrokeScript, By: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

func TestNextAssignmentRunsTheSlotThenExcludedCellsCoverageFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	db := storetest.New(t)
	ctx := context.Background()
	tasks, anchors := suite(4, 1, rand.New(rand.NewPCG(1, 1)))
	p, err := Build(Request{Tasks: tasks, Anchors: anchors, Systems: []string{"x", "y"}, SessionsPerParticipant: 2, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	storePlan(t, db, "rt", p) // 10 sessions, 5 slots of 2
	var people []int64
	for i := 0; i < 6; i++ {
		pp, err := db.CreateParticipant(ctx, audit.NewParticipant{StudyID: "rt"})
		if err != nil {
			t.Fatal(err)
		}
		people = append(people, pp.ID)
	}
	// The first participant runs their slot in plan order; their second session is excluded.
	a1 := runSession(t, db, people[0], false)
	a2 := runSession(t, db, people[0], true)
	if a1.Slot != p.Participants[0] || a1.Position != 1 || a2.Position != 2 {
		t.Fatalf("first participant got %s/%d then %d, want slot %s positions 1, 2", a1.Slot, a1.Position, a2.Position, p.Participants[0])
	}
	// Their excluded cell went to the pool; they have one counted session, so they may take a pool
	// cell, but not that one (they met its task): the pool holds nothing else, so nothing is left.
	if _, err := NextAssignment(ctx, db, people[0]); !errors.Is(err, audit.ErrNoAssignment) {
		t.Fatalf("the participant who met the task got more work: %v", err)
	}
	// Participants 2–5 take the remaining slots.
	for _, pid := range people[1:5] {
		runSession(t, db, pid, false)
		runSession(t, db, pid, false)
	}
	// The sixth has no slot left: they get the excluded cell (coverage first), then nothing.
	a := runSession(t, db, people[5], false)
	if a.Task != a2.Task || a.System != a2.System || a.Repeat != a2.Repeat || a.Replaces == 0 {
		t.Fatalf("pool hand-out gave %s×%s#%d (replaces %d), want the excluded cell %s×%s#%d", a.Task, a.System, a.Repeat, a.Replaces, a2.Task, a2.System, a2.Repeat)
	}
	if _, err := NextAssignment(ctx, db, people[5]); !errors.Is(err, audit.ErrNoAssignment) {
		t.Fatalf("want no assignment after the pool is empty, got %v", err)
	}
	prog, err := db.Progress(ctx, "rt")
	if err != nil {
		t.Fatal(err)
	}
	if prog.Study.Done != 10 || prog.Study.Excluded != 1 || prog.Study.Pending != 0 {
		t.Fatalf("progress %+v, want 10 done, 1 excluded", prog.Study)
	}
}

func TestNextAssignmentKeepsTheSystemCap(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	db := storetest.New(t)
	ctx := context.Background()
	// Four tasks × two systems, K = 2, so nobody may meet a system twice.
	plan := &Plan{Request: Request{Systems: []string{"x", "y"}, Seed: 1}}
	for _, r := range []struct {
		slot string
		pos  int
		task string
		sys  string
	}{{"P1", 1, "T1", "x"}, {"P1", 2, "T2", "y"}, {"P2", 1, "T3", "x"}, {"P2", 2, "T4", "y"},
		{"P3", 1, "T2", "x"}, {"P3", 2, "T1", "y"}, {"P4", 1, "T4", "x"}, {"P4", 2, "T3", "y"}} {
		plan.Sessions = append(plan.Sessions, Session{Participant: r.slot, Position: r.pos, Task: r.task, System: r.sys, Repeat: 1})
	}
	if problems := Verify(plan.Sessions); len(problems) > 0 {
		t.Fatal(problems)
	}
	storePlan(t, db, "cap", plan)
	person := func() int64 {
		p, err := db.CreateParticipant(ctx, audit.NewParticipant{StudyID: "cap"})
		if err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	a, b, c, d, e := person(), person(), person(), person(), person()
	runSession(t, db, a, false) // P1: T1@x
	runSession(t, db, a, true)  // T2@y excluded → pool
	runSession(t, db, b, false) // P2
	runSession(t, db, b, false)
	runSession(t, db, c, false) // P3
	runSession(t, db, c, false)
	runSession(t, db, d, true)  // P4: T4@x excluded → pool
	runSession(t, db, d, false) // T3@y
	// a has met T2 and has had x once: neither pool cell (T2@y, T4@x) is allowed; d likewise.
	for _, who := range []int64{a, d} {
		if got, err := NextAssignment(ctx, db, who); !errors.Is(err, audit.ErrNoAssignment) {
			t.Fatalf("participant %d got %s@%s (%v); the task or the system cap forbids both pool cells", who, got.Task, got.System, err)
		}
	}
	// A newcomer takes both cells, oldest first, then has run K sessions.
	if got := runSession(t, db, e, false); got.Task != "T2" || got.System != "y" {
		t.Fatalf("newcomer got %s@%s first, want T2@y", got.Task, got.System)
	}
	if got := runSession(t, db, e, false); got.Task != "T4" || got.System != "x" {
		t.Fatalf("newcomer got %s@%s second, want T4@x", got.Task, got.System)
	}
	if _, err := NextAssignment(ctx, db, e); !errors.Is(err, audit.ErrNoAssignment) {
		t.Fatalf("newcomer got a third session: %v", err)
	}
	cfg := StudyPlanConfig(mustStudy(t, db, "cap").Config)
	if cfg.SessionsPerParticipant != 2 || cfg.MaxPerSystem != 1 || cfg.Systems != 2 {
		t.Fatalf("plan config %+v", cfg)
	}
}

func mustStudy(t *testing.T, db *store.DB, id string) audit.Study {
	t.Helper()
	st, err := db.Study(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
