package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/voicebench/humanaudit/internal/audit"
)

// plan gives each of n slots k consecutive tasks, cycling through the systems.
func plan(slots, k int, tasks, systems []string) []audit.PlanRow {
	var rows []audit.PlanRow
	for s, slot := range names("P", slots) {
		for pos := 1; pos <= k; pos++ {
			i := s*k + pos - 1
			rows = append(rows, audit.PlanRow{Slot: slot, Position: pos, Task: tasks[i%len(tasks)], System: systems[i%len(systems)], Repeat: 1})
		}
	}
	return rows
}

func TestClaimNextNeverHandsASlotTwice(t *testing.T) {
	ctx := context.Background()
	tasks, systems := names("task", 12), []string{"alpha", "beta", "gamma"}
	f := newFixture(t, systems, tasks)
	const slots, k = 6, 3
	if n, err := f.db.AddPlan(ctx, f.study, plan(slots, k, tasks, systems)); err != nil || n != slots*k {
		t.Fatalf("AddPlan = %d, %v", n, err)
	}
	// More participants than slots race for work.
	ps := make([]audit.Participant, 16)
	for i := range ps {
		ps[i] = f.participant(t)
	}
	got := make([]audit.Assignment, len(ps))
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i := range ps {
		wg.Go(func() { got[i], errs[i] = f.db.ClaimNext(ctx, ps[i].ID) })
	}
	wg.Wait()
	slotOf := map[string]int64{}
	claimed := 0
	for i, err := range errs {
		switch {
		case errors.Is(err, audit.ErrNoAssignment):
		case err != nil:
			t.Fatalf("participant %d: %v", i, err)
		default:
			claimed++
			a := got[i]
			if a.Status != audit.StatusRunning || a.Position != 1 || a.ParticipantID != ps[i].ID {
				t.Fatalf("claim %+v", a)
			}
			if other, dup := slotOf[a.Slot]; dup {
				t.Fatalf("slot %s handed to participants %d and %d", a.Slot, other, ps[i].ID)
			}
			slotOf[a.Slot] = ps[i].ID
		}
	}
	if claimed != slots {
		t.Fatalf("%d participants got a slot; want %d", claimed, slots)
	}
	// Every row of a slot belongs to the slot's participant; no row is bound twice.
	all, err := f.db.Assignments(ctx, f.study)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range all {
		if a.ParticipantID != slotOf[a.Slot] {
			t.Errorf("assignment %d of slot %s belongs to %d, want %d", a.ID, a.Slot, a.ParticipantID, slotOf[a.Slot])
		}
	}

	// One participant in two tabs: both get the same running assignment.
	var p audit.Participant
	for i := range ps {
		if errs[i] == nil {
			p = ps[i]
			break
		}
	}
	var a1, a2 audit.Assignment
	var e1, e2 error
	wg.Go(func() { a1, e1 = f.db.ClaimNext(ctx, p.ID) })
	wg.Go(func() { a2, e2 = f.db.ClaimNext(ctx, p.ID) })
	wg.Wait()
	if e1 != nil || e2 != nil || a1.ID != a2.ID || a1.Position != 1 {
		t.Fatalf("two tabs claimed %d (%v) and %d (%v); want the same running assignment", a1.ID, e1, a2.ID, e2)
	}

	// Finishing walks the participant through their slot, then there is nothing left.
	for pos := 1; pos <= k; pos++ {
		a, err := f.db.ClaimNext(ctx, p.ID)
		if err != nil || a.Position != pos {
			t.Fatalf("claim at position %d: %+v, %v", pos, a, err)
		}
		s := f.session(t, a)
		if err := f.db.EndSession(ctx, s.ID, "hangup"); err != nil {
			t.Fatal(err)
		}
		if a, _ := f.db.Assignment(ctx, a.ID); a.Status != audit.StatusDone || a.SessionID != s.ID {
			t.Fatalf("after the session ended: %+v", a)
		}
	}
	_, err = f.db.ClaimNext(ctx, p.ID)
	wantErr(t, err, audit.ErrNoAssignment)
	_, err = f.db.ClaimNext(ctx, 999999)
	wantErr(t, err, audit.ErrNotFound)
}

