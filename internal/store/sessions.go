package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/redact"
)

// CreateSession stores a new session. For a planned session the assignment must be running
// (claimed) by the same participant and not have a session yet (ErrConflict otherwise); the
// assignment then points at the session. An assignment whose earlier attempts were cut short by
// the platform gets the next attempt number, linked to the last attempt. The task version must be
// stored (PutTask).
func (db *DB) CreateSession(ctx context.Context, ns audit.NewSession) (audit.Session, error) {
	if ns.ID == "" {
		ns.ID = "s_" + newToken()[:22]
	}
	s, err := ns.Created(db.stamp())
	if err != nil {
		return audit.Session{}, err
	}
	err = db.tx(ctx, func(tx pgx.Tx) error {
		if ns.AssignmentID != 0 {
			a, err := scanAssignment(tx.QueryRow(ctx, `SELECT `+assignmentCols+` FROM assignments a WHERE a.id = $1 FOR UPDATE`, ns.AssignmentID))
			if err != nil {
				return err
			}
			if err := s.Assign(a); err != nil {
				return err
			}
			var last *string
			if err := tx.QueryRow(ctx, `SELECT count(*) + 1, (SELECT id FROM sessions WHERE assignment_id = $1 ORDER BY attempt DESC LIMIT 1)
				FROM sessions WHERE assignment_id = $1`, a.ID).Scan(&s.Attempt, &last); err != nil {
				return err
			}
			s.Reruns = deref(last)
		}
		if s.Mode == audit.ModeHuman && s.ParticipantID == 0 {
			return audit.Errorf(audit.ErrInvalid, "human session %s has no participant", s.ID)
		}
		_, err := tx.Exec(ctx, `INSERT INTO sessions (id, study_id, assignment_id, participant_id, task_id, task_version,
			system_label, mode, seed, status, created_at, attempt, reruns, console_id, condition)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
			s.ID, nullString(s.StudyID), nullInt(s.AssignmentID), nullInt(s.ParticipantID), s.TaskID, s.TaskVersion,
			s.System, s.Mode, s.Seed, s.Status, s.CreatedAt, s.Attempt, nullString(s.Reruns), s.ConsoleID, s.Condition)
		if err != nil {
			return err
		}
		if s.AssignmentID != 0 {
			_, err = tx.Exec(ctx, `UPDATE assignments SET session_id = $2 WHERE id = $1`, s.AssignmentID, s.ID)
		}
		return err
	})
	if err != nil {
		return audit.Session{}, translate(err, "create session")
	}
	return s, nil
}

// StartSession marks a created session running (the call connected). Starting a running session
// again is a no-op; an ended one is ErrConflict.
func (db *DB) StartSession(ctx context.Context, id string) error {
	var status audit.SessionStatus
	err := db.pool.QueryRow(ctx, `
		WITH u AS (UPDATE sessions SET status = 'running', started_at = $2 WHERE id = $1 AND status = 'created' RETURNING status)
		SELECT coalesce((SELECT status FROM u), (SELECT status FROM sessions WHERE id = $1))`, id, db.stamp()).Scan(&status)
	if err == nil && status == "" {
		return audit.Errorf(audit.ErrNotFound, "session %s", id)
	}
	if err == nil && status == audit.SessionEnded {
		return audit.Errorf(audit.ErrConflict, "session %s has ended", id)
	}
	return translate(err, "start session "+id)
}

// EndSession marks a session ended with reason (hangup, agent_closed, time_limit, platform_lost…)
// and its running assignment done. Ending an ended session is a no-op: the first reason stays.
func (db *DB) EndSession(ctx context.Context, id, reason string) error {
	now := db.stamp()
	reason = redact.String(reason)
	err := db.tx(ctx, func(tx pgx.Tx) error {
		var assignment *int64
		var status audit.SessionStatus
		if err := tx.QueryRow(ctx, `SELECT status, assignment_id FROM sessions WHERE id = $1 FOR UPDATE`, id).Scan(&status, &assignment); err != nil {
			return err
		}
		if status == audit.SessionEnded {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE sessions SET status = 'ended', ended_at = $2, end_reason = $3,
			started_at = coalesce(started_at, $2) WHERE id = $1`, id, now, reason); err != nil {
			return err
		}
		if assignment != nil {
			_, err := tx.Exec(ctx, `UPDATE assignments SET status = 'done', finished_at = $2 WHERE id = $1 AND status = 'running' AND session_id = $3`, *assignment, now, id)
			return err
		}
		return nil
	})
	return translate(err, "end session "+id)
}

