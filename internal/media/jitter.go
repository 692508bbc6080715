package media

import (
	"math"
	"time"

	"github.com/voicebench/humanaudit/internal/audio"
)

// CallerPacket is one RTP packet of the caller's Opus stream as the rtc layer hands it over. The
// engine copies Payload, so the caller may reuse its buffer.
type CallerPacket struct {
	SSRC      uint32    // stream identity; a new SSRC starts a new stream (a reload)
	Seq       uint16    // RTP sequence number (loss counting)
	Timestamp uint32    // RTP timestamp, 48 kHz (placement on the media clock)
	Payload   []byte    // one Opus packet
	Arrival   time.Time // wall time the packet was read from the network
}

// jitterSlots bounds the packets held at once (640 ms of 20 ms packets); maxPayload is larger than
// any Opus packet (1275 bytes per frame, a few frames).
const (
	jitterSlots = 32
	maxPayload  = 1500
	// streamJump is how far (in media samples) a packet of the current stream may land from the
	// playout point before it is treated as a new stream (a sender restart with the same SSRC).
	streamJump = 2 * audio.RecordRate
)

// jbPacket is a buffered, not yet decoded packet, positioned on the media timeline.
type jbPacket struct {
	start   int64 // media sample (24 kHz) of its first sample
	dur     int64 // samples at 24 kHz
	arrival time.Time
	payload []byte // a slot's storage
}

// insertResult says what became of a packet.
type insertResult int

const (
	insertQueued insertResult = iota
	insertNewStream
	insertLate      // its audio was already played; dropped
	insertDuplicate // same position as a buffered packet; dropped
	insertOverflow  // no free slot; dropped
	insertBad       // unreadable table of contents; dropped
)

// jitterBuffer holds the caller's packets by unwrapped RTP timestamp until the tick that plays
// them, decodes them in timestamp order, and writes each packet's audio at the media position
// its timestamp gives, so a lost packet leaves silence where it was and never shifts later audio.
// It also keeps the RFC 3550 receive statistics of the stream. Not safe for concurrent use.
type jitterBuffer struct {
	dec *opusDecoder

	active  bool // a live stream: missing audio after its anchor is concealment
	started bool // a stream has been anchored (it may have ended since)
	ssrc    uint32
	e0, s0  int64 // anchor: extended RTP timestamp e0 plays at media sample s0
	hiTS    int64 // highest extended timestamp seen
	hiEnd   int64 // media end of the furthest packet seen (for stream-end bookkeeping)
	pkts    []jbPacket
	free    [][]byte
	carry   []int16 // decoded samples at [carryAt, carryAt+len) not yet played
	carryAt int64

	// RFC 3550 A.3 / A.8 statistics of the current stream.
	baseSeq, hiSeq int64
	received       int64
	jitter         float64 // seconds
	lastTransit    float64
	haveTransit    bool
	epoch          time.Time
	decodeErrors   int64
}

func newJitterBuffer(newDecoder func() (Decoder, error)) (*jitterBuffer, error) {
	dec, err := newOpusDecoder(newDecoder)
	if err != nil {
		return nil, err
	}
	jb := &jitterBuffer{dec: dec, pkts: make([]jbPacket, 0, jitterSlots), carry: make([]int16, 0, audio.RecordRate*120/1000)}
	for range jitterSlots {
		jb.free = append(jb.free, make([]byte, 0, maxPayload))
	}
	return jb, nil
}

// mediaStart returns where a packet with extended timestamp ets plays.
func (jb *jitterBuffer) mediaStart(ets int64) int64 { return jb.s0 + (ets-jb.e0)/rtpPerSample }

// extend unwraps a 32-bit timestamp against the highest seen.
func (jb *jitterBuffer) extend(ts uint32) int64 {
	return jb.hiTS + int64(int32(ts-uint32(jb.hiTS)))
}

// classify decides whether p continues the active stream, and returns its extended timestamp.
func (jb *jitterBuffer) continues(p *CallerPacket, playout int64) (int64, bool) {
	if !jb.active || p.SSRC != jb.ssrc {
		return 0, false
	}
	ets := jb.extend(p.Timestamp)
	if m := jb.mediaStart(ets); m > playout+streamJump || m < playout-streamJump {
		return 0, false
	}
	return ets, true
}

// begin anchors a new stream whose first packet p plays at media sample s0, dropping any packets
// of the previous stream, and returns how many were dropped.
func (jb *jitterBuffer) begin(p *CallerPacket, s0 int64) int {
	dropped := len(jb.pkts)
	for _, q := range jb.pkts {
		jb.free = append(jb.free, q.payload[:0])
	}
	jb.pkts = jb.pkts[:0]
	jb.carry = jb.carry[:0]
	if err := jb.dec.reset(); err != nil {
		jb.decodeErrors++
	}
	jb.active, jb.started, jb.ssrc = true, true, p.SSRC
	jb.e0, jb.s0, jb.hiTS = int64(p.Timestamp), s0, int64(p.Timestamp)
	jb.hiEnd = s0
	jb.baseSeq, jb.hiSeq = int64(p.Seq), int64(p.Seq)-1
	jb.received, jb.jitter, jb.haveTransit = 0, 0, false
	jb.epoch = p.Arrival
	return dropped
}

