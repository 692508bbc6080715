package rtc

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"
)

// listenPeer is an experimenter's browser listening in: two recvonly audio transceivers, the
// packets of each received track kept by stream id.
type listenPeer struct {
	pc *webrtc.PeerConnection
	mu sync.Mutex
	by map[string][]recvPacket
	wg sync.WaitGroup
}

func newListenPeer(t *testing.T) *listenPeer {
	t.Helper()
	pc, err := browserAPI(t).NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	lp := &listenPeer{pc: pc, by: map[string][]recvPacket{}}
	for range 2 {
		if _, err := pc.AddTransceiverFromKind(webrtc.RTPCodecTypeAudio, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionRecvonly}); err != nil {
			t.Fatal(err)
		}
	}
	pc.OnTrack(func(tr *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
		lp.wg.Add(1)
		go func() {
			defer lp.wg.Done()
			buf := make([]byte, 1500)
			var p rtp.Packet
			for {
				n, _, err := tr.Read(buf)
				if err != nil {
					return
				}
				if p.Unmarshal(buf[:n]) != nil {
					continue
				}
				lp.mu.Lock()
				lp.by[tr.StreamID()] = append(lp.by[tr.StreamID()], recvPacket{p.SequenceNumber, p.Timestamp, slices.Clone(p.Payload), time.Now()})
				lp.mu.Unlock()
			}
		}()
	})
	t.Cleanup(func() { pc.Close(); lp.wg.Wait() })
	return lp
}

func (lp *listenPeer) offer(t *testing.T) string {
	t.Helper()
	o, err := lp.pc.CreateOffer(nil)
	if err != nil {
		t.Fatal(err)
	}
	gathered := webrtc.GatheringCompletePromise(lp.pc)
	if err := lp.pc.SetLocalDescription(o); err != nil {
		t.Fatal(err)
	}
	<-gathered
	return lp.pc.LocalDescription().SDP
}

func (lp *listenPeer) packets(stream string) []recvPacket {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	return slices.Clone(lp.by[stream])
}

// tone24k is a 24 kHz sine of hz at amplitude amp.
func tone24k(seconds, hz float64, amp float64) []int16 {
	out := make([]int16, int(seconds*24000))
	for i := range out {
		out[i] = int16(amp * math.Sin(2*math.Pi*hz*float64(i)/24000))
	}
	return out
}

// An experimenter listening in on a live call receives both channels: the caller's voice on the
// "caller" stream and the agent's 1 kHz tone on the "agent" stream, each as its side heard it, in
// order and without the other side mixed in; when the call ends (the tap closes) the listener's
// connection ends too.
func TestListenerReceivesBothChannels(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time streaming test")
	}
	checkLeaks(t)
	e := newLoopbackEndpoint(t, true)
	call, _, _ := newEchoCall(t, false, 10*time.Millisecond)
	tap := NewTap()
	b := newTestPeer(t, browserAPI(t))
	p := b.connect(e, PeerOptions{Name: "listened", Tap: tap})
	if err := p.Attach(call); err != nil {
		t.Fatal(err)
	}

	lp := newListenPeer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, answer, err := e.Listen(ctx, lp.offer(t), tap, "x-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for lp.pc.ConnectionState() != webrtc.PeerConnectionStateConnected && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if s := lp.pc.ConnectionState(); s != webrtc.PeerConnectionStateConnected {
		t.Fatalf("listener connection %s", s)
	}
	if n := tap.Listeners(); n != 1 {
		t.Fatalf("tap has %d listeners", n)
	}

	if err := call.PushAgentAudio(tone24k(6, 1000, 8000)); err != nil {
		t.Fatal(err)
	}
	b.stream(encode48k(t, voice48k(3, 1)), 100, 5000, nil)
	time.Sleep(300 * time.Millisecond)

	caller, agent := lp.packets(ChannelCaller), lp.packets(ChannelAgent)
	t.Logf("listener received %d caller and %d agent packets", len(caller), len(agent))
	if len(caller) < 120 || len(agent) < 120 {
		t.Fatalf("listener received %d caller and %d agent packets over 3 s, want at least 120 of each", len(caller), len(agent))
	}
	for name, pkts := range map[string][]recvPacket{ChannelCaller: caller, ChannelAgent: agent} {
		for i := 1; i < len(pkts); i++ {
			if pkts[i].seq != pkts[i-1].seq+1 || pkts[i].ts-pkts[i-1].ts != 960 {
				t.Fatalf("%s packet %d: seq %d ts %d after seq %d ts %d; want consecutive 20 ms packets", name, i, pkts[i].seq, pkts[i].ts, pkts[i-1].seq, pkts[i-1].ts)
			}
		}
	}
	payloads := func(ps []recvPacket) (out [][]byte) {
		for _, p := range ps {
			out = append(out, p.payload)
		}
		return out
	}
	heardCaller, heardAgent := decode24k(t, payloads(caller)), decode24k(t, payloads(agent))
	// The last second of each: the agent's tone (6 s long) is still playing when the caller stops.
	tail := func(x []int16) []int16 { return x[len(x)-24000:] }
	if g := goertzel(tail(heardAgent), 24000, 1000); g < 0.5 {
		t.Errorf("agent channel: 1 kHz holds %.2f of its power, want the agent's tone (> 0.5)", g)
	}
	if g := goertzel(tail(heardCaller), 24000, 1000); g > 0.05 {
		t.Errorf("caller channel: 1 kHz holds %.2f of its power: the agent leaks into the caller's channel", g)
	}
	if m := maxAbs(tail(heardCaller)); m < 2000 {
		t.Errorf("caller channel: peak %d, want the caller's voice", m)
	}

	tap.Close()
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("listener still open after the tap closed")
	}
	if n := tap.Listeners(); n != 0 {
		t.Errorf("tap has %d listeners after Close", n)
	}
	if _, _, err := e.Listen(ctx, newListenPeer(t).offer(t), tap, "x-2"); err == nil {
		t.Error("a listener joined a closed tap")
	}
	p.Close()
}
