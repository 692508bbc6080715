package audit

import (
	"encoding/json"
	"time"
)

// Participant is a person taking part in a study, known by the token in their link.
type Participant struct {
	ID      int64
	StudyID string
	// Token is the participant's link secret, known only to calls that were given it or made it
	// (CreateParticipant, Enroll, ParticipantByToken): the database keeps its SHA-256 only.
	Token    string
	External ExternalIDs
	Consent  *Consent  // nil until given
	MicCheck *MicCheck // nil until done
	// ExpiresAt ends the token's validity; zero means it does not expire.
	ExpiresAt time.Time
	// ConsentDeadline is when an open enrollment without consent lapses; zero once consented or
	// for participants issued a link directly.
	ConsentDeadline time.Time
	CreatedAt       time.Time
}

// Lapsed reports whether the participant's open enrollment lapsed without consent at now.
func (p Participant) Lapsed(now time.Time) bool {
	return p.Consent == nil && !p.ConsentDeadline.IsZero() && !now.Before(p.ConsentDeadline)
}

// ExternalIDs are the recruiting platform's identifiers, from the link's PROLIFIC_PID, STUDY_ID
// and SESSION_ID query parameters.
type ExternalIDs struct {
	ProlificPID string
	StudyID     string
	SessionID   string
}

// Consent records that the participant agreed, when, and to which text (by hash).
type Consent struct {
	At         time.Time
	TextSHA256 string // hex SHA-256 of the consent text shown
}

// MicCheck is what the browser granted and measured in the microphone check.
type MicCheck struct {
	EchoCancellation bool      `json:"echoCancellation"`
	NoiseSuppression bool      `json:"noiseSuppression"`
	AutoGainControl  bool      `json:"autoGainControl"`
	Device           string    `json:"device"`     // the chosen input device's label
	Level            float64   `json:"level"`      // peak level of the record test, 0–1
	PlaybackOK       bool      `json:"playbackOk"` // the participant heard the 3-second playback
	At               time.Time `json:"at"`
	// Details keeps anything else the browser reported (sample rate, channel count, latency).
	Details json.RawMessage `json:"details,omitempty"`
}

// NewParticipant is what CreateParticipant needs.
type NewParticipant struct {
	StudyID   string
	External  ExternalIDs
	ExpiresAt time.Time // zero: never
	// ConsentDeadline, for open enrollments, is when the enrollment lapses without consent (its
	// plan slot returns to the pool). Zero: never.
	ConsentDeadline time.Time
}

// MaxExternalID bounds each recruiting platform id (Prolific's are 24 characters).
const MaxExternalID = 64

// Enrollment is what Enroll did.
type Enrollment struct {
	Participant Participant // with Token set: the link secret, shown once
	Slot        string      // the plan slot taken
	Resumed     bool        // the recruiting id was enrolled before (a new token was issued)
}

// EnrollLimits bound open enrollment.
type EnrollLimits struct {
	// ConsentTimeout is how long an enrollment holds its slot without consent.
	ConsentTimeout time.Duration
	// MaxPending caps the enrollments of a study waiting for consent at once (0: no cap).
	MaxPending int
}
