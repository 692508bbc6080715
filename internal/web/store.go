package web

import (
	"context"
	"io"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/study"
	"github.com/voicebench/humanaudit/internal/trace"
)

// The app reads and writes a study's records through these interfaces, one per kind of person it
// serves; the store implements them, and so does the in-memory audittest.Store that the HTTP tests
// run against.

// Participants is what the participant's pages and open enrollment need.
type Participants interface {
	study.Handout
	ParticipantByToken(ctx context.Context, token string) (audit.Participant, error)
	SetExternalIDs(ctx context.Context, participantID int64, ext audit.ExternalIDs) error
	RecordConsent(ctx context.Context, participantID int64, text string) (audit.Consent, error)
	RecordMicCheck(ctx context.Context, participantID int64, mc audit.MicCheck) error
	Enroll(ctx context.Context, studyID string, ext audit.ExternalIDs, lim audit.EnrollLimits) (audit.Enrollment, error)
	AssignmentSessions(ctx context.Context, assignmentID int64) ([]audit.Session, error)
	ParticipantSession(ctx context.Context, participantID int64, id string) (audit.Session, error)
	System(ctx context.Context, label string) (audit.System, error)
}

// Experimenters is what signing experimenters in and out needs.
type Experimenters interface {
	CheckExperimenterPassword(ctx context.Context, name, password string) (audit.Experimenter, error)
	ConsumeSignInLink(ctx context.Context, token string) (audit.Experimenter, error)
	CreateExperimenterSession(ctx context.Context, experimenterID int64, via string, lim audit.SessionLimits) (string, error)
	ExperimenterBySession(ctx context.Context, token string) (audit.ExperimenterSession, error)
	RevokeExperimenterSession(ctx context.Context, token string) error
}

// Reviews is what the experimenter's dashboard and session review need.
type Reviews interface {
	Studies(ctx context.Context) ([]audit.Study, error)
	Study(ctx context.Context, id string) (audit.Study, error)
	Progress(ctx context.Context, studyID string) (audit.StudyProgress, error)
	Assignments(ctx context.Context, studyID string) ([]audit.Assignment, error)
	ListSessions(ctx context.Context, f audit.SessionFilter) ([]audit.SessionSummary, error)
	Session(ctx context.Context, id string) (audit.Session, error)
	System(ctx context.Context, label string) (audit.System, error)
	Events(ctx context.Context, sessionID string) ([]trace.Event, error)
	WriteTrace(ctx context.Context, sessionID string, w io.Writer) error
	Scores(ctx context.Context, sessionID string) ([]audit.Score, error)
	Recordings(ctx context.Context, sessionID string) ([]audit.Recording, error)
	ExcludeSession(ctx context.Context, e audit.Exclusion) (audit.Assignment, error)
}

// Annotations is what the annotator's rating app needs: the annotator's own ratings only.
type Annotations interface {
	AnnotatorByToken(ctx context.Context, token string) (audit.Annotator, error)
	Study(ctx context.Context, id string) (audit.Study, error)
	RatingItem(ctx context.Context, id string) (audit.RatingItem, error)
	AnnotatorRatings(ctx context.Context, annotatorID int64) ([]audit.Rating, error)
	SaveRating(ctx context.Context, r audit.Rating) (audit.Rating, error)
}

// Store is every record the app uses.
type Store interface {
	Participants
	Experimenters
	Reviews
	Annotations
}
