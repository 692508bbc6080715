package console

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/session"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// ErrLiveElsewhere is returned by Settle for a session another running console is conducting.
var ErrLiveElsewhere = errors.New("the call is running on another console")

// NoteConsoleStopped is the exclusion note of a session closed because its console died.
const NoteConsoleStopped = "the console stopped during the call (it crashed or was killed); closed by the next console to start"

// How often the keeper retries closings the database refused and checks the liveness lock.
var (
	retryEvery = 2 * time.Second
	lockEvery  = 5 * time.Second
)

func newConsoleID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "c_" + hex.EncodeToString(b)
}

// ID is this console process's id, recorded on the sessions it runs.
func (s *Service) ID() string { return s.id }

func (s *Service) recordingPath(id string) string {
	return filepath.Join(s.cfg.DataDir, "recordings", id+".wav")
}

func (s *Service) journalPath(id string) string {
	return filepath.Join(s.cfg.DataDir, "traces", id+".jsonl")
}

// holdLock takes the console's liveness lock: while it holds it, other consoles leave its sessions
// alone.
func (s *Service) holdLock(ctx context.Context) error {
	l, err := s.cfg.Store.HoldConsole(ctx, s.id)
	if err != nil {
		return err
	}
	s.lockMu.Lock()
	s.lock = l
	s.lockMu.Unlock()
	return nil
}

func (s *Service) releaseLock() {
	s.lockMu.Lock()
	l := s.lock
	s.lock = nil
	s.lockMu.Unlock()
	if l != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		l.Release(ctx)
	}
}

// keep retries closings the database refused, and takes the liveness lock again when the database
// dropped it (a restart of the server), until Close.
func (s *Service) keep() {
	defer s.keeper.Done()
	retry := time.NewTicker(retryEvery)
	defer retry.Stop()
	check := time.NewTicker(lockEvery)
	defer check.Stop()
	for {
		select {
		case <-s.stopKeep:
			return
		case <-retry.C:
			s.retryPending()
		case <-check.C:
			s.checkLock()
		}
	}
}

func (s *Service) checkLock() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	s.lockMu.Lock()
	l := s.lock
	s.lockMu.Unlock()
	if l != nil && l.Check(ctx) == nil {
		return
	}
	if l != nil {
		l.Release(ctx) // closes the dead connection
		s.lockMu.Lock()
		s.lock = nil
		s.lockMu.Unlock()
	}
	if err := s.holdLock(ctx); err != nil {
		s.log.Debug("console liveness lock not taken yet", slog.Any("err", err))
		return
	}
	s.log.Info("console liveness lock taken again", slog.String("console", s.id))
}

// retryLater queues a closing the database refused; the keeper retries it.
func (s *Service) retryLater(id string, e ending) {
	s.pendMu.Lock()
	s.pending[id] = e
	s.pendMu.Unlock()
}

func (s *Service) retryPending() {
	s.pendMu.Lock()
	ids := make(map[string]ending, len(s.pending))
	for id, e := range s.pending {
		ids[id] = e
	}
	s.pendMu.Unlock()
	for id, e := range ids {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		rep, err := s.closeSession(ctx, id, e)
		cancel()
		if err != nil && !errors.Is(err, audit.ErrConflict) {
			s.log.Debug("session still not stored", slog.String("session", id), slog.Any("err", err))
			continue
		}
		s.pendMu.Lock()
		delete(s.pending, id)
		s.pendMu.Unlock()
		if err == nil {
			s.log.Info("session stored once the database answered again", slog.String("session", id), slog.String("reason", rep.Reason),
				slog.Bool("rerun", rep.Rerun))
		}
	}
}

// ending says how to close a session whose stored trace has no session.end: the reason and
// exclusion recorded for it. When the trace has its session.end (the session wrote it), the
// trace's own reason and exclusion apply and only Note and By are taken from here. A session
// closed after a crash is not transcribed after the call: its trace has the provider's
// transcripts only.
type ending struct {
	Reason    string
	Exclusion string // "" : the session counts
	Note      string
	By        string // "" : system
	// Grade is the session's own grade of its first Graded events, kept when the stored trace is
	// exactly those events; otherwise the stored trace is graded again.
	Grade    *grade.Result
	GradeErr error
	Graded   int
}

