package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/storetest"
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
	if _, err := b.TryLock(ctx, "synth:ref"); !errors.Is(err, store.ErrConflict) {
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
