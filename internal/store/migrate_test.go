package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/storetest"
)

func TestMigrationsApplyOnceAndReapplyAsNoop(t *testing.T) {
	ctx := context.Background()
	ms, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	url := storetest.NewURL(t)

	// Several processes starting at once: the advisory lock lets one migrate, the rest wait.
	dbs := make([]*store.DB, 4)
	errs := make([]error, len(dbs))
	var wg sync.WaitGroup
	for i := range dbs {
		wg.Go(func() { dbs[i], errs[i] = store.Open(ctx, store.Config{URL: url}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		defer dbs[i].Close()
	}
	db := dbs[0]
	n, err := store.QueryInt(db, `SELECT count(*) FROM schema_migrations`)
	if err != nil || n != int64(len(ms)) {
		t.Fatalf("schema_migrations has %d rows (%v); want %d", n, err, len(ms))
	}
	applied, err := db.Migrate(ctx)
	if err != nil || len(applied) != 0 {
		t.Fatalf("re-migrate applied %v (%v); want nothing", applied, err)
	}
	if n, _ := store.QueryInt(db, `SELECT count(*) FROM schema_migrations`); n != int64(len(ms)) {
		t.Fatalf("re-migrate changed schema_migrations to %d rows", n)
	}

	t.Run("edited migration is refused", func(t *testing.T) {
		if err := store.ExecRaw(db, `UPDATE schema_migrations SET sha256 = 'x' WHERE version = 1`); err != nil {
			t.Fatal(err)
		}
		defer store.ExecRaw(db, `UPDATE schema_migrations SET sha256 = $1 WHERE version = 1`, ms[0].SHA256)
		_, err := db.Migrate(ctx)
		if err == nil || !strings.Contains(err.Error(), ms[0].Name+" was changed") {
			t.Fatalf("Migrate = %v; want a complaint that %s was changed", err, ms[0].Name)
		}
	})
	t.Run("newer schema is refused", func(t *testing.T) {
		if err := store.ExecRaw(db, `INSERT INTO schema_migrations (version, name, sha256) VALUES (9999, '9999_future.sql', 'x')`); err != nil {
			t.Fatal(err)
		}
		defer store.ExecRaw(db, `DELETE FROM schema_migrations WHERE version = 9999`)
		_, err := store.Open(ctx, store.Config{URL: url})
		if !errors.Is(err, store.ErrSchemaTooNew) {
			t.Fatalf("Open = %v; want ErrSchemaTooNew", err)
		}
	})
}

func TestMigrationFilesAreOrdered(t *testing.T) {
	ms, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 {
		t.Fatal("no migrations embedded")
	}
	for i, m := range ms {
		if m.Version < 1 || i > 0 && m.Version <= ms[i-1].Version || m.SHA256 == "" || m.SQL == "" {
			t.Errorf("migration %d: %+v", i, m.Name)
		}
	}
}
