package store

import "context"

// ExecRaw runs SQL directly, for tests that check what the API does not allow (editing events).
func ExecRaw(db *DB, sql string, args ...any) error {
	_, err := db.pool.Exec(context.Background(), sql, args...)
	return err
}

// QueryInt runs a query returning one integer.
func QueryInt(db *DB, sql string, args ...any) (int64, error) {
	var n int64
	err := db.pool.QueryRow(context.Background(), sql, args...).Scan(&n)
	return n, err
}

// SetGroupCommit switches between group commit (the default) and one INSERT per event, so the
// benchmark can show what group commit buys.
func SetGroupCommit(db *DB, on bool) { db.events.group = on }

// Translate exposes translate to tests of error mapping.
func Translate(err error, what string) error { return translate(err, what) }
