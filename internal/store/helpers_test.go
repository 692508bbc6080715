package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/storetest"
)

// clock is a wall clock the tests drive.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fixture is a database with a study, systems and tasks.
type fixture struct {
	db    *store.DB
	clock *clock
	study string
}

func newFixture(t *testing.T, systems []string, tasks []string) *fixture {
	t.Helper()
	c := newClock()
	db := storetest.NewWithConfig(t, store.Config{Now: c.Now})
	f := &fixture{db: db, clock: c, study: "pilot"}
	ctx := context.Background()
	if _, err := db.CreateStudy(ctx, audit.Study{ID: f.study, Name: "Pilot", Seed: 42, Config: json.RawMessage(`{"consent":"I agree."}`)}); err != nil {
		t.Fatal(err)
	}
	for _, s := range systems {
		if _, err := db.UpsertSystem(ctx, audit.System{Label: s, Family: "openai-realtime"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range tasks {
		if _, err := db.PutTask(ctx, id, 1, []byte(fmt.Sprintf(`{"id":%q,"version":1}`, id))); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *fixture) participant(t *testing.T) audit.Participant {
	t.Helper()
	p, err := f.db.CreateParticipant(context.Background(), audit.NewParticipant{StudyID: f.study})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// session starts and returns a session for a claimed assignment.
func (f *fixture) session(t *testing.T, a audit.Assignment) audit.Session {
	t.Helper()
	s, err := f.db.CreateSession(context.Background(), audit.NewSession{AssignmentID: a.ID, ParticipantID: a.ParticipantID, TaskVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.db.StartSession(context.Background(), s.ID); err != nil {
		t.Fatal(err)
	}
	return s
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%02d", prefix, i+1)
	}
	return out
}

// wantErr fails unless err matches target and its message is fit for a client (no SQL detail).
func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
	for _, leak := range []string{"SQLSTATE", "violates", "constraint", "duplicate key", "relation", "syntax"} {
		if strings.Contains(err.Error(), leak) {
			t.Errorf("error message %q leaks SQL detail (%q)", err, leak)
		}
	}
}
