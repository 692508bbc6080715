package trace

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Sink makes an event durable. The log calls it before Append returns, so an event a session has
// acknowledged is already committed (to PostgreSQL, a file, or both).
type Sink interface {
	WriteEvent(ctx context.Context, e Event) error
}

// Clock gives the media time and wall time stamped on events.
type Clock interface {
	MediaMS() int64
	Now() time.Time
}

// Log is the append-only event log of one session. It assigns sequence numbers, stamps events
// that carry no time, and hands each event to its sinks before acknowledging it.
type Log struct {
	mu     sync.Mutex
	clock  Clock
	sinks  []Sink
	events []Event
	sealed bool
}

// NewLog returns an empty log stamping events from clock and writing them to sinks.
func NewLog(clock Clock, sinks ...Sink) *Log {
	return &Log{clock: clock, sinks: sinks}
}

// ErrSealed is returned by Append after Seal.
var ErrSealed = fmt.Errorf("trace is sealed")

// Append stamps, numbers, redacts (internal/redact) and stores e, writes it to every sink and
// returns the stored event. An
// event with T == 0 and a zero Wall is stamped from the log's clock; callers that know the media
// time of what they record (a speech onset found in a past frame) set T themselves.
func (l *Log) Append(ctx context.Context, e Event) (Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sealed {
		return Event{}, ErrSealed
	}
	if l.clock != nil {
		if e.T == 0 {
			e.T = l.clock.MediaMS()
		}
		if e.Wall.IsZero() {
			e.Wall = l.clock.Now()
		}
	}
	e.Wall = e.Wall.UTC()
	e.Seq = int64(len(l.events)) + 1
	e = redactEvent(e)
	for _, s := range l.sinks {
		if err := s.WriteEvent(ctx, e); err != nil {
			return Event{}, fmt.Errorf("write event %d (%s): %w", e.Seq, e.Type, err)
		}
	}
	l.events = append(l.events, e)
	return e, nil
}

// Seal forbids further appends.
func (l *Log) Seal() {
	l.mu.Lock()
	l.sealed = true
	l.mu.Unlock()
}

// Events returns a copy of the events so far.
func (l *Log) Events() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}

// Len returns the number of events so far.
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}
