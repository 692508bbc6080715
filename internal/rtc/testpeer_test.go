package rtc

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/mediadevices/pkg/codec/opus"
	"github.com/pion/mediadevices/pkg/io/audio"
	"github.com/pion/mediadevices/pkg/prop"
	"github.com/pion/mediadevices/pkg/wave"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"
	"go.uber.org/goleak"

	"github.com/voicebench/humanaudit/internal/media"
)

// testPeer is a second pion PeerConnection that plays the participant's browser on loopback: it
// offers a microphone track and a "control" DataChannel, sends pre-encoded Opus packets on a
// drift-free 20 ms schedule, and keeps the agent audio and messages it receives.
type testPeer struct {
	t     testing.TB
	pc    *webrtc.PeerConnection
	track *webrtc.TrackLocalStaticRTP
	dc    *webrtc.DataChannel
	ssrc  uint32

	mu       sync.Mutex
	received []recvPacket
	messages []string
	dcOpen   chan struct{}
	wg       sync.WaitGroup
}

type recvPacket struct {
	seq     uint16
	ts      uint32
	payload []byte
	arrival time.Time
}

// browserAPI is the test peer's pion API: loopback ICE like the server, Opus, RTCP reports (the
// receiver reports give the server its round-trip time, as Chrome's do).
func browserAPI(t testing.TB) *webrtc.API {
	t.Helper()
	m := &webrtc.MediaEngine{}
	if err := m.RegisterCodec(webrtc.RTPCodecParameters{RTPCodecCapability: opusCapability, PayloadType: 111}, webrtc.RTPCodecTypeAudio); err != nil {
		t.Fatal(err)
	}
	ir := &interceptor.Registry{}
	if err := webrtc.ConfigureRTCPReports(ir); err != nil {
		t.Fatal(err)
	}
	se := webrtc.SettingEngine{}
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	se.SetIncludeLoopbackCandidate(true)
	se.SetInterfaceFilter(func(name string) bool { return name == "lo" })
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	return webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithInterceptorRegistry(ir), webrtc.WithSettingEngine(se))
}

func newTestPeer(t testing.TB, api *webrtc.API) *testPeer {
	t.Helper()
	pc, err := api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	b := &testPeer{t: t, pc: pc, dcOpen: make(chan struct{})}
	b.track, err = webrtc.NewTrackLocalStaticRTP(opusCapability, "mic", "browser")
	if err != nil {
		t.Fatal(err)
	}
	sender, err := pc.AddTrack(b.track)
	if err != nil {
		t.Fatal(err)
	}
	b.ssrc = uint32(sender.GetParameters().Encodings[0].SSRC)
	b.wg.Add(1)
	go func() { // drive the sender's RTCP interceptors
		defer b.wg.Done()
		buf := make([]byte, 1500)
		for {
			if _, _, err := sender.Read(buf); err != nil {
				return
			}
		}
	}()
	pc.OnTrack(func(tr *webrtc.TrackRemote, rcv *webrtc.RTPReceiver) {
		b.wg.Add(2)
		go func() {
			defer b.wg.Done()
			buf := make([]byte, 1500)
			for {
				if _, _, err := rcv.Read(buf); err != nil {
					return
				}
			}
		}()
		go func() {
			defer b.wg.Done()
			buf := make([]byte, 1500)
			var p rtp.Packet
			for {
				n, _, err := tr.Read(buf)
				if err != nil {
					return
				}
				at := time.Now()
				if p.Unmarshal(buf[:n]) != nil {
					continue
				}
				b.mu.Lock()
				b.received = append(b.received, recvPacket{p.SequenceNumber, p.Timestamp, slices.Clone(p.Payload), at})
				b.mu.Unlock()
			}
		}()
	})
	b.dc, err = pc.CreateDataChannel("control", nil)
	if err != nil {
		t.Fatal(err)
	}
	b.dc.OnOpen(func() { close(b.dcOpen) })
	b.dc.OnMessage(func(m webrtc.DataChannelMessage) {
		b.mu.Lock()
		b.messages = append(b.messages, string(m.Data))
		b.mu.Unlock()
	})
	t.Cleanup(b.close)
	return b
}

// offer returns a complete (non-trickle) offer.
func (b *testPeer) offer() string {
	b.t.Helper()
	o, err := b.pc.CreateOffer(nil)
	if err != nil {
		b.t.Fatal(err)
	}
	gathered := webrtc.GatheringCompletePromise(b.pc)
	if err := b.pc.SetLocalDescription(o); err != nil {
		b.t.Fatal(err)
	}
	<-gathered
	return b.pc.LocalDescription().SDP
}

func (b *testPeer) accept(answer string) {
	b.t.Helper()
	if err := b.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
		b.t.Fatal(err)
	}
}