func TestExcludedSessionReturnsItsCellToThePool(t *testing.T) {
	ctx := context.Background()
	tasks, systems := names("task", 4), []string{"alpha", "beta"}
	f := newFixture(t, systems, tasks)
	rows := []audit.PlanRow{
		{Slot: "P01", Position: 1, Task: "task01", System: "alpha", Repeat: 1},
		{Slot: "P01", Position: 2, Task: "task02", System: "beta", Repeat: 1},
		{Slot: "P02", Position: 1, Task: "task03", System: "beta", Repeat: 1},
		{Slot: "P02", Position: 2, Task: "task01", System: "alpha", Repeat: 2},
	}
	if _, err := f.db.AddPlan(ctx, f.study, rows); err != nil {
		t.Fatal(err)
	}
	p1, p2, p3 := f.participant(t), f.participant(t), f.participant(t)
	a, err := f.db.ClaimNext(ctx, p1.ID)
	if err != nil {
		t.Fatal(err)
	}
	s := f.session(t, a)
	if _, err := f.db.HandCell(ctx, p3.ID, 0); !errors.Is(err, audit.ErrNoAssignment) {
		t.Fatalf("HandCell with an empty pool = %v; want ErrNoAssignment", err)
	}

	f.clock.Advance(5 * 60e9)
	cell, err := f.db.ExcludeSession(ctx, audit.Exclusion{SessionID: s.ID, Reason: audit.ReasonPlatformLost, Note: "agent socket closed"})
	if err != nil {
		t.Fatal(err)
	}
	if cell.Task != "task01" || cell.System != "alpha" || cell.Repeat != 1 || cell.Status != audit.StatusPending ||
		cell.ParticipantID != 0 || cell.Slot != "" || cell.Replaces != a.ID {
		t.Fatalf("returned cell %+v", cell)
	}
	if old, _ := f.db.Assignment(ctx, a.ID); old.Status != audit.StatusExcluded {
		t.Fatalf("excluded assignment is %s", old.Status)
	}
	got, err := f.db.Session(ctx, s.ID)
	if err != nil || got.Exclusion == nil || got.Exclusion.Reason != audit.ReasonPlatformLost || got.Exclusion.By != "system" || !got.Exclusion.At.Equal(f.clock.Now()) {
		t.Fatalf("session after exclusion: %+v %+v (%v)", got, got.Exclusion, err)
	}
	_, err = f.db.ExcludeSession(ctx, audit.Exclusion{SessionID: s.ID, Reason: audit.ReasonOther})
	wantErr(t, err, audit.ErrConflict)
	_, err = f.db.ExcludeSession(ctx, audit.Exclusion{SessionID: s.ID, Reason: "bored"})
	wantErr(t, err, audit.ErrInvalid)

	// The participant who met task01 does not get it again, even from the pool…
	if _, err := f.db.ClaimNext(ctx, p1.ID); err != nil { // p1 moves on to position 2
		t.Fatal(err)
	}
	_, err = f.db.HandCell(ctx, p1.ID, 0)
	wantErr(t, err, audit.ErrConflict) // still has unfinished work
	// …p2 takes slot P02, which holds task01's repeat, so the first run is not theirs either…
	if _, err := f.db.ClaimNext(ctx, p2.ID); err != nil {
		t.Fatal(err)
	}
	// …and p3, who has no slot left to take, gets the returned cell.
	if _, err := f.db.ClaimNext(ctx, p3.ID); !errors.Is(err, audit.ErrNoAssignment) {
		t.Fatalf("p3 ClaimNext = %v; want ErrNoAssignment (all slots taken)", err)
	}
	h, err := f.db.HandCell(ctx, p3.ID, 0)
	if err != nil || h.ID != cell.ID || h.ParticipantID != p3.ID || h.Position != 1 || h.Status != audit.StatusPending {
		t.Fatalf("HandCell = %+v, %v; want cell %d at position 1", h, err, cell.ID)
	}
	c, err := f.db.ClaimNext(ctx, p3.ID)
	if err != nil || c.ID != cell.ID || c.Status != audit.StatusRunning {
		t.Fatalf("ClaimNext after HandCell = %+v, %v", c, err)
	}

	prog, err := f.db.Progress(ctx, f.study)
	if err != nil {
		t.Fatal(err)
	}
	if want := (audit.Progress{Pending: 1, Running: 3, Excluded: 1}); prog.Study != want {
		t.Fatalf("progress %+v, want %+v", prog.Study, want)
	}
	if got := prog.ByTask["task01"]; got != (audit.Progress{Pending: 1, Running: 1, Excluded: 1}) {
		t.Errorf("task01 progress %+v", got)
	}
	if got := prog.BySystem["beta"]; got != (audit.Progress{Running: 2}) {
		t.Errorf("beta progress %+v", got)
	}
	status, err := f.db.StatusRows(ctx, f.study)
	if err != nil || len(status) != 5 {
		t.Fatalf("StatusRows: %d rows, %v", len(status), err)
	}
	if first := status[0]; first.Slot != "P01" || first.Position != 1 || first.Status != audit.StatusExcluded ||
		first.ExclusionReason != audit.ReasonPlatformLost || first.Alias == "" || first.SessionID != s.ID {
		t.Errorf("first status row %+v", first)
	}
	if last := status[4]; last.Slot != "" || last.Replaces != a.ID || last.ParticipantID != p3.ID {
		t.Errorf("pool row %+v", last)
	}
}

