package store

import (
	"context"

	"github.com/voicebench/humanaudit/internal/trace"
)

// EventsOfTypes returns a session's events of the given types, in seq order. Reports read a few
// event types of many sessions (speech marks, usage) without decoding the provider's raw audio
// events that make up most of a trace.
func (db *DB) EventsOfTypes(ctx context.Context, sessionID string, types ...trace.Type) ([]trace.Event, error) {
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = string(t)
	}
	return db.queryEvents(ctx, sessionID, `SELECT body::text FROM events WHERE session_id = $1 AND type = ANY($2) ORDER BY seq`, sessionID, names)
}
