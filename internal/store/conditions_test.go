package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/voicebench/humanaudit/internal/store"
)

// TestPlanConditionsFollowTheirCells: a planned cell's listening condition is what the console
// reads when the cell is run, survives the cell's return to the pool, and sessions record theirs.
func TestPlanConditionsFollowTheirCells(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, []string{"alpha", "beta"}, names("task", 2))
	rows := []store.PlanRow{
		{Slot: "P01", Position: 1, Task: "task01", System: "alpha", Repeat: 1},
		{Slot: "P01", Position: 2, Task: "task02", System: "beta", Repeat: 1},
	}
	if _, err := f.db.AddPlan(ctx, f.study, rows); err != nil {
		t.Fatal(err)
	}
	if err := f.db.SetPlanConditions(ctx, f.study, []store.PlanCondition{{Slot: "P01", Position: 1, Condition: "phone_line+babble@5"},
		{Slot: "P01", Position: 2, Condition: "quiet"}}); err != nil {
		t.Fatal(err)
	}
	err := f.db.SetPlanConditions(ctx, f.study, []store.PlanCondition{{Slot: "P09", Position: 1, Condition: "quiet"}})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown slot: %v", err)
	}
	// An extension never changes a cell's condition.
	f.db.SetPlanConditions(ctx, f.study, []store.PlanCondition{{Slot: "P01", Position: 1, Condition: "street@0"}})

	p := f.participant(t)
	a, err := f.db.ClaimNext(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := f.db.AssignmentCondition(ctx, a.ID); err != nil || c != "phone_line+babble@5" {
		t.Fatalf("condition %q, %v", c, err)
	}
	s := f.session(t, a)
	if err := f.db.SetSessionCondition(ctx, s.ID, "phone_line+babble@5"); err != nil {
		t.Fatal(err)
	}
	cell, err := f.db.ExcludeSession(ctx, store.Exclusion{SessionID: s.ID, Reason: store.ReasonPlatformLost})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := f.db.AssignmentCondition(ctx, cell.ID); err != nil || c != "phone_line+babble@5" || cell.Replaces != a.ID {
		t.Fatalf("pool cell %+v has condition %q (%v), want the excluded cell's", cell, c, err)
	}
	if err := f.db.SetSessionCondition(ctx, "nope", "quiet"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
	got, err := f.db.SessionConditions(ctx, "alpha", store.ModeHuman)
	if err != nil || got[s.ID] != "phone_line+babble@5" {
		t.Fatalf("session conditions %v, %v", got, err)
	}
}
