package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/trace"

	"github.com/voicebench/humanaudit/internal/redact"
)

// eventSink appends one session's events to the database's append-only event log. WriteEvent
// returns only after the event's INSERT has committed, so an event the session acknowledges is
// durable. Events of all sessions share a group commit: while one commit is in flight, the events
// that arrive meanwhile are written together by the next one.
type eventSink struct {
	db      *DB
	session string
}

var _ trace.Sink = (*eventSink)(nil)

// EventSink returns the sink for a session's events (the session must exist): each WriteEvent
// returns once its event is durable.
func (db *DB) EventSink(sessionID string) trace.Sink { return &eventSink{db: db, session: sessionID} }

// WriteEvent stores e durably. An event whose seq is already stored for the session is ErrConflict:
// the log is append-only.
func (s *eventSink) WriteEvent(ctx context.Context, e trace.Event) error {
	row, err := newEventRow(s.session, e)
	if err != nil {
		return err
	}
	return s.db.events.write(ctx, row)
}

type eventRow struct {
	session string
	seq     int64
	t       int64
	wall    time.Time
	typ     string
	body    string
}

func newEventRow(session string, e trace.Event) (eventRow, error) {
	if err := audit.CheckEvent(session, e); err != nil {
		return eventRow{}, err
	}
	b, err := trace.MarshalEvent(e)
	if err != nil {
		return eventRow{}, audit.Errorf(audit.ErrInvalid, "event %d of session %s: %v", e.Seq, session, err)
	}
	// Sessions redact as they append (trace.Log); imported traces are redacted here.
	b = redact.Bytes(b)
	return eventRow{session: session, seq: e.Seq, t: e.T, wall: e.Wall.UTC(), typ: string(e.Type), body: string(b)}, nil
}

// maxEventBatch bounds one group commit.
const maxEventBatch = 512

// eventWriter is the group committer: one goroutine takes every queued event, inserts them in one
// statement (one transaction), and answers each writer after the commit.
type eventWriter struct {
	db    *DB
	group bool // false: one INSERT per event (kept to measure what group commit buys)

	mu     sync.RWMutex // held for reading while sending on reqs, so close never races a send
	closed bool
	reqs   chan eventReq
	done   chan struct{}
}

type eventReq struct {
	row eventRow
	err chan error
}

var errClosed = errors.New("store is closed")

func newEventWriter(db *DB) *eventWriter {
	w := &eventWriter{db: db, group: true, reqs: make(chan eventReq, maxEventBatch), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *eventWriter) write(ctx context.Context, row eventRow) error {
	if !w.group {
		return w.db.insertEvents(ctx, w.db.pool, []eventRow{row})
	}
	req := eventReq{row: row, err: make(chan error, 1)}
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return errClosed
	}
	select {
	case w.reqs <- req:
	case <-ctx.Done():
		w.mu.RUnlock()
		return ctx.Err()
	}
	w.mu.RUnlock()
	// Once queued, wait for the outcome whatever ctx says: returning early could report as lost an
	// event that is then committed, and the log would reuse its seq.
	return <-req.err
}