const sessionCols = `s.id, s.study_id, s.assignment_id, s.participant_id, s.task_id, s.task_version, s.system_label,
	s.mode, s.seed, s.status, s.created_at, s.started_at, s.ended_at, s.end_reason,
	r.path, e.reason, e.note, e.excluded_by, e.excluded_at, s.attempt, coalesce(s.reruns, ''), s.console_id, s.condition`

const sessionFrom = ` FROM sessions s
	LEFT JOIN recordings r ON r.session_id = s.id AND r.kind = 'stereo'
	LEFT JOIN exclusions e ON e.session_id = s.id`

func scanSession(r pgx.Row, extra ...any) (audit.Session, error) {
	var s audit.Session
	var study, recording, reason, note, by *string
	var assignment, participant *int64
	var started, ended, excludedAt *time.Time
	dest := append([]any{&s.ID, &study, &assignment, &participant, &s.TaskID, &s.TaskVersion, &s.System, &s.Mode, &s.Seed,
		&s.Status, &s.CreatedAt, &started, &ended, &s.EndReason, &recording, &reason, &note, &by, &excludedAt,
		&s.Attempt, &s.Reruns, &s.ConsoleID, &s.Condition}, extra...)
	if err := r.Scan(dest...); err != nil {
		return audit.Session{}, err
	}
	s.StudyID, s.AssignmentID, s.ParticipantID, s.RecordingPath = deref(study), deref(assignment), deref(participant), deref(recording)
	s.CreatedAt, s.StartedAt, s.EndedAt = s.CreatedAt.UTC(), derefTime(started), derefTime(ended)
	if reason != nil {
		s.Exclusion = &audit.Exclusion{SessionID: s.ID, Reason: audit.ExclusionReason(*reason), Note: deref(note), By: deref(by), At: derefTime(excludedAt)}
	}
	return s, nil
}

// Session returns a session with its recording path and exclusion.
func (db *DB) Session(ctx context.Context, id string) (audit.Session, error) {
	s, err := scanSession(db.pool.QueryRow(ctx, `SELECT `+sessionCols+sessionFrom+` WHERE s.id = $1`, id))
	return s, translate(err, "session "+id)
}

// ParticipantSession returns session id only if it belongs to the participant: another
// participant's session is ErrNotFound, exactly like a session that does not exist.
func (db *DB) ParticipantSession(ctx context.Context, participantID int64, id string) (audit.Session, error) {
	s, err := scanSession(db.pool.QueryRow(ctx, `SELECT `+sessionCols+sessionFrom+` WHERE s.id = $1 AND s.participant_id = $2`, id, participantID))
	return s, translate(err, "session "+id)
}

// PracticeSessions lists a participant's practice calls, oldest first: their human sessions
// outside the study's plan (no assignment and no study), which no report counts.
func (db *DB) PracticeSessions(ctx context.Context, participantID int64) ([]audit.Session, error) {
	rows, _ := db.pool.Query(ctx, `SELECT `+sessionCols+sessionFrom+` WHERE s.participant_id = $1 AND s.assignment_id IS NULL
		AND s.study_id IS NULL ORDER BY s.created_at, s.id`, participantID)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (audit.Session, error) { return scanSession(r) })
	return out, translate(err, fmt.Sprintf("practice sessions of participant %d", participantID))
}

