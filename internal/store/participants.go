package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voicebench/humanaudit/internal/audit"
)

// tokenBytes is the entropy of participant and annotator link tokens (192 bits).
const tokenBytes = 24

// newToken returns an unguessable URL-safe token from crypto/rand.
func newToken() string {
	b := make([]byte, tokenBytes)
	rand.Read(b) // never fails (crypto/rand panics on a broken source)
	return base64.RawURLEncoding.EncodeToString(b)
}

// plausibleToken rejects strings that cannot be a token before asking the database.
func plausibleToken(t string) bool { return len(t) >= 22 && len(t) <= 128 }

// Link tokens (participants, annotators, experimenter sign-in links and sessions) are kept only as
// their SHA-256: a copy of the database does not open anyone's link. A token is shown once, when
// it is made.

// CreateParticipant adds a participant to a study with a fresh unguessable token.
func (db *DB) CreateParticipant(ctx context.Context, np audit.NewParticipant) (audit.Participant, error) {
	p := audit.Participant{StudyID: np.StudyID, Token: newToken(), External: np.External, ExpiresAt: np.ExpiresAt.UTC(), CreatedAt: db.stamp()}
	if !p.ExpiresAt.IsZero() {
		p.ExpiresAt = p.ExpiresAt.Truncate(time.Microsecond)
	}
	err := db.pool.QueryRow(ctx, `
		INSERT INTO participants (study_id, token_sha256, prolific_pid, prolific_study_id, prolific_session_id, expires_at, consent_deadline, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
		p.StudyID, tokenDigest(p.Token), nullString(p.External.ProlificPID), nullString(p.External.StudyID), nullString(p.External.SessionID),
		nullTime(p.ExpiresAt), nullTime(np.ConsentDeadline.UTC()), p.CreatedAt).Scan(&p.ID)
	if err != nil {
		return audit.Participant{}, translate(err, "create participant in study "+np.StudyID)
	}
	return p, nil
}

const participantCols = `id, study_id, prolific_pid, prolific_study_id, prolific_session_id,
	consent_at, consent_sha256, mic_check, expires_at, consent_deadline, created_at`

func scanParticipant(r pgx.Row) (audit.Participant, error) {
	var p audit.Participant
	var pid, sid, sess, consentSum *string
	var consentAt, expires, deadline *time.Time
	var mic []byte
	err := r.Scan(&p.ID, &p.StudyID, &pid, &sid, &sess, &consentAt, &consentSum, &mic, &expires, &deadline, &p.CreatedAt)
	if err != nil {
		return audit.Participant{}, err
	}
	p.External = audit.ExternalIDs{ProlificPID: deref(pid), StudyID: deref(sid), SessionID: deref(sess)}
	if consentAt != nil {
		p.Consent = &audit.Consent{At: consentAt.UTC(), TextSHA256: deref(consentSum)}
	}
	if mic != nil {
		p.MicCheck = new(audit.MicCheck)
		if err := json.Unmarshal(mic, p.MicCheck); err != nil {
			return audit.Participant{}, fmt.Errorf("participant %d mic check: %w", p.ID, err)
		}
	}
	p.ExpiresAt, p.CreatedAt = derefTime(expires), p.CreatedAt.UTC()
	if p.Consent == nil {
		p.ConsentDeadline = derefTime(deadline)
	}
	return p, nil
}

// ParticipantByToken returns the participant whose link token is exactly token: ErrNotFound for
// any other string, ErrExpired once the token has expired.
func (db *DB) ParticipantByToken(ctx context.Context, token string) (audit.Participant, error) {
	if !plausibleToken(token) {
		return audit.Participant{}, audit.Errorf(audit.ErrNotFound, "participant token")
	}
	p, err := scanParticipant(db.pool.QueryRow(ctx, `SELECT `+participantCols+` FROM participants WHERE token_sha256 = $1`, tokenDigest(token)))
	if err != nil {
		return audit.Participant{}, translate(err, "participant token")
	}
	if !p.ExpiresAt.IsZero() && !db.now().Before(p.ExpiresAt) {
		return audit.Participant{}, audit.Errorf(audit.ErrExpired, "participant token")
	}
	if p.Lapsed(db.now()) {
		return audit.Participant{}, &audit.Error{Msg: "participant: " + audit.ErrLapsed.Error(), Kind: audit.ErrLapsed, Cause: audit.ErrExpired}
	}
	p.Token = token // the caller's own secret, not read from the database
	return p, nil
}

// Participant returns the participant with id.
func (db *DB) Participant(ctx context.Context, id int64) (audit.Participant, error) {
	p, err := scanParticipant(db.pool.QueryRow(ctx, `SELECT `+participantCols+` FROM participants WHERE id = $1`, id))
	return p, translate(err, fmt.Sprintf("participant %d", id))
}

// ParticipantByProlificPID finds a study's participant by the recruiting platform's id, so a
// returning person resumes instead of starting over.
func (db *DB) ParticipantByProlificPID(ctx context.Context, studyID, prolificPID string) (audit.Participant, error) {
	p, err := scanParticipant(db.pool.QueryRow(ctx, `SELECT `+participantCols+` FROM participants
		WHERE study_id = $1 AND prolific_pid = $2`, studyID, prolificPID))
	return p, translate(err, "participant "+prolificPID)
}

// Participants lists a study's participants in creation order.
func (db *DB) Participants(ctx context.Context, studyID string) ([]audit.Participant, error) {
	rows, _ := db.pool.Query(ctx, `SELECT `+participantCols+` FROM participants WHERE study_id = $1 ORDER BY id`, studyID)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (audit.Participant, error) { return scanParticipant(r) })
	return out, translate(err, "list participants of study "+studyID)
}

// SetExternalIDs records the recruiting platform's ids seen on the participant's link. Each id is
// fixed once recorded: a later, different value is ignored (a participant cannot rewrite their
// recorded PROLIFIC_PID), and empty fields leave the stored value alone. An id longer than
// MaxExternalID is ErrInvalid; a PROLIFIC_PID already used by another participant of the study is
// ErrConflict.
func (db *DB) SetExternalIDs(ctx context.Context, participantID int64, ext audit.ExternalIDs) error {
	if err := ext.Check(); err != nil {
		return err
	}
	tag, err := db.pool.Exec(ctx, `UPDATE participants SET
		prolific_pid        = coalesce(prolific_pid, $2),
		prolific_study_id   = coalesce(prolific_study_id, $3),
		prolific_session_id = coalesce(prolific_session_id, $4)
		WHERE id = $1`, participantID, nullString(ext.ProlificPID), nullString(ext.StudyID), nullString(ext.SessionID))
	if err == nil && tag.RowsAffected() == 0 {
		return audit.Errorf(audit.ErrNotFound, "participant %d", participantID)
	}
	return translate(err, "record external ids")
}

// RecordConsent records that the participant consented to text now. Consent is given once: the
// same text again returns the first record; a different text is ErrConflict.
func (db *DB) RecordConsent(ctx context.Context, participantID int64, text string) (audit.Consent, error) {
	sum := sha256.Sum256([]byte(text))
	c := audit.Consent{At: db.stamp(), TextSHA256: hex.EncodeToString(sum[:])}
	var at time.Time
	var stored string
	err := db.pool.QueryRow(ctx, `
		UPDATE participants SET consent_at = coalesce(consent_at, $2), consent_sha256 = coalesce(consent_sha256, $3)
		WHERE id = $1 RETURNING consent_at, consent_sha256`, participantID, c.At, c.TextSHA256).Scan(&at, &stored)
	if err != nil {
		return audit.Consent{}, translate(err, fmt.Sprintf("record consent of participant %d", participantID))
	}
	if stored != c.TextSHA256 {
		return audit.Consent{}, audit.Errorf(audit.ErrConflict, "participant %d consented to another text earlier", participantID)
	}
	return audit.Consent{At: at.UTC(), TextSHA256: stored}, nil
}

// RecordMicCheck stores the latest microphone check (a participant may redo it).
func (db *DB) RecordMicCheck(ctx context.Context, participantID int64, mc audit.MicCheck) error {
	if mc.At.IsZero() {
		mc.At = db.stamp()
	}
	mc.At = mc.At.UTC()
	if len(mc.Details) > 0 && !json.Valid(mc.Details) {
		return audit.Errorf(audit.ErrInvalid, "mic check details: want JSON")
	}
	b, err := json.Marshal(mc)
	if err != nil {
		return audit.Errorf(audit.ErrInvalid, "mic check: %v", err)
	}
	tag, err := db.pool.Exec(ctx, `UPDATE participants SET mic_check = $2, mic_checked_at = $3 WHERE id = $1`, participantID, b, mc.At)
	if err == nil && tag.RowsAffected() == 0 {
		return audit.Errorf(audit.ErrNotFound, "participant %d", participantID)
	}
	return translate(err, "record mic check")
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func nullInt(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func derefTime(p *time.Time) time.Time {
	if p == nil {
		return time.Time{}
	}
	return p.UTC()
}
