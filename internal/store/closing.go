package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/voicebench/humanaudit/internal/audit"
)

// CloseSession ends a session that is not ended yet, in one transaction: it appends c.Append to
// the event log, stores the recording and the score, marks the session ended with c.EndReason,
// and moves its assignment on: done when the session counts; when excluded, back to the same
// participant as pending (c.Rerun) or to the pool as a fresh pending copy of the cell, which is
// returned. Closing a session that has ended is ErrConflict, so concurrent closers (a console
// starting while another retries) close it once.
func (db *DB) CloseSession(ctx context.Context, c audit.Closing) (audit.Assignment, error) {
	now := db.stamp()
	if err := c.Check(); err != nil {
		return audit.Assignment{}, err
	}
	rows := make([]eventRow, 0, len(c.Append))
	for _, e := range c.Append {
		r, err := newEventRow(c.SessionID, e)
		if err != nil {
			return audit.Assignment{}, err
		}
		rows = append(rows, r)
	}
	var cell audit.Assignment
	err := db.tx(ctx, func(tx pgx.Tx) error {
		cell = audit.Assignment{}
		var status audit.SessionStatus
		var assignment *int64
		// The assignment moves only when this session is its current attempt.
		if err := tx.QueryRow(ctx, `SELECT s.status, a.id FROM sessions s
			LEFT JOIN assignments a ON a.id = s.assignment_id AND a.session_id = s.id
			WHERE s.id = $1 FOR UPDATE OF s`, c.SessionID).Scan(&status, &assignment); err != nil {
			return err
		}
		if status == audit.SessionEnded {
			return audit.Errorf(audit.ErrConflict, "session %s has already ended", c.SessionID)
		}
		var last int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM events WHERE session_id = $1`, c.SessionID).Scan(&last); err != nil {
			return err
		}
		if last != c.AfterSeq {
			return audit.Errorf(audit.ErrConflict, "session %s has %d events, the closing was made after %d", c.SessionID, last, c.AfterSeq)
		}
		if len(rows) > 0 {
			if err := db.insertEvents(ctx, tx, rows); err != nil {
				return err
			}
		}
		if c.Recording != nil {
			if err := db.saveRecording(ctx, tx, *c.Recording); err != nil {
				return err
			}
		}
		if c.Score != nil {
			if err := db.saveScore(ctx, tx, *c.Score); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE sessions SET status = 'ended', ended_at = $2, end_reason = $3,
			started_at = coalesce(started_at, $2) WHERE id = $1`, c.SessionID, now, c.EndReason); err != nil {
			return err
		}
		if c.Exclusion != nil {
			e := *c.Exclusion
			if e.By == "" {
				e.By = "system"
			}
			if _, err := tx.Exec(ctx, `INSERT INTO exclusions (session_id, reason, note, excluded_by, excluded_at) VALUES ($1, $2, $3, $4, $5)`,
				c.SessionID, e.Reason, e.Note, e.By, now); err != nil {
				return err
			}
		}
		if assignment == nil {
			return nil
		}
		var err error
		switch {
		case c.Exclusion == nil:
			_, err = tx.Exec(ctx, `UPDATE assignments SET status = 'done', finished_at = $2 WHERE id = $1`, *assignment, now)
		case c.Rerun:
			_, err = tx.Exec(ctx, `UPDATE assignments SET status = 'pending', session_id = NULL WHERE id = $1`, *assignment)
		default:
			if _, err := tx.Exec(ctx, `UPDATE assignments SET status = 'excluded', finished_at = $2 WHERE id = $1`, *assignment, now); err != nil {
				return err
			}
			cell, err = scanAssignment(tx.QueryRow(ctx, `
				INSERT INTO assignments AS a (study_id, task_id, system_label, repeat, replaces, created_at)
				SELECT study_id, task_id, system_label, repeat, id, $2 FROM assignments WHERE id = $1
				RETURNING `+assignmentCols, *assignment, now))
		}
		return err
	})
	if err != nil {
		return audit.Assignment{}, translate(err, "close session "+c.SessionID)
	}
	return cell, nil
}

// UnfinishedSessions lists the sessions that have not ended (created or running), oldest first:
// after a crash, the ones a console left behind.
func (db *DB) UnfinishedSessions(ctx context.Context) ([]audit.Session, error) {
	rows, _ := db.pool.Query(ctx, `SELECT `+sessionCols+sessionFrom+` WHERE s.status <> 'ended' ORDER BY s.created_at, s.id`)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (audit.Session, error) { return scanSession(r) })
	return out, translate(err, "unfinished sessions")
}

// AssignmentSessions lists an assignment's sessions, one per attempt, first attempt first.
func (db *DB) AssignmentSessions(ctx context.Context, assignmentID int64) ([]audit.Session, error) {
	rows, _ := db.pool.Query(ctx, `SELECT `+sessionCols+sessionFrom+` WHERE s.assignment_id = $1 ORDER BY s.attempt`, assignmentID)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (audit.Session, error) { return scanSession(r) })
	return out, translate(err, fmt.Sprintf("sessions of assignment %d", assignmentID))
}

// consoleLock names the advisory lock a running console holds.
func consoleLock(id string) string { return "console:" + id }

// HoldConsole takes the liveness lock of console id, held until Release: while it is held, other
// consoles leave that console's sessions alone. The server drops it when the holder's connection
// dies, so a console that crashed is seen as gone at once.
func (db *DB) HoldConsole(ctx context.Context, id string) (audit.Lock, error) {
	return db.TryLock(ctx, consoleLock(id))
}

// ConsoleGone reports whether no process holds console id's liveness lock: that console stopped
// or crashed (or lost its database connection). A session recorded before consoles had ids
// ("") belongs to no running console.
func (db *DB) ConsoleGone(ctx context.Context, id string) (bool, error) {
	if id == "" {
		return true, nil
	}
	l, err := db.TryLock(ctx, consoleLock(id))
	if errors.Is(err, audit.ErrConflict) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, l.Release(ctx)
}
