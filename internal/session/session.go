// Package session orchestrates one call: it binds the media engine (the participant's peer or a
// synthetic caller), the matched-turn-taking endpointer, the agent adapter, the workspace that
// executes the agent's tool calls, the flow engine that fires the task's authored events, and the
// recorder, and writes everything to one canonical trace on the media clock. At the end the trace
// is sealed and graded.
package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/condition"
	"github.com/voicebench/humanaudit/internal/flow"
	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/media"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
	"github.com/voicebench/humanaudit/internal/workspace"
)

// Mode says who makes the call.
type Mode string

// Modes.
const (
	Human     Mode = "human"
	Synthetic Mode = "synthetic"
)

// End reasons recorded in session.end.
const (
	EndCallerHungUp      = "caller_hung_up"
	EndAgentClosed       = "agent_closed"
	EndTimeLimit         = "time_limit"
	EndPlatformLost      = "platform_lost"
	EndAgentUnresponsive = "agent_unresponsive"
	EndCancelled         = "cancelled"
	EndStorageError      = "storage_error"
	// EndCallerDisconnected: the participant's browser was gone (tab closed, network lost) for
	// longer than the console waits for a rejoin.
	EndCallerDisconnected = "caller_disconnected"
	// EndConsoleCrash: the console process died mid-call; the next console to start closes the
	// session from what was stored (the trace up to its last committed event, the recording up to
	// its last flush).
	EndConsoleCrash = "console_crash"
	// EndConsoleShutdown: the console was stopped (SIGINT/SIGTERM) during the call.
	EndConsoleShutdown = "console_shutdown"
	// EndExcludedByExperimenter: an experimenter excluded the call while it was running.
	EndExcludedByExperimenter = "excluded_by_experimenter"
	// EndTransferred: the agent handed the caller to a human (a transfer tool); the call ends
	// once the agent has said so (at most transferGrace later).
	EndTransferred = "transferred"
)

// Interrupted reports whether a call that ended for reason was cut short by the console itself
// (a crash, a stop, failed database writes) rather than by the caller, the agent or the study: the
// participant did nothing wrong and runs the same assignment again as a new attempt.
func Interrupted(reason string) bool {
	switch reason {
	case EndConsoleCrash, EndConsoleShutdown, EndStorageError:
		return true
	}
	return false
}

// Exclusion reasons (the experimenter may add others when reviewing).
const (
	ExclusionPlatformLost      = "platform_lost"
	ExclusionCallerBrokeScript = "caller_broke_script"
	ExclusionGraderError       = "grader_error"
	ExclusionOther             = "other"
	ExclusionTooShort          = "too_short" // the caller hung up before the study's minimum call length
)

// CallerVoice speaks a synthetic caller's plans: the frozen bank's audio for the plan, or a
// rendering of it. PCM is 24 kHz mono.
type CallerVoice interface {
	Speak(ctx context.Context, plan trace.Plan) (text, source string, pcm []int16, err error)
}

// Update is what the participant's browser is sent when the role card changes.
type Update struct {
	Card flow.RoleCard `json:"card"`
	// NewCues are the cues fired since the last update, to highlight.
	NewCues []string `json:"new_cues,omitempty"`
	Ended   bool     `json:"ended,omitempty"`
	// Reason is the end reason of the final update, for the console to explain it in plain words;
	// it is never sent as such.
	Reason string `json:"-"`
}

// Config describes one call.
type Config struct {
	ID     string
	Task   *task.Task
	Mode   Mode
	Seed   int64
	System string // the evaluated system's label: trace metadata, never sent to a participant

	// Adapter is the agent connection, not yet connected; Voice and ServerTurnDetection go into its
	// session config.
	Adapter             agent.Adapter
	Voice               string
	ServerTurnDetection bool

	// Caller speaks for a synthetic call.
	Caller CallerVoice

	RecordingPath string
	// NewEncoder makes the Opus encoder of the agent's audio toward a participant
	// (media.Encoders(libopus.NewEncoder)); a human call needs it.
	NewEncoder func(bitrate int) (media.Encoder, error)
	// NewDecoder makes the decoder of a participant's Opus (media.Decoders(libopus.NewDecoder));
	// nil: the media engine's pure-Go decoder.
	NewDecoder func() (media.Decoder, error)
	Clock      media.MediaClock // nil: real time
	Endpointer audio.EndpointerConfig
	Sinks      []trace.Sink     // where events are made durable (the store), before acknowledgement
	Now        func() time.Time // wall clock; nil: time.Now
	TimeLimit  time.Duration    // default 15 minutes
	Grade      grade.Options
	Logger     *slog.Logger

	// OnUpdate receives role-card updates for the participant; it must not block.
	OnUpdate func(Update)
	// OnEvent receives every trace event after it is durable (dashboards); it must not block.
	OnEvent func(trace.Event)
	// Meta is added to the session.start event (participant and assignment ids, browser info).
	Meta map[string]string
	// Attempt numbers the sessions of one assignment (0: not recorded); an attempt after the
	// first re-runs the session Reruns, which the platform cut short. Both go into session.start.
	Attempt int
	Reruns  string
	// Transcriber, when set, transcribes the recording after the call for any side the provider
	// gave no transcript of.
	Transcriber Transcriber
	// Listener recognizes a human caller's words during the call: the answer to an approval
	// request (which decides whether a token is minted) and the first speech after each cue
	// (cue.spoken). Without one a human caller's answers mint nothing (auth.approval_unclear).
	Listener CallerListener

	// Condition is the caller's listening condition, applied on the caller path as the agent
	// hears it, the same for human and synthetic callers; nil records nothing (quiet, as before
	// conditions existed). ConditionSeed is the seed it was prepared with (condition.SeedFor),
	// recorded in session.start with the condition, its level and its bed.
	Condition     *condition.Processor
	ConditionSeed int64
	// CleanRecordingPath, with a Condition, receives the clean caller beside RecordingPath.
	CleanRecordingPath string
}

