package audit

import (
	"encoding/json"
	"time"

	"github.com/voicebench/humanaudit/internal/trace"
)

// Closing is everything that ends a session, stored by CloseSession in one transaction: the
// events that complete its trace, its recording, its grade, its end reason and its exclusion.
type Closing struct {
	SessionID string
	// AfterSeq is the highest stored event seq the closing was computed from; Append continues
	// it. A session whose log grew since then is ErrConflict (its trace was read too early).
	AfterSeq  int64
	Append    []trace.Event
	EndReason string
	Recording *Recording // nil: no recording
	Score     *Score     // nil: not graded
	Exclusion *Exclusion // nil: the session counts
	// Rerun hands an excluded session's assignment back to the same participant for a new
	// attempt (the call was cut short by the platform, not by them), instead of returning the
	// cell to the pool for someone else.
	Rerun bool
}

// Mode says who made the call.
type Mode string

// Session modes.
const (
	ModeHuman     Mode = "human"
	ModeSynthetic Mode = "synthetic"
)

// SessionStatus is a session's lifecycle state. Whether it counts is a separate matter: see
// Exclusion.
type SessionStatus string

// Session states.
const (
	SessionCreated SessionStatus = "created"
	SessionRunning SessionStatus = "running"
	SessionEnded   SessionStatus = "ended"
)

// Session is one call (human or synthetic) of one task with one system.
type Session struct {
	ID            string
	StudyID       string // "" for a synthetic run outside a study
	AssignmentID  int64  // 0 when not planned
	ParticipantID int64  // 0 for synthetic sessions
	TaskID        string
	TaskVersion   int
	System        string // label
	Mode          Mode
	Seed          int64
	Status        SessionStatus
	CreatedAt     time.Time
	StartedAt     time.Time
	EndedAt       time.Time
	EndReason     string
	RecordingPath string     // the stereo recording, once stored
	Exclusion     *Exclusion // nil unless excluded
	// Attempt counts the sessions of the same assignment: 1, or more when earlier attempts were
	// cut short by the platform; Reruns is then the session this attempt runs again.
	Attempt   int
	Reruns    string
	ConsoleID string // the console process that ran the session ("" before it was recorded)
	Condition string // the listening condition the call ran under ("" quiet)
}

// NewSession is what CreateSession needs. With an AssignmentID, the study, participant, task and
// system default to the assignment's and must agree with it.
type NewSession struct {
	ID            string // empty: a random id
	StudyID       string
	AssignmentID  int64
	ParticipantID int64
	TaskID        string
	TaskVersion   int
	System        string
	Mode          Mode
	Seed          int64
	ConsoleID     string // the console process running it, for reconciliation after a crash
	Condition     string // the listening condition the call runs under ("" quiet)
}

// SessionFilter selects sessions for ListSessions; zero fields match everything.
type SessionFilter struct {
	StudyID string
	Mode    Mode
	System  string // label
	TaskID  string
	Status  SessionStatus
	// GraderVersion picks which score to attach; empty: the most recent one.
	GraderVersion string
}

// SessionSummary is a session as the dashboard and the report list it: with the system's alias,
// the plan cell, the participant's platform id and its score.
type SessionSummary struct {
	Session
	Alias       string
	Repeat      int // 0 when not planned
	Slot        string
	Position    int
	ProlificPID string
	Score       *Score // nil until graded
}

// Recording is a stored audio file of a session.
type Recording struct {
	SessionID  string
	Kind       string // RecordingStereo, or another file of the session
	Path       string
	SampleRate int
	Channels   int
	DurationMS int64
	Bytes      int64
	SHA256     string
	CreatedAt  time.Time
}

// RecordingStereo is the time-aligned stereo recording (left caller, right agent).
const RecordingStereo = "stereo"

// Score is one grading of a session by one grader version: the grader's JSON document and its
// headline figures (the four gates, Workflow Success, Artifact Field Accuracy, time-to-resolution).
type Score struct {
	SessionID     string
	GraderVersion string
	Grade         json.RawMessage // the grade document exactly as the grader produced it
	WS, TS, PV    bool            // Workflow Success, Target State, Process Validity
	AC, AV        bool            // Action Completion, Artifact Validity
	AFA           *float64        // nil when the task has no graded fields
	TTRMS         *int64          // nil when never resolved
	GradedAt      time.Time
}

// ExclusionReason says why a session does not count.
type ExclusionReason string

// Exclusion reasons.
const (
	ReasonCallerBrokeScript ExclusionReason = "caller_broke_script"
	ReasonPlatformLost      ExclusionReason = "platform_lost"
	ReasonGraderError       ExclusionReason = "grader_error"
	ReasonOther             ExclusionReason = "other"
	// ReasonTooShort: the participant hung up before the study's minimum call length; the same
	// participant calls again.
	ReasonTooShort ExclusionReason = "too_short"
)

// Exclusion marks a session as not counting, with who decided and why.
type Exclusion struct {
	SessionID string
	Reason    ExclusionReason
	Note      string
	By        string // experimenter name, or "system" for automatic exclusions
	At        time.Time
	// SameParticipant, when excluding, hands the assignment back to the participant who ran it for
	// a new attempt instead of returning the cell to the pool for someone else (not stored).
	SameParticipant bool
}
