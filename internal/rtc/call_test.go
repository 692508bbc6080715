package rtc

import (
	"math"
	"math/rand"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/opus"

	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/media"
	"github.com/voicebench/humanaudit/internal/media/libopus"
)

// echoAgent is the loopback "agent": every caller frame it receives goes straight back as agent
// audio. It also keeps each frame's timing for the tests.
type echoAgent struct {
	call   atomic.Pointer[media.Call]
	echo   bool
	mu     sync.Mutex
	frames map[int64]media.CallerFrame // without PCM
	events []media.Event
}

func (a *echoAgent) onFrame(f media.CallerFrame) {
	if c := a.call.Load(); c != nil && a.echo {
		_ = c.PushAgentAudio(f.PCM)
	}
	f.PCM = nil
	a.mu.Lock()
	a.frames[f.Tick] = f
	a.mu.Unlock()
}

func (a *echoAgent) onEvent(ev media.Event) {
	a.mu.Lock()
	a.events = append(a.events, ev)
	a.mu.Unlock()
}

func (a *echoAgent) frame(n int64) (media.CallerFrame, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f, ok := a.frames[n]
	return f, ok
}

func (a *echoAgent) eventsOf(kind media.EventKind) []media.Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []media.Event
	for _, e := range a.events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// newEchoCall starts a real-clock call at 24 kHz whose agent echoes the caller (when echo is set).
func newEchoCall(t *testing.T, echo bool, margin time.Duration) (*media.Call, *echoAgent, string) {
	t.Helper()
	a := &echoAgent{echo: echo, frames: map[int64]media.CallerFrame{}}
	path := filepath.Join(t.TempDir(), "call.wav")
	c, err := media.NewCall(media.CallConfig{NewEncoder: media.Encoders(libopus.NewEncoder),
		AgentRate: 24000, RecordingPath: path, JitterMargin: margin,
		OnCallerFrame: a.onFrame, OnEvent: a.onEvent,
	})
	if err != nil {
		t.Fatal(err)
	}
	a.call.Store(c)
	t.Cleanup(func() { c.Close() })
	return c, a, path
}

// voice48k is a speech-like 48 kHz signal (harmonics of a wandering pitch plus noise).
func voice48k(seconds float64, seed int64) []int16 {
	r := rand.New(rand.NewSource(seed))
	n := int(seconds * 48000)
	out := make([]int16, n)
	ph := 0.0
	for i := range out {
		tt := float64(i) / 48000
		ph += 2 * math.Pi * (130 + 40*math.Sin(2*math.Pi*1.1*tt)) / 48000
		v := 0.0
		for h := 1; h <= 10; h++ {
			v += math.Sin(float64(h)*ph) / float64(h)
		}
		out[i] = int16(4000*v + 200*r.NormFloat64())
	}
	return out
}

// decode24k decodes packets (nil = lost: silence) in order with a fresh decoder, as the engine does.
func decode24k(t *testing.T, pkts [][]byte) []int16 {
	t.Helper()
	d, err := opus.NewDecoderWithOutput(24000, 1)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]int16, 2880)
	var out []int16
	for _, p := range pkts {
		if p == nil {
			out = append(out, make([]int16, 480)...)
			continue
		}
		n, err := d.DecodeToInt16(p, buf)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, buf[:n]...)
	}
	return out
}

