package media

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// CallerInput says where a call's caller channel comes from.
type CallerInput int

const (
	// CallerRTP: a participant's Opus over WebRTC, through ReceiveCallerRTP.
	CallerRTP CallerInput = iota
	// CallerPCM: a synthetic caller's 24 kHz PCM, through PushCallerPCM (no browser).
	CallerPCM
)

// String names the input for logs and stats ("rtp", "pcm").
func (i CallerInput) String() string {
	if i == CallerPCM {
		return "pcm"
	}
	return "rtp"
}

// Defaults of CallConfig.
const (
	DefaultJitterMargin = 3 * time.Millisecond
	DefaultOpusBitrate  = 32000
	// LateTickThreshold: a tick that starts this much after its due time counts as late.
	LateTickThreshold = 10 * time.Millisecond
)

// ParticipantLink is where the engine sends the agent's audio: the participant's WebRTC peer
// (rtc.Peer implements it). WriteAgentOpus is called from the media tick and must not block.
type ParticipantLink interface {
	// WriteAgentOpus sends one 20 ms Opus packet; rtpTimestamp (48 kHz) is derived from media time.
	WriteAgentOpus(payload []byte, rtpTimestamp uint32) error
}

// CallConfig configures a Call. AgentRate and (unless Clock is set) nothing else is required.
type CallConfig struct {
	// AgentRate is the sample rate of the caller frames delivered to the agent: 16000 or 24000.
	AgentRate int
	// RecordingPath is the stereo WAV to write (24 kHz, left = caller, right = agent); "" records
	// nothing (benchmarks, tools).
	RecordingPath string
	// Clock paces the call; nil uses a RealClock started by NewCall. The Call stops it on Close.
	Clock MediaClock
	// Logger receives warnings (decode errors, late ticks); nil discards.
	Logger *slog.Logger
	// CallerInput selects the caller's source; the zero value is CallerRTP.
	CallerInput CallerInput
	// CallerEndpointer and AgentEndpointer tune speech detection on each channel.
	CallerEndpointer, AgentEndpointer EndpointerConfig
	// JitterMargin is how long before its tick a caller frame should be complete: the slack a
	// packet has before it counts as late and its 20 ms are lost to silence. The clock is
	// phase-locked to the caller's packets to keep that slack (default 3 ms); a late packet widens
	// it at once (by at most half a tick), and it narrows again by 5 ms a second (half of a large
	// surplus). Complete frames reach the agent as soon as their last packet arrives, so the
	// margin costs the agent no latency; it is how much earlier than its recorded tick the agent
	// may hear a frame.
	JitterMargin time.Duration
	// OpusBitrate of the agent's audio toward the participant (default 32000).
	OpusBitrate int
	// OnCallerFrame receives each caller frame at the agent's rate. It must not block; PCM is
	// reused after it returns. It may call PushAgentAudio and FlushAgent, not Close.
	OnCallerFrame func(CallerFrame)
	// OnEvent receives speech, stream, gap and late-tick events. Same rules as OnCallerFrame.
	// The engine never runs two callbacks at once.
	OnEvent func(Event)

	// CallerCondition, when set, is the caller's listening condition (background noise, a
	// telephone line): each assembled caller frame is changed by it in place, so the agent and
	// the recording's caller channel get what the agent hears. The endpointer still hears the
	// clean caller (turn-taking follows what the caller did, not the noise), and
	// CleanRecordingPath keeps the clean caller beside the recording.
	CallerCondition CallerConditioner
	// CleanRecordingPath, with CallerCondition, is a second stereo WAV: the clean caller on the
	// left, the same agent audio on the right, sample-aligned with RecordingPath.
	CleanRecordingPath string
}

// CallerConditioner changes caller audio the way a listening condition sounds to the agent
// (internal/condition's Processor). Condition gets one 24 kHz frame and the media sample of its
// first sample; frames come in order without gaps. It runs on the media path and must not block.
type CallerConditioner interface {
	Condition(pcm []int16, first int64)
}

// CallerFrame is one tick's caller audio as the agent receives it.
type CallerFrame struct {
	Tick int64 // the tick whose recording holds this audio (left channel)
	// Start is the media time of PCM[0]: Tick·40 ms, minus the resampler's fixed delay when the
	// agent takes 16 kHz (the audio is that much older than the tick it is delivered at).
	Start     time.Duration
	Rate      int       // the agent's input rate, 16000 or 24000
	PCM       []int16   // 40 ms at Rate; valid only during the callback
	Concealed int       // samples (24 kHz) of missing caller audio filled with silence
	Delivered time.Time // wall time the frame was handed to the agent
	// Due is the wall time the frame's tick is due: the recording's frame starts there.
	Due time.Time
	// Completed is the arrival of the packet that completed the frame (zero when the frame had
	// missing audio or came from a synthetic caller); Due - Completed is its jitter-buffer delay.
	Completed time.Time
}

// EventKind names an engine event.
type EventKind string