// ListSessions lists sessions matching f, oldest first, with scores and exclusions.
func (db *DB) ListSessions(ctx context.Context, f audit.SessionFilter) ([]audit.SessionSummary, error) {
	var where []string
	args := []any{f.GraderVersion}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.StudyID != "" {
		add("s.study_id = $%d", f.StudyID)
	}
	if f.Mode != "" {
		add("s.mode = $%d", f.Mode)
	}
	if f.System != "" {
		add("s.system_label = $%d", f.System)
	}
	if f.TaskID != "" {
		add("s.task_id = $%d", f.TaskID)
	}
	if f.Status != "" {
		add("s.status = $%d", f.Status)
	}
	q := `SELECT ` + sessionCols + `, sy.alias, coalesce(a.repeat, 0), coalesce(a.slot, ''), coalesce(a.position, 0),
		coalesce(p.prolific_pid, ''), sc.grader_version, sc.grade::text, sc.ws, sc.ts, sc.pv, sc.ac, sc.av, sc.afa, sc.ttr_ms, sc.graded_at` +
		sessionFrom + `
		JOIN systems sy ON sy.label = s.system_label
		LEFT JOIN assignments a ON a.id = s.assignment_id
		LEFT JOIN participants p ON p.id = s.participant_id
		LEFT JOIN LATERAL (SELECT * FROM scores x WHERE x.session_id = s.id AND ($1 = '' OR x.grader_version = $1)
		                   ORDER BY x.graded_at DESC, x.grader_version DESC LIMIT 1) sc ON true`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY s.created_at, s.id"
	rows, _ := db.pool.Query(ctx, q, args...)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (audit.SessionSummary, error) {
		var ss audit.SessionSummary
		var repeat int16
		var pos int32
		var version, grade *string
		var ws, ts, pv, ac, av *bool
		var afa *float64
		var ttr *int64
		var graded *time.Time
		s, err := scanSession(r, &ss.Alias, &repeat, &ss.Slot, &pos, &ss.ProlificPID,
			&version, &grade, &ws, &ts, &pv, &ac, &av, &afa, &ttr, &graded)
		if err != nil {
			return ss, err
		}
		ss.Session, ss.Repeat, ss.Position = s, int(repeat), int(pos)
		if version != nil {
			ss.Score = &audit.Score{SessionID: s.ID, GraderVersion: *version, Grade: json.RawMessage(deref(grade)),
				WS: deref(ws), TS: deref(ts), PV: deref(pv), AC: deref(ac), AV: deref(av), AFA: afa, TTRMS: ttr, GradedAt: derefTime(graded)}
		}
		return ss, nil
	})
	return out, translate(err, "list sessions")
}

// SaveRecording stores or replaces (after the file is finalised) a session's recording of a kind.
func (db *DB) SaveRecording(ctx context.Context, r audit.Recording) error {
	return translate(db.saveRecording(ctx, db.pool, r), "save recording of session "+r.SessionID)
}

func (db *DB) saveRecording(ctx context.Context, x execer, r audit.Recording) error {
	if r.Kind == "" {
		r.Kind = audit.RecordingStereo
	}
	_, err := x.Exec(ctx, `INSERT INTO recordings (session_id, kind, path, sample_rate, channels, duration_ms, bytes, sha256, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (session_id, kind) DO UPDATE SET path = EXCLUDED.path, sample_rate = EXCLUDED.sample_rate,
		  channels = EXCLUDED.channels, duration_ms = EXCLUDED.duration_ms, bytes = EXCLUDED.bytes, sha256 = EXCLUDED.sha256`,
		r.SessionID, r.Kind, r.Path, r.SampleRate, r.Channels, r.DurationMS, r.Bytes, r.SHA256, db.stamp())
	return err
}

// Recordings lists a session's recordings by kind.
func (db *DB) Recordings(ctx context.Context, sessionID string) ([]audit.Recording, error) {
	rows, _ := db.pool.Query(ctx, `SELECT session_id, kind, path, sample_rate, channels, duration_ms, bytes, sha256, created_at
		FROM recordings WHERE session_id = $1 ORDER BY kind`, sessionID)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (audit.Recording, error) {
		var r audit.Recording
		var ch int16
		err := row.Scan(&r.SessionID, &r.Kind, &r.Path, &r.SampleRate, &ch, &r.DurationMS, &r.Bytes, &r.SHA256, &r.CreatedAt)
		r.Channels, r.CreatedAt = int(ch), r.CreatedAt.UTC()
		return r, err
	})
	return out, translate(err, "recordings of session "+sessionID)
}

// SaveScore stores a session's grade, replacing an earlier grade by the same grader version.
func (db *DB) SaveScore(ctx context.Context, s audit.Score) error {
	return db.saveScore(ctx, db.pool, s)
}

func (db *DB) saveScore(ctx context.Context, x execer, s audit.Score) error {
	s.Grade = redact.Bytes(s.Grade) // a judge's error note may quote its key
	if err := s.Check(); err != nil {
		return err
	}
	if s.GradedAt.IsZero() {
		s.GradedAt = db.stamp()
	}
	_, err := x.Exec(ctx, `INSERT INTO scores (session_id, grader_version, grade, ws, ts, pv, ac, av, afa, ttr_ms, graded_at)
		VALUES ($1, $2, $3::json, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (session_id, grader_version) DO UPDATE SET grade = EXCLUDED.grade, ws = EXCLUDED.ws, ts = EXCLUDED.ts,
		  pv = EXCLUDED.pv, ac = EXCLUDED.ac, av = EXCLUDED.av, afa = EXCLUDED.afa, ttr_ms = EXCLUDED.ttr_ms, graded_at = EXCLUDED.graded_at`,
		s.SessionID, s.GraderVersion, string(s.Grade), s.WS, s.TS, s.PV, s.AC, s.AV, s.AFA, s.TTRMS, s.GradedAt.UTC())
	return translate(err, "save score of session "+s.SessionID)
}