// Closed is what closing a session did.
type Closed struct {
	Reason      string
	Exclusion   string
	Events      int              // events in the final trace
	Appended    int              // events the closing added (session.exclusion, session.end, journal events)
	Torn        *trace.TornLine  // the journal's torn last line, left out
	Recording   *audit.Recording // nil: no recording on disk
	Repaired    bool             // the recording's header had to be repaired
	AudioLostMS int64            // media time of the last committed event beyond the recording's end
	Graded      bool
	Rerun       bool              // the participant runs the assignment again
	Returned    *audit.Assignment // the cell returned to the pool
}

// closeSession closes a session in the store from what it left: the stored trace (completed with
// the events its journal holds beyond it, then with session.exclusion and session.end when it has
// none), the recording (repaired and registered), a grade of that trace, and the assignment's
// next step, in one transaction. It is the one path for a session that ended normally, one whose
// database writes failed, and one a crashed console left running. ErrConflict: it has ended.
func (s *Service) closeSession(ctx context.Context, id string, e ending) (Closed, error) {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	st := s.cfg.Store
	var out Closed
	sess, err := st.Session(ctx, id)
	if err != nil {
		return out, err
	}
	if sess.Status == audit.SessionEnded {
		return out, fmt.Errorf("close session %s: %w: it has ended", id, audit.ErrConflict)
	}
	stored, err := st.Events(ctx, id)
	if err != nil {
		return out, err
	}
	afterSeq := int64(len(stored))
	if afterSeq > 0 {
		afterSeq = stored[len(stored)-1].Seq
	}
	events := stored

	// The journal may hold events the database lost (a database restored from a backup): those
	// that continue the stored log are kept.
	jpath := s.journalPath(id)
	journalOK := false
	if jev, torn, err := trace.ReadFileTolerant(jpath); err == nil {
		out.Torn = torn
		if torn != nil {
			s.log.Warn("trace journal "+jpath+": "+torn.String(), slog.String("session", id))
		}
		journalOK = torn == nil && len(jev) == len(events)
		for _, je := range jev {
			if je.Seq == int64(len(events))+1 {
				events = append(events, je)
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		s.log.Error("trace journal unreadable: the database's trace is used", slog.String("session", id), slog.Any("err", err))
	}

	// The recording: whole sample frames up to the last flush.
	recPath := s.recordingPath(id)
	if _, err := os.Stat(recPath); err == nil {
		rep, err := audio.RepairWAV(recPath)
		if err != nil {
			s.log.Error("recording not repaired", slog.String("session", id), slog.String("path", recPath), slog.Any("err", err))
		} else if rec, err := describeRecording(id, recPath); err == nil {
			out.Recording, out.Repaired = &rec, rep.Changed
		} else {
			s.log.Error("recording not registered", slog.String("session", id), slog.Any("err", err))
		}
	}

	var lastT int64
	end := -1
	exclusion := ""
	for i, ev := range events {
		lastT = max(lastT, ev.T)
		switch ev.Type {
		case trace.SessionEnd:
			end = i
		case trace.Exclusion:
			exclusion = ev.Text
		}
	}
	if out.Recording != nil {
		out.AudioLostMS = max(0, lastT-out.Recording.DurationMS)
	}
	reason := e.Reason
	if end >= 0 {
		reason = events[end].Text
	} else {
		exclusion = e.Exclusion
		now := time.Now().UTC()
		add := func(ev trace.Event) {
			ev.Seq, ev.T, ev.Wall, ev.Actor = int64(len(events))+1, lastT, now, trace.ActorSystem
			events = append(events, ev)
		}
		if exclusion != "" {
			add(trace.Event{Type: trace.Exclusion, Text: exclusion, Meta: map[string]string{"note": e.Note}})
		}
		add(trace.Event{Type: trace.SessionEnd, Text: reason})
	}
	out.Reason, out.Exclusion, out.Events, out.Appended = reason, exclusion, len(events), len(events)-len(stored)

	closing := audit.Closing{SessionID: id, AfterSeq: afterSeq, Append: events[len(stored):], EndReason: reason, Recording: out.Recording}
	g, gerr := e.Grade, e.GradeErr
	if g == nil && gerr == nil || e.Graded != len(events) {
		g, gerr = s.gradeStored(ctx, sess, events)
	}
	if g != nil {
		doc, err := grade.Encode(*g)
		if err != nil {
			return out, err
		}
		afa := g.AFA.Value
		closing.Score = &audit.Score{SessionID: id, GraderVersion: g.Grader, Grade: doc, WS: g.WS == 1, TS: g.TS == 1, PV: g.PV == 1,
			AC: g.AC == 1, AV: g.AV == 1, AFA: &afa, TTRMS: g.TTRMS}
		out.Graded = true
	}
	note := e.Note
	if exclusion == "" && gerr != nil {
		exclusion, note = session.ExclusionGraderError, gerr.Error()
		out.Exclusion = exclusion
	}
	if exclusion != "" {
		closing.Exclusion = &audit.Exclusion{SessionID: id, Reason: audit.ExclusionReason(exclusion), Note: note, By: e.By}
		closing.Rerun = session.Interrupted(reason)
	}
	out.Rerun = closing.Rerun
	cell, err := st.CloseSession(ctx, closing)
	if err != nil {
		return out, err
	}
	if cell.ID != 0 {
		out.Returned = &cell
	}
	if out.Appended > 0 || !journalOK {
		if err := trace.ReplaceFile(jpath, events); err != nil {
			s.log.Warn("trace journal not completed", slog.String("session", id), slog.Any("err", err))
		}
	}
	return out, nil
}

// gradeStored grades a stored trace against the task version it ran: the loaded one, or the spec
// the store kept. A trace that never started (no session.start) is not graded.
func (s *Service) gradeStored(ctx context.Context, sess audit.Session, events []trace.Event) (*grade.Result, error) {
	if len(events) == 0 || events[0].Type != trace.SessionStart {
		return nil, nil
	}
	t, ok := s.tasks[sess.TaskID]
	if !ok || t.Version != sess.TaskVersion {
		spec, err := s.cfg.Store.Task(ctx, sess.TaskID, sess.TaskVersion)
		if err != nil {
			return nil, fmt.Errorf("task %s version %d: %w", sess.TaskID, sess.TaskVersion, err)
		}
		if t, err = task.Parse(fmt.Sprintf("stored task %s version %d", sess.TaskID, sess.TaskVersion), spec.Spec); err != nil {
			return nil, err
		}
	}
	g, err := grade.Grade(ctx, t, events, s.cfg.Grade)
	if err != nil {
		return nil, err
	}
	return &g, nil
}

// Reconcile closes every session that a console which is no longer running left unfinished: its
// recording repaired and registered, its trace completed with session.exclusion (platform_lost)
// and session.end (console_crash), graded as far as it goes (the grade says it is partial), and
// its assignment handed back to its participant for a new attempt. Each session is closed in one
// transaction. Sessions of consoles still running are left alone. It logs one line with the
// counts and returns them.
func (s *Service) Reconcile(ctx context.Context) (ReconcileCounts, error) {
	var c ReconcileCounts
	list, err := s.cfg.Store.UnfinishedSessions(ctx)
	if err != nil {
		return c, fmt.Errorf("reconcile: %w", err)
	}
	var errs []error
	for _, sess := range list {
		if sess.ConsoleID == s.id {
			continue
		}
		gone, err := s.cfg.Store.ConsoleGone(ctx, sess.ConsoleID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !gone {
			c.LiveElsewhere++
			continue
		}
		rep, err := s.closeSession(ctx, sess.ID, ending{Reason: session.EndConsoleCrash, Exclusion: session.ExclusionPlatformLost, Note: NoteConsoleStopped})
		if errors.Is(err, audit.ErrConflict) {
			continue // closed meanwhile by another console
		}
		if err != nil {
			c.Failed++
			errs = append(errs, fmt.Errorf("session %s: %w", sess.ID, err))
			s.log.Error("session left running not closed", slog.String("session", sess.ID), slog.Any("err", err))
			continue
		}
		c.Closed++
		if rep.Recording != nil {
			c.Recordings++
			c.AudioLostMS = max(c.AudioLostMS, rep.AudioLostMS)
		}
		if rep.Repaired {
			c.Repaired++
		}
		if rep.Graded {
			c.Graded++
		}
		if rep.Rerun {
			c.Rerun++
		}
		if rep.Torn != nil {
			c.TornTraces++
		}
	}
	s.log.Info("reconciled sessions left running by a console that stopped", slog.Int("closed", c.Closed),
		slog.Int("recordings", c.Recordings), slog.Int("recordings_repaired", c.Repaired), slog.Int("graded_partial", c.Graded),
		slog.Int("cells_to_run_again", c.Rerun), slog.Int("torn_traces", c.TornTraces), slog.Int64("max_audio_lost_ms", c.AudioLostMS),
		slog.Int("live_on_other_consoles", c.LiveElsewhere), slog.Int("failed", c.Failed))
	return c, errors.Join(errs...)
}

// ReconcileCounts are what Reconcile did.
type ReconcileCounts struct {
	Closed, Recordings, Repaired, Graded, Rerun, TornTraces, LiveElsewhere, Failed int
	AudioLostMS                                                                    int64 // the largest, over the closed sessions
}

// Settle closes a participant's session that no console is running any more (this console's
// closing still waiting for the database, or a session a crashed console left), so that its
// assignment can be started again at once: a participant never waits for a retry or a restart.
// It does nothing for a session that is live here or has ended, and returns ErrLiveElsewhere for
// one another running console conducts.
func (s *Service) Settle(ctx context.Context, id string) error {
	if _, ok := s.Live(id); ok {
		return nil
	}
	sess, err := s.cfg.Store.Session(ctx, id)
	if err != nil {
		return err
	}
	if sess.Status == audit.SessionEnded {
		return nil
	}
	e := ending{Reason: session.EndConsoleCrash, Exclusion: session.ExclusionPlatformLost, Note: NoteConsoleStopped}
	if sess.ConsoleID == s.id {
		s.pendMu.Lock()
		pe, ok := s.pending[id]
		s.pendMu.Unlock()
		if !ok {
			return nil // being started or closed right now
		}
		e = pe
	} else if gone, err := s.cfg.Store.ConsoleGone(ctx, sess.ConsoleID); err != nil {
		return err
	} else if !gone {
		return fmt.Errorf("session %s: %w", id, ErrLiveElsewhere)
	}
	_, err = s.closeSession(ctx, id, e)
	if errors.Is(err, audit.ErrConflict) {
		err = nil
	}
	if err == nil {
		s.pendMu.Lock()
		delete(s.pending, id)
		s.pendMu.Unlock()
	}
	return err
}

// ExcludeLive ends a running call (session.end excluded_by_experimenter, its exclusion in the
// trace) and then excludes it with the experimenter's reason and note: the cell goes back to the
// pool only once the call is over. It reports false when the session is not live on this console.
func (s *Service) ExcludeLive(ctx context.Context, ex audit.Exclusion) (bool, error) {
	l, ok := s.Live(ex.SessionID)
	if !ok {
		return false, nil
	}
	l.mu.Lock()
	l.exclude = &ex
	l.mu.Unlock()
	l.Session.Stop(session.EndExcludedByExperimenter, string(ex.Reason))
	select {
	case <-l.Ended():
	case <-ctx.Done():
		return true, ctx.Err()
	}
	return true, l.Outcome().Stored
}

// EndNotice says in plain words, for the participant, why a call ended ("" when they ended it or
// it ran its course).
func EndNotice(reason string) string {
	switch reason {
	case session.EndConsoleShutdown:
		return "The call was ended on the study's side: the study's server is being stopped. Your progress is saved; you can start this call again when the study is back."
	case session.EndConsoleCrash, session.EndStorageError:
		return "Your call was interrupted by a technical problem. Your progress is saved; you can start it again."
	case session.EndExcludedByExperimenter:
		return "The researcher ended this call."
	case session.EndPlatformLost, session.EndAgentUnresponsive:
		return "The call ended because the assistant stopped responding. This was not your fault."
	case session.EndTimeLimit:
		return "The call reached its time limit."
	}
	return ""
}
