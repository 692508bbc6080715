package media

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/voicebench/humanaudit/internal/audio"
)

// frameRing is how many caller frames may be assembled ahead of the tick that records them.
const frameRing = 4

type callerFrameSlot struct {
	pcm       audio.Frame
	concealed int
}

// callerSide is the caller's half of the call: the participant's stream through the jitter buffer
// (or a synthetic caller's queue), the frames assembled and delivered to the agent, the caller's
// endpointer, and the phase lock of the clock to the caller's packets. Guarded by mu, which the
// tick takes to assemble a frame no packet completed and the rtc read loop takes for each packet.
type callerSide struct {
	mu           sync.Mutex
	closed       bool
	jb           *jitterBuffer
	pcmQueue     []int16 // synthetic caller audio; [pcmHead:] not yet played
	pcmHead      int
	nextFrame    int64 // first frame not yet assembled
	curTick      int64 // highest tick whose processing has started
	ring         [frameRing]callerFrameSlot
	agentPCM     []int16 // caller frame at the agent's rate
	ep           *audio.Endpointer
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
}

func newCallerSide(ep *audio.Endpointer) callerSide {
	return callerSide{
		ep:          ep,
		curTick:     -1,
		gapStart:    -1,
		retardGuard: -1,
		winMin:      time.Hour,
		agentPCM:    make([]int16, 0, audio.FrameSamples),
	}
}

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

// ReceiveCallerRTP takes one packet of the participant's Opus stream (from the rtc read loop of
// the link it came from). A packet that completes the next frame delivers it to the agent at once,
// ahead of its tick. Packets from a link that is not the attached one (a peer replaced by a
// reload) are refused with ErrNotAttached, so two streams never mix.
func (c *Call) ReceiveCallerRTP(from ParticipantLink, p CallerPacket) error {
	c.caller.mu.Lock()
	defer c.caller.mu.Unlock()
	if c.caller.closed {
		return ErrClosed
	}
	if c.cfg.CallerInput != CallerRTP {
		return ErrWrongInput
	}
	if h := c.link.Load(); h == nil || h.link != from {
		return ErrNotAttached
	}
	playout := c.caller.nextFrame * audio.FrameSamples
	ets, ok := c.caller.jb.continues(&p, playout)
	if !ok {
		if err := c.beginStreamLocked(&p); err != nil {
			c.caller.cc.discarded++
			return nil // an unreadable first packet: wait for the next one
		}
		ets = int64(p.Timestamp)
	}
	res, start := c.caller.jb.insert(&p, ets, playout)
	c.caller.cc.received = c.caller.cc.prevReceived + c.caller.jb.received
	c.caller.cc.lost = c.caller.cc.prevLost + c.caller.jb.lost()
	switch res {
	case insertLate:
		c.caller.cc.late++
		c.retardLocked(&p, start)
	case insertDuplicate, insertOverflow, insertBad:
		c.caller.cc.discarded++
	}
	// Deliver the frames the packets have completed at once (no later than the frame ring allows):
	// the agent hears the caller without waiting for the tick that records the frame.
	for c.caller.nextFrame < c.caller.curTick+frameRing {
		fs := c.caller.nextFrame * audio.FrameSamples
		if ok, _ := c.caller.jb.complete(fs, fs+audio.FrameSamples); !ok {
			break
		}
		c.assembleLocked(p.Arrival)
	}
	return nil
}