func TestHandCellRacesHandEachCellOnce(t *testing.T) {
	ctx := context.Background()
	tasks, systems := names("task", 8), []string{"alpha", "beta"}
	f := newFixture(t, systems, tasks)
	// Eight one-session slots; every session is excluded, so eight cells wait in the pool.
	if _, err := f.db.AddPlan(ctx, f.study, plan(8, 1, tasks, systems)); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		p := f.participant(t)
		a, err := f.db.ClaimNext(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.db.ExcludeSession(ctx, audit.Exclusion{SessionID: f.session(t, a).ID, Reason: audit.ReasonCallerBrokeScript, By: "exp"}); err != nil {
			t.Fatal(err)
		}
	}
	ps := make([]audit.Participant, 20)
	for i := range ps {
		ps[i] = f.participant(t)
	}
	got := make([]audit.Assignment, len(ps))
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i := range ps {
		wg.Go(func() { got[i], errs[i] = f.db.HandCell(ctx, ps[i].ID, 0) })
	}
	wg.Wait()
	owner := map[int64]int64{}
	for i, err := range errs {
		if errors.Is(err, audit.ErrNoAssignment) {
			continue
		}
		if err != nil {
			t.Fatalf("HandCell %d: %v", i, err)
		}
		if prev, dup := owner[got[i].ID]; dup {
			t.Fatalf("cell %d handed to %d and %d", got[i].ID, prev, ps[i].ID)
		}
		owner[got[i].ID] = ps[i].ID
	}
	if len(owner) != 8 {
		t.Fatalf("%d cells handed out; want all 8", len(owner))
	}
}

