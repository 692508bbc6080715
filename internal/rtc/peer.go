package rtc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/voicebench/humanaudit/internal/media"
)

// MediaCall is the media engine a Peer feeds; *media.Call implements it.
type MediaCall interface {
	ReceiveCallerRTP(from media.ParticipantLink, p media.CallerPacket) error
	Attach(media.ParticipantLink) error
	Detach(media.ParticipantLink)
	UpdateLinkQuality(media.LinkQuality)
}

var _ MediaCall = (*media.Call)(nil)

// Message is one JSON object the browser sent on the DataChannel.
type Message struct {
	Type     string          // the object's "type" field ("cue.shown", …)
	Raw      json.RawMessage // the whole object
	Received time.Time       // wall time it arrived
}

// outboxLimit bounds messages queued while the DataChannel is not open yet.
const outboxLimit = 256

// Peer is one participant's PeerConnection: the browser's microphone in, the agent's voice out, and
// a DataChannel for JSON messages both ways.
type Peer struct {
	e    *Endpoint
	log  *slog.Logger
	opts PeerOptions
	pc   *webrtc.PeerConnection

	track      *webrtc.TrackLocalStaticRTP
	senderSSRC uint32

	call atomic.Pointer[callHolder]

	// Outgoing RTP state: only the attached call's tick goroutine writes.
	out    rtp.Packet
	seq    uint16
	tsBase uint32

	mu     sync.Mutex
	dc     *webrtc.DataChannel
	dcOpen bool
	outbox []string
	closed bool
	wg     sync.WaitGroup

	connectedFlag atomic.Bool
	connected     chan struct{}
	connOnce      sync.Once
	done          chan struct{}
	doneOnce      sync.Once
	err           error // why the peer ended; set before done is closed

	closeOnce sync.Once
	closeErr  error

	callerPackets atomic.Int64
	agentPackets  atomic.Int64
	badMessages   atomic.Int64
	quality       atomic.Pointer[media.LinkQuality]
}

type callHolder struct{ call MediaCall }

func newPeer(e *Endpoint, opts PeerOptions) (*Peer, error) {
	pc, err := e.api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return nil, fmt.Errorf("rtc peer: %w", err)
	}
	p := &Peer{
		e:         e,
		log:       e.log.With(slog.String("peer", opts.Name)),
		opts:      opts,
		pc:        pc,
		seq:       uint16(rand.Uint32()),
		tsBase:    rand.Uint32(),
		connected: make(chan struct{}),
		done:      make(chan struct{}),
	}
	pc.OnTrack(p.onTrack)
	pc.OnDataChannel(p.onDataChannel)
	pc.OnConnectionStateChange(p.onState)
	return p, nil
}

// negotiate applies the offer, adds the agent's track and returns the complete answer.
func (p *Peer) negotiate(ctx context.Context, offer string) (string, error) {
	if err := p.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer}); err != nil {
		return "", fmt.Errorf("%w: rejected by WebRTC: %v", ErrBadOffer, err)
	}
	track, err := webrtc.NewTrackLocalStaticRTP(opusCapability, "agent", "agent")
	if err != nil {
		return "", fmt.Errorf("rtc peer: %w", err)
	}
	sender, err := p.pc.AddTrack(track)
	if err != nil {
		return "", fmt.Errorf("rtc peer: add agent track: %w", err)
	}
	p.track = track
	if enc := sender.GetParameters().Encodings; len(enc) > 0 {
		p.senderSSRC = uint32(enc[0].SSRC)
	}
	p.mu.Lock()
	p.wg.Add(1)
	p.mu.Unlock()
	go p.readRTCP(sender)

	answer, err := p.pc.CreateAnswer(nil)
	if err != nil {
		return "", fmt.Errorf("%w: no answer possible: %v", ErrBadOffer, err)
	}
	gathered := webrtc.GatheringCompletePromise(p.pc)
	if err := p.pc.SetLocalDescription(answer); err != nil {
		return "", fmt.Errorf("rtc peer: set local description: %w", err)
	}
	timer := time.NewTimer(p.e.cfg.GatherTimeout)
	defer timer.Stop()
	select {
	case <-gathered:
	case <-ctx.Done():
		return "", fmt.Errorf("rtc peer: ICE gathering: %w", ctx.Err())
	case <-timer.C:
		return "", fmt.Errorf("rtc peer: ICE gathering not complete after %v", p.e.cfg.GatherTimeout)
	}
	return p.pc.LocalDescription().SDP, nil
}