// insert buffers a packet of the active stream (continues returned true). playedUpTo is the
// media sample before which audio has already been assembled.
func (jb *jitterBuffer) insert(p *CallerPacket, ets int64, playedUpTo int64) (insertResult, int64) {
	jb.receiveStats(p, ets)
	dur48, err := opusPacketSamples48(p.Payload)
	if err != nil {
		jb.decodeErrors++
		return insertBad, 0
	}
	start := jb.mediaStart(ets)
	dur := int64(dur48 / rtpPerSample)
	if start+dur <= playedUpTo {
		return insertLate, start
	}
	jb.hiEnd = max(jb.hiEnd, start+dur)
	// Keep pkts sorted by start; packets normally arrive in order, so search from the back.
	i := len(jb.pkts)
	for i > 0 && jb.pkts[i-1].start > start {
		i--
	}
	if i > 0 && jb.pkts[i-1].start == start {
		return insertDuplicate, start
	}
	if len(jb.free) == 0 {
		return insertOverflow, start
	}
	buf := jb.free[len(jb.free)-1]
	jb.free = jb.free[:len(jb.free)-1]
	if len(p.Payload) > cap(buf) {
		buf = make([]byte, 0, len(p.Payload))
	}
	buf = append(buf[:0], p.Payload...)
	jb.pkts = append(jb.pkts, jbPacket{})
	copy(jb.pkts[i+1:], jb.pkts[i:])
	jb.pkts[i] = jbPacket{start: start, dur: dur, arrival: p.Arrival, payload: buf}
	return insertQueued, start
}

// receiveStats updates the RFC 3550 loss and interarrival-jitter state for every packet received.
func (jb *jitterBuffer) receiveStats(p *CallerPacket, ets int64) {
	seq := jb.hiSeq + int64(int16(p.Seq-uint16(jb.hiSeq)))
	jb.hiSeq = max(jb.hiSeq, seq)
	jb.received++
	jb.hiTS = max(jb.hiTS, ets)
	transit := p.Arrival.Sub(jb.epoch).Seconds() - float64(ets-jb.e0)/opusRTPRate
	if jb.haveTransit {
		d := math.Abs(transit - jb.lastTransit)
		jb.jitter += (d - jb.jitter) / 16
	}
	jb.lastTransit, jb.haveTransit = transit, true
}

// expected and lost are the RFC 3550 cumulative counts for the current stream.
func (jb *jitterBuffer) expected() int64 {
	if !jb.active {
		return 0
	}
	return jb.hiSeq - jb.baseSeq + 1
}

func (jb *jitterBuffer) lost() int64 { return max(0, jb.expected()-jb.received) }

// complete reports whether the buffered packets (and carried audio) cover the stream's part of
// [fs, fe) without a hole, and when the last of them arrived.
func (jb *jitterBuffer) complete(fs, fe int64) (bool, time.Time) {
	cursor := max(fs, jb.s0)
	if len(jb.carry) > 0 && jb.carryAt <= cursor {
		cursor = max(cursor, jb.carryAt+int64(len(jb.carry)))
	}
	var last time.Time
	for i := range jb.pkts {
		q := &jb.pkts[i]
		if cursor >= fe {
			break
		}
		if q.start+q.dur <= cursor {
			continue
		}
		if q.start > cursor {
			return false, last
		}
		cursor = q.start + q.dur
		if q.arrival.After(last) {
			last = q.arrival
		}
	}
	return cursor >= fe, last
}

// assemble writes the audio of media samples [fs, fs+len(out)) into out: decoded packets at their
// positions, silence elsewhere. It returns how many samples inside the stream were missing
// (concealed with silence) and the latest arrival among the packets used.
func (jb *jitterBuffer) assemble(fs int64, out []int16) (concealed int, last time.Time) {
	fe := fs + int64(len(out))
	clear(out)
	got := int64(0)
	// Carried tail of a packet that straddled the previous frame.
	if n := len(jb.carry); n > 0 {
		got += place(out, fs, jb.carryAt, jb.carry)
		if jb.carryAt+int64(n) > fe {
			k := int(fe - jb.carryAt)
			copy(jb.carry, jb.carry[k:])
			jb.carry = jb.carry[:n-k]
			jb.carryAt = fe
		} else {
			jb.carry = jb.carry[:0]
		}
	}
	used := 0
	for used < len(jb.pkts) && jb.pkts[used].start < fe {
		q := &jb.pkts[used]
		used++
		if q.arrival.After(last) {
			last = q.arrival
		}
		pcm, err := jb.dec.decode(q.payload)
		if err != nil {
			jb.decodeErrors++
			continue
		}
		got += place(out, fs, q.start, pcm)
		if end := q.start + int64(len(pcm)); end > fe {
			tail := pcm[fe-q.start:]
			jb.carry = append(jb.carry[:0], tail...)
			jb.carryAt = fe
		}
	}
	for i := range used {
		jb.free = append(jb.free, jb.pkts[i].payload[:0])
	}
	jb.pkts = jb.pkts[:copy(jb.pkts, jb.pkts[used:])]
	// Samples the stream should have filled: everything from its anchor while it is live; after it
	// ended (peer detached), only up to the furthest packet seen.
	end := fe
	if !jb.active {
		end = min(fe, jb.hiEnd)
	}
	if want := end - max(fs, jb.s0); jb.started && want > got {
		concealed = int(want - got)
	}
	return concealed, last
}

// place copies the part of pcm (starting at media sample at) that falls in the frame starting at
// fs into out, and returns how many samples it placed.
func place(out []int16, fs, at int64, pcm []int16) int64 {
	fe := fs + int64(len(out))
	lo, hi := max(at, fs), min(at+int64(len(pcm)), fe)
	if hi <= lo {
		return 0
	}
	copy(out[lo-fs:hi-fs], pcm[lo-at:hi-at])
	return hi - lo
}

// end marks the stream as ended (its peer detached): nothing after its last packet is missing audio.
func (jb *jitterBuffer) end() { jb.active = false }