func peakIndex(x []int16, from, to int) int {
	best := from
	for i := from; i < to && i < len(x); i++ {
		if abs(int(x[i])) > abs(int(x[best])) {
			best = i
		}
	}
	return best
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func maxAbs(x []int16) int {
	m := 0
	for _, v := range x {
		m = max(m, abs(int(v)))
	}
	return m
}

func sampleAt(d time.Duration) int { return int(d * 24000 / time.Second) }

func secs(n int) time.Duration { return time.Duration(n) * time.Second / 24000 }

// TestClickLandsAtTheSampleItWasSent: a pion peer (the browser) streams a click in real time; the
// echo agent sends it back. In the recording the click must sit on the left channel where its send
// time plus the measured network and jitter-buffer delays (plus the 40 ms frame and the codec's
// fixed delay) put it, within 1 ms, and its echo on the right channel.
func TestClickLandsAtTheSampleItWasSent(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time streaming test")
	}
	checkLeaks(t)
	e := newLoopbackEndpoint(t, true)
	// A 10 ms margin keeps a scheduling hiccup on this shared machine from making the click's
	// packet late; the check below subtracts whatever jitter-buffer delay was measured.
	call, agent, path := newEchoCall(t, true, 10*time.Millisecond)

	// 3 s of quiet noise with a click 1.5 s + 331 samples in (mid-packet).
	src := make([]int16, 3*48000)
	r := rand.New(rand.NewSource(3))
	for i := range src {
		src[i] = int16(r.NormFloat64() * 30)
	}
	c := 72000 + 331
	src[c-1], src[c], src[c+1] = 15000, 30000, 15000
	pkts := encode48k(t, src)
	ref := decode24k(t, pkts)
	codec := peakIndex(ref, c/2-100, c/2+400) - c/2 // decoder output delay in 24 kHz samples

	b := newTestPeer(t, browserAPI(t))
	p := b.connect(e, PeerOptions{Name: "click"})
	log := newArrivalLog(call)
	if err := p.Attach(log); err != nil {
		t.Fatal(err)
	}
	const seq0 = 40000
	start, sent := b.stream(pkts, seq0, 12345, nil)
	time.Sleep(200 * time.Millisecond)
	st := call.Stats()
	p.Close()
	if err := call.Close(); err != nil {
		t.Fatal(err)
	}
	w, err := audio.ReadWAV(path)
	if err != nil {
		t.Fatal(err)
	}
	left, right := w.Channel(0), w.Channel(1)
	streams := agent.eventsOf(media.CallerStreamStart)
	if len(streams) != 1 {
		t.Fatalf("stream starts %+v", streams)
	}
	s0 := sampleAt(streams[0].At)
	pRec := peakIndex(left, s0+c/2-2400, s0+c/2+2400)
	if pRec != s0+c/2+codec {
		t.Fatalf("click recorded at sample %d, want %d (anchor %d + click %d + codec delay %d)", pRec, s0+c/2+codec, s0, c/2, codec)
	}

	// Where was it sent, and what delays did it meet?
	n := int64(pRec / audio.FrameSamples)
	f, ok := agent.frame(n)
	if !ok || f.Completed.IsZero() {
		t.Fatalf("frame %d of the click was not complete: %+v", n, f)
	}
	seq, ok := log.seqArrivedAt(f.Completed)
	if !ok {
		t.Fatal("the packet that completed the click's frame is not in the arrival log")
	}
	kb := int(seq - seq0) // last packet of the click's frame
	kc := c / 960         // packet holding the click
	// The click was captured (960·(kc+1) - c) samples before its packet was due to leave; packet
	// kb was due at start + kb·20 ms. Its transport delay is the sender's lateness plus the network.
	due := func(k int) time.Time { return start.Add(time.Duration(k) * 20 * time.Millisecond) }
	captured := due(kc).Add(-secs((960*(kc+1) - c) / 2))
	transport := f.Completed.Sub(due(kb))
	jbDelay := f.Due.Sub(f.Completed)
	recordedAt := f.Due.Add(secs(pRec - int(n)*audio.FrameSamples))
	expected := captured.Add(transport + jbDelay + media.TickDuration + secs(codec))
	errAt := recordedAt.Sub(expected)
	var netSum time.Duration
	for k, s := range sent {
		if at, ok := log.arrivals[uint16(seq0+k)]; ok {
			netSum += at.Sub(s)
		}
	}
	t.Logf("click: network delay %v (sender %v late + network %v; mean network over packets %v), jitter-buffer delay %v, "+
		"frame 40ms, codec %v; recorded %v after capture, expected %v: error %v", transport, sent[kb].Sub(due(kb)),
		f.Completed.Sub(sent[kb]), netSum/time.Duration(len(sent)), jbDelay, secs(codec), recordedAt.Sub(captured),
		expected.Sub(captured), errAt)
	if errAt < -time.Millisecond || errAt > time.Millisecond {
		t.Fatalf("click off by %v (want within 1 ms)", errAt)
	}
	if kb != kc && kb != kc+1 {
		t.Fatalf("the click's frame completed with packet %d, the click is in packet %d", kb, kc)
	}

	// The echo agent sent the frame back: the click is on the right channel, a whole number of
	// ticks later (0 when its frame reached the agent before its tick).
	pEcho := peakIndex(right, pRec-2400, pRec+10*audio.FrameSamples)
	t.Logf("echo on the right channel at +%v", secs(pEcho-pRec))
	if (pEcho-pRec)%audio.FrameSamples != 0 || pEcho < pRec || right[pEcho] != left[pRec] {
		t.Fatalf("echo at %d (%d), click at %d (%d): want the same sample a whole number of ticks later", pEcho, right[pEcho], pRec, left[pRec])
	}
	// And the browser heard it back.
	back := b.receivedPackets()
	if len(back) < 100 {
		t.Fatalf("browser received %d agent packets", len(back))
	}
	var heard []int16
	var arrivals []time.Time
	for _, rp := range back {
		pcm := decode24k(t, [][]byte{rp.payload})
		heard = append(heard, pcm...)
		arrivals = append(arrivals, rp.arrival)
	}
	ph := peakIndex(heard, 0, len(heard))
	if abs(int(heard[ph])) < 5000 {
		t.Fatalf("the echoed click is not audible at the browser (peak %d)", heard[ph])
	}
	t.Logf("mouth-to-ear round trip through the echo agent: %v", arrivals[ph/480].Sub(captured))
	if st.CallerPacketsLost != 0 {
		t.Fatalf("loopback lost %d packets", st.CallerPacketsLost)
	}
}

