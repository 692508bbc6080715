package media

import (
	"log/slog"
	"sync"
	"time"

	"github.com/voicebench/humanaudit/internal/audio"
)

// agentSide is the agent's half of the call: its audio queued for playout and the Opus packets
// encoded ahead for the head of the queue. Guarded by mu, which PushAgentAudio, FlushAgent and the
// tick take only for queue work: libopus runs outside it (see encodeAhead), so the tick never
// waits for an encode it does not need.
type agentSide struct {
	mu        sync.Mutex
	enc       *opusEncoder // nil: no encoder configured (a synthetic call)
	q         []int16
	head      int
	pkts      [][]byte // Opus packets of the first whole 20 ms blocks of q[head:]
	encClosed bool
	nextTick  int64 // first tick that has not taken agent audio yet
	flushed   time.Duration

	// encoding is set while a goroutine encodes a block ahead outside mu: the encoder is its
	// alone until it clears the flag (and signals done). gen changes on a flush, so a packet
	// encoded for audio that was flushed meanwhile is thrown away.
	encoding bool
	done     sync.Cond
	gen      uint64
	block    [packetSamples]int16 // the block being encoded ahead
	free     [][]byte             // packet buffers to reuse (cap maxPacket)
}

// maxPacket is the largest Opus packet the engine makes (20 ms at the configured bitrates is far
// less); packet buffers are allocated once at this capacity and reused.
const maxPacket = 1500

// closeEncoder frees the encoder; later encodes are refused. Called with mu held (or before the
// call runs).
func (a *agentSide) closeEncoder() error {
	a.encClosed = true
	if a.enc == nil {
		return nil
	}
	return a.enc.close()
}

// buffer returns a packet buffer to encode into. Called with mu held.
func (a *agentSide) buffer() []byte {
	if n := len(a.free); n > 0 {
		b := a.free[n-1]
		a.free = a.free[:n-1]
		return b[:0]
	}
	return make([]byte, 0, maxPacket)
}

// recycle takes back packet buffers that were sent or dropped. Called with mu held.
func (a *agentSide) recycle(pkts ...[]byte) {
	for _, p := range pkts {
		if cap(p) == maxPacket {
			a.free = append(a.free, p[:0])
		}
	}
}

// PushAgentAudio queues the agent's 24 kHz PCM (any chunk size) for playout, 40 ms per tick, and
// encodes what it can ahead of the tick.
func (c *Call) PushAgentAudio(pcm []int16) error {
	c.agent.mu.Lock()
	if c.isClosed() {
		c.agent.mu.Unlock()
		return ErrClosed
	}
	if c.agent.head > 0 && c.agent.head >= len(c.agent.q)/2 {
		c.agent.q = c.agent.q[:copy(c.agent.q, c.agent.q[c.agent.head:])]
		c.agent.head = 0
	}
	c.agent.q = append(c.agent.q, pcm...)
	c.agent.mu.Unlock()
	c.encodeAhead()
	return nil
}

// encodeAheadMax bounds how many 20 ms blocks are encoded before their tick: enough to take the
// encoder off the tick's path, not so many that a barge-in flush throws much work away.
const encodeAheadMax = 6

// encodeAhead encodes whole queued 20 ms blocks, in queue order (so the encoder sees the audio
// exactly as it is sent), while a participant is attached. Each block is copied out and encoded
// without holding mu; if another goroutine is encoding already, it leaves the work to it.
func (c *Call) encodeAhead() {
	a := &c.agent
	for {
		a.mu.Lock()
		off := a.head + len(a.pkts)*packetSamples
		if a.encoding || a.enc == nil || a.encClosed || c.link.Load() == nil ||
			len(a.pkts) >= encodeAheadMax || off+packetSamples > len(a.q) {
			a.mu.Unlock()
			return
		}
		copy(a.block[:], a.q[off:off+packetSamples])
		a.encoding = true
		gen, buf := a.gen, a.buffer()
		a.mu.Unlock()

		pkt, err := a.enc.encode(buf, a.block[:])

		a.mu.Lock()
		a.encoding = false
		a.done.Broadcast()
		if err == nil && gen == a.gen {
			a.pkts = append(a.pkts, pkt)
		} else {
			a.recycle(pkt)
		}
		a.mu.Unlock()
		if err != nil {
			return // the tick encodes it again and reports the failure
		}
	}
}

// FlushAgent drops all queued agent audio at once (barge-in) and reports how much and from which
// media time the agent channel is silent. The tick already playing finishes its 40 ms.
func (c *Call) FlushAgent() FlushReport {
	c.agent.mu.Lock()
	dropped := len(c.agent.q) - c.agent.head
	c.agent.q, c.agent.head = c.agent.q[:0], 0
	c.agent.recycle(c.agent.pkts...)
	c.agent.pkts = c.agent.pkts[:0]
	c.agent.gen++ // a block being encoded ahead is of flushed audio
	d := time.Duration(dropped) * time.Second / audio.RecordRate
	c.agent.flushed += d
	at := time.Duration(c.agent.nextTick) * TickDuration
	c.agent.mu.Unlock()
	return FlushReport{Dropped: d, At: at, Wall: time.Now()}
}

// AgentQueued returns how much agent audio waits for playout.
func (c *Call) AgentQueued() time.Duration {
	c.agent.mu.Lock()
	defer c.agent.mu.Unlock()
	return time.Duration(len(c.agent.q)-c.agent.head) * time.Second / audio.RecordRate
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
		c.sendFailed(int64(ts)/int64(audio.FrameSamples*rtpPerSample), err)
		return
	}
	c.tk.sent++
	written := c.now(due)
	c.statsMu.Lock()
	c.lat.Agent.Add(written.Sub(due))
	c.lat.AgentWake.Add(woke.Sub(due))
	c.stats.AgentPacketsSent = c.tk.sent
	c.statsMu.Unlock()
}

func (c *Call) sendFailed(tick int64, err error) {
	c.tk.writeErrs++
	if c.tk.writeErrs == 1 || c.tk.writeErrs%250 == 0 {
		c.log.Warn("agent audio not sent", slog.Int64("tick", tick), slog.Int64("errors", c.tk.writeErrs), slog.Any("err", err))
	}
}