// Engine events. Media times are on the call's clock.
const (
	CallerSpeechStart EventKind = "caller.speech_start"
	CallerSpeechEnd   EventKind = "caller.speech_end"
	AgentSpeechStart  EventKind = "agent.speech_start"
	AgentSpeechEnd    EventKind = "agent.speech_end"
	// CallerStreamStart: a participant's RTP stream began (first connect, or again after a reload);
	// Duration is the silence since the previous stream's last audio (0 for the first stream).
	CallerStreamStart EventKind = "caller.stream_start"
	// CallerStreamEnd: the participant's peer detached; At is the end of its last audio.
	CallerStreamEnd EventKind = "caller.stream_end"
	// CallerGap: at least MinReportedGap of the live caller stream was missing (loss burst,
	// network stall); At is where it began, Duration how long it was.
	CallerGap EventKind = "caller.gap"
	// LateTick: a tick started more than LateTickThreshold after its due time (Duration).
	LateTick EventKind = "media.late_tick"
)

// MinReportedGap is the shortest run of missing caller audio reported as a CallerGap event
// (single lost packets are only counted).
const MinReportedGap = 60 * time.Millisecond

// Event is something the engine noticed, for the trace and the session's turn-taking.
type Event struct {
	Kind EventKind     // what happened
	At   time.Duration // media time of the onset, offset, stream edge or gap start
	// Detected is the media time the engine decided (speech events); At for the others.
	Detected time.Duration
	// Padded is a speech start's At minus the endpointer's prefix padding.
	Padded   time.Duration
	Duration time.Duration // gap length, tick lateness
	SSRC     uint32        // stream events
	Wall     time.Time     // wall time the engine noticed
}

// FlushReport says what a barge-in flush dropped.
type FlushReport struct {
	Dropped time.Duration // queued agent audio discarded
	// At is the media time from which the agent channel is silent: the first tick that had not
	// taken its audio yet when the flush happened.
	At   time.Duration
	Wall time.Time // wall time of the flush
}

// LinkQuality is what RTCP says about the agent's stream toward the participant.
type LinkQuality struct {
	RTT                time.Duration // round trip from receiver reports (RFC 3550 LSR/DLSR)
	RemoteJitter       time.Duration // interarrival jitter the participant measured
	RemoteLost         int64         // cumulative packets the participant lost
	RemoteFractionLost float64       // fraction lost in the last report interval
	Updated            time.Time     // arrival of the report these figures come from
}

// Stats is a snapshot of a call's media health for dashboards, as of the last tick.
type Stats struct {
	MediaTime       time.Duration // end of the last tick processed
	Ticks           int64         // ticks processed
	LateTicks       int64         // ticks that started more than LateTickThreshold after their due time
	MaxTickLateness time.Duration // the latest start of a tick

	CallerInput            string        // "rtp" or "pcm"
	CallerStreams          int           // RTP streams so far (more than one after a reload)
	CallerPacketsReceived  int64         // all streams
	CallerPacketsLost      int64         // RFC 3550 cumulative loss (expected - received), all streams
	CallerPacketsLate      int64         // arrived after their audio was played
	CallerPacketsDiscarded int64         // duplicates, overflow, unreadable, or left behind by a new stream
	CallerDecodeErrors     int64         // packets the Opus decoder rejected (their audio is silence)
	CallerConcealed        time.Duration // live-stream audio filled with silence
	CallerJitter           time.Duration // RFC 3550 interarrival jitter of the current stream
	// CallerSlack is the least time, over the last second, that a caller frame was complete
	// before its tick: the jitter buffer's actual margin.
	CallerSlack time.Duration
	CallerLevel float64 // RMS of the last tick, dBFS
	CallerPeak  float64 // highest tick RMS over the last second, dBFS

	AgentQueued          time.Duration // agent audio waiting for playout
	AgentFlushed         time.Duration // total dropped by FlushAgent
	AgentPacketsSent     int64         // Opus packets written to the participant
	AgentPacketsEncoded  int64         // packets libopus produced (the rest repeated a silent packet)
	AgentLevel           float64       // RMS of the last tick, dBFS
	AgentPeak            float64       // highest tick RMS over the last second, dBFS
	AgentLinkWriteErrors int64         // packets the participant's link refused

	Link LinkQuality // what RTCP says about the agent's stream

	CallerLatency LatencySummary // packet arrival completing a frame -> frame delivered
	AgentLatency  LatencySummary // packet due (tick, half tick) -> packet written to the link
}

// frameRing is how many caller frames may be assembled ahead of the tick that records them.
const frameRing = 4

type callerFrameSlot struct {
	pcm       [FrameSamples]int16
	clean     [FrameSamples]int16 // the caller before the listening condition (only with one)
	concealed int
}

