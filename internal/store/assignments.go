package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voicebench/humanaudit/internal/audit"
)

const assignmentCols = `a.id, a.study_id, a.slot, a.participant_id, a.position, a.task_id, a.system_label,
	a.repeat, a.status, a.session_id, a.replaces, a.created_at, a.claimed_at, a.finished_at, a.condition`

func scanAssignment(r pgx.Row) (audit.Assignment, error) {
	var a audit.Assignment
	var slot, session *string
	var participant, replaces *int64
	var position *int32
	var repeat int16
	var claimed, finished *time.Time
	err := r.Scan(&a.ID, &a.StudyID, &slot, &participant, &position, &a.Task, &a.System, &repeat, &a.Status,
		&session, &replaces, &a.CreatedAt, &claimed, &finished, &a.Condition)
	a.Slot, a.ParticipantID, a.Position, a.SessionID, a.Replaces = deref(slot), deref(participant), int(deref(position)), deref(session), deref(replaces)
	a.Repeat, a.CreatedAt, a.ClaimedAt, a.FinishedAt = int(repeat), a.CreatedAt.UTC(), derefTime(claimed), derefTime(finished)
	return a, err
}

func collectAssignments(rows pgx.Rows) ([]audit.Assignment, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (audit.Assignment, error) { return scanAssignment(r) })
}

// AddPlan adds plan rows to a study. It also extends a running study: rows whose (slot, position)
// already exist are kept exactly as they are, whatever their state, and only new rows are added
// (new slots, or new positions of a slot, which go to the slot's participant if it has one). It
// returns how many rows were added. Systems must exist; tasks are not checked here.
func (db *DB) AddPlan(ctx context.Context, studyID string, rows []audit.PlanRow) (int, error) {
	if err := audit.CheckPlan(rows); err != nil {
		return 0, err
	}
	slotOrder := audit.PlanSlots(rows)
	added := 0
	now := db.stamp()
	err := db.tx(ctx, func(tx pgx.Tx) error {
		added = 0
		if _, err := tx.Exec(ctx, `SELECT 1 FROM studies WHERE id = $1 FOR UPDATE`, studyID); err != nil {
			return err
		}
		var maxOrd int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(ord), 0) FROM slots WHERE study_id = $1`, studyID).Scan(&maxOrd); err != nil {
			return err
		}
		for _, s := range slotOrder {
			tag, err := tx.Exec(ctx, `INSERT INTO slots (study_id, label, ord) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, studyID, s, maxOrd+1)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 1 {
				maxOrd++
			}
		}
		for i, r := range rows {
			var clash int
			err := tx.QueryRow(ctx, `SELECT position FROM assignments WHERE study_id = $1 AND slot = $2 AND task_id = $3 AND position <> $4 LIMIT 1`,
				studyID, r.Slot, r.Task, r.Position).Scan(&clash)
			if err == nil {
				var kept bool
				tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM assignments WHERE study_id = $1 AND slot = $2 AND position = $3)`, studyID, r.Slot, r.Position).Scan(&kept)
				if !kept {
					return audit.Errorf(audit.ErrInvalid, "plan row %d: %s already meets task %s at position %d", i+1, r.Slot, r.Task, clash)
				}
				continue
			} else if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			tag, err := tx.Exec(ctx, `
				INSERT INTO assignments (study_id, slot, participant_id, position, task_id, system_label, repeat, created_at, condition)
				SELECT $1, $2, s.participant_id, $3, $4, $5, $6, $7, $8 FROM slots s WHERE s.study_id = $1 AND s.label = $2
				ON CONFLICT (study_id, slot, position) DO NOTHING`,
				studyID, r.Slot, r.Position, r.Task, r.System, r.Repeat, now, r.Condition)
			if err != nil {
				return translate(err, fmt.Sprintf("plan row %d (%s position %d)", i+1, r.Slot, r.Position))
			}
			added += int(tag.RowsAffected())
		}
		return nil
	})
	if err != nil {
		return 0, translate(err, "add plan to study "+studyID)
	}
	return added, nil
}

// lockParticipant locks a participant's row until the transaction ends, so that two tabs of one
// participant claim one after the other, and returns the participant's study.
func lockParticipant(ctx context.Context, tx pgx.Tx, participantID int64) (study string, err error) {
	err = tx.QueryRow(ctx, `SELECT study_id FROM participants WHERE id = $1 FOR UPDATE`, participantID).Scan(&study)
	return study, err
}

// ClaimNext atomically hands the participant their next unfinished assignment and marks it
// running: the one already running (a reload resumes it), else their pending one with the lowest
// position, else — for a participant not yet bound to a plan slot — the first free slot's first
// assignment (binding the whole slot to them; concurrent callers never get the same slot). It
// returns ErrNoAssignment when nothing is left for them.
func (db *DB) ClaimNext(ctx context.Context, participantID int64) (audit.Assignment, error) {
	var a audit.Assignment
	err := db.tx(ctx, func(tx pgx.Tx) error {
		study, err := lockParticipant(ctx, tx, participantID)
		if err != nil {
			return err
		}
		a, err = scanAssignment(tx.QueryRow(ctx, `SELECT `+assignmentCols+` FROM assignments a
			WHERE a.participant_id = $1 AND a.status = 'running' ORDER BY a.position LIMIT 1`, participantID))
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if a, err = claimPending(ctx, tx, participantID, db.stamp()); !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var bound bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM slots WHERE participant_id = $1)`, participantID).Scan(&bound); err != nil {
			return err
		}
		if bound {
			return audit.ErrNoAssignment
		}
		now := db.stamp()
		if _, err := bindFreeSlot(ctx, tx, study, participantID, now); err != nil {
			return err
		}
		a, err = claimPending(ctx, tx, participantID, now)
		if errors.Is(err, pgx.ErrNoRows) {
			return audit.ErrNoAssignment
		}
		return err
	})
	if errors.Is(err, audit.ErrNoAssignment) {
		return audit.Assignment{}, audit.Errorf(audit.ErrNoAssignment, "participant %d", participantID)
	}
	return a, translate(err, fmt.Sprintf("claim next assignment of participant %d", participantID))
}

