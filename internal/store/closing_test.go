package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/trace"
)

// A call the platform cut short is excluded, its assignment goes back to the same participant,
// the next attempt is linked to it, and the study counts the cell once.
func TestInterruptedAttemptIsRunAgainByTheSameParticipant(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, []string{"alpha"}, []string{"t1", "t2"})
	if _, err := f.db.AddPlan(ctx, f.study, []audit.PlanRow{{Slot: "P1", Position: 1, Task: "t1", System: "alpha", Repeat: 1},
		{Slot: "P1", Position: 2, Task: "t2", System: "alpha", Repeat: 1}}); err != nil {
		t.Fatal(err)
	}
	p := f.participant(t)
	a, err := f.db.ClaimNext(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	s1, err := f.db.CreateSession(ctx, audit.NewSession{AssignmentID: a.ID, TaskVersion: 1, ConsoleID: "c_dead"})
	if err != nil {
		t.Fatal(err)
	}
	if s1.Attempt != 1 || s1.Reruns != "" {
		t.Fatalf("first attempt: %+v", s1)
	}
	f.db.StartSession(ctx, s1.ID)
	log := trace.NewLog(nil, f.db.EventSink(s1.ID))
	for _, e := range []trace.Event{{Type: trace.SessionStart, T: 1}, {Type: trace.CallerAudioStart, T: 40}} {
		e.Wall = f.clock.Now()
		if _, err := log.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	unfinished, err := f.db.UnfinishedSessions(ctx)
	if err != nil || len(unfinished) != 1 || unfinished[0].ID != s1.ID || unfinished[0].ConsoleID != "c_dead" {
		t.Fatalf("unfinished sessions %+v, %v", unfinished, err)
	}

	tail := []trace.Event{{Seq: 2, T: 40, Wall: f.clock.Now(), Type: trace.Exclusion, Text: "platform_lost"},
		{Seq: 3, T: 40, Wall: f.clock.Now(), Type: trace.SessionEnd, Text: "console_crash"}}
	closing := audit.Closing{SessionID: s1.ID, AfterSeq: 1, Append: tail, EndReason: "console_crash",
		Recording: &audit.Recording{SessionID: s1.ID, Path: "/data/recordings/" + s1.ID + ".wav", SampleRate: 24000, Channels: 2, DurationMS: 40, Bytes: 3884},
		Score:     &audit.Score{SessionID: s1.ID, GraderVersion: "grade/1", Grade: []byte(`{"partial":"yes"}`)},
		Exclusion: &audit.Exclusion{SessionID: s1.ID, Reason: audit.ReasonPlatformLost, Note: "the console stopped"}, Rerun: true}
	// Computed from a trace read too early: refused, nothing stored.
	_, err = f.db.CloseSession(ctx, closing)
	wantErr(t, err, audit.ErrConflict)
	if ss, _ := f.db.Session(ctx, s1.ID); ss.Status == audit.SessionEnded || ss.Exclusion != nil {
		t.Fatalf("a refused closing changed the session: %+v", ss)
	}
	closing.AfterSeq = 2
	closing.Append[0].Seq, closing.Append[1].Seq = 3, 4
	if cell, err := f.db.CloseSession(ctx, closing); err != nil || cell.ID != 0 {
		t.Fatalf("close: cell %+v, %v; want no pool cell for a rerun", cell, err)
	}
	_, err = f.db.CloseSession(ctx, audit.Closing{SessionID: s1.ID, AfterSeq: 4, EndReason: "again"})
	wantErr(t, err, audit.ErrConflict) // closed once, whoever tries again

	got, _ := f.db.Session(ctx, s1.ID)
	if got.Status != audit.SessionEnded || got.EndReason != "console_crash" || got.Exclusion == nil ||
		got.Exclusion.Reason != audit.ReasonPlatformLost || got.RecordingPath == "" {
		t.Fatalf("closed session %+v", got)
	}
	events, _ := f.db.Events(ctx, s1.ID)
	if len(events) != 4 || events[3].Type != trace.SessionEnd {
		t.Fatalf("trace after closing: %+v", events)
	}
	if sc, _ := f.db.Scores(ctx, s1.ID); len(sc) != 1 {
		t.Fatalf("scores %+v", sc)
	}
	back, _ := f.db.Assignment(ctx, a.ID)
	if back.Status != audit.StatusPending || back.ParticipantID != p.ID || back.Position != 1 || back.SessionID != "" {
		t.Fatalf("interrupted assignment %+v; want it pending for the same participant", back)
	}

	// The same participant gets the same assignment and starts attempt 2, linked to attempt 1.
	again, err := f.db.ClaimNext(ctx, p.ID)
	if err != nil || again.ID != a.ID {
		t.Fatalf("next claim %+v, %v; want assignment %d again", again, err, a.ID)
	}
	s2, err := f.db.CreateSession(ctx, audit.NewSession{AssignmentID: a.ID, TaskVersion: 1, ConsoleID: "c_live"})
	if err != nil {
		t.Fatal(err)
	}
	if s2.Attempt != 2 || s2.Reruns != s1.ID {
		t.Fatalf("second attempt %+v; want attempt 2 re-running %s", s2, s1.ID)
	}
	f.db.StartSession(ctx, s2.ID)
	if _, err := f.db.CloseSession(ctx, audit.Closing{SessionID: s2.ID, EndReason: "caller_hung_up"}); err != nil {
		t.Fatal(err)
	}
	// Excluding the earlier attempt again is refused; it does not touch the assignment.
	_, err = f.db.ExcludeSession(ctx, audit.Exclusion{SessionID: s1.ID, Reason: audit.ReasonOther})
	wantErr(t, err, audit.ErrConflict)
	prog, _ := f.db.Progress(ctx, f.study)
	if prog.Study.Done != 1 || prog.Study.Excluded != 0 || prog.Study.Pending != 1 || prog.Study.Total() != 2 {
		t.Fatalf("progress %+v; want the cell counted once, done", prog.Study)
	}
	attempts, err := f.db.AssignmentSessions(ctx, a.ID)
	if err != nil || len(attempts) != 2 || attempts[0].ID != s1.ID || attempts[1].ID != s2.ID {
		t.Fatalf("attempts %+v, %v", attempts, err)
	}
}

// An excluded session without a rerun returns its cell to the pool, as ExcludeSession does.
func TestClosingExcludedReturnsTheCellToThePool(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, []string{"alpha"}, []string{"t1"})
	f.db.AddPlan(ctx, f.study, []audit.PlanRow{{Slot: "P1", Position: 1, Task: "t1", System: "alpha", Repeat: 1}})
	p := f.participant(t)
	a, _ := f.db.ClaimNext(ctx, p.ID)
	s := f.session(t, a)
	cell, err := f.db.CloseSession(ctx, audit.Closing{SessionID: s.ID, EndReason: "excluded_by_experimenter",
		Exclusion: &audit.Exclusion{SessionID: s.ID, Reason: audit.ReasonCallerBrokeScript, Note: "read the card aloud", By: "eve"}})
	if err != nil || cell.ID == 0 || cell.Replaces != a.ID || cell.Status != audit.StatusPending || cell.ParticipantID != 0 {
		t.Fatalf("pool cell %+v, %v", cell, err)
	}
	got, _ := f.db.Session(ctx, s.ID)
	if got.Exclusion == nil || got.Exclusion.By != "eve" || got.Exclusion.Note != "read the card aloud" {
		t.Fatalf("exclusion %+v", got.Exclusion)
	}
	if old, _ := f.db.Assignment(ctx, a.ID); old.Status != audit.StatusExcluded {
		t.Fatalf("assignment %+v", old)
	}
}

