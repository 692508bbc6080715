package console

import (
	"context"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/trace"
)

// Store is what the console keeps its sessions in: the tasks and systems it runs, each session's
// record and durable event log, the one transaction that closes a session, and the liveness locks
// that tell a running console from a crashed one. The store implements it (an in-memory one,
// audittest, serves the web tests).
type Store interface {
	PutTask(ctx context.Context, id string, version int, spec []byte) (audit.TaskVersion, error)
	Task(ctx context.Context, id string, version int) (audit.TaskVersion, error)
	UpsertSystem(ctx context.Context, s audit.System) (audit.System, error)
	System(ctx context.Context, label string) (audit.System, error)

	CreateSession(ctx context.Context, ns audit.NewSession) (audit.Session, error)
	StartSession(ctx context.Context, id string) error
	// EventSink's WriteEvent returns once the event is durable.
	EventSink(sessionID string) trace.Sink
	Session(ctx context.Context, id string) (audit.Session, error)
	Events(ctx context.Context, sessionID string) ([]trace.Event, error)
	CloseSession(ctx context.Context, c audit.Closing) (audit.Assignment, error)
	UnfinishedSessions(ctx context.Context) ([]audit.Session, error)

	HoldConsole(ctx context.Context, id string) (audit.Lock, error)
	ConsoleGone(ctx context.Context, id string) (bool, error)
}

// Results is what SaveResult stores a finished session in.
type Results interface {
	SaveRecording(ctx context.Context, r audit.Recording) error
	SaveScore(ctx context.Context, s audit.Score) error
	EndSession(ctx context.Context, id, reason string) error
	ExcludeSession(ctx context.Context, e audit.Exclusion) (audit.Assignment, error)
}
