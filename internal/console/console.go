// Package console runs audit sessions for the web app and the command line: it turns a
// participant's assignment into a live session against the assigned system, keeps the sessions
// that are running, and stores what each one leaves behind (trace, recording, grade, exclusion).
// It knows nothing of HTTP.
package console

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/systems"
	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/media"
	"github.com/voicebench/humanaudit/internal/session"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// ErrUnknownSystem is returned when an assignment names a system the systems file lacks.
var ErrUnknownSystem = errors.New("unknown system")

// ErrUnknownTask is returned when an assignment names a task this console has not loaded.
var ErrUnknownTask = errors.New("task not loaded on this console")

// ErrAgentUnavailable is returned when the assigned agent cannot be reached to start a session.
var ErrAgentUnavailable = errors.New("the agent is not available")

// Config configures a Service.
type Config struct {
	Store   Store
	Tasks   []*task.Task
	Systems *systems.File
	Keys    systems.Keys
	// ReferenceURL is the ws:// URL of the in-process reference agent, used for reference-family
	// systems that name no endpoint.
	ReferenceURL string
	DataDir      string // recordings go to DataDir/recordings
	Grade        grade.Options
	TimeLimit    time.Duration
	Endpointer   audio.EndpointerConfig
	// NewEncoder makes each participant call's Opus encoder: media.Encoders(libopus.NewEncoder).
	// Required (the console runs human calls); it is passed in so this package links no C codec.
	NewEncoder func(bitrate int) (media.Encoder, error)
	// NewDecoder makes each participant call's Opus decoder: media.Decoders(libopus.NewDecoder),
	// or nil for the media engine's pure-Go one.
	NewDecoder func() (media.Decoder, error)
	Logger     *slog.Logger
	// Transcriber transcribes recordings after calls for sides with no provider transcript; nil
	// uses the offline recognizer.
	Transcriber session.Transcriber
}

// Service starts sessions and tracks the live ones.
type Service struct {
	cfg   Config
	log   *slog.Logger
	tasks map[string]*task.Task
	id    string // this console process, recorded on its sessions

	mu   sync.Mutex
	live map[string]*Live
	wg   sync.WaitGroup

	// Crash safety (reconcile.go): the liveness lock other consoles test before closing this one's
	// sessions, the closings waiting for the database, and the keeper that retries them.
	lockMu    sync.Mutex
	lock      audit.Lock
	closeMu   sync.Mutex // one closing at a time
	pendMu    sync.Mutex
	pending   map[string]ending
	stopKeep  chan struct{}
	keeper    sync.WaitGroup
	closeOnce sync.Once
}

