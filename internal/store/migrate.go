package store

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"regexp"
	"sort"
	"strconv"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrateLockKey is the advisory lock that keeps two processes from migrating at once.
const migrateLockKey int64 = 0x6175646974_01 // "audit" 1

// Migration is one embedded schema change, migrations/NNNN_name.sql.
type Migration struct {
	Version int
	Name    string // file name
	SQL     string
	SHA256  string // of SQL, to notice an applied migration edited afterwards
}

var migrationName = regexp.MustCompile(`^(\d{4})_[a-z0-9_]+\.sql$`)

// Migrations returns the embedded migrations in order.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %s: want NNNN_name.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		b, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		ms = append(ms, Migration{Version: v, Name: e.Name(), SQL: string(b), SHA256: hex.EncodeToString(sum[:])})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	// Versions increase without duplicates. Parallel branches reserve their numbers ahead, so a
	// branch may lack a lower number until it is merged; a gap is therefore allowed.
	for i, m := range ms {
		if m.Version < 1 || i > 0 && m.Version <= ms[i-1].Version {
			return nil, fmt.Errorf("migration %s: versions must increase from 1 without duplicates", m.Name)
		}
	}
	return ms, nil
}

// Migrate applies the pending migrations in order, each in its own transaction, recording each in
// schema_migrations. An advisory lock makes concurrent callers wait for each other, so it is safe
// to call from every process on start. It returns the names of the migrations it applied.
func (db *DB) Migrate(ctx context.Context) ([]string, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrateLockKey); err != nil {
		return nil, fmt.Errorf("migrate: lock: %w", err)
	}
	defer func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrateLockKey); err != nil {
			conn.Conn().Close(context.WithoutCancel(ctx)) // never return a connection that still holds the lock
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    int PRIMARY KEY,
		name       text NOT NULL,
		sha256     text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	applied := map[int]string{}
	rows, _ := conn.Query(ctx, `SELECT version, sha256 FROM schema_migrations`)
	var v int
	var sum string
	if _, err := pgx.ForEachRow(rows, []any{&v, &sum}, func() error { applied[v] = sum; return nil }); err != nil {
		return nil, fmt.Errorf("migrate: read schema_migrations: %w", err)
	}
	known := map[int]bool{}
	for _, m := range ms {
		known[m.Version] = true
	}
	for v := range applied {
		if !known[v] {
			return nil, fmt.Errorf("migrate: version %d applied, this build knows up to %d: %w", v, ms[len(ms)-1].Version, ErrSchemaTooNew)
		}
	}
	var done []string
	for _, m := range ms {
		if sum, ok := applied[m.Version]; ok {
			if sum != m.SHA256 {
				return nil, fmt.Errorf("migrate: %s was changed after it was applied; add a new migration instead", m.Name)
			}
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, sha256) VALUES ($1, $2, $3)`, m.Version, m.Name, m.SHA256)
			return err
		})
		if err != nil {
			return done, fmt.Errorf("migrate: %s: %w", m.Name, err)
		}
		db.log.Info("migration applied", slog.String("migration", m.Name))
		done = append(done, m.Name)
	}
	return done, nil
}
