package store_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/audit/audittest"
)

// conditionStore is what the listening-condition check needs of a store.
type conditionStore interface {
	CreateStudy(ctx context.Context, s audit.Study) (audit.Study, error)
	UpsertSystem(ctx context.Context, s audit.System) (audit.System, error)
	PutTask(ctx context.Context, id string, version int, spec []byte) (audit.TaskVersion, error)
	AddPlan(ctx context.Context, studyID string, rows []audit.PlanRow) (int, error)
	CreateParticipant(ctx context.Context, np audit.NewParticipant) (audit.Participant, error)
	ClaimNext(ctx context.Context, participantID int64) (audit.Assignment, error)
	CreateSession(ctx context.Context, ns audit.NewSession) (audit.Session, error)
	StartSession(ctx context.Context, id string) error
	ExcludeSession(ctx context.Context, e audit.Exclusion) (audit.Assignment, error)
	Session(ctx context.Context, id string) (audit.Session, error)
	ListSessions(ctx context.Context, f audit.SessionFilter) ([]audit.SessionSummary, error)
}

// TestPlanConditionsFollowTheirCells: a planned cell's listening condition is stored with the
// plan, kept by an extension that names the cell again, handed to the console with the claimed
// cell, kept by the cell's return to the pool, and sessions record theirs. PostgreSQL and the
// in-memory store behave alike.
func TestPlanConditionsFollowTheirCells(t *testing.T) {
	t.Run("postgres", func(t *testing.T) { checkConditionsFollowCells(t, newFixture(t, nil, nil).db) })
	t.Run("memory", func(t *testing.T) { checkConditionsFollowCells(t, audittest.New()) })
}

func checkConditionsFollowCells(t *testing.T, db conditionStore) {
	ctx := context.Background()
	const st = "conds"
	if _, err := db.CreateStudy(ctx, audit.Study{ID: st, Name: "Conditions", Seed: 1, Config: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"alpha", "beta"} {
		if _, err := db.UpsertSystem(ctx, audit.System{Label: s, Family: "openai"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"task01", "task02"} {
		if _, err := db.PutTask(ctx, id, 1, []byte(`{"id":"`+id+`","version":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	rows := []audit.PlanRow{
		{Slot: "P01", Position: 1, Task: "task01", System: "alpha", Repeat: 1, Condition: "phone_line+babble@5"},
		{Slot: "P01", Position: 2, Task: "task02", System: "beta", Repeat: 1},
	}
	if _, err := db.AddPlan(ctx, st, rows); err != nil {
		t.Fatal(err)
	}
	// An extension never changes a stored cell's condition.
	again := []audit.PlanRow{{Slot: "P01", Position: 1, Task: "task01", System: "alpha", Repeat: 1, Condition: "street@0"}}
	if n, err := db.AddPlan(ctx, st, again); err != nil || n != 0 {
		t.Fatalf("extension re-naming a cell: added %d, %v", n, err)
	}
	p, err := db.CreateParticipant(ctx, audit.NewParticipant{StudyID: st})
	if err != nil {
		t.Fatal(err)
	}
	a, err := db.ClaimNext(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if a.Condition != "phone_line+babble@5" {
		t.Fatalf("claimed cell condition %q", a.Condition)
	}
	s, err := db.CreateSession(ctx, audit.NewSession{AssignmentID: a.ID, ParticipantID: p.ID, TaskVersion: 1, Condition: a.Condition})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.StartSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Session(ctx, s.ID); err != nil || got.Condition != "phone_line+babble@5" {
		t.Fatalf("stored session condition %q, %v", got.Condition, err)
	}
	cell, err := db.ExcludeSession(ctx, audit.Exclusion{SessionID: s.ID, Reason: audit.ReasonPlatformLost})
	if err != nil {
		t.Fatal(err)
	}
	if cell.Condition != "phone_line+babble@5" || cell.Replaces != a.ID {
		t.Fatalf("pool cell %+v, want the excluded cell's condition", cell)
	}
	ss, err := db.ListSessions(ctx, audit.SessionFilter{StudyID: st, System: "alpha"})
	if err != nil || len(ss) != 1 || ss[0].Condition != "phone_line+babble@5" {
		t.Fatalf("listed sessions %+v, %v", ss, err)
	}
	b, err := db.ClaimNext(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if b.Task != "task02" || b.Condition != "" {
		t.Fatalf("second cell %+v, want task02 in quiet", b)
	}
}