// New registers the tasks and systems in the store and returns the service.
func New(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.NewEncoder == nil {
		return nil, errors.New("console: Config.NewEncoder is nil: participant calls need an Opus encoder (media.Encoders(libopus.NewEncoder))")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Transcriber == nil {
		cfg.Transcriber = &Recognizer{}
	}
	s := &Service{cfg: cfg, log: log, tasks: map[string]*task.Task{}, live: map[string]*Live{}, id: newConsoleID(),
		pending: map[string]ending{}, stopKeep: make(chan struct{})}
	for _, t := range cfg.Tasks {
		spec, err := os.ReadFile(t.Path)
		if err != nil {
			return nil, fmt.Errorf("console: read task %s: %w", t.ID, err)
		}
		if _, err := cfg.Store.PutTask(ctx, t.ID, t.Version, spec); err != nil {
			return nil, fmt.Errorf("console: store task %s: %w (bump the task's version when its content changes)", t.ID, err)
		}
		s.tasks[t.ID] = t
	}
	if cfg.Systems != nil {
		for _, sys := range cfg.Systems.Systems {
			if _, err := cfg.Store.UpsertSystem(ctx, SystemRecord(sys)); err != nil {
				return nil, fmt.Errorf("console: store system %s: %w", sys.Label, err)
			}
		}
	}
	for _, dir := range []string{"recordings", "traces"} {
		if err := os.MkdirAll(filepath.Join(cfg.DataDir, dir), 0o755); err != nil {
			return nil, fmt.Errorf("console: %w", err)
		}
	}
	if err := s.holdLock(ctx); err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	s.keeper.Add(1)
	go s.keep()
	return s, nil
}

// Tasks returns the loaded tasks in id order.
func (s *Service) Tasks() []*task.Task {
	out := make([]*task.Task, 0, len(s.tasks))
	for _, t := range s.tasks {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Task returns a loaded task.
func (s *Service) Task(id string) (*task.Task, bool) {
	t, ok := s.tasks[id]
	return t, ok
}

// Live is one running session with the participant-facing plumbing around it.
type Live struct {
	ID            string
	ParticipantID int64
	Assignment    audit.Assignment
	Task          *task.Task
	Alias         string // the blind name the participant sees
	Session       *session.Session
	Started       time.Time

	mu      sync.Mutex
	send    func(any) error // the participant's DataChannel, when a peer is attached
	ended   chan struct{}
	outcome Outcome
	journal *trace.Journal
	exclude *audit.Exclusion // an experimenter's exclusion of the running call (ExcludeLive)
}

// Outcome is what a finished session left in the store.
type Outcome struct {
	Reason    string
	Exclusion string
	WS        int
	// Stored is nil once the session is closed in the store; otherwise why not yet (the console
	// retries until the database answers).
	Stored error
}

// Message is a DataChannel message to the participant.
type Message struct {
	Type    string         `json:"type"`
	Card    any            `json:"card,omitempty"`
	NewCues []string       `json:"new_cues,omitempty"`
	Ended   bool           `json:"ended,omitempty"`
	Notice  string         `json:"notice,omitempty"` // why the call ended, in plain words
	Extra   map[string]any `json:"extra,omitempty"`
}

// SetSender routes role-card updates to the participant's current peer (nil detaches).
func (l *Live) SetSender(send func(any) error) {
	l.mu.Lock()
	l.send = send
	l.mu.Unlock()
	if send != nil {
		send(Message{Type: "card", Card: l.Session.Card()})
	}
}

func (l *Live) deliver(u session.Update) {
	l.mu.Lock()
	send := l.send
	l.mu.Unlock()
	if send == nil {
		return
	}
	m := Message{Type: "card", Card: u.Card, NewCues: u.NewCues, Ended: u.Ended}
	if u.Ended {
		m.Notice = EndNotice(u.Reason)
	}
	if err := send(m); err != nil {
		slog.Debug("card update not delivered", slog.Any("err", err))
	}
}

// Ended is closed once the session is stored.
func (l *Live) Ended() <-chan struct{} { return l.ended }

// Outcome returns how the session ended; valid after Ended.
func (l *Live) Outcome() Outcome {
	<-l.ended
	return l.outcome
}

// dial builds the adapter for a system label.
func (s *Service) dial(label string) (systems.System, error) {
	if s.cfg.Systems == nil {
		return systems.System{}, fmt.Errorf("%w %q: no systems file loaded", ErrUnknownSystem, label)
	}
	sys, err := s.cfg.Systems.Lookup(label)
	if err != nil {
		return systems.System{}, fmt.Errorf("%w: %v", ErrUnknownSystem, err)
	}
	return sys, nil
}

func (s *Service) endpoint(sys systems.System) string {
	if sys.Family == systems.FamilyReference && sys.Endpoint == "" {
		return s.cfg.ReferenceURL
	}
	return ""
}

// StartHuman starts the live session of a participant's claimed assignment. When the agent cannot
// be reached the session is stored as a platform_lost exclusion and its cell returns to the pool.
func (s *Service) StartHuman(ctx context.Context, p audit.Participant, a audit.Assignment, meta map[string]string) (*Live, error) {
	t, ok := s.tasks[a.Task]
	if !ok {
		return nil, fmt.Errorf("console: assignment %d names task %q: %w", a.ID, a.Task, ErrUnknownTask)
	}
	sys, err := s.dial(a.System)
	if err != nil {
		return nil, err
	}
	alias := ""
	if st, err := s.cfg.Store.System(ctx, a.System); err == nil {
		alias = st.Alias
	}
	rec, err := s.cfg.Store.CreateSession(ctx, audit.NewSession{AssignmentID: a.ID, ParticipantID: p.ID, TaskID: t.ID,
		TaskVersion: t.Version, System: a.System, Mode: audit.ModeHuman, Seed: a.ID, ConsoleID: s.id})
	if err != nil {
		return nil, fmt.Errorf("console: create session: %w", err)
	}
	live := &Live{ID: rec.ID, ParticipantID: p.ID, Assignment: a, Task: t, Alias: alias, Started: time.Now(), ended: make(chan struct{})}
	adapter, err := systems.New(sys, systems.DialOptions{Keys: s.cfg.Keys, Endpoint: s.endpoint(sys)})
	if err == nil {
		sinks := []trace.Sink{s.cfg.Store.EventSink(rec.ID)}
		if j, jerr := trace.CreateJournal(s.journalPath(rec.ID)); jerr == nil {
			live.journal = j
			sinks = append(sinks, j) // after the database: the file holds acknowledged events only
		} else {
			s.log.Warn("no trace journal for the session", slog.String("session", rec.ID), slog.Any("err", jerr))
		}
		cfg := session.Config{ID: rec.ID, Task: t, Mode: session.Human, Seed: a.ID, System: a.System, Adapter: adapter,
			Voice: sys.Voice, ServerTurnDetection: sys.ServerVAD,
			RecordingPath: s.recordingPath(rec.ID),
			NewEncoder:    s.cfg.NewEncoder,
			NewDecoder:    s.cfg.NewDecoder,
			Sinks:         sinks, TimeLimit: s.cfg.TimeLimit, Endpointer: s.cfg.Endpointer,
			Grade: s.cfg.Grade, Logger: s.log, OnUpdate: live.deliver, Meta: meta, Transcriber: s.cfg.Transcriber,
			Attempt: rec.Attempt, Reruns: rec.Reruns}
		live.Session, err = session.Start(context.WithoutCancel(ctx), cfg)
	}
	if err != nil {
		if live.journal != nil {
			live.journal.Close()
		}
		s.log.Warn("agent unavailable", slog.String("session", rec.ID), slog.String("system", a.System), slog.Any("err", err))
		e := ending{Reason: session.EndPlatformLost, Exclusion: session.ExclusionPlatformLost, Note: "agent could not be reached: " + err.Error()}
		if _, cerr := s.closeSession(context.WithoutCancel(ctx), rec.ID, e); cerr != nil {
			s.log.Error("session not stored yet: retrying until the database answers", slog.String("session", rec.ID), slog.Any("err", cerr))
			s.retryLater(rec.ID, e)
		}
		return nil, fmt.Errorf("%w (session %s)", ErrAgentUnavailable, rec.ID)
	}
	if err := s.cfg.Store.StartSession(ctx, rec.ID); err != nil {
		s.log.Warn("mark session started", slog.Any("err", err))
	}
	s.mu.Lock()
	s.live[rec.ID] = live
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.persist(live)
	}()
	return live, nil
}

// persist waits for a session to end and closes it in the store (recording, grade, end,
// exclusion, the assignment's next step) through the same path that reconciles sessions a crash
// left running. When the database cannot take it (its writes are what failed), the closing is
// retried until it does.
func (s *Service) persist(l *Live) {
	res := l.Session.Result()
	if l.journal != nil {
		if err := l.journal.Close(); err != nil {
			s.log.Warn("trace journal", slog.String("session", l.ID), slog.Any("err", err))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := ending{Reason: res.Reason, Exclusion: res.Exclusion, Note: "session ended: " + res.Reason, Grade: res.Grade,
		GradeErr: res.GradeErr, Graded: len(res.Events)}
	l.mu.Lock()
	if x := l.exclude; x != nil {
		e.Exclusion, e.Note, e.By = string(x.Reason), x.Note, x.By
	}
	l.mu.Unlock()
	l.outcome = Outcome{Reason: res.Reason, Exclusion: e.Exclusion}
	if res.Grade != nil {
		l.outcome.WS = res.Grade.WS
	}
	if _, err := s.closeSession(ctx, l.ID, e); err != nil {
		l.outcome.Stored = err
		s.log.Error("session not stored yet: retrying until the database answers", slog.String("session", l.ID), slog.Any("err", err))
		s.retryLater(l.ID, e)
	}
	s.mu.Lock()
	delete(s.live, l.ID)
	s.mu.Unlock()
	close(l.ended)
}

// SaveResult stores what a finished session left: its recording, its grade (or a grader_error
// exclusion), its exclusion, and its end. Shared by human and synthetic runs.
func SaveResult(ctx context.Context, st Results, sessionID string, res session.Result) error {
	var errs []error
	if res.Recording != "" {
		if rec, err := describeRecording(sessionID, res.Recording); err == nil {
			errs = append(errs, st.SaveRecording(ctx, rec))
		} else {
			errs = append(errs, err)
		}
	}
	if res.Grade != nil {
		doc, err := grade.Encode(*res.Grade)
		if err == nil {
			afa := res.Grade.AFA.Value
			errs = append(errs, st.SaveScore(ctx, audit.Score{SessionID: sessionID, GraderVersion: res.Grade.Grader, Grade: doc,
				WS: res.Grade.WS == 1, TS: res.Grade.TS == 1, PV: res.Grade.PV == 1, AC: res.Grade.AC == 1, AV: res.Grade.AV == 1,
				AFA: &afa, TTRMS: res.Grade.TTRMS}))
		}
		errs = append(errs, err)
	}
	errs = append(errs, st.EndSession(ctx, sessionID, res.Reason))
	exclusion, note := res.Exclusion, ""
	if exclusion != "" {
		note = "session ended: " + res.Reason
	}
	if exclusion == "" && res.GradeErr != nil {
		exclusion, note = session.ExclusionGraderError, res.GradeErr.Error()
	}
	if exclusion != "" {
		_, err := st.ExcludeSession(ctx, audit.Exclusion{SessionID: sessionID, Reason: audit.ExclusionReason(exclusion),
			Note: note, By: "system"})
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func describeRecording(sessionID, path string) (audit.Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return audit.Recording{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return audit.Recording{}, err
	}
	dur := int64(0)
	if n > 44 {
		dur = (n - 44) / 4 * 1000 / audio.RecordRate
	}
	return audit.Recording{SessionID: sessionID, Kind: audit.RecordingStereo, Path: path, SampleRate: audio.RecordRate,
		Channels: 2, DurationMS: dur, Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// Live returns a running session.
func (s *Service) Live(id string) (*Live, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.live[id]
	return l, ok
}

// LiveSessions lists running sessions, oldest first.
func (s *Service) LiveSessions() []*Live {
	s.mu.Lock()
	out := make([]*Live, 0, len(s.live))
	for _, l := range s.live {
		out = append(out, l)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

// EndConsoleShutdown is the end reason of sessions cut short by the console stopping.
const EndConsoleShutdown = session.EndConsoleShutdown

// Close ends every live session as console_shutdown (excluded: a call cut short by the platform
// cannot count; its participant runs it again as a new attempt), waits until each is flushed,
// graded and stored, and gives up the console's liveness lock.
func (s *Service) Close() error {
	var err error
	s.closeOnce.Do(func() {
		for _, l := range s.LiveSessions() {
			l.Session.Stop(EndConsoleShutdown, session.ExclusionPlatformLost)
		}
		s.wg.Wait()
		close(s.stopKeep)
		s.keeper.Wait()
		s.pendMu.Lock()
		if n := len(s.pending); n > 0 {
			s.log.Warn("sessions not stored when the console stopped: the next console to start closes them", slog.Int("sessions", n))
		}
		s.pendMu.Unlock()
		s.releaseLock()
		if r, ok := s.cfg.Transcriber.(*Recognizer); ok {
			err = r.Close()
		}
	})
	return err
}
