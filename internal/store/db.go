// Package store keeps the console's durable state in PostgreSQL: the records of package audit
// (studies, systems, tasks, participants, assignments, sessions with their append-only event log,
// recordings, scores, exclusions, annotators and ratings), behind the methods of DB that each
// consumer's interface names. It is the only package that talks to the database (through pgx).
// With no database URL it runs a private PostgreSQL cluster under the data directory
// (store/pgcluster), so one command runs the whole console.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/voicebench/humanaudit/internal/store/pgcluster"
)

// Config says which database to use.
type Config struct {
	// URL is a PostgreSQL connection string (DATABASE_URL). Empty: run the managed cluster under
	// DataDir/pg and use its Database.
	URL string
	// DataDir is the console's data directory (default "audit_data"); the managed cluster lives in
	// its pg subdirectory.
	DataDir string
	// Database is the managed cluster's database (default "audit"); ignored with URL.
	Database string
	// BinDir overrides where the PostgreSQL binaries are found (see FindBinDir).
	BinDir string
	// MaxConns bounds the connection pool (default 10).
	MaxConns int32
	// Logger receives lifecycle and migration messages.
	Logger *slog.Logger
	// Now is the wall clock stamped on rows (default time.Now); tests drive it.
	Now func() time.Time
}

// DB is the console's database: a connection pool, the event writer, and, when managed, the
// cluster it runs on. It is safe for concurrent use.
type DB struct {
	pool    *pgxpool.Pool
	cluster *pgcluster.Cluster // nil with a DATABASE_URL
	url     string
	log     *slog.Logger
	now     func() time.Time

	events *eventWriter
	feed   *eventFeed

	closeOnce sync.Once
	closeErr  error
}

// Open connects to cfg.URL, or starts (or joins) the managed cluster, creates the database if
// needed, and applies pending migrations.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	db := &DB{log: log, now: cfg.Now, url: cfg.URL}
	if db.now == nil {
		db.now = time.Now
	}
	if cfg.URL == "" {
		dataDir := cfg.DataDir
		if dataDir == "" {
			dataDir = "audit_data"
		}
		name := cfg.Database
		if name == "" {
			name = "audit"
		}
		c, err := pgcluster.Start(ctx, pgcluster.Config{Dir: filepath.Join(dataDir, "pg"), BinDir: cfg.BinDir, Logger: log})
		if err != nil {
			return nil, err
		}
		db.cluster = c
		if err := createDatabase(ctx, c.URL("postgres"), name); err != nil {
			c.Close(context.WithoutCancel(ctx))
			return nil, err
		}
		db.url = c.URL(name)
	}
	pcfg, err := pgxpool.ParseConfig(db.url)
	if err != nil {
		db.closeCluster(ctx)
		return nil, fmt.Errorf("database url: %w", redactURLError(err))
	}
	pcfg.MaxConns = cfg.MaxConns
	if pcfg.MaxConns <= 0 {
		pcfg.MaxConns = 10
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		db.closeCluster(ctx)
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	db.pool = pool
	if _, err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	db.events = newEventWriter(db)
	db.feed = newEventFeed(db)
	return db, nil
}

// createDatabase creates name on the server at adminURL unless it exists.
func createDatabase(ctx context.Context, adminURL, name string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect to cluster: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return fmt.Errorf("look up database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == sqlDuplicateDatabase {
		return nil // another process won the race
	}
	if err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// redactURLError keeps a password in a malformed URL out of messages.
func redactURLError(err error) error {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		return errors.New("cannot parse the connection string (check DATABASE_URL)")
	}
	return err
}

// URL is the connection string in use (for the managed cluster: its Unix-socket URL).
func (db *DB) URL() string { return db.url }

// Cluster is the managed cluster, or nil when the database came from a URL.
func (db *DB) Cluster() *pgcluster.Cluster { return db.cluster }

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error { return db.pool.Ping(ctx) }

// Close waits for pending event writes, closes the pool, and leaves the managed cluster (the last
// process to leave stops it).
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		if db.feed != nil {
			db.feed.close()
		}
		if db.events != nil {
			db.events.close()
		}
		if db.pool != nil {
			db.pool.Close()
		}
		db.closeErr = db.closeCluster(context.Background())
	})
	return db.closeErr
}

func (db *DB) closeCluster(ctx context.Context) error {
	if db.cluster == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	return db.cluster.Close(ctx)
}

// stamp returns the injected wall time in UTC at microsecond precision (what timestamptz keeps),
// so values read back equal values written.
func (db *DB) stamp() time.Time { return db.now().UTC().Truncate(time.Microsecond) }

// tx runs fn in a transaction, committing when it returns nil.
func (db *DB) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, db.pool, fn)
}