// connect runs the offer/answer exchange with the endpoint and waits until both sides are up.
func (b *testPeer) connect(e *Endpoint, opts PeerOptions) *Peer {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, answer, err := e.Answer(ctx, b.offer(), opts)
	if err != nil {
		b.t.Fatal(err)
	}
	b.accept(answer)
	select {
	case <-p.Connected():
	case <-time.After(10 * time.Second):
		b.t.Fatalf("peer did not connect (state %s)", p.Stats().State)
	}
	select {
	case <-b.dcOpen:
	case <-time.After(10 * time.Second):
		b.t.Fatal("data channel did not open")
	}
	return p
}

// stream sends packets on a drift-free 20 ms schedule starting now, skipping those drop selects
// (their sequence numbers are used up, as on a lossy network). Packet k is due to leave at
// start + k·20 ms, the moment its last sample was captured; it returns start and each packet's
// actual send time (zero for dropped ones).
func (b *testPeer) stream(pkts [][]byte, seq0 uint16, ts0 uint32, drop func(k int) bool) (time.Time, []time.Time) {
	sent := make([]time.Time, len(pkts))
	start := time.Now()
	var p rtp.Packet
	for k, payload := range pkts {
		if d := time.Until(start.Add(time.Duration(k) * 20 * time.Millisecond)); d > 0 {
			time.Sleep(d)
		}
		if drop != nil && drop(k) {
			continue
		}
		p.Header = rtp.Header{Version: 2, PayloadType: 111, SequenceNumber: seq0 + uint16(k), Timestamp: ts0 + uint32(k*960)}
		p.Payload = payload
		sent[k] = time.Now()
		if err := b.track.WriteRTP(&p); err != nil {
			b.t.Errorf("send packet %d: %v", k, err)
			return start, sent
		}
	}
	return start, sent
}

func (b *testPeer) receivedPackets() []recvPacket {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.received)
}

func (b *testPeer) receivedMessages() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.messages)
}

func (b *testPeer) sendJSON(v any) {
	raw, _ := json.Marshal(v)
	if err := b.dc.SendText(string(raw)); err != nil {
		b.t.Error(err)
	}
}

func (b *testPeer) close() {
	_ = b.pc.Close()
	b.wg.Wait()
}

// encode48k encodes 48 kHz mono PCM into 20 ms Opus packets with libopus (as Chrome does).
func encode48k(t testing.TB, pcm []int16) [][]byte {
	t.Helper()
	const frame = 960
	pos := 0
	chunk := wave.NewInt16Interleaved(wave.ChunkInfo{Len: frame, Channels: 1, SamplingRate: 48000})
	r := audio.ReaderFunc(func() (wave.Audio, func(), error) {
		copy(chunk.Data, pcm[pos:pos+frame])
		pos += frame
		return chunk, func() {}, nil
	})
	params, err := opus.NewParams()
	if err != nil {
		t.Fatal(err)
	}
	params.BitRate = 32000
	enc, err := params.BuildAudioEncoder(r, prop.Media{Audio: prop.Audio{SampleRate: 48000, ChannelCount: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	var pkts [][]byte
	for pos+frame <= len(pcm) {
		b, _, err := enc.Read()
		if err != nil {
			t.Fatal(err)
		}
		pkts = append(pkts, slices.Clone(b))
	}
	return pkts
}

// arrivalLog sits between a Peer and the call and remembers when each caller packet arrived.
type arrivalLog struct {
	MediaCall
	mu       sync.Mutex
	arrivals map[uint16]time.Time
}

func newArrivalLog(c MediaCall) *arrivalLog {
	return &arrivalLog{MediaCall: c, arrivals: map[uint16]time.Time{}}
}

func (a *arrivalLog) ReceiveCallerRTP(from media.ParticipantLink, p media.CallerPacket) error {
	a.mu.Lock()
	a.arrivals[p.Seq] = p.Arrival
	a.mu.Unlock()
	return a.MediaCall.ReceiveCallerRTP(from, p)
}

func (a *arrivalLog) seqArrivedAt(t time.Time) (uint16, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for s, at := range a.arrivals {
		if at.Equal(t) {
			return s, true
		}
	}
	return 0, false
}

// checkLeaks verifies, after every other cleanup ran, that no goroutine is left.
func checkLeaks(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
}

func newLoopbackEndpoint(t testing.TB, singlePort bool) *Endpoint {
	t.Helper()
	cfg := Config{LoopbackOnly: true}
	if singlePort {
		cfg.UDPListen = "127.0.0.1:0"
	}
	e, err := NewEndpoint(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("endpoint close: %v", err)
		}
	})
	return e
}