// Call is the media engine of one session: one MediaClock, the caller's audio in (RTP through a
// jitter buffer, or PCM from a synthetic caller), one 40 ms frame per tick to the agent (as soon as
// its packets are in, at the latest at its tick), the agent's PCM paced out as Opus (one 20 ms
// packet at the tick, one at the half tick), and both channels recorded from the same tick. The
// participant's peer can be attached, detached and replaced while the call runs.
type Call struct {
	cfg      CallConfig
	log      *slog.Logger
	clock    MediaClock
	rec      *Recorder
	cleanRec *Recorder // the clean caller beside rec, with a listening condition
	enc      *opusEncoder
	resample *Resampler // nil when the agent takes 24 kHz
	margin   time.Duration
	manual   bool // driven by a ManualClock: wall times are simulated

	// Caller side, guarded by callerMu.
	callerMu     sync.Mutex
	closed       bool
	jb           *jitterBuffer
	pcmQueue     []int16 // synthetic caller audio; [pcmHead:] not yet played
	pcmHead      int
	nextFrame    int64 // first frame not yet assembled
	curTick      int64 // highest tick whose processing has started
	ring         [frameRing]callerFrameSlot
	agentPCM     []int16 // caller frame at the agent's rate
	callerEP     *Endpointer
	streams      int
	lastStreamAt time.Duration // end of the previous stream's audio
	gapStart     int64         // media sample where the current run of concealment began, -1 none
	gapLen       int64
	// phase lock
	winMin       time.Duration
	winFrames    int
	winComplete  int
	retardGuard  int64
	retardBudget time.Duration
	retardAt     time.Time
	cc           callerCounters

	// Agent side, guarded by agentMu.
	agentMu       sync.Mutex
	agentQ        []int16
	agentHead     int
	agentPkts     [][]byte // Opus packets of the first whole 20 ms blocks of agentQ[agentHead:]
	encClosed     bool
	agentNextTick int64 // first tick that has not taken agent audio yet
	agentFlushed  time.Duration

	link atomic.Pointer[linkHolder]

	emitMu sync.Mutex

	statsMu sync.Mutex
	stats   Stats
	lat     Latencies

	// Tick goroutine only.
	agentFrame [FrameSamples]int16
	callerRec  [FrameSamples]int16
	agentEP    *Endpointer
	callerPk   levelWindow
	agentPk    levelWindow
	sent       int64
	half       pendingPacket
	writeErrs  int64
	lateTicks  int64
	maxLate    time.Duration

	callerClean [FrameSamples]int16 // tick goroutine: the clean caller frame cleanRec writes

	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

type linkHolder struct{ link ParticipantLink }

// callerCounters are the caller-side totals, snapshotted into Stats at each tick.
type callerCounters struct {
	received, lost, late, discarded, decodeErrs int64
	prevReceived, prevLost, prevDecodeErrs      int64 // totals of ended streams
	concealed                                   int64 // samples
	streams                                     int
	jitter                                      time.Duration
	slack                                       time.Duration
	level                                       float64
}

// levelWindow keeps the highest tick level over the last second.
type levelWindow struct {
	vals [25]float64
	i    int
}

func (w *levelWindow) add(v float64) float64 {
	w.vals[w.i%len(w.vals)] = v
	w.i++
	m := -120.0
	for _, x := range w.vals[:min(w.i, len(w.vals))] {
		m = max(m, x)
	}
	return m
}

// NewCall validates cfg, opens the recording and starts the media clock.
func NewCall(cfg CallConfig) (*Call, error) {
	if cfg.AgentRate != 16000 && cfg.AgentRate != 24000 {
		return nil, fmt.Errorf("new call: %w: AgentRate = %d, want 16000 or 24000", ErrBadConfig, cfg.AgentRate)
	}
	if cfg.CallerInput != CallerRTP && cfg.CallerInput != CallerPCM {
		return nil, fmt.Errorf("new call: %w: CallerInput = %d", ErrBadConfig, cfg.CallerInput)
	}
	if cfg.JitterMargin < 0 || cfg.JitterMargin > TickDuration {
		return nil, fmt.Errorf("new call: %w: JitterMargin = %v, want 0..%v", ErrBadConfig, cfg.JitterMargin, TickDuration)
	}
	if cfg.JitterMargin == 0 {
		cfg.JitterMargin = DefaultJitterMargin
	}
	if cfg.OpusBitrate == 0 {
		cfg.OpusBitrate = DefaultOpusBitrate
	}
	if cfg.OpusBitrate < 6000 || cfg.OpusBitrate > 510000 {
		return nil, fmt.Errorf("new call: %w: OpusBitrate = %d, want 6000..510000", ErrBadConfig, cfg.OpusBitrate)
	}
	callerEP, err := NewEndpointer(cfg.CallerEndpointer)
	if err != nil {
		return nil, fmt.Errorf("new call: caller endpointer: %w", err)
	}
	agentEP, err := NewEndpointer(cfg.AgentEndpointer)
	if err != nil {
		return nil, fmt.Errorf("new call: agent endpointer: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Call{
		cfg:         cfg,
		log:         log,
		margin:      cfg.JitterMargin,
		callerEP:    callerEP,
		agentEP:     agentEP,
		curTick:     -1,
		gapStart:    -1,
		retardGuard: -1,
		winMin:      time.Hour,
		agentPCM:    make([]int16, 0, FrameSamples),
		done:        make(chan struct{}),
	}
	c.stats.CallerInput = cfg.CallerInput.String()
	if cfg.AgentRate != RecordRate {
		if c.resample, err = NewResampler(RecordRate, cfg.AgentRate); err != nil {
			return nil, fmt.Errorf("new call: %w", err)
		}
	}
	if c.jb, err = newJitterBuffer(); err != nil {
		return nil, fmt.Errorf("new call: %w", err)
	}
	if c.enc, err = newOpusEncoder(cfg.OpusBitrate); err != nil {
		return nil, fmt.Errorf("new call: %w", err)
	}
	if cfg.RecordingPath != "" {
		if c.rec, err = CreateRecorder(cfg.RecordingPath, RecordRate); err != nil {
			c.enc.close()
			return nil, fmt.Errorf("new call: %w", err)
		}
	}
	if cfg.CleanRecordingPath != "" && cfg.CallerCondition != nil {
		if c.cleanRec, err = CreateRecorder(cfg.CleanRecordingPath, RecordRate); err != nil {
			c.enc.close()
			if c.rec != nil {
				c.rec.Close()
			}
			return nil, fmt.Errorf("new call: %w", err)
		}
	}
	c.clock = cfg.Clock
	if c.clock == nil {
		c.clock = NewRealClock()
	}
	_, c.manual = c.clock.(*ManualClock)
	go c.run()
	return c, nil
}

func (c *Call) run() {
	defer close(c.done)
	for n := int64(0); ; n++ {
		tk, err := c.clock.Next(n)
		if err != nil {
			return
		}
		c.tick(tk)
		if c.half.link != nil {
			if err := c.clock.WaitUntil(c.half.due); err != nil {
				return
			}
			if cur := c.link.Load(); cur == c.half.link {
				c.sendAgent(cur, c.half.pkt, c.half.ts, c.half.due, c.now(c.half.due))
			}
			c.half = pendingPacket{}
		}
	}
}

// pendingPacket is the second 20 ms packet of a tick, sent at the half tick.
type pendingPacket struct {
	link *linkHolder
	pkt  []byte
	ts   uint32
	due  time.Time
}

// sendAgent writes one packet to the participant and records its server-added latency (from the
// time the packet was due to leave to the write's return), and how much of it was the wake-up
// (due to woke: the timer and the scheduler, before the engine could do anything).
func (c *Call) sendAgent(h *linkHolder, pkt []byte, ts uint32, due, woke time.Time) {
	if err := h.link.WriteAgentOpus(pkt, ts); err != nil {
		c.sendFailed(int64(ts)/int64(FrameSamples*rtpPerSample), err)
		return
	}
	c.sent++
	written := c.now(due)
	c.statsMu.Lock()
	c.lat.Agent.Add(written.Sub(due))
	c.lat.AgentWake.Add(woke.Sub(due))
	c.stats.AgentPacketsSent = c.sent
	c.statsMu.Unlock()
}

func (c *Call) sendFailed(tick int64, err error) {
	c.writeErrs++
	if c.writeErrs == 1 || c.writeErrs%250 == 0 {
		c.log.Warn("agent audio not sent", slog.Int64("tick", tick), slog.Int64("errors", c.writeErrs), slog.Any("err", err))
	}
}

// tick does one period's work: agent packets, caller frame (if not delivered early), recording.
func (c *Call) tick(tk Tick) {
	n := tk.N
	if late := tk.Start.Sub(tk.Due); late > LateTickThreshold {
		c.lateTicks++
		c.maxLate = max(c.maxLate, late)
		c.emit(Event{Kind: LateTick, At: tk.MediaTime(), Detected: tk.MediaTime(), Duration: late, Wall: tk.Start})
	}

	// Agent first, the most time-critical: exactly 40 ms of queued audio, silence when the agent
	// is quiet. Its two 20 ms packets were usually encoded when the audio was pushed; what was not
	// (a short tail, audio queued while no participant was attached) is encoded now.
	h := c.link.Load()
	var pkts [2][]byte
	c.agentMu.Lock()
	k := copy(c.agentFrame[:], c.agentQ[c.agentHead:])
	clear(c.agentFrame[k:])
	c.agentHead += k
	if c.agentHead == len(c.agentQ) {
		c.agentQ, c.agentHead = c.agentQ[:0], 0
	}
	pre := copy(pkts[:], c.agentPkts)
	c.agentPkts = c.agentPkts[:copy(c.agentPkts, c.agentPkts[pre:])]
	if h != nil {
		for b := pre; b < len(pkts); b++ {
			pkt, err := c.enc.encode(c.agentFrame[b*packetSamples : (b+1)*packetSamples])
			if err != nil {
				c.sendFailed(n, err)
			}
			pkts[b] = pkt
		}
	}
	queued := len(c.agentQ) - c.agentHead
	c.agentNextTick = n + 1
	flushed := c.agentFlushed
	encoded := c.enc.encoded
	c.agentMu.Unlock()

	// The first packet goes out now, the second at the half tick (see run), so the participant's
	// jitter buffer sees a smooth 20 ms cadence instead of pairs, which would make it hold 20 ms more.
	c.half = pendingPacket{}
	if h != nil {
		ts := uint32(n * int64(FrameSamples*rtpPerSample))
		if pkts[0] != nil {
			c.sendAgent(h, pkts[0], ts, tk.Due, tk.Start)
		}
		if pkts[1] != nil {
			c.half = pendingPacket{link: h, pkt: pkts[1], ts: ts + packetSamples*rtpPerSample, due: tk.Due.Add(TickDuration / 2)}
		}
	}

	// Caller: the frame for this tick, assembled now unless packets completed it already (its
	// audio reaches the agent after this tick's agent audio was taken: a reply can never be heard
	// in the tick that prompted it).
	c.callerMu.Lock()
	c.curTick = n
	for c.nextFrame <= n {
		c.assembleLocked(tk.Start)
	}
	slot := &c.ring[n%frameRing]
	copy(c.callerRec[:], slot.pcm[:])
	if c.cleanRec != nil {
		copy(c.callerClean[:], slot.clean[:])
	}
	cc := c.cc
	c.callerMu.Unlock()

	if h != nil {
		c.agentMu.Lock()
		c.encodeAheadLocked() // audio the agent sent ahead of real time
		c.agentMu.Unlock()
	}

	var recErr error
	if c.rec != nil {
		recErr = c.rec.Write(c.callerRec[:], c.agentFrame[:])
	}
	if c.cleanRec != nil {
		if err := c.cleanRec.Write(c.callerClean[:], c.agentFrame[:]); recErr == nil {
			recErr = err
		}
	}

	agentLevel := RMSDBFS(c.agentFrame[:])
	c.agentEP.Process(c.agentFrame[:], RecordRate, tk.MediaTime(), func(ev SpeechEvent) {
		kind := AgentSpeechEnd
		if ev.Start {
			kind = AgentSpeechStart
		}
		c.emit(Event{Kind: kind, At: ev.At, Detected: ev.Detected, Padded: ev.Padded, Wall: tk.Start})
	})

	c.statsMu.Lock()
	s := &c.stats
	s.Ticks = n + 1
	s.MediaTime = time.Duration(n+1) * TickDuration
	s.LateTicks, s.MaxTickLateness = c.lateTicks, c.maxLate
	s.CallerStreams = cc.streams
	s.CallerPacketsReceived = cc.received
	s.CallerPacketsLost = cc.lost
	s.CallerPacketsLate = cc.late
	s.CallerPacketsDiscarded = cc.discarded
	s.CallerDecodeErrors = cc.decodeErrs
	s.CallerConcealed = time.Duration(cc.concealed) * time.Second / RecordRate
	s.CallerJitter = cc.jitter
	s.CallerSlack = cc.slack
	s.CallerLevel = cc.level
	s.CallerPeak = c.callerPk.add(cc.level)
	s.AgentQueued = time.Duration(queued) * time.Second / RecordRate
	s.AgentFlushed = flushed
	s.AgentPacketsSent = c.sent
	s.AgentPacketsEncoded = encoded
	s.AgentLevel = agentLevel
	s.AgentPeak = c.agentPk.add(agentLevel)
	s.AgentLinkWriteErrors = c.writeErrs
	c.statsMu.Unlock()
	if recErr != nil && !errors.Is(recErr, ErrClosed) {
		c.log.Error("recording failed", slog.String("path", c.cfg.RecordingPath), slog.Any("err", recErr))
	}
}

// assembleLocked builds caller frame c.nextFrame from the jitter buffer (or the synthetic queue),
// runs the caller endpointer and delivers it to the agent. now is the wall time of delivery.
func (c *Call) assembleLocked(now time.Time) {
	n := c.nextFrame
	c.nextFrame++
	slot := &c.ring[n%frameRing]
	fs := n * FrameSamples
	var last time.Time
	if c.cfg.CallerInput == CallerPCM {
		k := copy(slot.pcm[:], c.pcmQueue[c.pcmHead:])
		clear(slot.pcm[k:])
		c.pcmHead += k
		if c.pcmHead == len(c.pcmQueue) {
			c.pcmQueue, c.pcmHead = c.pcmQueue[:0], 0
		}
		slot.concealed = 0
	} else {
		slot.concealed, last = c.jb.assemble(fs, slot.pcm[:])
		c.trackGapLocked(fs, slot.concealed, now)
		c.phaseLocked(n, slot.concealed, last)
		c.cc.concealed += int64(slot.concealed)
		c.cc.decodeErrs = c.cc.prevDecodeErrs + c.jb.decodeErrors
		c.cc.jitter = time.Duration(c.jb.jitter * float64(time.Second))
	}
	// Listening-condition seam (issue 19; keep it this small when call.go is split): the frame
	// becomes what the agent hears, for the agent and the recording alike, while the endpointer
	// below keeps the clean caller.
	clean := slot.pcm[:] // what the endpointer hears
	if c.cfg.CallerCondition != nil {
		copy(slot.clean[:], slot.pcm[:])
		c.cfg.CallerCondition.Condition(slot.pcm[:], fs)
		clean = slot.clean[:]
	}
	c.cc.level = RMSDBFS(slot.pcm[:])

	start := time.Duration(n) * TickDuration
	pcm := slot.pcm[:]
	if c.resample != nil {
		c.agentPCM = c.resample.Process(slot.pcm[:], c.agentPCM)
		pcm = c.agentPCM
		start -= c.resample.Delay()
	}
	c.callerEP.Process(clean, RecordRate, time.Duration(n)*TickDuration, func(ev SpeechEvent) {
		kind := CallerSpeechEnd
		if ev.Start {
			kind = CallerSpeechStart
		}
		c.emit(Event{Kind: kind, At: ev.At, Detected: ev.Detected, Padded: ev.Padded, Wall: now})
	})
	delivered := c.now(now)
	complete := !last.IsZero() && slot.concealed == 0
	if c.cfg.OnCallerFrame != nil {
		f := CallerFrame{Tick: n, Start: start, Rate: c.cfg.AgentRate, PCM: pcm, Concealed: slot.concealed,
			Delivered: delivered, Due: c.clock.Due(n)}
		if complete {
			f.Completed = last
		}
		c.emitMu.Lock()
		c.cfg.OnCallerFrame(f)
		c.emitMu.Unlock()
	}
	if complete {
		c.statsMu.Lock()
		c.lat.Caller.Add(delivered.Sub(last))
		c.statsMu.Unlock()
	}
}

// trackGapLocked reports runs of missing live-stream audio of at least MinReportedGap.
func (c *Call) trackGapLocked(fs int64, concealed int, now time.Time) {
	if concealed > 0 {
		if c.gapStart < 0 {
			c.gapStart = fs + FrameSamples - int64(concealed) // approximate: missing tail of the frame
		}
		c.gapLen += int64(concealed)
		return
	}
	c.flushGapLocked(now)
}

func (c *Call) flushGapLocked(now time.Time) {
	if c.gapStart >= 0 && time.Duration(c.gapLen)*time.Second/RecordRate >= MinReportedGap {
		at := time.Duration(c.gapStart) * time.Second / RecordRate
		c.emit(Event{Kind: CallerGap, At: at, Detected: at, Duration: time.Duration(c.gapLen) * time.Second / RecordRate, Wall: now})
	}
	c.gapStart, c.gapLen = -1, 0
}

// phaseLocked keeps the clock locked to the caller's packets: each complete frame's slack (how
// long before its tick it was complete) feeds a one-second window; too little slack delays the
// ticks, lasting surplus advances them (5 ms a second, or half the surplus when it is large).
func (c *Call) phaseLocked(n int64, concealed int, last time.Time) {
	if !c.jb.active {
		return
	}
	c.winFrames++
	if concealed == 0 && !last.IsZero() {
		slack := c.clock.Due(n).Sub(last)
		c.winMin = min(c.winMin, slack)
		c.winComplete++
	}
	if c.winFrames < 25 {
		return
	}
	if c.winComplete >= 10 {
		c.cc.slack = c.winMin
		// Release: at least 5 ms a second, and half of a large surplus at once.
		const hysteresis, step = 2 * time.Millisecond, 5 * time.Millisecond
		switch excess := c.winMin - c.margin; {
		case excess > hysteresis:
			c.clock.Shift(-min(excess, max(step, excess/2)))
		case c.winMin < c.margin/2:
			c.clock.Shift(c.margin - c.winMin)
		}
	}
	c.winFrames, c.winComplete, c.winMin = 0, 0, time.Hour
}

// ReceiveCallerRTP takes one packet of the participant's Opus stream (from the rtc read loop of
// the link it came from). A packet that completes the next frame delivers it to the agent at once,
// ahead of its tick. Packets from a link that is not the attached one (a peer replaced by a
// reload) are refused with ErrNotAttached, so two streams never mix.
func (c *Call) ReceiveCallerRTP(from ParticipantLink, p CallerPacket) error {
	c.callerMu.Lock()
	defer c.callerMu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if c.cfg.CallerInput != CallerRTP {
		return ErrWrongInput
	}
	if h := c.link.Load(); h == nil || h.link != from {
		return ErrNotAttached
	}
	playout := c.nextFrame * FrameSamples
	ets, ok := c.jb.continues(&p, playout)
	if !ok {
		if err := c.beginStreamLocked(&p); err != nil {
			c.cc.discarded++
			return nil // an unreadable first packet: wait for the next one
		}
		ets = int64(p.Timestamp)
	}
	res, start := c.jb.insert(&p, ets, playout)
	c.cc.received = c.cc.prevReceived + c.jb.received
	c.cc.lost = c.cc.prevLost + c.jb.lost()
	switch res {
	case insertLate:
		c.cc.late++
		c.retardLocked(&p, start)
	case insertDuplicate, insertOverflow, insertBad:
		c.cc.discarded++
	}
	// Deliver the frames the packets have completed at once (no later than the frame ring allows):
	// the agent hears the caller without waiting for the tick that records the frame.
	for c.nextFrame < c.curTick+frameRing {
		fs := c.nextFrame * FrameSamples
		if ok, _ := c.jb.complete(fs, fs+FrameSamples); !ok {
			break
		}
		c.assembleLocked(p.Arrival)
	}
	return nil
}

// maxRetard bounds one correction: a single stall (of this process or the network) must not push
// the whole call's timing far out; a lasting delay is caught up by further late packets, within a
// budget of retardBurst that refills at retardRefillPerSecond (12 ms a second, far above clock drift).
const (
	maxRetard             = TickDuration / 2
	retardBurst           = 60 * time.Millisecond
	retardRefillPerSecond = 0.012
)

// retardLocked delays the clock after a late packet so the following ones make their ticks. Only
// a packet that missed one of the latest frames (the next one may already have been delivered
// early) says anything about the phase: packets for older frames come in a burst after a stall
// (of the network or of this process) and were simply too late.
func (c *Call) retardLocked(p *CallerPacket, start int64) {
	frame := start / FrameSamples
	if frame <= c.retardGuard || frame < c.nextFrame-2 {
		return // already corrected for this burst, or stale
	}
	lateness := p.Arrival.Sub(c.clock.Due(frame))
	if lateness > 0 {
		// A token bucket bounds the corrections: packets read late because this process was
		// starved look exactly like network lateness, and chasing them would push the clock
		// further and further behind the caller.
		if !c.retardAt.IsZero() {
			refill := time.Duration(float64(p.Arrival.Sub(c.retardAt)) * retardRefillPerSecond)
			c.retardBudget = min(retardBurst, c.retardBudget+max(0, refill))
		}
		c.retardAt = p.Arrival
		d := min(lateness+c.margin, maxRetard, c.retardBudget)
		if d <= 0 {
			return
		}
		c.retardBudget -= d
		c.clock.Shift(d)
		c.retardGuard = c.nextFrame + 1
		c.log.Debug("caller packet late; clock delayed", slog.Duration("late", lateness), slog.Int64("frame", frame))
	}
}

// beginStreamLocked anchors a new caller stream (first connect, reload, or a sender restart): it
// picks the frame position and clock shift (at most half a packet) that make the stream's frames
// complete JitterMargin before their ticks.
func (c *Call) beginStreamLocked(p *CallerPacket) error {
	dur48, err := opusPacketSamples48(p.Payload)
	if err != nil {
		return err
	}
	d := int64(dur48 / rtpPerSample) // samples of the first packet
	dt := time.Duration(d) * time.Second / RecordRate
	k := max(c.nextFrame, c.curTick+1)
	type choice struct {
		f, s0 int64
		shift time.Duration
	}
	best := choice{shift: time.Hour}
	for j := int64(0); j == 0 || j*d < FrameSamples; j++ {
		// The frame completes when the j-th packet after this one arrives.
		target := p.Arrival.Add(time.Duration(j)*dt + c.margin)
		for f := k; f < k+3+d/FrameSamples; f++ {
			s0 := (f+1)*FrameSamples - (j+1)*d
			if s0 < k*FrameSamples {
				continue
			}
			shift := target.Sub(c.clock.Due(f))
			if abs(shift) < abs(best.shift) {
				best = choice{f: f, s0: s0, shift: shift}
			}
		}
	}
	if c.jb.started {
		if c.jb.active {
			c.endStreamLocked(p.Arrival)
		}
		c.cc.prevReceived += c.jb.received
		c.cc.prevLost += c.jb.lost()
		c.cc.prevDecodeErrs += c.jb.decodeErrors
		c.jb.decodeErrors = 0
	}
	c.cc.discarded += int64(c.jb.begin(p, best.s0))
	c.clock.Shift(best.shift)
	c.streams++
	c.cc.streams = c.streams
	c.winFrames, c.winComplete, c.winMin = 0, 0, time.Hour
	c.retardGuard = -1
	c.retardBudget, c.retardAt = retardBurst, time.Time{}
	at := time.Duration(best.s0) * time.Second / RecordRate
	gap := time.Duration(0)
	if c.streams > 1 {
		gap = at - c.lastStreamAt
	}
	c.log.Info("caller stream started", slog.Uint64("ssrc", uint64(p.SSRC)), slog.Duration("at", at),
		slog.Duration("gap", gap), slog.Duration("clock_shift", best.shift))
	c.emit(Event{Kind: CallerStreamStart, At: at, Detected: at, Duration: gap, SSRC: p.SSRC, Wall: p.Arrival})
	return nil
}

func (c *Call) endStreamLocked(now time.Time) {
	c.jb.end()
	c.flushGapLocked(now)
	c.lastStreamAt = time.Duration(c.jb.hiEnd) * time.Second / RecordRate
	c.emit(Event{Kind: CallerStreamEnd, At: c.lastStreamAt, Detected: c.lastStreamAt, SSRC: c.jb.ssrc, Wall: now})
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// PushCallerPCM queues a synthetic caller's 24 kHz PCM; the tick plays it out 40 ms at a time.
func (c *Call) PushCallerPCM(pcm []int16) error {
	c.callerMu.Lock()
	defer c.callerMu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if c.cfg.CallerInput != CallerPCM {
		return ErrWrongInput
	}
	if c.pcmHead > 0 && c.pcmHead >= len(c.pcmQueue)/2 {
		c.pcmQueue = c.pcmQueue[:copy(c.pcmQueue, c.pcmQueue[c.pcmHead:])]
		c.pcmHead = 0
	}
	c.pcmQueue = append(c.pcmQueue, pcm...)
	return nil
}

// CallerQueued returns how much synthetic caller audio is waiting to be played.
func (c *Call) CallerQueued() time.Duration {
	c.callerMu.Lock()
	defer c.callerMu.Unlock()
	return time.Duration(len(c.pcmQueue)-c.pcmHead) * time.Second / RecordRate
}

// PushAgentAudio queues the agent's 24 kHz PCM (any chunk size) for playout, 40 ms per tick.
func (c *Call) PushAgentAudio(pcm []int16) error {
	c.agentMu.Lock()
	defer c.agentMu.Unlock()
	if c.isClosed() {
		return ErrClosed
	}
	if c.agentHead > 0 && c.agentHead >= len(c.agentQ)/2 {
		c.agentQ = c.agentQ[:copy(c.agentQ, c.agentQ[c.agentHead:])]
		c.agentHead = 0
	}
	c.agentQ = append(c.agentQ, pcm...)
	c.encodeAheadLocked()
	return nil
}

// encodeAheadMax bounds how many 20 ms blocks are encoded before their tick: enough to take the
// encoder off the tick's path, not so many that a barge-in flush throws much work away.
const encodeAheadMax = 6

// encodeAheadLocked encodes whole queued 20 ms blocks (in queue order, so the encoder sees the
// audio exactly as it will be sent) while a participant is attached.
func (c *Call) encodeAheadLocked() {
	if c.link.Load() == nil || c.encClosed {
		return
	}
	for len(c.agentPkts) < encodeAheadMax {
		off := c.agentHead + len(c.agentPkts)*packetSamples
		if off+packetSamples > len(c.agentQ) {
			return
		}
		pkt, err := c.enc.encode(c.agentQ[off : off+packetSamples])
		if err != nil {
			return // the tick encodes it again and reports the failure
		}
		c.agentPkts = append(c.agentPkts, pkt)
	}
}

func (c *Call) isClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// FlushAgent drops all queued agent audio at once (barge-in) and reports how much and from which
// media time the agent channel is silent. The tick already playing finishes its 40 ms.
func (c *Call) FlushAgent() FlushReport {
	c.agentMu.Lock()
	dropped := len(c.agentQ) - c.agentHead
	c.agentQ, c.agentHead = c.agentQ[:0], 0
	c.agentPkts = c.agentPkts[:0]
	d := time.Duration(dropped) * time.Second / RecordRate
	c.agentFlushed += d
	at := time.Duration(c.agentNextTick) * TickDuration
	c.agentMu.Unlock()
	return FlushReport{Dropped: d, At: at, Wall: time.Now()}
}

// AgentQueued returns how much agent audio waits for playout.
func (c *Call) AgentQueued() time.Duration {
	c.agentMu.Lock()
	defer c.agentMu.Unlock()
	return time.Duration(len(c.agentQ)-c.agentHead) * time.Second / RecordRate
}

// Attach makes link the destination of the agent's audio (a participant connected or reloaded).
// The caller stream restarts with the link's first packet.
func (c *Call) Attach(link ParticipantLink) error {
	c.callerMu.Lock()
	defer c.callerMu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.link.Store(&linkHolder{link: link})
	return nil
}

// Detach stops sending to link if it is the attached one, and ends its caller stream: the
// silence until the next Attach is recorded as such and reported with the next stream's start.
func (c *Call) Detach(link ParticipantLink) {
	c.callerMu.Lock()
	defer c.callerMu.Unlock()
	h := c.link.Load()
	if h == nil || h.link != link {
		return
	}
	c.link.Store(nil)
	if c.jb.active {
		c.endStreamLocked(time.Now())
	}
}

// UpdateLinkQuality records what RTCP says about the agent's stream (the rtc layer calls it).
func (c *Call) UpdateLinkQuality(q LinkQuality) {
	c.statsMu.Lock()
	c.stats.Link = q
	c.statsMu.Unlock()
}

// Stats returns a snapshot as of the last tick.
func (c *Call) Stats() Stats {
	c.statsMu.Lock()
	defer c.statsMu.Unlock()
	s := c.stats
	s.CallerLatency = c.lat.Caller.Summary()
	s.AgentLatency = c.lat.Agent.Summary()
	return s
}

// Latencies are a call's server-added latency histograms, one entry per frame or packet.
type Latencies struct {
	// Caller: arrival of the packet that completed a frame -> the frame handed to the agent.
	Caller LatencyHistogram
	// Agent: the time a packet was due to leave (tick, half tick) -> written to the link.
	Agent LatencyHistogram
	// AgentWake is the part of Agent before the engine ran at all: due -> the tick goroutine
	// woken by the timer and scheduled.
	AgentWake LatencyHistogram
}

// Merge adds another call's histograms (for figures across sessions).
func (l *Latencies) Merge(o *Latencies) {
	l.Caller.Merge(&o.Caller)
	l.Agent.Merge(&o.Agent)
	l.AgentWake.Merge(&o.AgentWake)
}

// Latencies returns a copy of the call's latency histograms.
func (c *Call) Latencies() *Latencies {
	c.statsMu.Lock()
	defer c.statsMu.Unlock()
	l := c.lat
	return &l
}

// MediaTime returns the media time reached (the end of the last tick processed).
func (c *Call) MediaTime() time.Duration {
	c.statsMu.Lock()
	defer c.statsMu.Unlock()
	return c.stats.MediaTime
}

// Recording returns the path of the recording ("" when none).
func (c *Call) Recording() string { return c.cfg.RecordingPath }

// AgentRate returns the rate of the caller frames delivered to the agent.
func (c *Call) AgentRate() int { return c.cfg.AgentRate }

// CallerDelay is the fixed delay of the caller audio delivered to the agent relative to the
// recording (the resampler's, when the agent takes 16 kHz).
func (c *Call) CallerDelay() time.Duration {
	if c.resample == nil {
		return 0
	}
	return c.resample.Delay()
}

// now returns the wall time for latency figures: the real time, or with a ManualClock the
// simulated time the test supplied (a tick's due time or a packet's arrival).
func (c *Call) now(simulated time.Time) time.Time {
	if c.manual {
		return simulated
	}
	return time.Now()
}

func (c *Call) emit(ev Event) {
	if c.cfg.OnEvent == nil {
		return
	}
	c.emitMu.Lock()
	defer c.emitMu.Unlock()
	c.cfg.OnEvent(ev)
}

// Close stops the clock, waits for the tick goroutine, finalizes the recording and frees the
// encoder. Safe in any state and more than once; it must not be called from a callback.
func (c *Call) Close() error {
	c.closeOnce.Do(func() {
		c.callerMu.Lock()
		c.closed = true
		c.callerMu.Unlock()
		c.clock.Stop()
		<-c.done
		c.link.Store(nil)
		var errs []error
		for _, r := range []*Recorder{c.rec, c.cleanRec} {
			if r == nil {
				continue
			}
			if err := r.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close call: %w", err))
			}
		}
		c.agentMu.Lock()
		if err := c.enc.close(); err != nil {
			errs = append(errs, fmt.Errorf("close call: %w", err))
		}
		c.encClosed = true
		c.agentMu.Unlock()
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}