// TestPacketLossKeepsLengthAndAlignment: the test peer drops every tenth packet; the loss count is
// exact, the recording is as long as the media clock ran, and every received packet's audio sits at
// its timestamp on the left channel with its echo at the same sample on the right.
func TestPacketLossKeepsLengthAndAlignment(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time streaming test")
	}
	checkLeaks(t)
	e := newLoopbackEndpoint(t, true)
	call, agent, path := newEchoCall(t, true, 10*time.Millisecond)
	pkts := encode48k(t, voice48k(3, 7))
	b := newTestPeer(t, browserAPI(t))
	p := b.connect(e, PeerOptions{})
	p.Attach(call)
	drop := func(k int) bool { return k%10 == 9 && k != len(pkts)-1 }
	b.stream(pkts, 100, 0, drop)
	time.Sleep(100 * time.Millisecond)
	st := call.Stats()
	p.Close()
	call.Close()
	w, err := audio.ReadWAV(path)
	if err != nil {
		t.Fatal(err)
	}
	dropped := 0
	for k := range pkts {
		if drop(k) {
			dropped++
		}
	}
	t.Logf("dropped %d of %d; stats: lost %d, late %d, concealed %v, jitter %v, recording %v, media time %v",
		dropped, len(pkts), st.CallerPacketsLost, st.CallerPacketsLate, st.CallerConcealed, st.CallerJitter, w.Duration(), call.MediaTime())
	if st.CallerPacketsLost != int64(dropped) {
		t.Fatalf("loss count %d, want %d", st.CallerPacketsLost, dropped)
	}
	if w.Duration() != call.MediaTime() {
		t.Fatalf("recording %v long, media clock ran %v", w.Duration(), call.MediaTime())
	}
	s0 := sampleAt(agent.eventsOf(media.CallerStreamStart)[0].At)
	left, right := w.Channel(0), w.Channel(1)
	want := map[int]bool{}
	for k := range pkts {
		if drop(k) {
			want[k] = true
		}
	}
	missing := matchStream(t, left, s0, pkts, want)
	if extra := int64(len(missing) - dropped); extra != st.CallerPacketsLate {
		t.Fatalf("%d packets missing beyond the dropped ones, engine counted %d late", extra, st.CallerPacketsLate)
	}
	checkEcho(t, left, right)
	// Concealed: the missing packets, plus the frames after the last packet while the stream was
	// still live (a stall counts as missing audio).
	end := secs(s0 + len(pkts)*480)
	wantConcealed := time.Duration(len(missing))*20*time.Millisecond + max(0, st.MediaTime-end)
	if st.CallerConcealed != wantConcealed {
		t.Fatalf("concealed %v, want %v", st.CallerConcealed, wantConcealed)
	}
}

// matchStream checks that the caller channel holds the stream's packets decoded in order at their
// timestamps from sample s0, sample for sample. Packets the engine could not use (dropped on the
// way, or late on this shared machine) leave exactly 20 ms of silence; they are found from those
// silent blocks (the test audio is never digitally silent) and returned, so the caller can check
// them against the engine's loss and late counts.
func matchStream(t *testing.T, left []int16, s0 int, pkts [][]byte, missing map[int]bool) map[int]bool {
	t.Helper()
	if missing == nil {
		missing = map[int]bool{}
	}
	for {
		got := make([][]byte, len(pkts))
		for k, p := range pkts {
			if !missing[k] {
				got[k] = p
			}
		}
		ref := decode24k(t, got)
		k := -1
		for i := 0; i < len(ref) && s0+i < len(left); i++ {
			if left[s0+i] != ref[i] {
				k = i / 480
				break
			}
		}
		if k < 0 {
			return missing
		}
		if missing[k] || maxAbs(left[s0+k*480:min(len(left), s0+(k+1)*480)]) != 0 {
			t.Fatalf("caller channel differs from packet %d's audio at its timestamp (sample %d after the anchor)", k, k*480)
		}
		missing[k] = true
	}
}