// assembleLocked builds caller frame c.caller.nextFrame from the jitter buffer (or the synthetic queue),
// runs the caller endpointer and delivers it to the agent. now is the wall time of delivery.
func (c *Call) assembleLocked(now time.Time) {
	n := c.caller.nextFrame
	c.caller.nextFrame++
	slot := &c.caller.ring[n%frameRing]
	fs := n * audio.FrameSamples
	var last time.Time
	if c.cfg.CallerInput == CallerPCM {
		k := copy(slot.pcm[:], c.caller.pcmQueue[c.caller.pcmHead:])
		clear(slot.pcm[k:])
		c.caller.pcmHead += k
		if c.caller.pcmHead == len(c.caller.pcmQueue) {
			c.caller.pcmQueue, c.caller.pcmHead = c.caller.pcmQueue[:0], 0
		}
		slot.concealed = 0
	} else {
		slot.concealed, last = c.caller.jb.assemble(fs, slot.pcm[:])
		c.trackGapLocked(fs, slot.concealed, now)
		c.phaseLocked(n, slot.concealed, last)
		c.caller.cc.concealed += int64(slot.concealed)
		c.caller.cc.decodeErrs = c.caller.cc.prevDecodeErrs + c.caller.jb.decodeErrors
		c.caller.cc.jitter = time.Duration(c.caller.jb.jitter * float64(time.Second))
	}
	c.caller.cc.level = audio.RMSDBFS(slot.pcm[:])

	start := time.Duration(n) * TickDuration
	pcm := slot.pcm[:]
	if c.resample != nil {
		c.caller.agentPCM = c.resample.Process(slot.pcm[:], c.caller.agentPCM)
		pcm = c.caller.agentPCM
		start -= c.resample.Delay()
	}
	c.caller.ep.Process(slot.pcm[:], audio.RecordRate, time.Duration(n)*TickDuration, func(ev audio.SpeechEvent) {
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
		if c.caller.gapStart < 0 {
			c.caller.gapStart = fs + audio.FrameSamples - int64(concealed) // approximate: missing tail of the frame
		}
		c.caller.gapLen += int64(concealed)
		return
	}
	c.flushGapLocked(now)
}

func (c *Call) flushGapLocked(now time.Time) {
	if c.caller.gapStart >= 0 && time.Duration(c.caller.gapLen)*time.Second/audio.RecordRate >= MinReportedGap {
		at := time.Duration(c.caller.gapStart) * time.Second / audio.RecordRate
		c.emit(Event{Kind: CallerGap, At: at, Detected: at, Duration: time.Duration(c.caller.gapLen) * time.Second / audio.RecordRate, Wall: now})
	}
	c.caller.gapStart, c.caller.gapLen = -1, 0
}

// phaseLocked keeps the clock locked to the caller's packets: each complete frame's slack (how
// long before its tick it was complete) feeds a one-second window; too little slack delays the
// ticks, lasting surplus advances them (5 ms a second, or half the surplus when it is large).
func (c *Call) phaseLocked(n int64, concealed int, last time.Time) {
	if !c.caller.jb.active {
		return
	}
	c.caller.winFrames++
	if concealed == 0 && !last.IsZero() {
		slack := c.clock.Due(n).Sub(last)
		c.caller.winMin = min(c.caller.winMin, slack)
		c.caller.winComplete++
	}
	if c.caller.winFrames < 25 {
		return
	}
	if c.caller.winComplete >= 10 {
		c.caller.cc.slack = c.caller.winMin
		// Release: at least 5 ms a second, and half of a large surplus at once.
		const hysteresis, step = 2 * time.Millisecond, 5 * time.Millisecond
		switch excess := c.caller.winMin - c.margin; {
		case excess > hysteresis:
			c.clock.Shift(-min(excess, max(step, excess/2)))
		case c.caller.winMin < c.margin/2:
			c.clock.Shift(c.margin - c.caller.winMin)
		}
	}
	c.caller.winFrames, c.caller.winComplete, c.caller.winMin = 0, 0, time.Hour
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
	frame := start / audio.FrameSamples
	if frame <= c.caller.retardGuard || frame < c.caller.nextFrame-2 {
		return // already corrected for this burst, or stale
	}
	lateness := p.Arrival.Sub(c.clock.Due(frame))
	if lateness > 0 {
		// A token bucket bounds the corrections: packets read late because this process was
		// starved look exactly like network lateness, and chasing them would push the clock
		// further and further behind the caller.
		if !c.caller.retardAt.IsZero() {
			refill := time.Duration(float64(p.Arrival.Sub(c.caller.retardAt)) * retardRefillPerSecond)
			c.caller.retardBudget = min(retardBurst, c.caller.retardBudget+max(0, refill))
		}
		c.caller.retardAt = p.Arrival
		d := min(lateness+c.margin, maxRetard, c.caller.retardBudget)
		if d <= 0 {
			return
		}
		c.caller.retardBudget -= d
		c.clock.Shift(d)
		c.caller.retardGuard = c.caller.nextFrame + 1
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
	dt := time.Duration(d) * time.Second / audio.RecordRate
	k := max(c.caller.nextFrame, c.caller.curTick+1)
	type choice struct {
		f, s0 int64
		shift time.Duration
	}
	best := choice{shift: time.Hour}
	for j := int64(0); j == 0 || j*d < audio.FrameSamples; j++ {
		// The frame completes when the j-th packet after this one arrives.
		target := p.Arrival.Add(time.Duration(j)*dt + c.margin)
		for f := k; f < k+3+d/audio.FrameSamples; f++ {
			s0 := (f+1)*audio.FrameSamples - (j+1)*d
			if s0 < k*audio.FrameSamples {
				continue
			}
			shift := target.Sub(c.clock.Due(f))
			if abs(shift) < abs(best.shift) {
				best = choice{f: f, s0: s0, shift: shift}
			}
		}
	}
	if c.caller.jb.started {
		if c.caller.jb.active {
			c.endStreamLocked(p.Arrival)
		}
		c.caller.cc.prevReceived += c.caller.jb.received
		c.caller.cc.prevLost += c.caller.jb.lost()
		c.caller.cc.prevDecodeErrs += c.caller.jb.decodeErrors
		c.caller.jb.decodeErrors = 0
	}
	c.caller.cc.discarded += int64(c.caller.jb.begin(p, best.s0))
	c.clock.Shift(best.shift)
	c.caller.streams++
	c.caller.cc.streams = c.caller.streams
	c.caller.winFrames, c.caller.winComplete, c.caller.winMin = 0, 0, time.Hour
	c.caller.retardGuard = -1
	c.caller.retardBudget, c.caller.retardAt = retardBurst, time.Time{}
	at := time.Duration(best.s0) * time.Second / audio.RecordRate
	gap := time.Duration(0)
	if c.caller.streams > 1 {
		gap = at - c.caller.lastStreamAt
	}
	c.log.Info("caller stream started", slog.Uint64("ssrc", uint64(p.SSRC)), slog.Duration("at", at),
		slog.Duration("gap", gap), slog.Duration("clock_shift", best.shift))
	c.emit(Event{Kind: CallerStreamStart, At: at, Detected: at, Duration: gap, SSRC: p.SSRC, Wall: p.Arrival})
	return nil
}

func (c *Call) endStreamLocked(now time.Time) {
	c.caller.jb.end()
	c.flushGapLocked(now)
	c.caller.lastStreamAt = time.Duration(c.caller.jb.hiEnd) * time.Second / audio.RecordRate
	c.emit(Event{Kind: CallerStreamEnd, At: c.caller.lastStreamAt, Detected: c.caller.lastStreamAt, SSRC: c.caller.jb.ssrc, Wall: now})
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// PushCallerPCM queues a synthetic caller's 24 kHz PCM; the tick plays it out 40 ms at a time. It
// returns the media time at which pcm[0] will be on the caller channel (and in the recording): the
// end of the audio already queued, or the start of the first frame not assembled yet. The session
// stamps the caller's utterance with it.
func (c *Call) PushCallerPCM(pcm []int16) (time.Duration, error) {
	c.caller.mu.Lock()
	defer c.caller.mu.Unlock()
	if c.caller.closed {
		return 0, ErrClosed
	}
	if c.cfg.CallerInput != CallerPCM {
		return 0, ErrWrongInput
	}
	if c.caller.pcmHead > 0 && c.caller.pcmHead >= len(c.caller.pcmQueue)/2 {
		c.caller.pcmQueue = c.caller.pcmQueue[:copy(c.caller.pcmQueue, c.caller.pcmQueue[c.caller.pcmHead:])]
		c.caller.pcmHead = 0
	}
	at := c.caller.nextFrame*audio.FrameSamples + int64(len(c.caller.pcmQueue)-c.caller.pcmHead)
	c.caller.pcmQueue = append(c.caller.pcmQueue, pcm...)
	return audio.SamplesToDuration(at, audio.RecordRate), nil
}

// CallerQueued returns how much synthetic caller audio is waiting to be played.
func (c *Call) CallerQueued() time.Duration {
	c.caller.mu.Lock()
	defer c.caller.mu.Unlock()
	return time.Duration(len(c.caller.pcmQueue)-c.caller.pcmHead) * time.Second / audio.RecordRate
}

// Attach makes link the destination of the agent's audio (a participant connected or reloaded).
// The caller stream restarts with the link's first packet.
func (c *Call) Attach(link ParticipantLink) error {
	c.caller.mu.Lock()
	defer c.caller.mu.Unlock()
	if c.caller.closed {
		return ErrClosed
	}
	if c.agent.enc == nil { // set before the call runs, never changed
		return fmt.Errorf("attach: %w: the call has no Opus encoder (CallConfig.NewEncoder)", ErrBadConfig)
	}
	c.link.Store(&linkHolder{link: link})
	return nil
}

// Detach stops sending to link if it is the attached one, and ends its caller stream: the
// silence until the next Attach is recorded as such and reported with the next stream's start.
func (c *Call) Detach(link ParticipantLink) {
	c.caller.mu.Lock()
	defer c.caller.mu.Unlock()
	h := c.link.Load()
	if h == nil || h.link != link {
		return
	}
	c.link.Store(nil)
	if c.caller.jb.active {
		c.endStreamLocked(time.Now())
	}
}
