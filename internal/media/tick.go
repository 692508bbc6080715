package media

import (
	"errors"
	"log/slog"
	"time"

	"github.com/voicebench/humanaudit/internal/audio"
)

// tickState belongs to the tick goroutine alone: the frames it records and sends, the agent's
// endpointer, level windows and counters it snapshots into Stats.
type tickState struct {
	agentFrame audio.Frame
	callerRec  audio.Frame
	ep         *audio.Endpointer
	callerPk   levelWindow
	agentPk    levelWindow
	sent       int64
	half       pendingPacket
	sentPkts   [2][]byte // this tick's packets: their buffers go back to the pool at the next tick
	writeErrs  int64
	lateTicks  int64
	maxLate    time.Duration
}

// run is the tick goroutine: tick n at its due time, then its second agent packet at the half tick.
func (c *Call) run() {
	defer close(c.done)
	for n := int64(0); ; n++ {
		tk, err := c.clock.Next(n)
		if err != nil {
			return
		}
		c.tick(tk)
		if c.tk.half.link != nil {
			if err := c.clock.WaitUntil(c.tk.half.due); err != nil {
				return
			}
			if cur := c.link.Load(); cur == c.tk.half.link {
				c.sendAgent(cur, c.tk.half.pkt, c.tk.half.ts, c.tk.half.due, c.now(c.tk.half.due))
			}
			c.tk.half = pendingPacket{}
		}
	}
}

// tick does one period's work: agent packets, caller frame (if not delivered early), recording.
func (c *Call) tick(tk Tick) {
	n := tk.N
	if late := tk.Start.Sub(tk.Due); late > LateTickThreshold {
		c.tk.lateTicks++
		c.tk.maxLate = max(c.tk.maxLate, late)
		c.emit(Event{Kind: LateTick, At: tk.MediaTime(), Detected: tk.MediaTime(), Duration: late, Wall: tk.Start})
	}

	// Agent first, the most time-critical: exactly 40 ms of queued audio, silence when the agent
	// is quiet. Its two 20 ms packets were usually encoded when the audio was pushed; what was not
	// (a short tail, audio queued while no participant was attached) is encoded now.
	h := c.link.Load()
	var pkts [2][]byte
	a := &c.agent
	a.mu.Lock()
	a.recycle(c.tk.sentPkts[:]...) // the last tick's packets have gone out
	c.tk.sentPkts = [2][]byte{}
	for a.encoding && len(a.pkts) < len(pkts) {
		a.done.Wait() // the block being encoded ahead is this tick's: wait for it, do not redo it
	}
	k := copy(c.tk.agentFrame[:], a.q[a.head:])
	clear(c.tk.agentFrame[k:])
	a.head += k
	if a.head == len(a.q) {
		a.q, a.head = a.q[:0], 0
	}
	pre := copy(pkts[:], a.pkts)
	a.pkts = a.pkts[:copy(a.pkts, a.pkts[pre:])]
	if h != nil && a.enc != nil && !a.encoding {
		for b := pre; b < len(pkts); b++ {
			pkt, err := a.enc.encode(a.buffer(), c.tk.agentFrame[b*packetSamples:(b+1)*packetSamples])
			if err != nil {
				c.sendFailed(n, err)
				a.recycle(pkt)
				continue
			}
			pkts[b] = pkt
		}
	}
	c.tk.sentPkts = pkts
	queued := len(a.q) - a.head
	a.nextTick = n + 1
	flushed := a.flushed
	var encoded int64
	if a.enc != nil {
		encoded = a.enc.encoded.Load()
	}
	a.mu.Unlock()

	// The first packet goes out now, the second at the half tick (see run), so the participant's
	// jitter buffer sees a smooth 20 ms cadence instead of pairs, which would make it hold 20 ms more.
	c.tk.half = pendingPacket{}
	if h != nil {
		ts := uint32(n * int64(audio.FrameSamples*rtpPerSample))
		if pkts[0] != nil {
			c.sendAgent(h, pkts[0], ts, tk.Due, tk.Start)
		}
		if pkts[1] != nil {
			c.tk.half = pendingPacket{link: h, pkt: pkts[1], ts: ts + packetSamples*rtpPerSample, due: tk.Due.Add(TickDuration / 2)}
		}
	}

	// Caller: the frame for this tick, assembled now unless packets completed it already (its
	// audio reaches the agent after this tick's agent audio was taken: a reply can never be heard
	// in the tick that prompted it).
	c.caller.mu.Lock()
	c.caller.curTick = n
	for c.caller.nextFrame <= n {
		c.assembleLocked(tk.Start)
	}
	slot := &c.caller.ring[n%frameRing]
	copy(c.tk.callerRec[:], slot.pcm[:])
	cc := c.caller.cc
	c.caller.mu.Unlock()

	if h != nil {
		c.encodeAhead() // audio the agent sent ahead of real time
	}

	var recErr error
	if c.rec != nil {
		recErr = c.rec.Write(c.tk.callerRec[:], c.tk.agentFrame[:])
	}

	agentLevel := audio.RMSDBFS(c.tk.agentFrame[:])
	c.tk.ep.Process(c.tk.agentFrame[:], audio.RecordRate, tk.MediaTime(), func(ev audio.SpeechEvent) {
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
	s.LateTicks, s.MaxTickLateness = c.tk.lateTicks, c.tk.maxLate
	s.CallerStreams = cc.streams
	s.CallerPacketsReceived = cc.received
	s.CallerPacketsLost = cc.lost
	s.CallerPacketsLate = cc.late
	s.CallerPacketsDiscarded = cc.discarded
	s.CallerDecodeErrors = cc.decodeErrs
	s.CallerConcealed = time.Duration(cc.concealed) * time.Second / audio.RecordRate
	s.CallerJitter = cc.jitter
	s.CallerSlack = cc.slack
	s.CallerLevel = cc.level
	s.CallerPeak = c.tk.callerPk.add(cc.level)
	s.AgentQueued = time.Duration(queued) * time.Second / audio.RecordRate
	s.AgentFlushed = flushed
	s.AgentPacketsSent = c.tk.sent
	s.AgentPacketsEncoded = encoded
	s.AgentLevel = agentLevel
	s.AgentPeak = c.tk.agentPk.add(agentLevel)
	s.AgentLinkWriteErrors = c.tk.writeErrs
	c.statsMu.Unlock()
	if recErr != nil && !errors.Is(recErr, audio.ErrClosed) {
		c.log.Error("recording failed", slog.String("path", c.cfg.RecordingPath), slog.Any("err", recErr))
	}
}
