package media

import "time"

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

// Latencies returns a copy of the call's latency histograms.
func (c *Call) Latencies() *Latencies {
	c.statsMu.Lock()
	defer c.statsMu.Unlock()
	l := c.lat
	return &l
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
