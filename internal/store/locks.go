package store

import (
	"context"
	"hash/fnv"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/voicebench/humanaudit/internal/audit"
)

// advisoryLock is a PostgreSQL session-level advisory lock held on a connection of its own until
// Release. Because the server owns it, it excludes holders in any process on any machine that
// uses the same database, and it is released by the server when the holder's connection dies
// (a crashed run never leaves a stale lock behind).
type advisoryLock struct {
	name string
	key  int64
	conn *pgxpool.Conn
	once sync.Once
	err  error
}

var _ audit.Lock = (*advisoryLock)(nil)

// lockKey maps a lock name to the 64-bit key of pg_advisory_lock (FNV-1a; names are namespaced by
// their callers, e.g. "synth:LABEL").
func lockKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("audit-lock:" + name))
	return int64(h.Sum64())
}

// TryLock takes the advisory lock called name without waiting: ErrConflict when someone holds it.
// The caller must Release it before closing db (closing waits for the lock's connection).
func (db *DB) TryLock(ctx context.Context, name string) (audit.Lock, error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, translate(err, "lock "+name)
	}
	l := &advisoryLock{name: name, key: lockKey(name), conn: conn}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, l.key).Scan(&ok); err != nil {
		conn.Release()
		return nil, translate(err, "lock "+name)
	}
	if !ok {
		conn.Release()
		return nil, audit.Errorf(audit.ErrConflict, "lock %s is held by another run", name)
	}
	return l, nil
}

// Release gives the lock up and returns its connection to the pool. Releasing twice is a no-op.
func (l *advisoryLock) Release(ctx context.Context) error {
	l.once.Do(func() {
		var ok bool
		if err := l.conn.QueryRow(ctx, `SELECT pg_advisory_unlock($1)`, l.key).Scan(&ok); err != nil {
			// The connection is unusable: close it, which releases the lock on the server.
			l.conn.Conn().Close(context.Background())
			l.err = translate(err, "unlock "+l.name)
		}
		l.conn.Release()
	})
	return l.err
}

// Check reports whether the lock's connection still answers: the server dropped the lock if it
// did not (a restart, a network failure), and the holder must take it again.
func (l *advisoryLock) Check(ctx context.Context) error {
	_, err := l.conn.Exec(ctx, `SELECT 1`)
	return translate(err, "lock "+l.name)
}
