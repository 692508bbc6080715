package rtc

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/sdp/v3"
	"github.com/pion/webrtc/v4"
)

// A Tap fans one call's two channels out to experimenters listening in: the caller's Opus packets
// as the participant's browser sent them and the agent's as the participant received them, so a
// listener hears exactly what each side heard, without decoding or encoding anything. The
// participant's Peer feeds it (PeerOptions.Tap); after a reload the new Peer feeds the same Tap.
type Tap struct {
	mu        sync.Mutex
	listeners map[*Listener]struct{}
	closed    bool
}

// NewTap returns a tap with no listeners.
func NewTap() *Tap { return &Tap{listeners: map[*Listener]struct{}{}} }

// Channels of a tap, as the listener's stream ids name them.
const (
	ChannelCaller = "caller"
	ChannelAgent  = "agent"
)

type tapPacket struct {
	agent   bool
	ssrc    uint32 // the caller stream's SSRC (a reload starts a new one)
	ts      uint32
	payload []byte
}

func (t *Tap) feed(p tapPacket) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for l := range t.listeners {
		select {
		case l.in <- tapPacket{agent: p.agent, ssrc: p.ssrc, ts: p.ts, payload: append([]byte(nil), p.payload...)}:
		default: // a listener that cannot keep up loses packets; the call never waits for it
			l.dropped++
		}
	}
}

// Listeners is how many listeners the tap feeds now.
func (t *Tap) Listeners() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.listeners)
}

// Close ends every listener's connection (the call is over) and refuses new ones.
func (t *Tap) Close() {
	t.mu.Lock()
	t.closed = true
	ls := slices.Collect(maps.Keys(t.listeners))
	t.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
}

// add registers a listener unless the tap has closed.
func (t *Tap) add(l *Listener) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.listeners[l] = struct{}{}
	}
	return !t.closed
}

// Listener is one receive-only subscription to a tap: a PeerConnection that sends the browser two
// audio tracks, stream "caller" and stream "agent".
type Listener struct {
	tap *Tap
	log *slog.Logger
	pc  *webrtc.PeerConnection
	in  chan tapPacket

	dropped   int64 // under tap.mu
	closeOnce sync.Once
	done      chan struct{}
	wg        sync.WaitGroup
}

// listenQueue bounds the packets waiting for a listener's writer: about a second of both channels.
const listenQueue = 100

// Listen answers an experimenter's receive-only offer (two audio m-lines, recvonly) with the tap's
// two channels, caller on the first m-line and agent on the second. The connection closes when
// the tap closes, when the browser goes away, or on Close.
func (e *Endpoint) Listen(ctx context.Context, offer string, tap *Tap, name string) (*Listener, string, error) {
	if err := checkListenOffer(offer); err != nil {
		return nil, "", err
	}
	pc, err := e.api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return nil, "", fmt.Errorf("rtc listener: %w", err)
	}
	l := &Listener{tap: tap, log: e.log.With(slog.String("listener", name)), pc: pc, in: make(chan tapPacket, listenQueue), done: make(chan struct{})}
	pc.OnConnectionStateChange(func(s webrtc.PeerConnectionState) {
		if s == webrtc.PeerConnectionStateFailed || s == webrtc.PeerConnectionStateClosed || s == webrtc.PeerConnectionStateDisconnected {
			go l.Close()
		}
	})
	answer, tracks, err := l.negotiate(ctx, e, offer)
	if err != nil {
		pc.Close()
		return nil, "", err
	}
	if !tap.add(l) {
		pc.Close()
		return nil, "", fmt.Errorf("rtc listener: %w: the call has ended", ErrClosed)
	}
	l.wg.Add(1)
	go l.write(tracks)
	return l, answer, nil
}

// checkListenOffer wants an SDP offer with at least two usable audio m-lines.
func checkListenOffer(offer string) error {
	if len(offer) == 0 || len(offer) > maxOfferBytes {
		return fmt.Errorf("%w: listener offer of %d bytes, want an SDP offer of at most %d", ErrBadOffer, len(offer), maxOfferBytes)
	}
	var sd sdp.SessionDescription
	if err := sd.UnmarshalString(offer); err != nil {
		return fmt.Errorf("%w: not SDP: %v", ErrBadOffer, err)
	}
	audio := 0
	for _, m := range sd.MediaDescriptions {
		if m.MediaName.Media == "audio" && m.MediaName.Port.Value != 0 {
			audio++
		}
	}
	if audio < 2 {
		return fmt.Errorf("%w: listener offer has %d audio m-lines, want 2 (addTransceiver(\"audio\", {direction: \"recvonly\"}) twice)", ErrBadOffer, audio)
	}
	return nil
}

