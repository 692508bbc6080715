package audittest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/redact"
	"github.com/voicebench/humanaudit/internal/trace"
)

// Sessions.

// CreateSession stores a new session. A planned session takes its study, participant, task and
// system from its assignment, which must be running for the same participant and have no session
// yet; an assignment run again gets the next attempt, linked to the last one.
func (s *Store) CreateSession(_ context.Context, ns audit.NewSession) (audit.Session, error) {
	if ns.ID == "" {
		ns.ID = "s_" + newToken(24)[:22]
	}
	clone(&ns.ID, &ns.StudyID, &ns.TaskID, &ns.System, &ns.ConsoleID, &ns.Condition)
	sess, err := ns.Created(s.stamp())
	if err != nil {
		return audit.Session{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var a *audit.Assignment
	if ns.AssignmentID != 0 {
		if a = s.assignment(ns.AssignmentID); a == nil {
			return audit.Session{}, audit.Errorf(audit.ErrNotFound, "create session")
		}
		if err := sess.Assign(*a); err != nil {
			return audit.Session{}, err
		}
		for _, id := range s.sessionOrder {
			if o := s.sessions[id]; o.AssignmentID == a.ID {
				sess.Attempt, sess.Reruns = o.Attempt+1, o.ID
			}
		}
	}
	switch {
	case sess.Mode == audit.ModeHuman && sess.ParticipantID == 0:
		return audit.Session{}, audit.Errorf(audit.ErrInvalid, "human session %s has no participant", sess.ID)
	case s.sessions[sess.ID] != nil:
		return audit.Session{}, audit.Errorf(audit.ErrConflict, "create session")
	case s.systems[sess.System] == nil:
		return audit.Session{}, audit.Errorf(audit.ErrNotFound, "create session: unknown system")
	case sess.StudyID != "" && s.studies[sess.StudyID] == nil:
		return audit.Session{}, audit.Errorf(audit.ErrNotFound, "create session: unknown study")
	}
	if _, ok := s.tasks[taskKey{sess.TaskID, sess.TaskVersion}]; !ok {
		return audit.Session{}, audit.Errorf(audit.ErrNotFound, "create session: unknown task version")
	}
	s.sessions[sess.ID] = &sess
	s.sessionOrder = append(s.sessionOrder, sess.ID)
	if a != nil {
		a.SessionID = sess.ID
	}
	return sess, nil
}

// StartSession marks a created session running; a running one stays, an ended one is ErrConflict.
func (s *Store) StartSession(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[id]
	switch {
	case sess == nil:
		return audit.Errorf(audit.ErrNotFound, "session %s", id)
	case sess.Status == audit.SessionEnded:
		return audit.Errorf(audit.ErrConflict, "session %s has ended", id)
	case sess.Status == audit.SessionCreated:
		sess.Status, sess.StartedAt = audit.SessionRunning, s.stamp()
	}
	return nil
}

// EndSession marks a session ended with reason and its running assignment done; the first reason
// stays.
func (s *Store) EndSession(_ context.Context, id, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[id]
	if sess == nil {
		return audit.Errorf(audit.ErrNotFound, "end session %s", id)
	}
	if sess.Status == audit.SessionEnded {
		return nil
	}
	now := s.stamp()
	s.end(sess, strings.Clone(redact.String(reason)), now)
	if a := s.assignment(sess.AssignmentID); a != nil && a.Status == audit.StatusRunning && a.SessionID == id {
		a.Status, a.FinishedAt = audit.StatusDone, now
	}
	return nil
}

func (s *Store) end(sess *audit.Session, reason string, now time.Time) {
	sess.Status, sess.EndedAt, sess.EndReason = audit.SessionEnded, now, reason
	if sess.StartedAt.IsZero() {
		sess.StartedAt = now
	}
}

// view is a session as the store reads it back: with its stereo recording's path.
func (s *Store) view(sess *audit.Session) audit.Session {
	out := *sess
	out.RecordingPath = s.recordings[sess.ID][audit.RecordingStereo].Path
	if sess.Exclusion != nil {
		e := *sess.Exclusion
		out.Exclusion = &e
	}
	return out
}

// Session returns a session with its recording path and exclusion.
func (s *Store) Session(_ context.Context, id string) (audit.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess := s.sessions[id]; sess != nil {
		return s.view(sess), nil
	}
	return audit.Session{}, audit.Errorf(audit.ErrNotFound, "session %s", id)
}

// ParticipantSession returns session id only if it belongs to the participant.
func (s *Store) ParticipantSession(_ context.Context, participantID int64, id string) (audit.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess := s.sessions[id]; sess != nil && sess.ParticipantID == participantID {
		return s.view(sess), nil
	}
	return audit.Session{}, audit.Errorf(audit.ErrNotFound, "session %s", id)
}

// PracticeSessions lists a participant's practice calls (human sessions with no assignment and no
// study), oldest first.
func (s *Store) PracticeSessions(_ context.Context, participantID int64) ([]audit.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessionsWhere(func(x *audit.Session) bool {
		return x.ParticipantID == participantID && x.AssignmentID == 0 && x.StudyID == ""
	}), nil
}

// sessionsWhere lists the sessions keep selects, oldest first.
func (s *Store) sessionsWhere(keep func(*audit.Session) bool) []audit.Session {
	out := []audit.Session{}
	for _, id := range s.sessionOrder {
		if sess := s.sessions[id]; keep(sess) {
			out = append(out, s.view(sess))
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// UnfinishedSessions lists the sessions that have not ended, oldest first.
func (s *Store) UnfinishedSessions(_ context.Context) ([]audit.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessionsWhere(func(sess *audit.Session) bool { return sess.Status != audit.SessionEnded }), nil
}

// AssignmentSessions lists an assignment's sessions, first attempt first.
func (s *Store) AssignmentSessions(_ context.Context, assignmentID int64) ([]audit.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.sessionsWhere(func(sess *audit.Session) bool { return sess.AssignmentID == assignmentID })
	sort.SliceStable(out, func(i, j int) bool { return out[i].Attempt < out[j].Attempt })
	return out, nil
}

// ListSessions lists sessions matching f, oldest first, with the system's alias, the plan cell,
// the participant's platform id and the latest score (of f.GraderVersion when set).
func (s *Store) ListSessions(_ context.Context, f audit.SessionFilter) ([]audit.SessionSummary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.sessionsWhere(func(sess *audit.Session) bool {
		return (f.StudyID == "" || sess.StudyID == f.StudyID) && (f.Mode == "" || sess.Mode == f.Mode) &&
			(f.System == "" || sess.System == f.System) && (f.TaskID == "" || sess.TaskID == f.TaskID) && (f.Status == "" || sess.Status == f.Status)
	})
	out := make([]audit.SessionSummary, 0, len(list))
	for _, sess := range list {
		sum := audit.SessionSummary{Session: sess, Alias: s.systems[sess.System].Alias}
		if a := s.assignment(sess.AssignmentID); a != nil {
			sum.Repeat, sum.Slot, sum.Position = a.Repeat, a.Slot, a.Position
		}
		if p := s.participant(sess.ParticipantID); p != nil {
			sum.ProlificPID = p.p.External.ProlificPID
		}
		for _, sc := range s.scoresOf(sess.ID) {
			if f.GraderVersion == "" || sc.GraderVersion == f.GraderVersion {
				sc := sc
				sum.Score = &sc
				break
			}
		}
		out = append(out, sum)
	}
	return out, nil
}

// Recordings, scores and exclusions.

// SaveRecording stores or replaces a session's recording of a kind (default stereo).
func (s *Store) SaveRecording(_ context.Context, r audit.Recording) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saveRecording(r)
}

func (s *Store) saveRecording(r audit.Recording) error {
	if s.sessions[r.SessionID] == nil {
		return audit.Errorf(audit.ErrNotFound, "save recording of session %s: unknown session", r.SessionID)
	}
	if r.Kind == "" {
		r.Kind = audit.RecordingStereo
	}
	r.CreatedAt = s.stamp()
	if old, ok := s.recordings[r.SessionID][r.Kind]; ok {
		r.CreatedAt = old.CreatedAt
	}
	if s.recordings[r.SessionID] == nil {
		s.recordings[r.SessionID] = map[string]audit.Recording{}
	}
	s.recordings[r.SessionID][r.Kind] = r
	return nil
}

// Recordings lists a session's recordings by kind.
func (s *Store) Recordings(_ context.Context, sessionID string) ([]audit.Recording, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := mapValues(s.recordings[sessionID])
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out, nil
}

// SaveScore stores a session's grade, replacing an earlier grade by the same grader version.
func (s *Store) SaveScore(_ context.Context, sc audit.Score) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saveScore(sc)
}

func (s *Store) saveScore(sc audit.Score) error {
	sc.Grade = redact.Bytes(sc.Grade)
	if err := sc.Check(); err != nil {
		return err
	}
	if s.sessions[sc.SessionID] == nil {
		return audit.Errorf(audit.ErrNotFound, "save score of session %s: unknown session", sc.SessionID)
	}
	if sc.GradedAt.IsZero() {
		sc.GradedAt = s.stamp()
	}
	sc.GradedAt = sc.GradedAt.UTC().Truncate(time.Microsecond)
	kept := s.scores[sc.SessionID][:0:0]
	for _, o := range s.scores[sc.SessionID] {
		if o.GraderVersion != sc.GraderVersion {
			kept = append(kept, o)
		}
	}
	s.scores[sc.SessionID] = append(kept, sc)
	return nil
}

// scoresOf lists a session's grades, newest first.
func (s *Store) scoresOf(sessionID string) []audit.Score {
	out := append([]audit.Score(nil), s.scores[sessionID]...)
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].GradedAt.Equal(out[j].GradedAt) {
			return out[i].GradedAt.After(out[j].GradedAt)
		}
		return out[i].GraderVersion > out[j].GraderVersion
	})
	return out
}