// checkEcho verifies that every caller frame comes back on the right channel sample for sample, a
// whole number of ticks later. The offset only grows: a frame that reached the echo agent after
// its tick (a lost packet made it wait for the tick) is played one tick later, and so is all that
// follows it in the agent's queue.
func checkEcho(t *testing.T, left, right []int16) {
	t.Helper()
	const fs = audio.FrameSamples
	d := 0
	for f := 0; (f+1)*fs <= len(left); f++ {
		l := left[f*fs : (f+1)*fs]
		if maxAbs(l) == 0 {
			continue
		}
		for ; (f+d+1)*fs <= len(right); d++ {
			if slices.Equal(l, right[(f+d)*fs:(f+d+1)*fs]) {
				break
			}
		}
		if (f+d+1)*fs > len(right) {
			if (f+d)*fs < len(right) {
				t.Fatalf("caller frame %d never comes back on the right channel", f)
			}
			return // its echo would fall after the recording ended
		}
	}
	t.Logf("echo on the right channel, finally %d ticks behind", d)
}

// TestBargeInStopsAgentAudioAtTheBrowser: flushing mid-utterance silences what the browser receives
// within one tick, and the report says how much was dropped and when.
func TestBargeInStopsAgentAudioAtTheBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time streaming test")
	}
	checkLeaks(t)
	e := newLoopbackEndpoint(t, true)
	call, _, path := newEchoCall(t, false, 0)
	b := newTestPeer(t, browserAPI(t))
	p := b.connect(e, PeerOptions{})
	p.Attach(call)
	tone := make([]int16, 3*24000)
	for i := range tone {
		tone[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/24000))
	}
	call.PushAgentAudio(tone)
	time.Sleep(600 * time.Millisecond)
	rep := call.FlushAgent()
	time.Sleep(400 * time.Millisecond)
	p.Close()
	call.Close()
	t.Logf("flush: dropped %v at media time %v", rep.Dropped, rep.At)
	if rep.Dropped < 2*time.Second || rep.Dropped > 2500*time.Millisecond {
		t.Fatalf("dropped %v of a 3 s utterance after ~0.6 s", rep.Dropped)
	}
	w, _ := audio.ReadWAV(path)
	right := w.Channel(1)
	at := sampleAt(rep.At)
	if maxAbs(right[at-audio.FrameSamples:at]) < 4000 || maxAbs(right[at:]) != 0 {
		t.Fatalf("agent channel must play until %v and be silent from there", rep.At)
	}
	// At the browser: packets arriving later than one tick (+ network slack) after the flush are
	// silent.
	loudAfter := 0
	for _, rp := range b.receivedPackets() {
		if rp.arrival.After(rep.Wall.Add(media.TickDuration + 10*time.Millisecond)) {
			if pcm := decode24k(t, [][]byte{rp.payload}); maxAbs(pcm) > 200 {
				loudAfter++
			}
		}
	}
	if loudAfter > 0 {
		t.Fatalf("%d loud agent packets reached the browser more than one tick after the flush", loudAfter)
	}
}

