package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/storetest"
	"github.com/voicebench/humanaudit/internal/trace"
)

// A named lock excludes a second holder (here another pool of the same database, as another
// process would be), is independent per name, and is free again after Release.
func TestNamedLockExcludesSecondHolder(t *testing.T) {
	ctx := context.Background()
	url := storetest.NewURL(t)
	open := func() *store.DB {
		db, err := store.Open(ctx, store.Config{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	a, b := open(), open()
	l, err := a.TryLock(ctx, "synth:ref")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryLock(ctx, "synth:ref"); !errors.Is(err, audit.ErrConflict) {
		t.Fatalf("second holder: %v, want ErrConflict", err)
	}
	other, err := b.TryLock(ctx, "synth:other")
	if err != nil {
		t.Fatalf("another name is free: %v", err)
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("second release: %v", err)
	}
	again, err := b.TryLock(ctx, "synth:ref")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again.Release(ctx)
}

func TestEventsOfTypes(t *testing.T) {
	db := storetest.New(t)
	ctx := context.Background()
	if _, err := db.PutTask(ctx, "t", 1, []byte(`{"id":"t"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UpsertSystem(ctx, audit.System{Label: "s", Family: "openai"}); err != nil {
		t.Fatal(err)
	}
	s, err := db.CreateSession(ctx, audit.NewSession{ID: "x", TaskID: "t", TaskVersion: 1, System: "s", Mode: audit.ModeSynthetic, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	types := []trace.Type{trace.SessionStart, trace.CallerSpeechEnd, trace.AgentRaw, trace.AgentSpeechStart, trace.AgentUsage, trace.AgentRaw, trace.SessionEnd}
	var ev []trace.Event
	for i, ty := range types {
		ev = append(ev, trace.Event{Seq: int64(i + 1), T: int64(100 * i), Type: ty})
	}
	if err := db.AppendEvents(ctx, s.ID, ev); err != nil {
		t.Fatal(err)
	}
	got, err := db.EventsOfTypes(ctx, s.ID, trace.AgentSpeechStart, trace.CallerSpeechEnd, trace.AgentUsage)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Seq != 2 || got[1].Seq != 4 || got[2].Seq != 5 {
		t.Errorf("got %+v, want seq 2, 4, 5", got)
	}
}