// bindFreeSlot binds the study's first free plan slot (one with pending work and no task the
// participant met) to the participant; ErrNoAssignment when there is none. Concurrent callers
// never bind the same slot.
func bindFreeSlot(ctx context.Context, tx pgx.Tx, study string, participantID int64, now time.Time) (string, error) {
	var slot string
	err := tx.QueryRow(ctx, `
		SELECT s.label FROM slots s
		WHERE s.study_id = $1 AND s.participant_id IS NULL
		  AND EXISTS (SELECT 1 FROM assignments x WHERE x.study_id = s.study_id AND x.slot = s.label AND x.status = 'pending')
		  AND NOT EXISTS (SELECT 1 FROM assignments x WHERE x.study_id = s.study_id AND x.slot = s.label
		                  AND x.task_id IN (SELECT task_id FROM assignments WHERE participant_id = $2))
		ORDER BY s.ord LIMIT 1
		FOR UPDATE OF s SKIP LOCKED`, study, participantID).Scan(&slot)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", audit.ErrNoAssignment
	}
	if err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, `UPDATE slots SET participant_id = $3, bound_at = $4 WHERE study_id = $1 AND label = $2`, study, slot, participantID, now); err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, `UPDATE assignments SET participant_id = $3 WHERE study_id = $1 AND slot = $2 AND participant_id IS NULL`, study, slot, participantID); err != nil {
		return "", err
	}
	return slot, nil
}

func claimPending(ctx context.Context, tx pgx.Tx, participantID int64, now time.Time) (audit.Assignment, error) {
	return scanAssignment(tx.QueryRow(ctx, `
		UPDATE assignments a SET status = 'running', claimed_at = $2
		WHERE a.id = (SELECT id FROM assignments WHERE participant_id = $1 AND status = 'pending' ORDER BY position, id LIMIT 1)
		RETURNING `+assignmentCols, participantID, now))
}

