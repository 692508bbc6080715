package media

import (
	"log/slog"
	"sync"
	"time"

	"github.com/voicebench/humanaudit/internal/audio"
)

// agentSide is the agent's half of the call: its audio queued for playout and the Opus packets
// encoded ahead for the head of the queue. Guarded by mu, which PushAgentAudio and FlushAgent (from
// the session, or from a callback) and the tick take; no other lock is taken while it is held.
type agentSide struct {
	mu        sync.Mutex
	enc       *opusEncoder // nil: no encoder configured (a synthetic call)
	q         []int16
	head      int
	pkts      [][]byte // Opus packets of the first whole 20 ms blocks of q[head:]
	encClosed bool
	nextTick  int64 // first tick that has not taken agent audio yet
	flushed   time.Duration
}

// closeEncoder frees the encoder; later encodes are refused. Called with mu held (or before the
// call runs).
func (a *agentSide) closeEncoder() error {
	a.encClosed = true
	if a.enc == nil {
		return nil
	}
	return a.enc.close()
}

// PushAgentAudio queues the agent's 24 kHz PCM (any chunk size) for playout, 40 ms per tick.
func (c *Call) PushAgentAudio(pcm []int16) error {
	c.agent.mu.Lock()
	defer c.agent.mu.Unlock()
	if c.isClosed() {
		return ErrClosed
	}
	if c.agent.head > 0 && c.agent.head >= len(c.agent.q)/2 {
		c.agent.q = c.agent.q[:copy(c.agent.q, c.agent.q[c.agent.head:])]
		c.agent.head = 0
	}
	c.agent.q = append(c.agent.q, pcm...)
	c.encodeAheadLocked()
	return nil
}

// encodeAheadMax bounds how many 20 ms blocks are encoded before their tick: enough to take the
// encoder off the tick's path, not so many that a barge-in flush throws much work away.
const encodeAheadMax = 6

// encodeAheadLocked encodes whole queued 20 ms blocks (in queue order, so the encoder sees the
// audio exactly as it will be sent) while a participant is attached.
func (c *Call) encodeAheadLocked() {
	if c.link.Load() == nil || c.agent.enc == nil || c.agent.encClosed {
		return
	}
	for len(c.agent.pkts) < encodeAheadMax {
		off := c.agent.head + len(c.agent.pkts)*packetSamples
		if off+packetSamples > len(c.agent.q) {
			return
		}
		pkt, err := c.agent.enc.encode(c.agent.q[off : off+packetSamples])
		if err != nil {
			return // the tick encodes it again and reports the failure
		}
		c.agent.pkts = append(c.agent.pkts, pkt)
	}
}

// FlushAgent drops all queued agent audio at once (barge-in) and reports how much and from which
// media time the agent channel is silent. The tick already playing finishes its 40 ms.
func (c *Call) FlushAgent() FlushReport {
	c.agent.mu.Lock()
	dropped := len(c.agent.q) - c.agent.head
	c.agent.q, c.agent.head = c.agent.q[:0], 0
	c.agent.pkts = c.agent.pkts[:0]
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
