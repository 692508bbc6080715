package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voicebench/humanaudit/internal/audit"
)

// Open enrollment (one study link for a recruiting platform) is bounded so that made-up recruiting
// ids cannot drain a study: each enrollment takes a plan slot at once, and one that is not followed
// by consent before its deadline lapses and gives the slot back.

// Enroll enrolls a recruiting platform's participant in a study through its open link, in one
// transaction: lapsed enrollments give their slots back first; a recruiting id seen before gets a
// fresh link token (the old link stops working: only the latest link opens the enrollment, and an
// enrollment that lapsed is renewed); a new one is refused when MaxPending enrollments already wait
// for consent (ErrEnrollmentFull) or when no plan slot is free (ErrNoAssignment), and otherwise
// takes a free slot and a consent deadline.
func (db *DB) Enroll(ctx context.Context, studyID string, ext audit.ExternalIDs, lim audit.EnrollLimits) (audit.Enrollment, error) {
	if ext.ProlificPID == "" {
		return audit.Enrollment{}, audit.Errorf(audit.ErrInvalid, "enroll: the recruiting id is empty")
	}
	if lim.ConsentTimeout <= 0 {
		lim.ConsentTimeout = 30 * time.Minute
	}
	var out audit.Enrollment
	err := db.tx(ctx, func(tx pgx.Tx) error {
		out = audit.Enrollment{}
		// One enrollment at a time per study: the pending count and the slot are decided together.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM studies WHERE id = $1 FOR UPDATE`, studyID); err != nil {
			return err
		}
		now := db.stamp()
		if _, err := releaseLapsed(ctx, tx, studyID, now); err != nil {
			return err
		}
		deadline := now.Add(lim.ConsentTimeout)
		token := newToken()
		var id int64
		var consented bool
		err := tx.QueryRow(ctx, `SELECT id, consent_at IS NOT NULL FROM participants WHERE study_id = $1 AND prolific_pid = $2 FOR UPDATE`,
			studyID, ext.ProlificPID).Scan(&id, &consented)
		switch {
		case err == nil:
			out.Resumed = true
			if !consented {
				if err := checkPending(ctx, tx, studyID, id, now, lim.MaxPending); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(ctx, `UPDATE participants SET token_sha256 = $2,
				consent_deadline = CASE WHEN consent_at IS NULL THEN $3 ELSE consent_deadline END WHERE id = $1`,
				id, tokenDigest(token), deadline); err != nil {
				return err
			}
		case errors.Is(err, pgx.ErrNoRows):
			if err := checkPending(ctx, tx, studyID, 0, now, lim.MaxPending); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, `INSERT INTO participants (study_id, token_sha256, prolific_pid, prolific_study_id, prolific_session_id,
				consent_deadline, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
				studyID, tokenDigest(token), ext.ProlificPID, nullString(ext.StudyID), nullString(ext.SessionID), deadline, now).Scan(&id); err != nil {
				return err
			}
		default:
			return err
		}
		var bound *string
		if err := tx.QueryRow(ctx, `SELECT label FROM slots WHERE participant_id = $1`, id).Scan(&bound); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if bound != nil {
			out.Slot = *bound
		} else if !consented {
			slot, err := bindFreeSlot(ctx, tx, studyID, id, now)
			if err != nil {
				return err
			}
			out.Slot = slot
		}
		p, err := scanParticipant(tx.QueryRow(ctx, `SELECT `+participantCols+` FROM participants WHERE id = $1`, id))
		if err != nil {
			return err
		}
		p.Token = token
		out.Participant = p
		return nil
	})
	switch {
	case errors.Is(err, audit.ErrEnrollmentFull):
		return audit.Enrollment{}, audit.Errorf(audit.ErrEnrollmentFull, "study %s", studyID)
	case errors.Is(err, audit.ErrNoAssignment):
		return audit.Enrollment{}, audit.Errorf(audit.ErrNoAssignment, "study %s has no free plan slot", studyID)
	}
	return out, translate(err, "enroll in study "+studyID)
}

// checkPending refuses an enrollment when max enrollments (other than participant except) wait
// for consent.
func checkPending(ctx context.Context, tx pgx.Tx, studyID string, except int64, now time.Time, max int) error {
	if max <= 0 {
		return nil
	}
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM participants WHERE study_id = $1 AND consent_at IS NULL
		AND consent_deadline > $2 AND id <> $3`, studyID, now, except).Scan(&n); err != nil {
		return err
	}
	if n >= max {
		return audit.ErrEnrollmentFull
	}
	return nil
}

// releaseLapsed unbinds the plan slots of the study's enrollments whose consent deadline passed
// without consent. Nothing of a slot has run without consent, so its work goes back unchanged.
func releaseLapsed(ctx context.Context, tx pgx.Tx, studyID string, now time.Time) (int, error) {
	rows, err := tx.Query(ctx, `
		UPDATE slots s SET participant_id = NULL, bound_at = NULL
		FROM participants p
		WHERE s.participant_id = p.id AND p.study_id = $1 AND p.consent_at IS NULL AND p.consent_deadline <= $2
		  AND NOT EXISTS (SELECT 1 FROM assignments a WHERE a.participant_id = p.id AND a.status <> 'pending')
		RETURNING s.label, p.id`, studyID, now)
	if err != nil {
		return 0, err
	}
	var ids []int64
	for rows.Next() {
		var label string
		var id int64
		if err := rows.Scan(&label, &id); err != nil {
			return 0, err
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	_, err = tx.Exec(ctx, `UPDATE assignments SET participant_id = NULL WHERE participant_id = ANY($1) AND status = 'pending' AND slot IS NOT NULL`, ids)
	return len(ids), err
}

// ReleaseLapsedEnrollments gives back the plan slots of a study's enrollments that were not
// followed by consent in time, and returns how many it released.
func (db *DB) ReleaseLapsedEnrollments(ctx context.Context, studyID string) (int, error) {
	var n int
	err := db.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM studies WHERE id = $1 FOR UPDATE`, studyID); err != nil {
			return err
		}
		var err error
		n, err = releaseLapsed(ctx, tx, studyID, db.stamp())
		return err
	})
	return n, translate(err, fmt.Sprintf("release lapsed enrollments of study %s", studyID))
}

// PendingEnrollments counts a study's enrollments waiting for consent.
func (db *DB) PendingEnrollments(ctx context.Context, studyID string) (int, error) {
	var n int
	err := db.pool.QueryRow(ctx, `SELECT count(*) FROM participants WHERE study_id = $1 AND consent_at IS NULL AND consent_deadline > $2`,
		studyID, db.stamp()).Scan(&n)
	return n, translate(err, "pending enrollments of study "+studyID)
}