func (p *Peer) onTrack(tr *webrtc.TrackRemote, rcv *webrtc.RTPReceiver) {
	if tr.Kind() != webrtc.RTPCodecTypeAudio {
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.wg.Add(2)
	p.mu.Unlock()
	p.log.Info("caller track", slog.Uint64("ssrc", uint64(tr.SSRC())), slog.String("codec", tr.Codec().MimeType))
	go p.readCaller(tr)
	go p.drainRTCP(rcv)
}

// drainRTCP reads the caller stream's RTCP so the report interceptor sees the participant's sender
// reports (it echoes them in our receiver reports, which gives the browser its round-trip time).
func (p *Peer) drainRTCP(rcv *webrtc.RTPReceiver) {
	defer p.wg.Done()
	buf := make([]byte, 1500)
	for {
		if _, _, err := rcv.Read(buf); err != nil {
			return
		}
	}
}

// readCaller forwards the participant's RTP to the attached call, stamped with its arrival time.
func (p *Peer) readCaller(tr *webrtc.TrackRemote) {
	defer p.wg.Done()
	buf := make([]byte, 1500)
	var pkt rtp.Packet
	for {
		n, _, err := tr.Read(buf)
		if err != nil {
			return
		}
		arrival := time.Now()
		if err := pkt.Unmarshal(buf[:n]); err != nil {
			continue
		}
		p.callerPackets.Add(1)
		p.opts.Tap.feed(tapPacket{ssrc: pkt.SSRC, ts: pkt.Timestamp, payload: pkt.Payload})
		if h := p.call.Load(); h != nil {
			err := h.call.ReceiveCallerRTP(p, media.CallerPacket{
				SSRC: pkt.SSRC, Seq: pkt.SequenceNumber, Timestamp: pkt.Timestamp,
				Payload: pkt.Payload, Arrival: arrival,
			})
			if errors.Is(err, media.ErrNotAttached) || errors.Is(err, media.ErrClosed) {
				// Another peer took over the call (a reload), or the call ended: stop feeding it.
				p.call.CompareAndSwap(h, nil)
			}
		}
	}
}

// readRTCP drains the agent track's RTCP (the report interceptor needs it read) and turns the
// participant's receiver reports into link quality.
func (p *Peer) readRTCP(sender *webrtc.RTPSender) {
	defer p.wg.Done()
	buf := make([]byte, 1500)
	for {
		n, _, err := sender.Read(buf)
		if err != nil {
			return
		}
		pkts, err := rtcp.Unmarshal(buf[:n])
		if err != nil {
			continue
		}
		now := time.Now()
		for _, pk := range pkts {
			switch r := pk.(type) {
			case *rtcp.ReceiverReport:
				p.onReports(r.Reports, now)
			case *rtcp.SenderReport:
				p.onReports(r.Reports, now)
			}
		}
	}
}

func (p *Peer) onReports(blocks []rtcp.ReceptionReport, now time.Time) {
	for _, b := range blocks {
		if b.SSRC != p.senderSSRC {
			continue
		}
		q := media.LinkQuality{
			RemoteJitter:       time.Duration(b.Jitter) * time.Second / 48000,
			RemoteLost:         int64(b.TotalLost),
			RemoteFractionLost: float64(b.FractionLost) / 256,
			Updated:            now,
		}
		if prev := p.quality.Load(); prev != nil {
			q.RTT = prev.RTT
		}
		if rtt, ok := roundTrip(now, b.LastSenderReport, b.Delay); ok {
			q.RTT = rtt
		}
		p.quality.Store(&q)
		if h := p.call.Load(); h != nil {
			h.call.UpdateLinkQuality(q)
		}
	}
}

// roundTrip applies RFC 3550 §6.4.1: RTT = arrival - LSR - DLSR, all in the middle 32 bits of NTP
// time (1/65536 s). LSR = 0 means the participant has not had a sender report from us yet.
func roundTrip(arrival time.Time, lsr, dlsr uint32) (time.Duration, bool) {
	if lsr == 0 {
		return 0, false
	}
	rtt := ntpMiddle(arrival) - lsr - dlsr
	if int32(rtt) < 0 {
		return 0, false
	}
	return time.Duration(uint64(rtt) * uint64(time.Second) >> 16), true
}

// ntpMiddle returns the middle 32 bits of the 64-bit NTP timestamp of t.
func ntpMiddle(t time.Time) uint32 {
	const ntpEpochOffset = 2208988800 // seconds from 1900 to 1970
	secs := uint64(t.Unix()) + ntpEpochOffset
	frac := uint64(t.Nanosecond()) << 32 / uint64(time.Second)
	return uint32(secs<<16 | frac>>16)
}

func (p *Peer) onDataChannel(dc *webrtc.DataChannel) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dc != nil || p.closed {
		p.log.Warn("extra data channel ignored", slog.String("label", dc.Label()))
		return
	}
	p.dc = dc
	dc.OnOpen(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.dcOpen = true
		for _, m := range p.outbox {
			if err := dc.SendText(m); err != nil {
				p.log.Warn("data channel send failed", slog.Any("err", err))
			}
		}
		p.outbox = nil
	})
	dc.OnClose(func() {
		p.mu.Lock()
		p.dcOpen = false
		p.mu.Unlock()
	})
	dc.OnMessage(p.onMessage)
}