// Scores lists a session's grades, newest first.
func (s *Store) Scores(_ context.Context, sessionID string) ([]audit.Score, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scoresOf(sessionID), nil
}

// ExcludeSession records an exclusion. A planned session's current assignment becomes excluded and
// a fresh pending copy of its cell goes back to the study's pool; that copy is returned. With
// e.SameParticipant the assignment goes back to its participant as pending instead. Excluding
// twice is ErrConflict.
func (s *Store) ExcludeSession(_ context.Context, e audit.Exclusion) (audit.Assignment, error) {
	if err := e.Reason.Check(); err != nil {
		return audit.Assignment{}, err
	}
	if e.By == "" {
		e.By = "system"
	}
	e.Note = redact.String(e.Note)
	clone(&e.SessionID, &e.Note, &e.By)
	if e.At.IsZero() {
		e.At = s.stamp()
	}
	e.At = e.At.UTC().Truncate(time.Microsecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[e.SessionID]
	switch {
	case sess == nil:
		return audit.Assignment{}, audit.Errorf(audit.ErrNotFound, "exclude session %s", e.SessionID)
	case sess.Exclusion != nil:
		return audit.Assignment{}, audit.Errorf(audit.ErrConflict, "session %s is already excluded", e.SessionID)
	}
	sess.Exclusion = &e
	a := s.assignment(sess.AssignmentID)
	if a == nil || a.SessionID != sess.ID {
		return audit.Assignment{}, nil
	}
	if e.SameParticipant {
		a.Status, a.SessionID, a.FinishedAt = audit.StatusPending, "", time.Time{}
		return audit.Assignment{}, nil
	}
	a.Status, a.FinishedAt = audit.StatusExcluded, e.At
	return *s.returnCell(a), nil
}

// returnCell puts a fresh pending copy of an excluded assignment's cell in the study's pool.
func (s *Store) returnCell(a *audit.Assignment) *audit.Assignment {
	return s.newAssignment(audit.Assignment{StudyID: a.StudyID, Task: a.Task, System: a.System, Repeat: a.Repeat, Replaces: a.ID, Condition: a.Condition, CreatedAt: s.stamp()})
}

// CloseSession ends a session that has not ended, all at once: it appends c.Append to the event
// log, stores the recording and the score, marks the session ended, and moves its current
// assignment on (done; back to the participant as pending with c.Rerun; or excluded with a fresh
// copy of the cell in the pool, which is returned). Closing an ended session is ErrConflict.
func (s *Store) CloseSession(_ context.Context, c audit.Closing) (audit.Assignment, error) {
	if err := c.Check(); err != nil {
		return audit.Assignment{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[c.SessionID]
	switch {
	case sess == nil:
		return audit.Assignment{}, audit.Errorf(audit.ErrNotFound, "close session %s", c.SessionID)
	case sess.Status == audit.SessionEnded:
		return audit.Assignment{}, audit.Errorf(audit.ErrConflict, "session %s has already ended", c.SessionID)
	}
	if last := s.lastSeq(c.SessionID); last != c.AfterSeq {
		return audit.Assignment{}, audit.Errorf(audit.ErrConflict, "session %s has %d events, the closing was made after %d", c.SessionID, last, c.AfterSeq)
	}
	// Everything is checked before anything changes: the store does it in one transaction.
	stored := make([]trace.Event, 0, len(c.Append))
	for _, e := range c.Append {
		ev, err := storedEvent(c.SessionID, e)
		if err != nil {
			return audit.Assignment{}, err
		}
		stored = append(stored, ev)
	}
	if c.Score != nil {
		if err := c.Score.Check(); err != nil {
			return audit.Assignment{}, err
		}
	}
	now := s.stamp()
	s.events[c.SessionID] = append(s.events[c.SessionID], stored...)
	if c.Recording != nil {
		s.saveRecording(*c.Recording)
	}
	if c.Score != nil {
		s.saveScore(*c.Score)
	}
	s.end(sess, c.EndReason, now)
	if c.Exclusion != nil {
		e := *c.Exclusion
		if e.By == "" {
			e.By = "system"
		}
		e.SessionID, e.At = sess.ID, now
		sess.Exclusion = &e
	}
	a := s.assignment(sess.AssignmentID)
	if a == nil || a.SessionID != sess.ID {
		return audit.Assignment{}, nil
	}
	switch {
	case c.Exclusion == nil:
		a.Status, a.FinishedAt = audit.StatusDone, now
	case c.Rerun:
		a.Status, a.SessionID = audit.StatusPending, ""
	default:
		a.Status, a.FinishedAt = audit.StatusExcluded, now
		return *s.returnCell(a), nil
	}
	return audit.Assignment{}, nil
}

// Event logs.

// EventSink returns the sink for a session's events; each WriteEvent is stored before it returns.
func (s *Store) EventSink(sessionID string) trace.Sink { return &eventSink{s: s, session: sessionID} }

type eventSink struct {
	s       *Store
	session string
}

// WriteEvent appends e; a seq already stored is ErrConflict (the log is append-only).
func (k *eventSink) WriteEvent(_ context.Context, e trace.Event) error {
	ev, err := storedEvent(k.session, e)
	if err != nil {
		return err
	}
	s := k.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[k.session] == nil {
		return audit.Errorf(audit.ErrNotFound, "append event %d of session %s: unknown session", e.Seq, k.session)
	}
	for _, o := range s.events[k.session] {
		if o.Seq == e.Seq {
			return audit.Errorf(audit.ErrConflict, "event %d of session %s is already stored (the log is append-only)", e.Seq, k.session)
		}
	}
	s.events[k.session] = append(s.events[k.session], ev)
	sort.SliceStable(s.events[k.session], func(i, j int) bool { return s.events[k.session][i].Seq < s.events[k.session][j].Seq })
	return nil
}

// storedEvent is e as the store reads it back: checked, encoded canonically, redacted, decoded.
func storedEvent(session string, e trace.Event) (trace.Event, error) {
	if err := audit.CheckEvent(session, e); err != nil {
		return trace.Event{}, err
	}
	b, err := trace.MarshalEvent(e)
	if err != nil {
		return trace.Event{}, audit.Errorf(audit.ErrInvalid, "event %d of session %s: %v", e.Seq, session, err)
	}
	var out trace.Event
	if err := json.Unmarshal(redact.Bytes(b), &out); err != nil {
		return trace.Event{}, fmt.Errorf("decode event %d of session %s: %w", e.Seq, session, err)
	}
	return out, nil
}

func (s *Store) lastSeq(sessionID string) int64 {
	var last int64
	for _, e := range s.events[sessionID] {
		last = max(last, e.Seq)
	}
	return last
}

// Events returns a session's events in seq order; an unknown session is ErrNotFound.
func (s *Store) Events(_ context.Context, sessionID string) ([]trace.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[sessionID] == nil {
		return nil, audit.Errorf(audit.ErrNotFound, "session %s", sessionID)
	}
	return append([]trace.Event{}, s.events[sessionID]...), nil
}

// WriteTrace writes a session's trace as canonical JSONL.
func (s *Store) WriteTrace(ctx context.Context, sessionID string, w io.Writer) error {
	events, err := s.Events(ctx, sessionID)
	if err != nil {
		return err
	}
	return trace.WriteJSONL(w, events)
}

// Locks.

// TryLock takes the lock called name without waiting: ErrConflict when it is held.
func (s *Store) TryLock(_ context.Context, name string) (audit.Lock, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.locks[name] {
		return nil, audit.Errorf(audit.ErrConflict, "lock %s is held by another run", name)
	}
	s.locks[name] = true
	return &lock{s: s, name: name}, nil
}

type lock struct {
	s        *Store
	name     string
	released bool
}

func (l *lock) Check(context.Context) error { return nil }

func (l *lock) Release(context.Context) error {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if !l.released {
		l.released = true
		delete(l.s.locks, l.name)
	}
	return nil
}

// HoldConsole takes console id's liveness lock.
func (s *Store) HoldConsole(ctx context.Context, id string) (audit.Lock, error) {
	return s.TryLock(ctx, "console:"+id)
}

// ConsoleGone reports whether nobody holds console id's liveness lock ("" belongs to no console).
func (s *Store) ConsoleGone(_ context.Context, id string) (bool, error) {
	if id == "" {
		return true, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.locks["console:"+id], nil
}