func TestHandCellIsCoverageFirstAndCapsSystems(t *testing.T) {
	ctx := context.Background()
	tasks, systems := names("task", 4), []string{"alpha", "beta"}
	f := newFixture(t, systems, tasks)
	rows := []audit.PlanRow{ // the anchor repeat is planned first, the first run second
		{Slot: "P01", Position: 1, Task: "task01", System: "alpha", Repeat: 2},
		{Slot: "P02", Position: 1, Task: "task02", System: "alpha", Repeat: 1},
		{Slot: "P03", Position: 1, Task: "task03", System: "alpha", Repeat: 1},
	}
	if _, err := f.db.AddPlan(ctx, f.study, rows); err != nil {
		t.Fatal(err)
	}
	for range rows {
		a, err := f.db.ClaimNext(ctx, f.participant(t).ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.db.ExcludeSession(ctx, audit.Exclusion{SessionID: f.session(t, a).ID, Reason: audit.ReasonOther}); err != nil {
			t.Fatal(err)
		}
	}
	p := f.participant(t)
	first, err := f.db.HandCell(ctx, p.ID, 0)
	if err != nil || first.Repeat != 1 || first.Task != "task02" {
		t.Fatalf("first pool cell %+v (%v); want task02's first run before any anchor repeat", first, err)
	}
	c, _ := f.db.ClaimNext(ctx, p.ID)
	f.db.EndSession(ctx, f.session(t, c).ID, "hangup")
	// The cap: p has met alpha once; with at most one alpha per participant nothing fits.
	_, err = f.db.HandCell(ctx, p.ID, 1)
	wantErr(t, err, audit.ErrNoAssignment)
	next, err := f.db.HandCell(ctx, p.ID, 2)
	if err != nil || next.Task != "task03" || next.Position != 2 {
		t.Fatalf("second pool cell %+v (%v); want task03 at position 2", next, err)
	}
}

func TestExtendPlanKeepsFinishedWork(t *testing.T) {
	ctx := context.Background()
	tasks, systems := names("task", 6), []string{"alpha", "beta"}
	f := newFixture(t, systems, tasks)
	orig := plan(2, 2, tasks, systems)
	if _, err := f.db.AddPlan(ctx, f.study, orig); err != nil {
		t.Fatal(err)
	}
	p := f.participant(t)
	a, _ := f.db.ClaimNext(ctx, p.ID)
	s := f.session(t, a)
	f.db.EndSession(ctx, s.ID, "hangup")
	before, _ := f.db.Assignments(ctx, f.study)

	// The extended plan re-plans the existing slots differently, adds a third position to the
	// bound slot P01, and adds slot P03.
	ext := plan(3, 2, tasks[1:], systems)
	ext = append(ext, audit.PlanRow{Slot: "P01", Position: 3, Task: "task06", System: "beta", Repeat: 1})
	n, err := f.db.AddPlan(ctx, f.study, ext)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("AddPlan added %d rows; want 3 (P01 position 3, P03's two)", n)
	}
	after, _ := f.db.Assignments(ctx, f.study)
	byID := map[int64]audit.Assignment{}
	for _, x := range after {
		byID[x.ID] = x
	}
	for _, b := range before {
		if byID[b.ID] != b {
			t.Errorf("existing row changed:\n%+v\n%+v", b, byID[b.ID])
		}
	}
	if got, _ := f.db.Assignment(ctx, a.ID); got.Status != audit.StatusDone || got.SessionID != s.ID {
		t.Errorf("finished row disturbed: %+v", got)
	}
	var added audit.Assignment
	for _, x := range after {
		if x.Slot == "P01" && x.Position == 3 {
			added = x
		}
	}
	if added.ParticipantID != p.ID {
		t.Errorf("a new position of a bound slot belongs to %d; want the slot's participant %d", added.ParticipantID, p.ID)
	}
	// A plan that meets a task twice in a slot is refused, as is an unknown system.
	_, err = f.db.AddPlan(ctx, f.study, []audit.PlanRow{{Slot: "P09", Position: 1, Task: "task01", System: "alpha", Repeat: 1}, {Slot: "P09", Position: 2, Task: "task01", System: "beta", Repeat: 1}})
	wantErr(t, err, audit.ErrInvalid)
	_, err = f.db.AddPlan(ctx, f.study, []audit.PlanRow{{Slot: "P01", Position: 4, Task: "task06", System: "beta", Repeat: 1}})
	wantErr(t, err, audit.ErrInvalid)
	_, err = f.db.AddPlan(ctx, f.study, []audit.PlanRow{{Slot: "P09", Position: 1, Task: "task01", System: "omega", Repeat: 1}})
	wantErr(t, err, audit.ErrNotFound)
	_, err = f.db.AddPlan(ctx, f.study, []audit.PlanRow{{Slot: "P09", Position: 1, Task: "task01", System: "alpha", Repeat: 3}})
	wantErr(t, err, audit.ErrInvalid)
}

func TestReleaseParticipantReturnsUnstartedWork(t *testing.T) {
	ctx := context.Background()
	tasks, systems := names("task", 3), []string{"alpha"}
	f := newFixture(t, systems, tasks)
	if _, err := f.db.AddPlan(ctx, f.study, plan(1, 3, tasks, systems)); err != nil {
		t.Fatal(err)
	}
	p := f.participant(t)
	a, _ := f.db.ClaimNext(ctx, p.ID)
	f.db.EndSession(ctx, f.session(t, a).ID, "hangup") // position 1 done
	f.db.ClaimNext(ctx, p.ID)                          // position 2 claimed, no session yet
	cells, err := f.db.ReleaseParticipant(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2 || cells[0].Task != "task02" || cells[1].Task != "task03" || cells[0].ParticipantID != 0 {
		t.Fatalf("released cells %+v; want task02 and task03 back in the pool", cells)
	}
	mine, _ := f.db.ParticipantAssignments(ctx, p.ID)
	if mine[0].Status != audit.StatusDone || mine[1].Status != audit.StatusExcluded || mine[2].Status != audit.StatusExcluded {
		t.Fatalf("participant's rows after release: %v %v %v", mine[0].Status, mine[1].Status, mine[2].Status)
	}
	h, err := f.db.HandCell(ctx, f.participant(t).ID, 0)
	if err != nil || h.Task != "task02" {
		t.Fatalf("HandCell after release = %+v, %v", h, err)
	}
	if again, err := f.db.ReleaseParticipant(ctx, p.ID); err != nil || len(again) != 0 {
		t.Fatalf("second release = %+v, %v; want nothing", again, err)
	}
}