// HandCell gives the participant one cell from the study's pool (cells returned by exclusions),
// coverage first: first runs before anchor repeats, then the cells with the fewest runs done or
// running. The cell must be one the participant may take: not a task they have met, and, when
// maxPerSystem > 0, a system they have met fewer than maxPerSystem times. The cell is appended
// to the participant's sequence as pending (ClaimNext then starts it). A participant who still
// has unfinished work is ErrConflict; an empty pool is ErrNoAssignment. Concurrent callers never
// receive the same cell (SELECT … FOR UPDATE SKIP LOCKED).
func (db *DB) HandCell(ctx context.Context, participantID int64, maxPerSystem int) (audit.Assignment, error) {
	var a audit.Assignment
	err := db.tx(ctx, func(tx pgx.Tx) error {
		study, err := lockParticipant(ctx, tx, participantID)
		if err != nil {
			return err
		}
		var open bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM assignments WHERE participant_id = $1 AND status IN ('pending', 'running'))`, participantID).Scan(&open); err != nil {
			return err
		}
		if open {
			return audit.Errorf(audit.ErrConflict, "participant %d still has unfinished assignments", participantID)
		}
		var id int64
		err = tx.QueryRow(ctx, `
			SELECT a.id FROM assignments a
			WHERE a.study_id = $1 AND a.status = 'pending' AND a.participant_id IS NULL AND a.slot IS NULL
			  AND NOT EXISTS (SELECT 1 FROM assignments m WHERE m.participant_id = $2 AND m.task_id = a.task_id)
			  AND ($3 <= 0 OR (SELECT count(*) FROM assignments m WHERE m.participant_id = $2
			                   AND m.system_label = a.system_label AND m.status <> 'excluded') < $3)
			ORDER BY a.repeat,
			         (SELECT count(*) FROM assignments d WHERE d.study_id = a.study_id AND d.task_id = a.task_id
			          AND d.system_label = a.system_label AND d.status IN ('done', 'running')),
			         a.id
			LIMIT 1
			FOR UPDATE OF a SKIP LOCKED`, study, participantID, maxPerSystem).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return audit.ErrNoAssignment
		}
		if err != nil {
			return err
		}
		a, err = scanAssignment(tx.QueryRow(ctx, `
			UPDATE assignments a SET participant_id = $2,
			       position = (SELECT coalesce(max(position), 0) + 1 FROM assignments WHERE participant_id = $2)
			WHERE a.id = $1 RETURNING `+assignmentCols, id, participantID))
		return err
	})
	if errors.Is(err, audit.ErrNoAssignment) {
		return audit.Assignment{}, audit.Errorf(audit.ErrNoAssignment, "pool of study for participant %d", participantID)
	}
	return a, translate(err, fmt.Sprintf("hand a cell to participant %d", participantID))
}

// Assignment returns one assignment.
func (db *DB) Assignment(ctx context.Context, id int64) (audit.Assignment, error) {
	a, err := scanAssignment(db.pool.QueryRow(ctx, `SELECT `+assignmentCols+` FROM assignments a WHERE a.id = $1`, id))
	return a, translate(err, fmt.Sprintf("assignment %d", id))
}

// ParticipantAssignments lists a participant's assignments in their order.
func (db *DB) ParticipantAssignments(ctx context.Context, participantID int64) ([]audit.Assignment, error) {
	rows, _ := db.pool.Query(ctx, `SELECT `+assignmentCols+` FROM assignments a WHERE a.participant_id = $1 ORDER BY a.position, a.id`, participantID)
	out, err := collectAssignments(rows)
	return out, translate(err, fmt.Sprintf("assignments of participant %d", participantID))
}

// Assignments lists a study's assignments: plan slots in order, then pool cells.
func (db *DB) Assignments(ctx context.Context, studyID string) ([]audit.Assignment, error) {
	rows, _ := db.pool.Query(ctx, `SELECT `+assignmentCols+` FROM assignments a
		LEFT JOIN slots s ON s.study_id = a.study_id AND s.label = a.slot
		WHERE a.study_id = $1 ORDER BY s.ord NULLS LAST, a.position, a.id`, studyID)
	out, err := collectAssignments(rows)
	return out, translate(err, "assignments of study "+studyID)
}

// Progress counts a study's assignments by state, overall, per system and per task.
func (db *DB) Progress(ctx context.Context, studyID string) (audit.StudyProgress, error) {
	if _, err := db.Study(ctx, studyID); err != nil {
		return audit.StudyProgress{}, err
	}
	sp := audit.StudyProgress{BySystem: map[string]audit.Progress{}, ByTask: map[string]audit.Progress{}}
	rows, _ := db.pool.Query(ctx, `
		SELECT system_label, task_id, status, count(*) FROM assignments WHERE study_id = $1
		GROUP BY GROUPING SETS ((status), (system_label, status), (task_id, status))`, studyID)
	var system, task *string
	var status audit.AssignmentStatus
	var n int
	_, err := pgx.ForEachRow(rows, []any{&system, &task, &status, &n}, func() error {
		switch {
		case system != nil:
			p := sp.BySystem[*system]
			p.Add(status, n)
			sp.BySystem[*system] = p
		case task != nil:
			p := sp.ByTask[*task]
			p.Add(status, n)
			sp.ByTask[*task] = p
		default:
			sp.Study.Add(status, n)
		}
		return nil
	})
	return sp, translate(err, "progress of study "+studyID)
}

// StatusRows lists a study's assignments for status.csv: plan slots in order, then pool cells.
func (db *DB) StatusRows(ctx context.Context, studyID string) ([]audit.StatusRow, error) {
	rows, _ := db.pool.Query(ctx, `
		SELECT a.id, coalesce(a.slot, ''), coalesce(a.position, 0), coalesce(a.participant_id, 0), coalesce(p.prolific_pid, ''),
		       a.task_id, a.system_label, sy.alias, a.repeat, a.status, coalesce(a.session_id, ''),
		       a.claimed_at, a.finished_at, coalesce(e.reason, ''), coalesce(a.replaces, 0)
		FROM assignments a
		JOIN systems sy ON sy.label = a.system_label
		LEFT JOIN slots s ON s.study_id = a.study_id AND s.label = a.slot
		LEFT JOIN participants p ON p.id = a.participant_id
		LEFT JOIN exclusions e ON e.session_id = a.session_id
		WHERE a.study_id = $1
		ORDER BY s.ord NULLS LAST, a.position, a.id`, studyID)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (audit.StatusRow, error) {
		var s audit.StatusRow
		var pos int32
		var repeat int16
		var claimed, finished *time.Time
		err := r.Scan(&s.AssignmentID, &s.Slot, &pos, &s.ParticipantID, &s.ProlificPID, &s.Task, &s.System, &s.Alias,
			&repeat, &s.Status, &s.SessionID, &claimed, &finished, &s.ExclusionReason, &s.Replaces)
		s.Position, s.Repeat, s.ClaimedAt, s.FinishedAt = int(pos), int(repeat), derefTime(claimed), derefTime(finished)
		return s, err
	})
	return out, translate(err, "status of study "+studyID)
}

// ReleaseParticipant returns a participant's unstarted work to the pool, for someone who dropped
// out: every pending assignment, and every running one that has no session yet, becomes excluded
// and its cell goes back to the pool as a fresh pending assignment. Sessions in progress are left
// alone (end and exclude them instead). It returns the new pool cells.
func (db *DB) ReleaseParticipant(ctx context.Context, participantID int64) ([]audit.Assignment, error) {
	var cells []audit.Assignment
	now := db.stamp()
	err := db.tx(ctx, func(tx pgx.Tx) error {
		cells = nil
		if _, err := tx.Exec(ctx, `SELECT 1 FROM participants WHERE id = $1 FOR UPDATE`, participantID); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `
			WITH released AS (
				UPDATE assignments SET status = 'excluded', finished_at = $2
				WHERE participant_id = $1 AND (status = 'pending' OR status = 'running' AND session_id IS NULL)
				RETURNING id, study_id, task_id, system_label, repeat)
			INSERT INTO assignments AS a (study_id, task_id, system_label, repeat, replaces, created_at)
			SELECT study_id, task_id, system_label, repeat, id, $2 FROM released ORDER BY id
			RETURNING `+assignmentCols, participantID, now)
		var err error
		cells, err = collectAssignments(rows)
		return err
	})
	return cells, translate(err, fmt.Sprintf("release participant %d", participantID))
}
