package synth

import (
	"context"
	"io"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/console"
	"github.com/voicebench/humanaudit/internal/trace"
)

// Store is what synthetic runs and trace imports keep their sessions in (the store implements
// it): the tasks and systems they ran, each session's record and event log, the finished runs a
// resumed run skips, and the lock that keeps one run per system at a time.
type Store interface {
	console.Results
	PutTask(ctx context.Context, id string, version int, spec []byte) (audit.TaskVersion, error)
	UpsertSystem(ctx context.Context, s audit.System) (audit.System, error)
	System(ctx context.Context, label string) (audit.System, error)
	CreateSession(ctx context.Context, ns audit.NewSession) (audit.Session, error)
	StartSession(ctx context.Context, id string) error
	// EventSink's WriteEvent returns once the event is durable.
	EventSink(sessionID string) trace.Sink
	AppendEvents(ctx context.Context, sessionID string, events []trace.Event) error
	Session(ctx context.Context, id string) (audit.Session, error)
	ListSessions(ctx context.Context, f audit.SessionFilter) ([]audit.SessionSummary, error)
	WriteTrace(ctx context.Context, sessionID string, w io.Writer) error
	TryLock(ctx context.Context, name string) (audit.Lock, error)
}