func (w *eventWriter) run() {
	defer close(w.done)
	batch := make([]eventReq, 0, maxEventBatch)
	rows := make([]eventRow, 0, maxEventBatch)
	for req := range w.reqs {
		batch = append(batch[:0], req)
	drain:
		for len(batch) < maxEventBatch {
			select {
			case r, ok := <-w.reqs:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		rows = rows[:0]
		for _, r := range batch {
			rows = append(rows, r.row)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := w.db.insertEvents(ctx, w.db.pool, rows)
		var pe *pgconn.PgError
		if err != nil && len(batch) > 1 && errors.As(err, &pe) {
			// One bad event (a duplicate seq, an unknown session) must not fail the others.
			for _, r := range batch {
				r.err <- w.db.insertEvents(ctx, w.db.pool, []eventRow{r.row})
			}
		} else {
			for _, r := range batch {
				r.err <- err
			}
		}
		cancel()
	}
}

// close flushes queued events and stops the committer.
func (w *eventWriter) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	close(w.reqs)
	w.mu.Unlock()
	<-w.done
}

// execer is a pool or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// insertEvents inserts rows in one statement.
func (db *DB) insertEvents(ctx context.Context, x execer, rows []eventRow) error {
	var err error
	if len(rows) == 1 {
		r := rows[0]
		_, err = x.Exec(ctx, `INSERT INTO events (session_id, seq, t_ms, wall, type, body) VALUES ($1, $2, $3, $4, $5, $6::json)`,
			r.session, r.seq, r.t, r.wall, r.typ, r.body)
	} else {
		sessions, seqs, ts, walls, types, bodies := make([]string, len(rows)), make([]int64, len(rows)), make([]int64, len(rows)),
			make([]time.Time, len(rows)), make([]string, len(rows)), make([]string, len(rows))
		for i, r := range rows {
			sessions[i], seqs[i], ts[i], walls[i], types[i], bodies[i] = r.session, r.seq, r.t, r.wall, r.typ, r.body
		}
		_, err = x.Exec(ctx, `INSERT INTO events (session_id, seq, t_ms, wall, type, body)
			SELECT s, q, t, w, ty, b::json FROM unnest($1::text[], $2::int8[], $3::int8[], $4::timestamptz[], $5::text[], $6::text[]) AS u(s, q, t, w, ty, b)`,
			sessions, seqs, ts, walls, types, bodies)
	}
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == sqlUniqueViolation && len(rows) == 1 {
		return &audit.Error{Msg: fmt.Sprintf("event %d of session %s is already stored (the log is append-only): %s", rows[0].seq, rows[0].session, audit.ErrConflict), Kind: audit.ErrConflict, Cause: err}
	}
	if len(rows) == 1 {
		return translate(err, fmt.Sprintf("append event %d of session %s", rows[0].seq, rows[0].session))
	}
	return translate(err, fmt.Sprintf("append %d events", len(rows)))
}

// AppendEvents stores a whole trace at once (importing traces made elsewhere) in one
// transaction. Sequence numbers must start after the stored ones and increase.
func (db *DB) AppendEvents(ctx context.Context, sessionID string, events []trace.Event) error {
	rows := make([]eventRow, 0, len(events))
	for i, e := range events {
		if i > 0 && e.Seq <= events[i-1].Seq {
			return audit.Errorf(audit.ErrInvalid, "event %d of session %s: seq %d does not increase", i+1, sessionID, e.Seq)
		}
		r, err := newEventRow(sessionID, e)
		if err != nil {
			return err
		}
		rows = append(rows, r)
	}
	return db.tx(ctx, func(tx pgx.Tx) error {
		for len(rows) > 0 {
			n := min(len(rows), 1000)
			if err := db.insertEvents(ctx, tx, rows[:n]); err != nil {
				return err
			}
			rows = rows[n:]
		}
		return nil
	})
}

// Events returns a session's events in seq order, decoded from the stored JSON: the trace that is
// exported and graded. A session without events gives an empty slice; an unknown one ErrNotFound.
func (db *DB) Events(ctx context.Context, sessionID string) ([]trace.Event, error) {
	return db.EventsAfter(ctx, sessionID, 0, 0)
}

// EventsAfter returns up to limit (0: all) events of a session with seq > afterSeq, in order.
func (db *DB) EventsAfter(ctx context.Context, sessionID string, afterSeq int64, limit int) ([]trace.Event, error) {
	q := `SELECT body::text FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq`
	args := []any{sessionID, afterSeq}
	if limit > 0 {
		q += ` LIMIT $3`
		args = append(args, limit)
	}
	events, err := db.queryEvents(ctx, sessionID, q, args...)
	if err != nil {
		return nil, err
	}
	if len(events) == 0 && afterSeq == 0 {
		if _, err := db.Session(ctx, sessionID); err != nil {
			return nil, err
		}
	}
	return events, nil
}

// queryEvents runs q, which selects the stored JSON of events of one session, and decodes them.
func (db *DB) queryEvents(ctx context.Context, sessionID, q string, args ...any) ([]trace.Event, error) {
	rows, _ := db.pool.Query(ctx, q, args...)
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

// WriteTrace writes a session's trace as canonical JSONL (trace.WriteJSONL): the file the grader
// reads and that is archived beside the recording.
func (db *DB) WriteTrace(ctx context.Context, sessionID string, w io.Writer) error {
	events, err := db.Events(ctx, sessionID)
	if err != nil {
		return err
	}
	return trace.WriteJSONL(w, events)
}

// LastSeq returns the highest stored seq of a session (0 when it has none), to resume a log.
func (db *DB) LastSeq(ctx context.Context, sessionID string) (int64, error) {
	var seq int64
	err := db.pool.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM events WHERE session_id = $1`, sessionID).Scan(&seq)
	return seq, translate(err, "last event of session "+sessionID)
}

// FollowEvents calls fn with each event of the session whose seq is above afterSeq: first those
// already stored, then new ones as they commit (woken by LISTEN/NOTIFY, with a slow poll as a
// safety net), until ctx ends or fn fails. It returns ctx's or fn's error. For live dashboards.
func (db *DB) FollowEvents(ctx context.Context, sessionID string, afterSeq int64, fn func(trace.Event) error) error {
	wake, unsubscribe := db.feed.subscribe(sessionID)
	defer unsubscribe()
	poll := time.NewTicker(2 * time.Second)
	defer poll.Stop()
	for {
		for {
			evs, err := db.EventsAfter(ctx, sessionID, afterSeq, 500)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return err
			}
			for _, e := range evs {
				if err := fn(e); err != nil {
					return err
				}
				afterSeq = e.Seq
			}
			if len(evs) < 500 {
				break
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		case <-poll.C:
		}
	}
}

// eventFeed holds one LISTEN connection for the whole DB and wakes the followers of a session
// when its events commit.
type eventFeed struct {
	db *DB

	mu      sync.Mutex
	subs    map[string]map[chan struct{}]struct{}
	running bool
	cancel  context.CancelFunc
	done    chan struct{}
}

func newEventFeed(db *DB) *eventFeed {
	return &eventFeed{db: db, subs: map[string]map[chan struct{}]struct{}{}}
}

func (f *eventFeed) subscribe(session string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs[session] == nil {
		f.subs[session] = map[chan struct{}]struct{}{}
	}
	f.subs[session][ch] = struct{}{}
	if !f.running && f.done == nil {
		ctx, cancel := context.WithCancel(context.Background())
		f.running, f.cancel, f.done = true, cancel, make(chan struct{})
		go f.run(ctx)
	}
	return ch, func() {
		f.mu.Lock()
		delete(f.subs[session], ch)
		if len(f.subs[session]) == 0 {
			delete(f.subs, session)
		}
		f.mu.Unlock()
	}
}

func (f *eventFeed) wake(session string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs[session] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (f *eventFeed) wakeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.subs {
		for ch := range m {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

func (f *eventFeed) run(ctx context.Context) {
	defer close(f.done)
	for ctx.Err() == nil {
		err := f.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		f.db.log.Warn("event feed: listen connection lost; reconnecting", slog.Any("err", err))
		f.wakeAll() // followers re-read what they may have missed
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (f *eventFeed) listen(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, f.db.url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `LISTEN audit_events`); err != nil {
		return err
	}
	f.wakeAll()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		session, seq, _ := strings.Cut(n.Payload, " ")
		if _, err := strconv.ParseInt(seq, 10, 64); err == nil {
			f.wake(session)
		}
	}
}

func (f *eventFeed) close() {
	f.mu.Lock()
	cancel, done := f.cancel, f.done
	f.running = false
	f.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}