func TestConsoleLivenessLock(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil, nil)
	if gone, err := f.db.ConsoleGone(ctx, "c_1"); err != nil || !gone {
		t.Fatalf("a console nobody runs: gone=%v, %v", gone, err)
	}
	l, err := f.db.HoldConsole(ctx, "c_1")
	if err != nil {
		t.Fatal(err)
	}
	if gone, err := f.db.ConsoleGone(ctx, "c_1"); err != nil || gone {
		t.Fatalf("a held console: gone=%v, %v", gone, err)
	}
	if err := l.Check(ctx); err != nil {
		t.Fatal(err)
	}
	l.Release(ctx)
	if gone, _ := f.db.ConsoleGone(ctx, "c_1"); !gone {
		t.Fatal("released console still seen as running")
	}
	if gone, _ := f.db.ConsoleGone(ctx, ""); !gone {
		t.Fatal("a session without a console id belongs to no running console")
	}
}

// A server that cannot be reached is ErrUnavailable, with a message fit for a client.
func TestUnreachableDatabaseIsUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := pgx.Connect(ctx, "postgres://nobody@127.0.0.1:1/none?connect_timeout=2")
	if err == nil {
		t.Fatal("connected to port 1")
	}
	err = store.Translate(err, "participant token")
	wantErr(t, err, audit.ErrUnavailable)
	if errors.Is(store.Translate(pgx.ErrNoRows, "x"), audit.ErrUnavailable) {
		t.Fatal("no rows is not an outage")
	}
}