// Scores lists a session's grades, newest first.
func (db *DB) Scores(ctx context.Context, sessionID string) ([]audit.Score, error) {
	rows, _ := db.pool.Query(ctx, `SELECT session_id, grader_version, grade::text, ws, ts, pv, ac, av, afa, ttr_ms, graded_at
		FROM scores WHERE session_id = $1 ORDER BY graded_at DESC, grader_version DESC`, sessionID)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (audit.Score, error) {
		var s audit.Score
		var grade string
		err := r.Scan(&s.SessionID, &s.GraderVersion, &grade, &s.WS, &s.TS, &s.PV, &s.AC, &s.AV, &s.AFA, &s.TTRMS, &s.GradedAt)
		s.Grade, s.GradedAt = json.RawMessage(grade), s.GradedAt.UTC()
		return s, err
	})
	return out, translate(err, "scores of session "+sessionID)
}

// ExcludeSession records an exclusion. A planned session's assignment becomes excluded and its
// cell returns to the study's pool as a fresh pending assignment (which HandCell gives to another
// participant); that new assignment is returned (zero for unplanned sessions). With
// e.SameParticipant the assignment instead goes back to its participant as pending, for a new
// attempt (nothing is returned). Excluding a session twice is ErrConflict.
func (db *DB) ExcludeSession(ctx context.Context, e audit.Exclusion) (audit.Assignment, error) {
	if err := e.Reason.Check(); err != nil {
		return audit.Assignment{}, err
	}
	if e.By == "" {
		e.By = "system"
	}
	e.Note = redact.String(e.Note) // notes quote provider errors, which may echo a key
	if e.At.IsZero() {
		e.At = db.stamp()
	}
	var cell audit.Assignment
	err := db.tx(ctx, func(tx pgx.Tx) error {
		var assignment *int64
		// Only the assignment's current attempt moves it: an earlier attempt's exclusion leaves it alone.
		if err := tx.QueryRow(ctx, `SELECT a.id FROM sessions s LEFT JOIN assignments a ON a.id = s.assignment_id AND a.session_id = s.id
			WHERE s.id = $1 FOR UPDATE OF s`, e.SessionID).Scan(&assignment); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO exclusions (session_id, reason, note, excluded_by, excluded_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT DO NOTHING`, e.SessionID, e.Reason, e.Note, e.By, e.At.UTC())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return audit.Errorf(audit.ErrConflict, "session %s is already excluded", e.SessionID)
		}
		if assignment == nil {
			return nil
		}
		if e.SameParticipant {
			_, err := tx.Exec(ctx, `UPDATE assignments SET status = 'pending', session_id = NULL, finished_at = NULL WHERE id = $1`, *assignment)
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE assignments SET status = 'excluded', finished_at = $2 WHERE id = $1`, *assignment, e.At.UTC()); err != nil {
			return err
		}
		cell, err = scanAssignment(tx.QueryRow(ctx, `
			INSERT INTO assignments AS a (study_id, task_id, system_label, repeat, replaces, created_at)
			SELECT study_id, task_id, system_label, repeat, id, $2 FROM assignments WHERE id = $1
			RETURNING `+assignmentCols, *assignment, db.stamp()))
		return err
	})
	if err != nil {
		return audit.Assignment{}, translate(err, "exclude session "+e.SessionID)
	}
	return cell, nil
}

// Exclusions lists a study's exclusions in the order they were made.
func (db *DB) Exclusions(ctx context.Context, studyID string) ([]audit.Exclusion, error) {
	rows, _ := db.pool.Query(ctx, `SELECT e.session_id, e.reason, e.note, e.excluded_by, e.excluded_at
		FROM exclusions e JOIN sessions s ON s.id = e.session_id WHERE s.study_id = $1 ORDER BY e.excluded_at, e.session_id`, studyID)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (audit.Exclusion, error) {
		var e audit.Exclusion
		err := r.Scan(&e.SessionID, &e.Reason, &e.Note, &e.By, &e.At)
		e.At = e.At.UTC()
		return e, err
	})
	return out, translate(err, "exclusions of study "+studyID)
}
