package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

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
	rows, _ := db.pool.Query(ctx, `SELECT body::text FROM events WHERE session_id = $1 AND type = ANY($2) ORDER BY seq`, sessionID, names)
	events := []trace.Event{}
	var body []byte
	_, err := pgx.ForEachRow(rows, []any{&body}, func() error {
		var e trace.Event
		if err := json.Unmarshal(body, &e); err != nil {
			return fmt.Errorf("decode stored event of session %s: %w", sessionID, err)
		}
		events = append(events, e)
		return nil
	})
	if err != nil {
		return nil, translate(err, "events of session "+sessionID)
	}
	return events, nil
}
