package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// PlanCondition is the listening condition of one planned session (plan slot and position).
type PlanCondition struct {
	Slot      string
	Position  int
	Condition string
}

// SetPlanConditions records the listening condition of planned sessions added by AddPlan. Rows
// that already have a condition keep it (an extended study never changes a cell), and a row
// that does not exist is an error naming it.
func (db *DB) SetPlanConditions(ctx context.Context, studyID string, rows []PlanCondition) error {
	err := db.tx(ctx, func(tx pgx.Tx) error {
		for i, r := range rows {
			if r.Condition == "" {
				continue
			}
			var id int64
			err := tx.QueryRow(ctx, `
				UPDATE assignments SET condition = CASE WHEN condition = '' THEN $4 ELSE condition END
				WHERE study_id = $1 AND slot = $2 AND position = $3 RETURNING id`, studyID, r.Slot, r.Position, r.Condition).Scan(&id)
			if errors.Is(err, pgx.ErrNoRows) {
				return newError(ErrNotFound, "plan condition %d: %s position %d is not planned in study %s", i+1, r.Slot, r.Position, studyID)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	return translate(err, "set plan conditions of study "+studyID)
}

// AssignmentCondition is the listening condition an assignment is to be run under ("" quiet).
func (db *DB) AssignmentCondition(ctx context.Context, assignmentID int64) (string, error) {
	var c string
	err := db.pool.QueryRow(ctx, `SELECT condition FROM assignments WHERE id = $1`, assignmentID).Scan(&c)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", newError(ErrNotFound, "assignment %d not found", assignmentID)
	}
	return c, translate(err, fmt.Sprintf("condition of assignment %d", assignmentID))
}

// SetSessionCondition records the listening condition a session runs under.
func (db *DB) SetSessionCondition(ctx context.Context, sessionID, condition string) error {
	tag, err := db.pool.Exec(ctx, `UPDATE sessions SET condition = $2 WHERE id = $1`, sessionID, condition)
	if err == nil && tag.RowsAffected() == 0 {
		return newError(ErrNotFound, "session %s not found", sessionID)
	}
	return translate(err, "set condition of session "+sessionID)
}

// SessionConditions returns the listening condition of every session of a system and mode, by
// session id ("" for sessions run without one).
func (db *DB) SessionConditions(ctx context.Context, system string, mode Mode) (map[string]string, error) {
	rows, _ := db.pool.Query(ctx, `SELECT id, condition FROM sessions WHERE system_label = $1 AND mode = $2`, system, mode)
	out := map[string]string{}
	var id, c string
	_, err := pgx.ForEachRow(rows, []any{&id, &c}, func() error { out[id] = c; return nil })
	return out, translate(err, "session conditions of "+system)
}