// Result is how a call ended and its grade.
type Result struct {
	Reason    string
	Exclusion string
	Events    []trace.Event
	Grade     *grade.Result
	GradeErr  error
	Recording string
	// CleanRecording is the recording with the clean caller ("" without a listening condition).
	CleanRecording string
}

// Session is one running call.
type Session struct {
	cfg     Config
	log     *slog.Logger
	trace   *trace.Log
	eng     *flow.Engine
	ws      *workspace.Workspace
	call    *media.Call
	adapter agent.Adapter
	format  agent.Format
	up      *audio.Resampler // agent audio to 24 kHz when the provider sends another rate

	inbox   chan func()
	mediaEv chan media.Event
	ticks   chan struct{}
	frames  chan []int16
	done    chan struct{}
	stop    chan struct{}

	cardMu sync.Mutex
	card   flow.RoleCard

	result Result

	// Conductor state (run goroutine only).
	ending          bool
	anchored        bool
	agentSpeaking   bool
	callerSpeaking  bool
	itemID          string
	itemReceivedMS  float64
	audioResponse   string          // the response whose audio was pushed last
	interrupted     map[string]bool // responses cut off by a barge-in: their later audio is dropped
	deltasDropped   int64           // audio deltas of interrupted responses that were not played
	cues            []*cueState
	framesDropped   atomic.Int64
	synth           synthState
	lastAgentSignal time.Duration
	// Human callers' words (listen.go): the caller audio kept for the recognizer, the onset of
	// the utterance in progress, and the approval requests awaiting the caller's answer.
	heard          callerAudio
	speechOnset    time.Duration
	turnGen        int           // counts caller speech onsets: a turn handed over late checks it
	asked          []string      // actions whose approval was requested and not yet answered
	answerFrom     time.Duration // onset of the first caller speech answering them; -1 none
	listenq        chan func()
	listening      sync.WaitGroup
	cond           *conditionTap // nil without a listening condition
	transferredAt  time.Duration // media time of the agent's transfer to a human; -1 none
	agentStoppedAt time.Duration // media time agent audio last stopped
}

// cueState follows one cue from issue to what the caller said and what the agent did with it.
type cueState struct {
	firing  flow.Firing
	issued  time.Duration
	shown   time.Duration // when the participant's browser showed it (cue.shown); -1 not yet
	onset   time.Duration // first caller speech onset after it (in a human call: after it was shown); -1 none yet
	spoken  bool          // cue.spoken recorded
	applied bool          // cue.applied recorded
}