func (p *Peer) onMessage(msg webrtc.DataChannelMessage) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(msg.Data, &head); err != nil || head.Type == "" {
		p.badMessages.Add(1)
		p.log.Warn("data channel message ignored: want a JSON object with a \"type\"", slog.Int("bytes", len(msg.Data)))
		return
	}
	if p.opts.OnMessage != nil {
		p.opts.OnMessage(Message{Type: head.Type, Raw: json.RawMessage(append([]byte(nil), msg.Data...)), Received: time.Now()})
	}
}

func (p *Peer) onState(s webrtc.PeerConnectionState) {
	p.log.Info("peer connection state", slog.String("state", s.String()))
	switch s {
	case webrtc.PeerConnectionStateConnected:
		p.connectedFlag.Store(true)
		p.connOnce.Do(func() { close(p.connected) })
	case webrtc.PeerConnectionStateFailed:
		p.finish(errors.New("rtc peer: connection failed (ICE or DTLS)"))
		go p.Close() // not from inside pion's callback
	case webrtc.PeerConnectionStateClosed:
		p.finish(nil)
		go p.Close()
	}
}

func (p *Peer) finish(err error) {
	p.doneOnce.Do(func() {
		p.err = err
		p.connectedFlag.Store(false)
		close(p.done)
	})
}

// Attach connects the peer to a running call: caller RTP into it, its agent audio out to the
// participant, RTCP link quality to its stats. A reload attaches a new Peer to the same call.
func (p *Peer) Attach(call MediaCall) error {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if err := call.Attach(p); err != nil {
		return fmt.Errorf("rtc peer: attach: %w", err)
	}
	if old := p.call.Swap(&callHolder{call: call}); old != nil && old.call != call {
		old.call.Detach(p)
	}
	return nil
}

// Detach disconnects the peer from its call (the call records silence until a peer attaches).
func (p *Peer) Detach() {
	if h := p.call.Swap(nil); h != nil {
		h.call.Detach(p)
	}
}

// WriteAgentOpus sends one Opus packet of agent audio; it implements media.ParticipantLink.
// Packets are dropped until the connection is up.
func (p *Peer) WriteAgentOpus(payload []byte, ts uint32) error {
	p.opts.Tap.feed(tapPacket{agent: true, ts: ts, payload: payload})
	if !p.connectedFlag.Load() {
		return nil
	}
	p.out.Header = rtp.Header{Version: 2, PayloadType: 111, SequenceNumber: p.seq, Timestamp: p.tsBase + ts}
	p.out.Payload = payload
	p.seq++
	if err := p.track.WriteRTP(&p.out); err != nil {
		return fmt.Errorf("rtc peer: write agent audio: %w", err)
	}
	p.agentPackets.Add(1)
	return nil
}

// Send marshals v as JSON and sends it on the DataChannel, queueing it until the channel opens.
func (p *Peer) Send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("rtc peer: send: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return ErrClosed
	case p.dcOpen:
		if err := p.dc.SendText(string(b)); err != nil {
			return fmt.Errorf("rtc peer: send: %w", err)
		}
		return nil
	case len(p.outbox) >= outboxLimit:
		return ErrOutboxFull
	default:
		p.outbox = append(p.outbox, string(b))
		return nil
	}
}

// Connected is closed once ICE and DTLS are up.
func (p *Peer) Connected() <-chan struct{} { return p.connected }

// Done is closed when the peer has ended (closed, failed, or the browser hung up).
func (p *Peer) Done() <-chan struct{} { return p.done }

// Err says why the peer ended: nil after a normal close.
func (p *Peer) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// PeerStats is one peer's state and counters for dashboards.
type PeerStats struct {
	State           string            // new, connecting, connected, disconnected, failed, closed
	CallerPackets   int64             // RTP packets received from the participant
	AgentPackets    int64             // RTP packets of agent audio sent
	BadMessages     int64             // DataChannel messages that were not JSON objects with a type
	Link            media.LinkQuality // from the participant's receiver reports
	LocalCandidate  string            // the selected ICE pair, once connected
	RemoteCandidate string            // the participant's side of that pair
}

// Stats returns a snapshot.
func (p *Peer) Stats() PeerStats {
	s := PeerStats{
		State:         p.pc.ConnectionState().String(),
		CallerPackets: p.callerPackets.Load(),
		AgentPackets:  p.agentPackets.Load(),
		BadMessages:   p.badMessages.Load(),
	}
	if q := p.quality.Load(); q != nil {
		s.Link = *q
	}
	if sctp := p.pc.SCTP(); sctp != nil {
		if pair, err := sctp.Transport().ICETransport().GetSelectedCandidatePair(); err == nil && pair != nil {
			s.LocalCandidate, s.RemoteCandidate = pair.Local.String(), pair.Remote.String()
		}
	}
	return s
}

// Close detaches from the call, closes the PeerConnection and waits for the peer's goroutines.
// Safe to call more than once and from any goroutine.
func (p *Peer) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.outbox = nil
		p.mu.Unlock()
		p.Detach()
		err := p.pc.Close()
		p.wg.Wait()
		p.finish(nil)
		p.e.forget(p)
		if err != nil {
			p.closeErr = fmt.Errorf("rtc peer: close: %w", err)
		}
	})
	return p.closeErr
}