func (l *Listener) negotiate(ctx context.Context, e *Endpoint, offer string) (string, [2]*webrtc.TrackLocalStaticRTP, error) {
	var tracks [2]*webrtc.TrackLocalStaticRTP
	if err := l.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer}); err != nil {
		return "", tracks, fmt.Errorf("%w: rejected by WebRTC: %v", ErrBadOffer, err)
	}
	for i, ch := range []string{ChannelCaller, ChannelAgent} {
		tr, err := webrtc.NewTrackLocalStaticRTP(opusCapability, ch, ch)
		if err != nil {
			return "", tracks, fmt.Errorf("rtc listener: %w", err)
		}
		sender, err := l.pc.AddTrack(tr)
		if err != nil {
			return "", tracks, fmt.Errorf("rtc listener: add %s track: %w", ch, err)
		}
		l.wg.Add(1)
		go func() { // the report interceptors need the RTCP read
			defer l.wg.Done()
			buf := make([]byte, 1500)
			for {
				if _, _, err := sender.Read(buf); err != nil {
					return
				}
			}
		}()
		tracks[i] = tr
	}
	answer, err := l.pc.CreateAnswer(nil)
	if err != nil {
		return "", tracks, fmt.Errorf("%w: no answer possible: %v", ErrBadOffer, err)
	}
	gathered := webrtc.GatheringCompletePromise(l.pc)
	if err := l.pc.SetLocalDescription(answer); err != nil {
		return "", tracks, fmt.Errorf("rtc listener: set local description: %w", err)
	}
	timer := time.NewTimer(e.cfg.GatherTimeout)
	defer timer.Stop()
	select {
	case <-gathered:
	case <-ctx.Done():
		return "", tracks, fmt.Errorf("rtc listener: ICE gathering: %w", ctx.Err())
	case <-timer.C:
		return "", tracks, fmt.Errorf("rtc listener: ICE gathering not complete after %v", e.cfg.GatherTimeout)
	}
	return l.pc.LocalDescription().SDP, tracks, nil
}

// outStream renumbers one channel for the listener: its own sequence numbers, and timestamps that
// continue across a new caller stream (a reload) instead of jumping.
type outStream struct {
	seq       uint16
	ssrc      uint32
	offset    uint32
	last      uint32
	started   bool
	packetsTS uint32 // RTP ticks of one packet (20 ms at 48 kHz)
}

func (o *outStream) header(ssrc, ts uint32) rtp.Header {
	if !o.started || ssrc != o.ssrc {
		base := rand.Uint32()
		if o.started {
			base = o.last + o.packetsTS
		}
		o.offset, o.ssrc, o.started = base-ts, ssrc, true
	}
	o.last = ts + o.offset
	o.seq++
	return rtp.Header{Version: 2, PayloadType: 111, SequenceNumber: o.seq, Timestamp: o.last}
}

func (l *Listener) write(tracks [2]*webrtc.TrackLocalStaticRTP) {
	defer l.wg.Done()
	out := [2]outStream{{seq: uint16(rand.Uint32()), packetsTS: 960}, {seq: uint16(rand.Uint32()), packetsTS: 960}}
	var pkt rtp.Packet
	for {
		select {
		case <-l.done:
			return
		case p := <-l.in:
			i := 0
			if p.agent {
				i = 1
			}
			pkt.Header = out[i].header(p.ssrc, p.ts)
			pkt.Payload = p.payload
			if err := tracks[i].WriteRTP(&pkt); err != nil {
				l.log.Debug("listener write", slog.Any("err", err))
			}
		}
	}
}

// Done is closed when the listener's connection has ended.
func (l *Listener) Done() <-chan struct{} { return l.done }

// Close ends the subscription.
func (l *Listener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		l.tap.mu.Lock()
		delete(l.tap.listeners, l)
		if l.dropped > 0 {
			l.log.Info("listener fell behind", slog.Int64("packets_dropped", l.dropped))
		}
		l.tap.mu.Unlock()
		close(l.done)
		err = l.pc.Close()
		l.wg.Wait()
	})
	return err
}