// Start connects the agent, starts the media clock and the conductor, and returns the running
// session. The caller's audio comes from a participant (Attach, ReceiveCallerRTP) or, in synthetic
// mode, from cfg.Caller.
func Start(ctx context.Context, cfg Config) (*Session, error) {
	if cfg.Task == nil || cfg.Adapter == nil {
		return nil, errors.New("session: task and adapter are required")
	}
	if cfg.Mode == Synthetic && cfg.Caller == nil {
		return nil, errors.New("session: a synthetic call needs a caller voice")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.TimeLimit == 0 {
		cfg.TimeLimit = 15 * time.Minute
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With(slog.String("session", cfg.ID), slog.String("task", cfg.Task.ID))
	s := &Session{
		cfg:     cfg,
		log:     log,
		eng:     flow.New(cfg.Task),
		adapter: cfg.Adapter,
		inbox:   make(chan func(), 64),
		mediaEv: make(chan media.Event, 1024),
		ticks:   make(chan struct{}, 1),
		frames:  make(chan []int16, 128),
		done:    make(chan struct{}),
		stop:    make(chan struct{}),
	}
	s.synth.nextTurn = -1
	s.answerFrom = -1
	s.transferredAt = -1
	s.interrupted = map[string]bool{}
	s.trace = trace.NewLog(s, cfg.Sinks...)
	ws, err := workspace.New(cfg.Task, s.emit)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", cfg.ID, err)
	}
	s.ws = ws

	tools := make([]agent.Tool, len(cfg.Task.Agent.Tools))
	for i, tl := range cfg.Task.Agent.Tools {
		tools[i] = agent.Tool{Name: tl.Name, Description: tl.Description, Parameters: tl.Parameters}
	}
	if err := cfg.Adapter.Connect(ctx, agent.Config{Instructions: cfg.Task.Agent.Instructions, Tools: tools,
		Voice: cfg.Voice, ServerTurnDetection: cfg.ServerTurnDetection, Logger: log}); err != nil {
		cfg.Adapter.Close()
		return nil, fmt.Errorf("session %s: connect agent: %w", cfg.ID, err)
	}
	s.format = cfg.Adapter.Format()
	if s.format.OutputRate != audio.RecordRate {
		if s.up, err = audio.NewResampler(s.format.OutputRate, audio.RecordRate); err != nil {
			cfg.Adapter.Close()
			return nil, fmt.Errorf("session %s: agent output rate: %w", cfg.ID, err)
		}
	}
	input := media.CallerRTP
	if cfg.Mode == Synthetic {
		input = media.CallerPCM
	}
	var conditioner media.CallerConditioner
	cleanPath := ""
	if cfg.Condition != nil && !cfg.Condition.Spec().Quiet() {
		s.cond = &conditionTap{p: cfg.Condition}
		conditioner = s.cond
		if cfg.RecordingPath != "" {
			cleanPath = cfg.CleanRecordingPath
		}
	}
	callCfg := media.CallConfig{
		AgentRate:        s.format.InputRate,
		RecordingPath:    cfg.RecordingPath,
		NewEncoder:       cfg.NewEncoder,
		NewDecoder:       cfg.NewDecoder,
		Clock:            cfg.Clock,
		Logger:           log,
		CallerInput:      input,
		CallerEndpointer: cfg.Endpointer,
		OnCallerFrame:    s.onCallerFrame,
		OnEvent:          s.onMediaEvent,
	}
	callCfg.CallerCondition, callCfg.CleanRecordingPath = conditioner, cleanPath
	s.call, err = media.NewCall(callCfg)
	if err != nil {
		cfg.Adapter.Close()
		return nil, fmt.Errorf("session %s: %w", cfg.ID, err)
	}
	meta := map[string]string{"session": cfg.ID, "task": cfg.Task.ID, "task_version": strconv.Itoa(cfg.Task.Version),
		"mode": string(cfg.Mode), "seed": strconv.FormatInt(cfg.Seed, 10), "system": cfg.System,
		"agent_input_rate": strconv.Itoa(s.format.InputRate), "agent_output_rate": strconv.Itoa(s.format.OutputRate),
		"turn_taking": turnTaking(cfg.ServerTurnDetection)}
	if cfg.Attempt > 0 {
		meta["attempt"] = strconv.Itoa(cfg.Attempt)
	}
	if cfg.Reruns != "" {
		meta["reruns"] = cfg.Reruns
	}
	if cfg.Condition != nil {
		for k, v := range cfg.Condition.Applied(cfg.ConditionSeed).Meta() {
			meta[k] = v
		}
	}
	for k, v := range cfg.Meta {
		meta[k] = v
	}
	if _, err := s.appendEvent(trace.Event{Type: trace.SessionStart, Actor: trace.ActorSystem, T: -1, Meta: meta}); err != nil {
		s.call.Close()
		cfg.Adapter.Close()
		return nil, fmt.Errorf("session %s: %w", cfg.ID, err)
	}
	s.setCard(nil)
	s.listenq = make(chan func(), 16)
	go s.listenLoop()
	go s.sendFrames()
	go s.run(ctx)
	return s, nil
}

func turnTaking(server bool) string {
	if server {
		return "provider_vad"
	}
	return "matched_endpointer"
}

// transferGrace is the longest a call goes on after the agent transferred the caller.
const transferGrace = 10 * time.Second

// MediaMS implements trace.Clock: the media time reached.
func (s *Session) MediaMS() int64 { return s.call.MediaTime().Milliseconds() }

// Now implements trace.Clock.
func (s *Session) Now() time.Time { return s.cfg.Now() }

// Attach makes a participant's peer the destination of the agent's audio (first connect or a
// reload); its RTP goes to ReceiveCallerRTP.
func (s *Session) Attach(link media.ParticipantLink) error { return s.call.Attach(link) }

// Detach releases a peer that went away.
func (s *Session) Detach(link media.ParticipantLink) { s.call.Detach(link) }

// ReceiveCallerRTP feeds one caller packet from the attached peer to the jitter buffer.
func (s *Session) ReceiveCallerRTP(from media.ParticipantLink, p media.CallerPacket) error {
	return s.call.ReceiveCallerRTP(from, p)
}

// UpdateLinkQuality records RTCP link quality for dashboards.
func (s *Session) UpdateLinkQuality(q media.LinkQuality) { s.call.UpdateLinkQuality(q) }

// Stats returns the media engine's health snapshot.
func (s *Session) Stats() media.Stats { return s.call.Stats() }

// Card returns the participant's current role card, its elapsed time as of now.
func (s *Session) Card() flow.RoleCard {
	s.cardMu.Lock()
	card := s.card
	s.cardMu.Unlock()
	card.ElapsedMS = max(0, s.call.MediaTime().Milliseconds()) // the trace's clock
	return card
}

// CueShown records the browser's acknowledgement that it rendered a cue.
func (s *Session) CueShown(cueID string) { s.do(func() { s.markCueShown(cueID) }) }

// Stop ends the call for a reason of the platform's (the console shutting down), with an
// exclusion when the call cannot count.
func (s *Session) Stop(reason, exclusion string) { s.do(func() { s.finish(reason, exclusion) }) }

// HangUp ends the call from the caller's side.
func (s *Session) HangUp() { s.HangUpAfter(0) }

// HangUpAfter ends the call from the caller's side; a call the caller ends before minimum of media
// time is excluded as too_short (it cannot count, and its caller is asked to call again).
func (s *Session) HangUpAfter(minimum time.Duration) {
	s.do(func() {
		exclusion := ""
		if minimum > 0 && s.now() < minimum {
			exclusion = ExclusionTooShort
		}
		s.finish(EndCallerHungUp, exclusion)
	})
}

// Done is closed when the session has ended and been graded.
func (s *Session) Done() <-chan struct{} { return s.done }

// Result returns how the call ended; valid after Done.
func (s *Session) Result() Result {
	<-s.done
	return s.result
}

// Events returns the trace so far.
func (s *Session) Events() []trace.Event { return s.trace.Events() }

// do runs fn on the conductor; it is dropped when the session already ended.
func (s *Session) do(fn func()) {
	select {
	case s.inbox <- fn:
	case <-s.done:
	}
}

// onCallerFrame runs on the media tick: it must not block.
func (s *Session) onCallerFrame(f media.CallerFrame) {
	pcm := make([]int16, len(f.PCM))
	copy(pcm, f.PCM)
	if s.cfg.Mode == Human {
		s.heard.add(f.Start, f.Rate, pcm)
	}
	select {
	case s.frames <- pcm:
	default:
		s.framesDropped.Add(1)
	}
	select {
	case s.ticks <- struct{}{}:
	default:
	}
}

func (s *Session) onMediaEvent(ev media.Event) {
	select {
	case s.mediaEv <- ev:
	default:
		s.log.Error("media event dropped: conductor too slow", slog.String("kind", string(ev.Kind)))
	}
}

// sendFrames forwards caller audio to the agent off the media tick.
func (s *Session) sendFrames() {
	for {
		select {
		case pcm := <-s.frames:
			if err := s.adapter.SendAudio(pcm); err != nil {
				s.log.Debug("send audio", slog.Any("err", err))
			}
		case <-s.stop:
			return
		}
	}
}

// run is the conductor: the only goroutine that touches the workspace, the flow engine and the
// turn state, so the trace records one consistent order of events.
func (s *Session) run(ctx context.Context) {
	limit := time.NewTimer(s.cfg.TimeLimit)
	defer limit.Stop()
	agentEvents := s.adapter.Events()
	if s.cfg.Mode == Synthetic {
		// The synthetic caller's channel is live from the first tick; it opens the call shortly after.
		s.anchored = true
		s.emit(trace.Event{Type: trace.CallerAudioStart, Actor: trace.ActorCaller, Meta: map[string]string{"source": "synthetic"}})
		s.synth.nextTurn = 500 * time.Millisecond
	}
	for !s.ending {
		select {
		case <-ctx.Done():
			s.finish(EndCancelled, "")
		case <-limit.C:
			s.finish(EndTimeLimit, "")
		case fn := <-s.inbox:
			fn()
		case ev := <-s.mediaEv:
			s.onMedia(ev)
		case <-s.ticks:
			s.onTick()
		case ev, ok := <-agentEvents:
			if !ok {
				s.finish(EndAgentClosed, "")
				break
			}
			s.onAgent(ev)
		}
	}
}

// now is the media time reached.
func (s *Session) now() time.Duration { return s.call.MediaTime() }

// appendEvent makes an event durable and lets the flow engine observe it. T = -1 stamps the
// current media time (T = 0 is a real time: the call's first instant).
func (s *Session) appendEvent(e trace.Event) (trace.Event, error) {
	if e.T == -1 {
		e.T = s.now().Milliseconds()
	}
	stored, err := s.trace.Append(context.Background(), e)
	if err != nil {
		return stored, err
	}
	if s.cfg.OnEvent != nil {
		s.cfg.OnEvent(stored)
	}
	return stored, nil
}

// emit records an event of the session (or the workspace) and handles what it causes: authored
// events firing, cues resolving, the role card changing.
func (s *Session) emit(e trace.Event) trace.Event {
	if e.T == 0 {
		e.T = -1
	}
	stored, err := s.appendEvent(e)
	if err != nil {
		s.log.Error("trace write failed", slog.Any("err", err))
		if !s.ending {
			s.finish(EndStorageError, ExclusionPlatformLost)
		}
		return e
	}
	if s.cfg.Mode == Human {
		// An approval is requested with the request tool or in words ("may I submit it?"), as the
		// flow engine reads it: either way the caller's next turn answers it.
		switch {
		case stored.Type == trace.AuthApprovalRequested:
			s.noteApprovalRequested(stored.Action)
		case stored.Type == trace.AgentAct && stored.Act == "request_approval":
			s.noteApprovalRequested(s.cfg.Task.Agent.Artifact.CommitAction)
		}
	}
	if stored.Type == trace.CallTransferred && s.transferredAt < 0 {
		s.transferredAt = s.now()
	}
	s.resolveCues(stored)
	s.record(s.eng.Observe(stored))
	return stored
}

// record writes the firings of authored events and tells the participant.
func (s *Session) record(firings []flow.Firing) {
	if len(firings) == 0 {
		return
	}
	var ids []string
	for _, f := range firings {
		s.emit(trace.Event{Type: trace.EnvEvent, Actor: trace.ActorEnv, T: f.T, EventID: f.Event.ID, Text: string(f.Event.Kind)})
		if f.Reveals != nil {
			s.emit(trace.Event{Type: trace.FactRevealed, Actor: trace.ActorEnv, T: f.T, Fact: f.Reveals.Fact, Version: f.Reveals.Version, EventID: f.Event.ID})
		}
		s.emit(trace.Event{Type: trace.CueIssued, Actor: trace.ActorEnv, T: f.T, CueID: f.CueID, EventID: f.Event.ID, Text: f.CueText()})
		s.cues = append(s.cues, &cueState{firing: f, issued: time.Duration(f.T) * time.Millisecond, shown: -1, onset: -1})
		ids = append(ids, f.CueID)
		if s.cfg.Mode == Synthetic && f.Event.Kind == task.BargeIn && s.agentAudible() {
			s.synth.nextTurn, s.synth.bargeDue = s.now(), true // interrupt now
		}
	}
	s.setCard(ids)
}

func (s *Session) setCard(newCues []string) {
	card := s.eng.RoleCard(s.now().Milliseconds())
	s.cardMu.Lock()
	s.card = card
	s.cardMu.Unlock()
	if s.cfg.OnUpdate != nil {
		s.cfg.OnUpdate(Update{Card: card, NewCues: newCues})
	}
}

func (s *Session) markCueShown(cueID string) {
	for _, c := range s.cues {
		if c.firing.CueID == cueID {
			if c.shown >= 0 {
				return // the browser acknowledges each cue once; repeats (reloads) change nothing
			}
			c.shown = s.now()
			s.emit(trace.Event{Type: trace.CueShown, Actor: trace.ActorCaller, CueID: cueID, EventID: c.firing.Event.ID,
				RefMS: c.issued.Milliseconds()})
			return
		}
	}
	s.log.Debug("cue.shown for an unknown cue", slog.String("cue", cueID))
}

// onTick runs every 40 ms of media time: media-time triggers and the synthetic caller's turns.
func (s *Session) onTick() {
	if s.ending {
		return
	}
	s.record(s.eng.Advance(s.now().Milliseconds()))
	if s.transferredAt >= 0 {
		// Handed to a human: the call ends when the agent has told the caller so.
		if since := s.now() - s.transferredAt; since >= transferGrace ||
			since >= time.Second && s.synth.agentTurnOver && !s.agentAudible() {
			s.finish(EndTransferred, "")
		}
		return
	}
	if s.cfg.Mode == Synthetic {
		s.synthTick()
	}
}

func (s *Session) onMedia(ev media.Event) {
	at := ev.At.Milliseconds()
	switch ev.Kind {
	case media.CallerStreamStart:
		if !s.anchored {
			s.anchored = true
			s.emit(trace.Event{Type: trace.CallerAudioStart, Actor: trace.ActorCaller, T: at, Meta: map[string]string{"ssrc": strconv.FormatUint(uint64(ev.SSRC), 10)}})
		} else {
			s.emit(trace.Event{Type: trace.MediaGap, Actor: trace.ActorCaller, T: at, DurationMS: ev.Duration.Milliseconds(), Text: "caller stream restarted"})
		}
	case media.CallerStreamEnd:
		s.emit(trace.Event{Type: trace.MediaGap, Actor: trace.ActorCaller, T: at, Text: "caller stream ended"})
	case media.CallerGap:
		s.emit(trace.Event{Type: trace.MediaGap, Actor: trace.ActorCaller, T: at, DurationMS: ev.Duration.Milliseconds(), Text: "caller audio missing"})
	case media.CallerSpeechStart:
		s.callerSpeaking = true
		s.emit(trace.Event{Type: trace.CallerSpeechStart, Actor: trace.ActorCaller, T: at, RefMS: ev.Detected.Milliseconds()})
		s.speechOnset = ev.At
		s.turnGen++
		s.callerOnset(ev.At)
	case media.CallerSpeechEnd:
		s.callerSpeaking = false
		s.emit(trace.Event{Type: trace.CallerSpeechEnd, Actor: trace.ActorCaller, T: at, RefMS: ev.Detected.Milliseconds()})
		// The caller's words are read at the endpointer's end-of-turn decision, before the turn is
		// handed to the agent: an approval exists before the agent can act on it. A caller who
		// speaks again meanwhile goes on with the same turn, which then ends later.
		gen := s.turnGen
		s.callerTurnEnded(s.speechOnset, ev.At, func() {
			if s.cfg.ServerTurnDetection || s.ending || s.turnGen != gen || s.callerSpeaking {
				return
			}
			if err := s.adapter.EndTurn(); err != nil {
				s.log.Warn("end turn", slog.Any("err", err))
			}
		})
	case media.AgentSpeechStart:
		s.agentSpeaking = true
		s.lastAgentSignal = s.now()
		s.synth.agentAudioStarted()
		if s.synth.closing && s.call.CallerQueued() == 0 {
			s.synth.agentAfterBye = true
		}
		s.emit(trace.Event{Type: trace.AgentSpeechStart, Actor: trace.ActorAgent, T: at})
	case media.AgentSpeechEnd:
		s.agentSpeaking = false
		s.lastAgentSignal = s.now()
		s.agentStoppedAt = s.now()
		s.emit(trace.Event{Type: trace.AgentSpeechEnd, Actor: trace.ActorAgent, T: at})
	case media.LateTick:
		s.log.Warn("late media tick", slog.Duration("late", ev.Duration))
	}
}

// callerOnset handles the start of caller speech: matched turn-taking, barge-in over agent audio,
// and the cues it acts on.
func (s *Session) callerOnset(at time.Duration) {
	if !s.cfg.ServerTurnDetection {
		if err := s.adapter.StartTurn(); err != nil {
			s.log.Warn("start turn", slog.Any("err", err))
		}
	}
	if s.agentAudible() {
		s.bargeIn(at, "caller")
	}
	for _, c := range s.cues {
		if c.onset >= 0 || c.issued > at {
			continue
		}
		if s.cfg.Mode == Human && (c.shown < 0 || c.shown > at) {
			// A participant acts on a cue they have seen: speech that began before it was shown
			// (stamped as it came into view) is not the answer to it, nor a revocation.
			continue
		}
		c.onset = at
		// A human caller withdrawing an approval is taken at their word at once, whatever the
		// words (the safe side); approvals wait for the end of the turn (callerTurnEnded).
		if s.cfg.Mode == Human && c.firing.Event.Kind == task.Revocation {
			s.ws.Revoke(c.firing.Event.Action)
		}
	}
}

// agentAudible reports whether agent audio is playing or queued for the caller.
func (s *Session) agentAudible() bool {
	return s.agentSpeaking || s.call.AgentQueued() > 0
}

// bargeIn flushes queued agent audio and tells the agent how much of its item was heard. The
// response is marked interrupted first, so none of its audio still on its way (deltas the adapter
// has read but the conductor not yet handled, or a provider that goes on sending) is played after
// the flush: the agent channel stays silent from the flush on, and played_ms is what was heard.
func (s *Session) bargeIn(at time.Duration, source string) {
	if s.audioResponse != "" {
		s.interrupted[s.audioResponse] = true
	}
	rep := s.call.FlushAgent()
	s.synth.interruptedItem = s.itemID
	played := int(s.itemReceivedMS - float64(rep.Dropped.Milliseconds()))
	if played < 0 {
		played = 0
	}
	s.emit(trace.Event{Type: trace.MediaBargeIn, Actor: trace.ActorCaller, T: rep.At.Milliseconds(), DroppedMS: rep.Dropped.Milliseconds(),
		RefMS: at.Milliseconds(), Source: source, Meta: map[string]string{"played_ms": strconv.Itoa(played), "item": s.itemID}})
	if source == "caller" {
		if err := s.adapter.Interrupt(played); err != nil {
			s.log.Warn("interrupt", slog.Any("err", err))
		}
	}
}

// responseKey names the response an agent event belongs to (the item when the provider gives no
// response id).
func responseKey(ev agent.Event) string {
	if ev.ResponseID != "" {
		return ev.ResponseID
	}
	return ev.ItemID
}

func (s *Session) onAgent(ev agent.Event) {
	if ev.RawType != "" {
		dir := "in"
		if ev.Outbound {
			dir = "out"
		}
		s.emit(trace.Event{Type: trace.AgentRaw, Actor: trace.ActorAgent, Raw: ev.Raw, Meta: map[string]string{"type": ev.RawType, "dir": dir}})
	}
	switch ev.Type {
	case agent.EventAudioDelta:
		if resp := responseKey(ev); resp != "" && s.interrupted[resp] {
			s.deltasDropped++ // cut off by a barge-in: the caller must not hear it
			return
		}
		s.lastAgentSignal = s.now()
		s.synth.sawAgentOutput()
		s.synth.agentAudioStarted()
		s.audioResponse = responseKey(ev)
		if ev.ItemID != s.itemID {
			s.itemID, s.itemReceivedMS = ev.ItemID, 0
		}
		pcm := ev.Audio
		if s.up != nil {
			pcm = s.up.Process(pcm, nil)
		}
		s.itemReceivedMS += float64(len(pcm)) * 1000 / audio.RecordRate
		if err := s.call.PushAgentAudio(pcm); err != nil {
			s.log.Warn("push agent audio", slog.Any("err", err))
		}
	case agent.EventTranscriptDone:
		if !s.synth.interrupted(ev.ItemID) {
			s.synth.sawAgentOutput()
		}
		if ev.Text == "" {
			return
		}
		s.emit(trace.Event{Type: trace.AgentTranscript, Actor: trace.ActorAgent, Text: ev.Text, Source: "provider", Meta: itemMeta(ev.ItemID)})
		for _, a := range flow.Classify(s.cfg.Task, ev.Text) {
			s.emit(trace.Event{Type: trace.AgentAct, Actor: trace.ActorAgent, Act: a.String()})
		}
	case agent.EventToolCall:
		s.lastAgentSignal = s.now()
		s.synth.sawAgentOutput()
		res := s.ws.Call(ev.CallID, ev.Name, ev.Arguments)
		if err := s.adapter.SendToolResult(ev.CallID, ev.Name, res.Output); err != nil {
			s.log.Warn("send tool result", slog.Any("err", err))
		}
	case agent.EventResponseDone:
		s.lastAgentSignal = s.now()
		s.emit(trace.Event{Type: trace.AgentResponseDone, Actor: trace.ActorAgent, Text: ev.Status, Meta: itemMeta(ev.ResponseID)})
	case agent.EventTurnEnd:
		// The one end of the agent's turn, whatever the provider's shape: the synthetic caller
		// waits on it, never on response.done and tool counts.
		s.lastAgentSignal = s.now()
		s.emit(trace.Event{Type: trace.AgentTurnEnd, Actor: trace.ActorAgent, Text: ev.Status, Meta: itemMeta(ev.ResponseID)})
		s.synth.turnEnded(ev.Status)
	case agent.EventReconnect:
		// The adapter moved the call to a resumed provider session; the call goes on.
		s.lastAgentSignal = s.now()
		s.emit(trace.Event{Type: trace.AgentReconnect, Actor: trace.ActorAgent, Text: ev.Text})
	case agent.EventInterrupted:
		if s.call.AgentQueued() > 0 {
			s.bargeIn(s.now(), "provider")
		}
	case agent.EventCallerTranscript:
		if ev.Text != "" {
			s.emit(trace.Event{Type: trace.CallerUtterance, Actor: trace.ActorCaller, Text: ev.Text, Source: "provider"})
		}
	case agent.EventUsage:
		if u := ev.Usage; u != nil {
			s.emit(trace.Event{Type: trace.AgentUsage, Actor: trace.ActorAgent, Meta: map[string]string{
				"input_tokens": strconv.Itoa(u.InputTokens), "output_tokens": strconv.Itoa(u.OutputTokens),
				"input_audio_tokens": strconv.Itoa(u.InputAudioTokens), "output_audio_tokens": strconv.Itoa(u.OutputAudioTokens),
				"input_audio_seconds":  strconv.FormatFloat(u.InputAudioSeconds, 'f', 3, 64),
				"output_audio_seconds": strconv.FormatFloat(u.OutputAudioSeconds, 'f', 3, 64)}})
		}
	case agent.EventError:
		if ev.Err == nil {
			return
		}
		s.emit(trace.Event{Type: trace.AgentError, Actor: trace.ActorAgent, Source: string(ev.Err.Class), Error: ev.Err.Code, Text: ev.Err.Message})
		if ev.Err.Fatal {
			s.finish(EndPlatformLost, ExclusionPlatformLost)
		}
	}
}

// mediaStatsMeta is the meta of media.stats: the call's media health at its end, including what
// the participant's link lost and how much of it was concealed.
func mediaStatsMeta(st media.Stats, framesDropped, deltasDropped int64) map[string]string {
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	return map[string]string{
		"ticks": i(st.Ticks), "late_ticks": i(st.LateTicks),
		"caller_streams":           strconv.Itoa(st.CallerStreams),
		"caller_packets_received":  i(st.CallerPacketsReceived),
		"caller_packets_lost":      i(st.CallerPacketsLost),
		"caller_packets_late":      i(st.CallerPacketsLate),
		"caller_packets_discarded": i(st.CallerPacketsDiscarded),
		"caller_decode_errors":     i(st.CallerDecodeErrors),
		"caller_concealed_ms":      i(st.CallerConcealed.Milliseconds()),
		"caller_jitter_ms":         i(st.CallerJitter.Milliseconds()),
		"caller_frames_dropped":    i(framesDropped),
		"agent_flushed_ms":         i(st.AgentFlushed.Milliseconds()),
		"agent_deltas_dropped":     i(deltasDropped),
		"rtt_ms":                   i(st.Link.RTT.Milliseconds()),
	}
}

func itemMeta(id string) map[string]string {
	if id == "" {
		return nil
	}
	return map[string]string{"item": id}
}

// resolveCues watches for the workspace change a cue asked for, once the caller has spoken after
// it: cue.applied says the agent (or, for an approval, the environment on the caller's words)
// applied it.
func (s *Session) resolveCues(e trace.Event) {
	for _, c := range s.cues {
		if c.applied || c.onset < 0 || !cuedChange(s.cfg.Task, c.firing, e) {
			continue
		}
		c.applied = true
		s.emit(trace.Event{Type: trace.CueApplied, Actor: trace.ActorAgent, CueID: c.firing.CueID, EventID: c.firing.Event.ID,
			RefMS: c.onset.Milliseconds(), OK: trace.Bool(true), Field: e.Field, Value: e.Value})
	}
}

// cuedChange reports whether e is the change to the workspace that a cue asked the caller to bring
// about. A field is compared as the grader compares it (typed; sets and lists item by item through
// the same canonicalisers), so a list recorded as a JSON array matches its "A; B; C" fact.
func cuedChange(t *task.Task, f flow.Firing, e trace.Event) bool {
	ev := f.Event
	switch ev.Kind {
	case task.Approval:
		return e.Type == trace.AuthApprovalGranted && e.Action == ev.Action
	case task.Revocation:
		return e.Type == trace.AuthRevoked && e.Action == ev.Action
	}
	if f.Reveals != nil && e.Type == trace.ArtifactUpdate {
		fact, ok := t.Fact(f.Reveals.Fact)
		if !ok || fact.Field != e.Field || f.Reveals.Version > len(fact.Versions) {
			return false
		}
		return sameValue(t, e.Field, fact.Versions[f.Reveals.Version-1].Value, e.Value)
	}
	if ev.Kind == task.BargeIn && f.Reveals == nil {
		return e.Type == trace.MediaBargeIn
	}
	return false
}

// sameValue compares a recorded value with a fact's written value: with the field's grader when
// the task grades the field, else by the field's type.
func sameValue(t *task.Task, field, want string, got json.RawMessage) bool {
	for _, g := range t.Grader.Fields {
		if g.Field == field {
			g.Gold, _ = json.Marshal(want)
			if g.Grader == grade.Semantic {
				g.Grader = grade.CaseFold
			}
			return grade.GradeField(g, got).Score == 1
		}
	}
	spec, _ := t.Field(field)
	var s string
	if json.Unmarshal(got, &s) != nil {
		s = string(got)
	}
	return workspace.Same(compareFor(spec.Type), s, want)
}

func compareFor(fieldType string) string {
	switch fieldType {
	case "identifier", "date", "phone", "address", "number":
		return fieldType
	}
	return "casefold"
}

// finish ends the call once: it stops the agent and the media, records how it ended, seals the
// trace and grades it.
func (s *Session) finish(reason, exclusion string) {
	if s.ending {
		return
	}
	s.ending = true
	// Caller turns still being read finish first, so their words reach the trace (the listener
	// loop runs until stop closes; each reading hands its result to the inbox).
	s.listening.Wait()
	for drained := false; !drained; {
		select {
		case fn := <-s.inbox:
			fn()
		default:
			drained = true
		}
	}
	close(s.stop)
	s.adapter.Close()
	closeErr := s.call.Close()
	st := s.call.Stats()
	s.emit(trace.Event{Type: trace.MediaStats, Actor: trace.ActorSystem, Meta: mediaStatsMeta(st, s.framesDropped.Load(), s.deltasDropped)})
	if s.callerSpeaking {
		// The call ended mid-sentence: the words still count as what was said after a cue (read
		// synchronously now: the conductor is ending), but no agent can act on an approval.
		s.asked = nil
		if s.cfg.Mode == Human && s.cfg.Listener != nil {
			var cues []*cueState
			for _, c := range s.cues {
				if !c.spoken && c.onset >= 0 {
					c.spoken = true
					cues = append(cues, c)
				}
			}
			if len(cues) > 0 {
				pcm, rate := s.heard.span(s.speechOnset-heardPreroll, s.now())
				h, ok := s.listen(pcm, rate)
				s.heardTurn(nil, cues, s.speechOnset, s.now(), h, ok, "asr")
			}
		} else {
			s.callerTurnEnded(s.speechOnset, s.now(), func() {})
		}
	}
	stats := mediaStatsMeta(st, s.framesDropped.Load(), s.deltasDropped)
	if s.cond != nil {
		s.cond.report(stats)
	}
	s.emit(trace.Event{Type: trace.MediaStats, Actor: trace.ActorSystem, Meta: stats})
	for _, c := range s.cues {
		if !c.spoken {
			c.spoken = true
			s.emit(trace.Event{Type: trace.CueSpoken, Actor: trace.ActorCaller, CueID: c.firing.CueID, EventID: c.firing.Event.ID,
				OK: trace.Bool(false), Text: "no caller speech after the cue"})
		}
		if !c.applied {
			c.applied = true
			ev := trace.Event{Type: trace.CueApplied, Actor: trace.ActorAgent, CueID: c.firing.CueID, EventID: c.firing.Event.ID, OK: trace.Bool(false)}
			if c.onset >= 0 {
				ev.RefMS = c.onset.Milliseconds()
			}
			s.emit(ev)
		}
	}
	if closeErr != nil {
		s.log.Warn("media close", slog.Any("err", closeErr))
	}
	s.transcribeAfterCall(s.trace.Events())
	if exclusion != "" {
		s.emit(trace.Event{Type: trace.Exclusion, Actor: trace.ActorSystem, Text: exclusion})
	}
	s.emit(trace.Event{Type: trace.SessionEnd, Actor: trace.ActorSystem, Text: reason})
	s.trace.Seal()
	s.result = Result{Reason: reason, Exclusion: exclusion, Events: s.trace.Events(), Recording: s.cfg.RecordingPath}
	if s.cond != nil && s.cfg.RecordingPath != "" {
		s.result.CleanRecording = s.cfg.CleanRecordingPath
	}
	g, err := grade.Grade(context.Background(), s.cfg.Task, s.result.Events, s.cfg.Grade)
	if err != nil {
		s.result.GradeErr = err
	} else {
		s.result.Grade = &g
	}
	s.log.Info("session ended", slog.String("reason", reason), slog.String("exclusion", exclusion), slog.Int("events", len(s.result.Events)))
	if s.cfg.OnUpdate != nil {
		s.cfg.OnUpdate(Update{Card: s.Card(), Ended: true, Reason: reason})
	}
	close(s.done)
}