// TestReloadAttachesANewPeerToTheRunningCall: the page reloads mid-call. The first browser hangs up,
// a new PeerConnection (new SSRC, sequence numbers and timestamps) attaches to the same call; the
// gap is recorded as silence and reported, both streams land at their timestamps.
func TestReloadAttachesANewPeerToTheRunningCall(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time streaming test")
	}
	checkLeaks(t)
	e := newLoopbackEndpoint(t, true)
	call, agent, path := newEchoCall(t, false, 10*time.Millisecond)
	api := browserAPI(t)
	pk1 := encode48k(t, voice48k(1, 1))
	pk2 := encode48k(t, voice48k(1, 2))

	b1 := newTestPeer(t, api)
	p1 := b1.connect(e, PeerOptions{Name: "before reload"})
	p1.Attach(call)
	b1.stream(pk1, 1, 1, nil)
	time.Sleep(100 * time.Millisecond) // the last packet is on its way before the page goes
	b1.close()                         // the page unloads: the server sees the connection close
	select {
	case <-p1.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("server did not notice the browser hanging up")
	}
	time.Sleep(300 * time.Millisecond)
	b2 := newTestPeer(t, api)
	p2 := b2.connect(e, PeerOptions{Name: "after reload"})
	p2.Attach(call)
	b2.stream(pk2, 30000, 999999, nil)
	time.Sleep(100 * time.Millisecond)
	st := call.Stats()
	p2.Close()
	call.Close()

	starts, ends := agent.eventsOf(media.CallerStreamStart), agent.eventsOf(media.CallerStreamEnd)
	if len(starts) != 2 || len(ends) != 2 || st.CallerStreams != 2 {
		t.Fatalf("starts %+v ends %+v streams %d", starts, ends, st.CallerStreams)
	}
	gap := starts[1].Duration
	t.Logf("reload gap %v (stream 1 ended at %v, stream 2 began at %v)", gap, ends[0].At, starts[1].At)
	if gap < 200*time.Millisecond || gap != starts[1].At-ends[0].At {
		t.Fatalf("reported gap %v", gap)
	}
	w, _ := audio.ReadWAV(path)
	left := w.Channel(0)
	missing := 0
	for i, pk := range [][][]byte{pk1, pk2} {
		missing += len(matchStream(t, left, sampleAt(starts[i].At), pk, nil))
	}
	if int64(missing) != st.CallerPacketsLate {
		t.Fatalf("%d packets missing from the recording, engine counted %d late", missing, st.CallerPacketsLate)
	}
	if maxAbs(left[sampleAt(ends[0].At):sampleAt(starts[1].At)]) != 0 {
		t.Fatal("the reload gap is not silence")
	}
	if st.CallerPacketsLost != 0 || st.CallerPacketsReceived != int64(len(pk1)+len(pk2)) {
		t.Fatalf("received %d lost %d", st.CallerPacketsReceived, st.CallerPacketsLost)
	}
}

// TestLinkQualityFromRTCP: the participant's receiver reports give round-trip time, jitter and loss
// of the agent's stream, on the peer and on the call.
func TestLinkQualityFromRTCP(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time streaming test")
	}
	checkLeaks(t)
	e := newLoopbackEndpoint(t, false)
	call, _, _ := newEchoCall(t, true, 0)
	b := newTestPeer(t, browserAPI(t))
	p := b.connect(e, PeerOptions{})
	p.Attach(call)
	b.stream(encode48k(t, voice48k(3, 4)), 5, 5, nil)
	q, cq := p.Stats().Link, call.Stats().Link
	p.Close()
	t.Logf("RTT %v, remote jitter %v, remote lost %d", q.RTT, q.RemoteJitter, q.RemoteLost)
	if q.RTT <= 0 || q.RTT > 50*time.Millisecond || q.Updated.IsZero() {
		t.Fatalf("link quality %+v", q)
	}
	if cq != q {
		t.Fatalf("call sees %+v, peer %+v", cq, q)
	}
}

// TestCloseReleasesEverythingInEveryState closes peers, calls and endpoints in every order and
// state; goleak checks nothing is left running.
func TestCloseReleasesEverythingInEveryState(t *testing.T) {
	checkLeaks(t)
	api := browserAPI(t)
	cases := map[string]func(t *testing.T, e *Endpoint, call *media.Call){
		"answered, never connected": func(t *testing.T, e *Endpoint, call *media.Call) {
			b := newTestPeer(t, api)
			p, _, err := e.Answer(t.Context(), b.offer(), PeerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			p.Attach(call)
		},
		"streaming, call closed first": func(t *testing.T, e *Endpoint, call *media.Call) {
			b := newTestPeer(t, api)
			p := b.connect(e, PeerOptions{})
			p.Attach(call)
			go b.stream(encode48k(t, voice48k(0.3, 1)), 0, 0, nil)
			time.Sleep(150 * time.Millisecond)
			call.Close()
			time.Sleep(50 * time.Millisecond)
			p.Close()
		},
		"streaming, peer closed first": func(t *testing.T, e *Endpoint, call *media.Call) {
			b := newTestPeer(t, api)
			p := b.connect(e, PeerOptions{})
			p.Attach(call)
			call.PushAgentAudio(make([]int16, 24000))
			b.stream(encode48k(t, voice48k(0.2, 1)), 0, 0, nil)
			p.Close()
		},
		"browser hung up": func(t *testing.T, e *Endpoint, call *media.Call) {
			b := newTestPeer(t, api)
			p := b.connect(e, PeerOptions{})
			p.Attach(call)
			b.close()
			select {
			case <-p.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("hang-up not noticed")
			}
		},
		"connected, endpoint closed with peers open": func(t *testing.T, e *Endpoint, call *media.Call) {
			for range 3 {
				b := newTestPeer(t, api)
				b.connect(e, PeerOptions{}).Attach(call)
			}
		},
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			e := newLoopbackEndpoint(t, name != "browser hung up")
			call, _, _ := newEchoCall(t, true, 0)
			run(t, e, call)
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if err := call.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
