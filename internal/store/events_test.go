package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/storetest"
	"github.com/voicebench/humanaudit/internal/trace"
)

// newSessions stores a task, a system and n synthetic sessions.
func newSessions(t testing.TB, db *store.DB, n int) []string {
	t.Helper()
	ctx := context.Background()
	if _, err := db.UpsertSystem(ctx, audit.System{Label: "ref"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.PutTask(ctx, "t1", 1, []byte(`{"id":"t1","version":1}`)); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	for i := range ids {
		s, err := db.CreateSession(ctx, audit.NewSession{TaskID: "t1", TaskVersion: 1, System: "ref", Mode: audit.ModeSynthetic, Seed: int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = s.ID
	}
	return ids
}

// richEvents exercises every kind of field, including raw JSON whose key order and spacing a
// jsonb column would not keep.
func richEvents() []trace.Event {
	wall := time.Date(2026, 3, 2, 9, 30, 0, 123456789, time.UTC)
	return []trace.Event{
		{T: 0, Wall: wall, Type: trace.SessionStart, Actor: trace.ActorSystem, Meta: map[string]string{"task": "t1", "mode": "human"}},
		{T: 40, Wall: wall.Add(40 * time.Millisecond), Type: trace.CallerPlan, Plan: &trace.Plan{ID: "p1", Kind: trace.PlanAnswer, Facts: []trace.FactRef{{Fact: "address", Version: 2}}}},
		{T: 1200, Wall: wall.Add(time.Second), Type: trace.CallerUtterance, Actor: trace.ActorCaller, Text: "It's 12 Rue de l'Église — « bâtiment B » <b>&</b>", Source: "asr"},
		{T: 2400, Wall: wall.Add(2 * time.Second), Type: trace.ToolCall, Tool: "create_order", CallID: "c1", Args: json.RawMessage(`{"zeta": 1, "alpha": [1.50, 2e3], "nested": {"b":null,"a":"\u00e9"}}`)},
		{T: 2410, Wall: wall.Add(2 * time.Second), Type: trace.ToolResult, CallID: "c1", OK: trace.Bool(true), Result: json.RawMessage(`{"id":"o-9","total":12.30}`)},
		{T: 3000, Wall: wall.Add(3 * time.Second), Type: trace.AgentRaw, Raw: json.RawMessage(`{"type":"response.done","usage":{"total_tokens":321}}`)},
		{T: 3500, Wall: wall.Add(3 * time.Second), Type: trace.CueIssued, CueID: "cue-1", Text: "Correct your address"},
		{T: 9000, Wall: wall.Add(9 * time.Second), Type: trace.SessionEnd, Text: "hangup", DurationMS: 9000},
	}
}

// sameEvents compares events by their canonical trace encoding (what the grader reads).
func sameEvents(t *testing.T, got, want []trace.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d", len(got), len(want))
	}
	for i := range got {
		a, _ := trace.MarshalEvent(got[i])
		b, _ := trace.MarshalEvent(want[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("event %d:\n got %s\nwant %s", i+1, a, b)
		}
	}
}

func TestEventLogRoundTripsByteForByte(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	sid := newSessions(t, db, 1)[0]
	log := trace.NewLog(nil, db.EventSink(sid))
	for _, e := range richEvents() {
		if _, err := log.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.Events(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, got, log.Events())
	// Raw JSON keeps its key order (a jsonb column would sort the keys).
	if args := string(got[3].Args); args != `{"zeta":1,"alpha":[1.50,2e3],"nested":{"b":null,"a":"\u00e9"}}` {
		t.Errorf("tool args read back as %s", args)
	}
	var fromDB, fromLog bytes.Buffer
	if err := db.WriteTrace(ctx, sid, &fromDB); err != nil {
		t.Fatal(err)
	}
	trace.WriteJSONL(&fromLog, log.Events())
	if !bytes.Equal(fromDB.Bytes(), fromLog.Bytes()) {
		t.Fatalf("exported trace differs from the session's:\n%s\nvs\n%s", fromDB.Bytes(), fromLog.Bytes())
	}
	if last, err := db.LastSeq(ctx, sid); err != nil || last != int64(len(richEvents())) {
		t.Fatalf("LastSeq = %d, %v", last, err)
	}
}

func TestEventLogIsAppendOnly(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	sid := newSessions(t, db, 1)[0]
	sink := db.EventSink(sid)
	e := trace.Event{Seq: 1, T: 5, Wall: time.Now(), Type: trace.CallerSpeechStart}
	if err := sink.WriteEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	e2 := e
	e2.Text = "rewritten"
	wantErr(t, sink.WriteEvent(ctx, e2), audit.ErrConflict)

	for _, sql := range []string{
		`UPDATE events SET body = '{}' WHERE session_id = $1`,
		`DELETE FROM events WHERE session_id = $1`,
		`TRUNCATE events`,
	} {
		args := []any{sid}
		if sql == `TRUNCATE events` {
			args = nil
		}
		if err := store.ExecRaw(db, sql, args...); err == nil {
			t.Errorf("%s succeeded; the log must refuse it", sql)
		}
	}
	got, err := db.Events(ctx, sid)
	if err != nil || len(got) != 1 || got[0].Text != "" {
		t.Fatalf("events after refused edits: %+v, %v; want the original event", got, err)
	}

	wantErr(t, db.EventSink("no-such-session").WriteEvent(ctx, e), audit.ErrNotFound)
	wantErr(t, sink.WriteEvent(ctx, trace.Event{Seq: 0, Type: trace.MediaGap}), audit.ErrInvalid)
	if _, err := db.Events(ctx, "no-such-session"); err == nil {
		t.Error("Events of an unknown session succeeded")
	}
}

func TestConcurrentSessionsKeepTheirOrder(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	sids := newSessions(t, db, 12)
	const perSession = 60
	var wg sync.WaitGroup
	for _, sid := range sids {
		wg.Go(func() {
			log := trace.NewLog(nil, db.EventSink(sid))
			for i := range perSession {
				if _, err := log.Append(ctx, trace.Event{T: int64(i), Wall: time.Now(), Type: trace.MediaStats, Text: sid}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, sid := range sids {
		evs, err := db.Events(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != perSession {
			t.Fatalf("session %s: %d events, want %d", sid, len(evs), perSession)
		}
		for i, e := range evs {
			if e.Seq != int64(i+1) || e.T != int64(i) || e.Text != sid {
				t.Fatalf("session %s event %d: %+v", sid, i, e)
			}
		}
	}
}

func TestAppendEventsImportsATrace(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	sid := newSessions(t, db, 1)[0]
	evs := richEvents()
	for i := range evs {
		evs[i].Seq = int64(i + 1)
	}
	if err := db.AppendEvents(ctx, sid, evs); err != nil {
		t.Fatal(err)
	}
	got, err := db.Events(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, got, evs)
	// A trace that overlaps what is stored fails as a whole.
	wantErr(t, db.AppendEvents(ctx, sid, []trace.Event{{Seq: 9, Type: trace.MediaGap}, {Seq: 3, Type: trace.MediaGap}}), audit.ErrInvalid)
	wantErr(t, db.AppendEvents(ctx, sid, []trace.Event{{Seq: 9, Type: trace.MediaGap}, {Seq: 8, Type: trace.MediaGap}}), audit.ErrInvalid)
	if err := db.AppendEvents(ctx, sid, []trace.Event{{Seq: 9, Type: trace.MediaGap}, {Seq: 10, Type: trace.MediaGap}}); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendEvents(ctx, sid, []trace.Event{{Seq: 11, Type: trace.MediaGap}, {Seq: 2, Type: trace.MediaGap}}); err == nil {
		t.Fatal("importing a duplicate seq succeeded")
	}
	if last, _ := db.LastSeq(ctx, sid); last != 10 {
		t.Fatalf("a failed import left events behind: last seq %d, want 10", last)
	}
}

func TestFollowEventsStreamsNewEventsLive(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := context.Background()
	db, err := store.Open(ctx, store.Config{URL: storetest.NewURL(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sid := newSessions(t, db, 2)
	sink := db.EventSink(sid[0])
	write := func(seq int64) {
		if err := sink.WriteEvent(ctx, trace.Event{Seq: seq, Type: trace.AgentTranscript, Text: fmt.Sprint(seq)}); err != nil {
			t.Fatal(err)
		}
	}
	write(1)
	write(2)

	fctx, cancel := context.WithCancel(ctx)
	got := make(chan trace.Event, 100)
	done := make(chan error, 1)
	go func() {
		done <- db.FollowEvents(fctx, sid[0], 1, func(e trace.Event) error { got <- e; return nil })
	}()
	next := func() trace.Event {
		select {
		case e := <-got:
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no event from FollowEvents")
		}
		return trace.Event{}
	}
	if e := next(); e.Seq != 2 {
		t.Fatalf("first followed event seq %d, want 2 (after seq 1)", e.Seq)
	}
	// Another session's events do not reach this follower.
	db.EventSink(sid[1]).WriteEvent(ctx, trace.Event{Seq: 1, Type: trace.AgentTranscript})
	for seq := int64(3); seq <= 6; seq++ {
		write(seq)
		if e := next(); e.Seq != seq {
			t.Fatalf("followed seq %d, want %d", e.Seq, seq)
		}
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("FollowEvents returned %v, want context.Canceled", err)
	}
	select {
	case e := <-got:
		t.Fatalf("unexpected event %+v", e)
	default:
	}
	db.Close() // stops the feed's listener; goleak checks it is gone
}
