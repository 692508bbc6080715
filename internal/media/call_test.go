package media

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/audio"
	"go.uber.org/goleak"
)

// captureLink is a ParticipantLink that keeps what the engine sends.
type captureLink struct {
	mu   sync.Mutex
	pkts [][]byte
	ts   []uint32
}

func (l *captureLink) WriteAgentOpus(p []byte, ts uint32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pkts = append(l.pkts, slices.Clone(p))
	l.ts = append(l.ts, ts)
	return nil
}

func (l *captureLink) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pkts)
}

// harness drives a Call with a ManualClock and keeps every frame and event it emits.
type harness struct {
	t      *testing.T
	clock  *ManualClock
	call   *Call
	link   *captureLink // attached at start for RTP calls
	path   string
	mu     sync.Mutex
	frames []CallerFrame
	events []Event
}

var clockBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newHarness(t *testing.T, cfg CallConfig) *harness {
	t.Helper()
	h := &harness{t: t, clock: NewManualClock(clockBase), path: filepath.Join(t.TempDir(), "call.wav")}
	cfg.Clock = h.clock
	if cfg.RecordingPath == "" {
		cfg.RecordingPath = h.path
	}
	if cfg.AgentRate == 0 {
		cfg.AgentRate = 24000
	}
	if cfg.NewEncoder == nil {
		cfg.NewEncoder = testEncoders
	}
	cfg.OnCallerFrame = func(f CallerFrame) {
		h.mu.Lock()
		f.PCM = slices.Clone(f.PCM)
		h.frames = append(h.frames, f)
		h.mu.Unlock()
	}
	cfg.OnEvent = func(ev Event) {
		h.mu.Lock()
		h.events = append(h.events, ev)
		h.mu.Unlock()
	}
	c, err := NewCall(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.call = c
	t.Cleanup(func() { c.Close() })
	if cfg.CallerInput == CallerRTP {
		h.link = &captureLink{}
		if err := c.Attach(h.link); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// receive hands a packet to the call as the attached link's.
func (h *harness) receive(p CallerPacket) error { return h.call.ReceiveCallerRTP(h.link, p) }

func (h *harness) eventsOf(kind EventKind) []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Event
	for _, e := range h.events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// closeAndRead closes the call and returns the recording.
func (h *harness) closeAndRead() *audio.WAV {
	h.t.Helper()
	if err := h.call.Close(); err != nil {
		h.t.Fatal(err)
	}
	w, err := audio.ReadWAV(h.path)
	if err != nil {
		h.t.Fatal(err)
	}
	return w
}

// sender plays the browser: 20 ms Opus packets of a known signal, sent in real (simulated) time.
type sender struct {
	ssrc    uint32
	seq0    uint16
	ts0     uint32
	pkts    [][]byte
	first   time.Time // arrival of packet 0
	spacing time.Duration
}

func newSender(t *testing.T, ssrc uint32, seconds float64, seed int64, first time.Time) *sender {
	t.Helper()
	enc, err := newOpusEncoder(32000)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.close()
	src := speechLike(audio.RecordRate, int(seconds*audio.RecordRate), seed)
	s := &sender{ssrc: ssrc, seq0: 65500, ts0: 0xfffff000, first: first, spacing: 20 * time.Millisecond}
	for off := 0; off+packetSamples <= len(src); off += packetSamples {
		p, err := enc.encode(nil, src[off:off+packetSamples])
		if err != nil {
			t.Fatal(err)
		}
		s.pkts = append(s.pkts, slices.Clone(p))
	}
	return s
}

func (s *sender) packet(k int) CallerPacket {
	return CallerPacket{
		SSRC: s.ssrc, Seq: s.seq0 + uint16(k), Timestamp: s.ts0 + uint32(k*960),
		Payload: s.pkts[k], Arrival: s.first.Add(time.Duration(k) * s.spacing),
	}
}

// decodeReference decodes the packets a receiver got (nil = lost) in order with a fresh decoder,
// leaving silence for lost ones: exactly what the engine must record.
func decodeReference(t *testing.T, pkts [][]byte) []int16 {
	t.Helper()
	return decodeReferenceWith(t, nil, pkts)
}

// decodeReferenceWith is decodeReference with the decoder newDecoder makes (nil: pion's).
func decodeReferenceWith(t *testing.T, newDecoder func() (Decoder, error), pkts [][]byte) []int16 {
	t.Helper()
	dec, err := newOpusDecoder(newDecoder)
	if err != nil {
		t.Fatal(err)
	}
	var out []int16
	for _, p := range pkts {
		if p == nil {
			out = append(out, make([]int16, packetSamples)...)
			continue
		}
		pcm, err := dec.decode(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pcm...)
	}
	return out
}

// play runs ticks, feeding each packet (unless drop says so) when its arrival time has come,
// i.e. after the last tick due before it. It returns the packets as the receiver got them.
func (h *harness) play(s *sender, ticks int, drop func(k int) bool) [][]byte {
	var got [][]byte
	k := 0
	for range ticks {
		if !h.clock.Advance() {
			h.t.Fatal("clock stopped")
		}
		n := h.call.MediaTime() / TickDuration // next tick index
		for k < len(s.pkts) && s.packet(k).Arrival.Before(h.clock.Due(int64(n))) {
			if drop != nil && drop(k) {
				got = append(got, nil)
			} else {
				if err := h.receive(s.packet(k)); err != nil {
					h.t.Fatal(err)
				}
				got = append(got, s.pkts[k])
			}
			k++
		}
	}
	return got
}

// TestCallRecordsCallerAtPacketTimestamps runs with the default pure-Go decoder and with libopus's
// (the console's): either way the recording is the decoded packets at their timestamps.
func TestCallRecordsCallerAtPacketTimestamps(t *testing.T) {
	for name, dec := range map[string]func() (Decoder, error){"pion": nil, "libopus": testDecoders} {
		t.Run(name, func(t *testing.T) { testCallRecordsCallerAtPacketTimestamps(t, dec) })
	}
}

func testCallRecordsCallerAtPacketTimestamps(t *testing.T, newDecoder func() (Decoder, error)) {
	checkLeaks(t)
	h := newHarness(t, CallConfig{NewDecoder: newDecoder})
	// The first packet arrives 7 ms after tick 0 was due.
	s := newSender(t, 0x1234, 2, 1, clockBase.Add(7*time.Millisecond))
	got := h.play(s, 51, nil) // the stream covers frames 1..50
	st := h.call.Stats()
	w := h.closeAndRead()

	starts := h.eventsOf(CallerStreamStart)
	if len(starts) != 1 {
		t.Fatalf("stream starts: %+v", starts)
	}
	// Phase lock: packets 0+1 form frame 1, complete at 7+20 ms; with the 3 ms margin tick 1 moves
	// from 40 ms to 30 ms.
	if sh := h.clock.Shifted(); sh != -10*time.Millisecond {
		t.Fatalf("clock shifted %v, want -10ms", sh)
	}
	s0 := int(starts[0].At * audio.RecordRate / time.Second)
	if s0 != audio.FrameSamples {
		t.Fatalf("stream anchored at sample %d, want %d", s0, audio.FrameSamples)
	}
	if w.Frames() != 51*audio.FrameSamples {
		t.Fatalf("recording has %d frames, want %d", w.Frames(), 51*audio.FrameSamples)
	}
	ref := decodeReferenceWith(t, newDecoder, got)
	left := w.Channel(0)
	for i := range left {
		want := int16(0)
		if j := i - s0; j >= 0 && j < len(ref) {
			want = ref[j]
		}
		if left[i] != want {
			t.Fatalf("left sample %d = %d, want %d (packet audio at its timestamp)", i, left[i], want)
		}
	}
	// Each frame went to the agent once, in order, as soon as its second packet arrived.
	if len(h.frames) != 51 {
		t.Fatalf("%d frames delivered, want 51", len(h.frames))
	}
	for i, f := range h.frames {
		if f.Tick != int64(i) || len(f.PCM) != audio.FrameSamples || f.Start != time.Duration(i)*TickDuration {
			t.Fatalf("frame %d: tick %d, %d samples, start %v", i, f.Tick, len(f.PCM), f.Start)
		}
		if !slices.Equal(f.PCM, left[i*audio.FrameSamples:(i+1)*audio.FrameSamples]) {
			t.Fatalf("frame %d delivered differs from what was recorded", i)
		}
		if k := 2*i - 1; i >= 1 && k < len(s.pkts) {
			if want := s.packet(k).Arrival; !f.Delivered.Equal(want) {
				t.Fatalf("frame %d delivered at %v, want at the arrival of packet %d (%v)", i, f.Delivered, k, want)
			}
		}
	}
	if st.CallerPacketsReceived != int64(len(s.pkts)) || st.CallerPacketsLost != 0 || st.CallerConcealed != 0 || st.CallerPacketsLate != 0 {
		t.Fatalf("stats %+v", st)
	}
	if st.CallerSlack != DefaultJitterMargin {
		t.Fatalf("slack %v, want the %v margin", st.CallerSlack, DefaultJitterMargin)
	}
}

func TestCallPacketLossKeepsLengthAndAlignment(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, CallConfig{})
	// The sender keeps going past the last tick, as a connected browser does.
	s := newSender(t, 0x99, 4, 2, clockBase.Add(22*time.Millisecond))
	got := h.play(s, 90, func(k int) bool { return k%10 == 9 })
	st := h.call.Stats()
	w := h.closeAndRead()
	s0 := int(h.eventsOf(CallerStreamStart)[0].At * audio.RecordRate / time.Second)
	lost, lostPlayed := 0, 0
	for k, p := range got {
		if p == nil && k < len(got)-1 { // RFC 3550 counts up to the highest sequence received
			lost++
			if s0+k*packetSamples < 90*audio.FrameSamples {
				lostPlayed++
			}
		}
	}
	if lost < 10 || st.CallerPacketsLost != int64(lost) {
		t.Fatalf("dropped %d packets, stats say %d lost", lost, st.CallerPacketsLost)
	}
	if want := time.Duration(lostPlayed) * 20 * time.Millisecond; st.CallerConcealed != want {
		t.Fatalf("concealed %v, want %v", st.CallerConcealed, want)
	}
	if w.Frames() != 90*audio.FrameSamples {
		t.Fatalf("recording has %d frames, want %d", w.Frames(), 90*audio.FrameSamples)
	}
	ref := decodeReference(t, got)
	left := w.Channel(0)
	for j := range ref[:90*audio.FrameSamples-s0] {
		if left[s0+j] != ref[j] {
			t.Fatalf("sample %d after the anchor: %d, want %d (audio after a loss must stay in place)", j, left[s0+j], ref[j])
		}
	}
	t.Logf("lost %d of %d packets, concealed %v, recording %v", lost, len(got), st.CallerConcealed, w.Duration())
}

func TestCallLatePacketDelaysClock(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, CallConfig{})
	s := newSender(t, 7, 1.5, 3, clockBase.Add(5*time.Millisecond))
	// Packet 21 (second half of a frame) is held back 30 ms: it misses its tick.
	held := 21
	var got [][]byte
	k := 0
	for range 30 {
		h.clock.Advance()
		n := int64(h.call.MediaTime() / TickDuration)
		for ; k < len(s.pkts) && s.packet(k).Arrival.Before(h.clock.Due(n)); k++ {
			if k == held {
				continue
			}
			h.receive(s.packet(k))
		}
		if k > held && k-1 < held+3 {
			p := s.packet(held)
			p.Arrival = p.Arrival.Add(30 * time.Millisecond)
			if p.Arrival.Before(h.clock.Due(n)) {
				before := h.clock.Shifted()
				h.receive(p)
				if h.clock.Shifted() <= before {
					t.Fatalf("late packet did not delay the clock (%v -> %v)", before, h.clock.Shifted())
				}
				held = -1
			}
		}
	}
	_ = got
	st := h.call.Stats()
	if st.CallerPacketsLate != 1 || st.CallerPacketsLost != 0 {
		t.Fatalf("late %d lost %d; want 1 late, 0 lost (it did arrive)", st.CallerPacketsLate, st.CallerPacketsLost)
	}
	if st.CallerConcealed != 20*time.Millisecond {
		t.Fatalf("concealed %v, want 20ms", st.CallerConcealed)
	}
}

// TestCallStarvedReaderDoesNotDerailTheClock: for one second the packet reader falls further and
// further behind (as when this process is starved of CPU: each packet is read later than the one
// before, up to 500 ms late), then catches up in one burst. The clock follows that lateness only
// within its correction budget, comes back to the margin afterwards, and frames are still
// delivered to the agent the moment they are complete.
func TestCallStarvedReaderDoesNotDerailTheClock(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, CallConfig{})
	s := newSender(t, 9, 10, 6, clockBase.Add(11*time.Millisecond))
	k := 0
	// feed plays ticks; delay says how late each packet (by its nominal arrival) is read.
	var maxShift time.Duration
	feed := func(ticks int, delay func(at time.Time) time.Duration) {
		for range ticks {
			h.clock.Advance()
			maxShift = max(maxShift, h.clock.Shifted())
			n := int64(h.call.MediaTime() / TickDuration)
			for ; k < len(s.pkts); k++ {
				p := s.packet(k)
				p.Arrival = p.Arrival.Add(delay(p.Arrival))
				if !p.Arrival.Before(h.clock.Due(n)) {
					break
				}
				h.receive(p)
			}
		}
	}
	onTime := func(time.Time) time.Duration { return 0 }
	feed(50, onTime)
	before := h.clock.Shifted()
	maxShift = before
	starveFrom := h.clock.Due(int64(h.call.MediaTime() / TickDuration))
	caughtUp := starveFrom.Add(1500 * time.Millisecond)
	feed(50, func(at time.Time) time.Duration {
		switch {
		case at.Before(starveFrom):
			return 0
		case at.Before(starveFrom.Add(time.Second)):
			return at.Sub(starveFrom) / 2 // read at 2/3 of real time
		case at.Before(caughtUp):
			return caughtUp.Sub(at) // the backlog, read in one burst
		}
		return 0
	})
	moved := maxShift - before
	if limit := retardBurst + maxRetard; moved > limit {
		t.Fatalf("starvation moved the clock by up to %v, want at most the correction budget (%v)", moved, limit)
	}
	feed(150, onTime) // 6 s of normal packets
	st := h.call.Stats()
	t.Logf("clock moved %v while starved; then late %d, slack %v", moved, st.CallerPacketsLate, st.CallerSlack)
	if st.CallerPacketsLate < 20 {
		t.Fatalf("only %d packets counted late", st.CallerPacketsLate)
	}
	if st.CallerSlack > DefaultJitterMargin+5*time.Millisecond {
		t.Fatalf("slack %v did not come back to the %v margin", st.CallerSlack, DefaultJitterMargin)
	}
	h.mu.Lock()
	last := h.frames[len(h.frames)-1]
	h.mu.Unlock()
	if last.Completed.IsZero() || !last.Delivered.Equal(last.Completed) {
		t.Fatalf("frames are no longer delivered on arrival: %+v", last)
	}
}

func TestCallReloadStartsNewStreamAfterGap(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, CallConfig{})
	a, b := h.link, &captureLink{}
	s1 := newSender(t, 111, 1, 4, clockBase.Add(3*time.Millisecond))
	got1 := h.play(s1, 26, nil) // the page reloads right after its last packet
	h.call.Detach(a)
	h.clock.AdvanceN(20) // 0.8 s with nobody connected
	if err := h.call.Attach(b); err != nil {
		t.Fatal(err)
	}
	if err := h.call.ReceiveCallerRTP(a, s1.packet(0)); !errors.Is(err, ErrNotAttached) {
		t.Fatalf("a packet from the replaced link: %v, want ErrNotAttached", err)
	}
	h.link = b
	t2 := h.clock.Due(int64(h.call.MediaTime() / TickDuration)).Add(-31 * time.Millisecond)
	s2 := newSender(t, 222, 1, 5, t2)
	s2.seq0, s2.ts0 = 7, 1234567 // a new PeerConnection: new SSRC, sequence and timestamps
	got2 := h.play(s2, 25, nil)
	st := h.call.Stats()
	w := h.closeAndRead()

	starts, ends := h.eventsOf(CallerStreamStart), h.eventsOf(CallerStreamEnd)
	if len(starts) != 2 || len(ends) != 1 || starts[1].SSRC != 222 {
		t.Fatalf("starts %+v ends %+v", starts, ends)
	}
	if gap := starts[1].Duration; gap != starts[1].At-ends[0].At || gap < 800*time.Millisecond {
		t.Fatalf("reported gap %v (end %v, restart %v)", gap, ends[0].At, starts[1].At)
	}
	if st.CallerStreams != 2 || st.CallerPacketsLost != 0 || st.CallerConcealed != 0 {
		t.Fatalf("stats %+v", st)
	}
	left := w.Channel(0)
	for i, g := range [][][]byte{got1, got2} {
		s0 := int(starts[i].At * audio.RecordRate / time.Second)
		ref := decodeReference(t, g)
		ref = ref[:min(len(ref), len(left)-s0)]
		if !slices.Equal(left[s0:s0+len(ref)], ref) {
			t.Fatalf("stream %d not recorded at its anchor", i+1)
		}
	}
	e1 := int(ends[0].At * audio.RecordRate / time.Second)
	s2At := int(starts[1].At * audio.RecordRate / time.Second)
	if maxAbs(left[e1:s2At]) != 0 {
		t.Fatal("the reload gap is not silence")
	}
	if b.count() == 0 || a.count() == 0 {
		t.Fatalf("agent packets: old link %d, new link %d", a.count(), b.count())
	}
}

func TestCallAgentPlayoutAndRecording(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, CallConfig{})
	link := h.link
	voice := speechLike(audio.RecordRate, audio.RecordRate/2, 9) // 500 ms in odd chunks
	for off := 0; off < len(voice); off += 1234 {
		h.call.PushAgentAudio(voice[off:min(off+1234, len(voice))])
	}
	h.clock.AdvanceN(30)
	w := h.closeAndRead()
	right := w.Channel(1)
	if !slices.Equal(right[:len(voice)], voice) || maxAbs(right[len(voice):]) != 0 {
		t.Fatal("right channel is not the agent audio followed by silence")
	}
	if link.count() != 60 {
		t.Fatalf("%d packets sent, want 2 per tick = 60", link.count())
	}
	for i, ts := range link.ts {
		if ts != uint32(i*960) {
			t.Fatalf("packet %d: rtp timestamp %d, want %d (media time at 48 kHz)", i, ts, i*960)
		}
	}
	sent := decodeReference(t, link.pkts[:26])
	lag, corr := bestLag(voice[:len(voice)-400], sent, 400)
	if corr < 0.8 {
		t.Fatalf("sent audio does not match the agent's (corr %.2f at lag %d)", corr, lag)
	}
	if starts := h.eventsOf(AgentSpeechStart); len(starts) != 1 || starts[0].At != 0 {
		t.Fatalf("agent speech starts %+v", starts)
	}
	if ends := h.eventsOf(AgentSpeechEnd); len(ends) != 1 || ends[0].At != 500*time.Millisecond {
		t.Fatalf("agent speech ends %+v", ends)
	}
}

func TestCallBargeInFlushStopsAgentWithinOneTick(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, CallConfig{})
	h.call.PushAgentAudio(speechLike(audio.RecordRate, 2*audio.RecordRate, 10))
	h.clock.AdvanceN(10)
	rep := h.call.FlushAgent()
	if rep.At != 400*time.Millisecond || rep.Dropped != 1600*time.Millisecond {
		t.Fatalf("flush report %+v, want 1.6s dropped at 400ms", rep)
	}
	if q := h.call.AgentQueued(); q != 0 {
		t.Fatalf("%v still queued", q)
	}
	h.clock.AdvanceN(20)
	st := h.call.Stats()
	w := h.closeAndRead()
	right := w.Channel(1)
	at := int(rep.At * audio.RecordRate / time.Second)
	if maxAbs(right[at-audio.FrameSamples:at]) == 0 || maxAbs(right[at:]) != 0 {
		t.Fatalf("agent audio must play up to %v and stop there", rep.At)
	}
	if st.AgentFlushed != rep.Dropped {
		t.Fatalf("stats flushed %v, want %v", st.AgentFlushed, rep.Dropped)
	}
	if ends := h.eventsOf(AgentSpeechEnd); len(ends) != 1 || ends[0].At != rep.At {
		t.Fatalf("agent speech end %+v, want at %v", ends, rep.At)
	}
}

func TestCallDelivers16kHzWithResamplerDelay(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, CallConfig{AgentRate: 16000, CallerInput: CallerPCM})
	tone := sine(audio.RecordRate, audio.RecordRate, 1000, 8000)
	h.call.PushCallerPCM(tone)
	h.clock.AdvanceN(25)
	h.call.Close()
	ref, _ := audio.NewResampler(24000, 16000)
	want := ref.Process(tone, nil)
	var got []int16
	for i, f := range h.frames {
		if f.Rate != 16000 || len(f.PCM) != 640 || f.Start != time.Duration(i)*TickDuration-875*time.Microsecond {
			t.Fatalf("frame %d: rate %d, %d samples, start %v", i, f.Rate, len(f.PCM), f.Start)
		}
		got = append(got, f.PCM...)
	}
	if !slices.Equal(got, want) {
		t.Fatal("16 kHz frames differ from resampling the caller channel")
	}
	if h.call.CallerDelay() != 875*time.Microsecond {
		t.Fatalf("CallerDelay %v", h.call.CallerDelay())
	}
}

func TestCallSyntheticCallerAndEndpointer(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, CallConfig{CallerInput: CallerPCM, CallerEndpointer: audio.EndpointerConfig{ThresholdDBFS: -40}})
	pcm := segments([2]float64{400, -120}, [2]float64{800, -20}, [2]float64{1000, -120})
	h.call.PushCallerPCM(pcm[:10000])
	h.call.PushCallerPCM(pcm[10000:])
	if q := h.call.CallerQueued(); q != 2200*time.Millisecond {
		t.Fatalf("queued %v", q)
	}
	if err := h.call.ReceiveCallerRTP(nil, CallerPacket{Payload: []byte{1}}); !errors.Is(err, ErrWrongInput) {
		t.Fatalf("RTP on a synthetic call: %v", err)
	}
	h.clock.AdvanceN(60)
	w := h.closeAndRead()
	if !slices.Equal(w.Channel(0)[:len(pcm)], pcm) {
		t.Fatal("left channel is not the synthetic caller's audio")
	}
	st, en := h.eventsOf(CallerSpeechStart), h.eventsOf(CallerSpeechEnd)
	// Onsets are stamped to the sample: the tone starts at phase 0 at 400 ms, and its second sample
	// (1 of 24000 s later) is the first to reach the -40 dBFS level.
	onset := 400*time.Millisecond + audio.SamplesToDuration(1, audio.RecordRate)
	if len(st) != 1 || st[0].At != onset || st[0].Padded != onset-300*time.Millisecond || st[0].Detected != 500*time.Millisecond {
		t.Fatalf("speech start %+v", st)
	}
	if len(en) != 1 || en[0].At != 1200*time.Millisecond || en[0].Detected != 1700*time.Millisecond {
		t.Fatalf("speech end %+v", en)
	}
}

func TestCallRejectsBadConfig(t *testing.T) {
	for name, cfg := range map[string]CallConfig{
		"rate":     {AgentRate: 8000, NewEncoder: testEncoders},
		"margin":   {AgentRate: 24000, JitterMargin: time.Second, NewEncoder: testEncoders},
		"bitrate":  {AgentRate: 24000, OpusBitrate: 100, NewEncoder: testEncoders},
		"endpoint": {AgentRate: 24000, CallerEndpointer: audio.EndpointerConfig{ThresholdDBFS: 10}, NewEncoder: testEncoders},
		"input":    {AgentRate: 24000, CallerInput: 7, NewEncoder: testEncoders},
		"encoder":  {AgentRate: 24000},
	} {
		if _, err := NewCall(cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: got %v, want ErrBadConfig", name, err)
		}
	}
	if _, err := NewCall(CallConfig{AgentRate: 24000, RecordingPath: "/nonexistent/dir/x.wav", Clock: NewManualClock(clockBase), NewEncoder: testEncoders}); err == nil {
		t.Error("unwritable recording path accepted")
	}
}

// TestCallCloseInEveryState: closing releases every goroutine whatever the call was doing, and
// the call refuses work afterwards.
func TestCallCloseInEveryState(t *testing.T) {
	checkLeaks(t)
	states := map[string]func(t *testing.T, h *harness){
		"fresh": func(*testing.T, *harness) {},
		"ticking": func(t *testing.T, h *harness) {
			h.clock.AdvanceN(5)
		},
		"streaming with agent audio queued": func(t *testing.T, h *harness) {
			h.call.PushAgentAudio(make([]int16, audio.RecordRate))
			h.play(newSender(t, 5, 0.5, 1, clockBase.Add(time.Millisecond)), 10, nil)
		},
		"detached": func(t *testing.T, h *harness) {
			h.play(newSender(t, 5, 0.2, 1, clockBase.Add(time.Millisecond)), 8, nil)
			h.call.Detach(h.link)
		},
	}
	for name, prepare := range states {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, CallConfig{})
			prepare(t, h)
			if err := h.call.Close(); err != nil {
				t.Fatal(err)
			}
			if err := h.call.Close(); err != nil {
				t.Fatalf("second close: %v", err)
			}
			if err := h.receive(CallerPacket{}); !errors.Is(err, ErrClosed) {
				t.Fatalf("receive after close: %v", err)
			}
			if err := h.call.PushAgentAudio([]int16{1}); !errors.Is(err, ErrClosed) {
				t.Fatalf("push after close: %v", err)
			}
			if err := h.call.Attach(&captureLink{}); !errors.Is(err, ErrClosed) {
				t.Fatalf("attach after close: %v", err)
			}
			if _, err := audio.ReadWAV(h.path); err != nil {
				t.Fatalf("recording not finalized: %v", err)
			}
		})
	}
	t.Run("real clock running", func(t *testing.T) {
		c, err := NewCall(CallConfig{AgentRate: 16000, RecordingPath: filepath.Join(t.TempDir(), "r.wav"), NewEncoder: testEncoders})
		if err != nil {
			t.Fatal(err)
		}
		c.PushAgentAudio(make([]int16, 4800))
		time.Sleep(100 * time.Millisecond)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if c.MediaTime() < TickDuration {
			t.Fatalf("real clock never ticked (media time %v)", c.MediaTime())
		}
	})
}

func BenchmarkCallTick(b *testing.B) {
	// One tick with the caller frame already assembled from two packets, the agent speaking, a
	// link attached and no recording: the engine's per-tick hot path.
	clk := NewManualClock(clockBase)
	c, err := NewCall(CallConfig{AgentRate: 16000, Clock: clk, NewEncoder: testEncoders})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	link := nullLink{}
	c.Attach(link)
	enc, _ := newOpusEncoder(32000)
	src := speechLike(audio.RecordRate, audio.RecordRate, 1)
	var pkts [][]byte
	for off := 0; off < len(src); off += packetSamples {
		p, _ := enc.encode(nil, src[off:off+packetSamples])
		pkts = append(pkts, p)
	}
	enc.close()
	agent := speechLike(audio.RecordRate, audio.FrameSamples, 2)
	k := 0
	tick := func() {
		n := c.MediaTime() / TickDuration
		due := clk.Due(int64(n))
		for range 2 {
			c.ReceiveCallerRTP(link, CallerPacket{SSRC: 1, Seq: uint16(k), Timestamp: uint32(k * 960), Payload: pkts[k%len(pkts)], Arrival: due.Add(-time.Millisecond)})
			k++
		}
		c.PushAgentAudio(agent)
		clk.Advance()
	}
	for range 50 { // warm up (stream start, buffers), so even -benchtime 1x shows the steady state
		tick()
	}
	b.ReportAllocs()
	for b.Loop() {
		tick()
	}
}

// checkLeaks verifies, after every other cleanup (closing calls) ran, that no goroutine is left.
func checkLeaks(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
}

type nullLink struct{}

func (nullLink) WriteAgentOpus([]byte, uint32) error { return nil }

// BenchmarkCallSecondRecorded is BenchmarkCallTick with the recording on (to tmpfs): one op is one
// second of a call (25 ticks), and the figure is the process CPU per session-second, writer
// goroutine included, for the one-second flush the recorder had and the audio.RecorderFlushInterval it
// has, and with the caller's audio decoded by pion or by libopus, alternated in one process so
// that all see the same load.
func BenchmarkCallSecondRecorded(b *testing.B) {
	dir, err := os.MkdirTemp("/dev/shm", "call-bench-")
	if err != nil {
		dir = b.TempDir()
	}
	defer os.RemoveAll(dir)
	enc, _ := newOpusEncoder(32000)
	src := speechLike(audio.RecordRate, audio.RecordRate, 1)
	var pkts [][]byte
	for off := 0; off < len(src); off += packetSamples {
		p, _ := enc.encode(nil, src[off:off+packetSamples])
		pkts = append(pkts, p)
	}
	enc.close()
	agent := speechLike(audio.RecordRate, audio.FrameSamples, 2)
	defer func(old func(string, int) (*audio.Recorder, error)) { newRecorder = old }(newRecorder)
	type variant struct {
		every   time.Duration
		decoder string // the caller's decoder: pion (the engine's default) or libopus (the console's)
	}
	decoders := map[string]func() (Decoder, error){"pion": nil, "libopus": testDecoders}
	var variants []variant
	for range 2 {
		variants = append(variants, variant{time.Second, "pion"}, variant{audio.RecorderFlushInterval, "pion"}, variant{audio.RecorderFlushInterval, "libopus"})
	}
	for _, v := range variants {
		every := v.every
		b.Run("flush="+every.String()+"/decoder="+v.decoder, func(b *testing.B) {
			newRecorder = func(path string, rate int) (*audio.Recorder, error) {
				return audio.CreateRecorderFlushing(path, rate, every)
			}
			clk := NewManualClock(clockBase)
			c, err := NewCall(CallConfig{AgentRate: 16000, Clock: clk, RecordingPath: filepath.Join(dir, fmt.Sprintf("%s-%s-%d.wav", every, v.decoder, b.N)),
				NewEncoder: testEncoders, NewDecoder: decoders[v.decoder]})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			link := nullLink{}
			c.Attach(link)
			k := 0
			tick := func() {
				n := c.MediaTime() / TickDuration
				due := clk.Due(int64(n))
				for range 2 {
					c.ReceiveCallerRTP(link, CallerPacket{SSRC: 1, Seq: uint16(k), Timestamp: uint32(k * 960), Payload: pkts[k%len(pkts)], Arrival: due.Add(-time.Millisecond)})
					k++
				}
				c.PushAgentAudio(agent)
				clk.Advance()
			}
			for range 50 {
				tick()
			}
			var ru0, ru1 syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			seconds := 0
			for b.Loop() {
				for range 25 {
					tick()
				}
				seconds++
			}
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
			b.ReportMetric(float64(cpu.Microseconds())/float64(seconds), "cpu_us_per_session_s")
		})
	}
}

// TestCallCloseWhileEncodingAhead: libopus runs outside the agent lock while audio is encoded
// ahead; closing the call meanwhile must wait for it rather than free the encoder under it.
func TestCallCloseWhileEncodingAhead(t *testing.T) {
	checkLeaks(t)
	voice := speechLike(audio.RecordRate, audio.RecordRate, 4)
	for range 30 {
		c, err := NewCall(CallConfig{AgentRate: 24000, Clock: NewManualClock(clockBase), NewEncoder: testEncoders})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Attach(nullLink{}); err != nil {
			t.Fatal(err)
		}
		pushed := make(chan struct{})
		go func() {
			defer close(pushed)
			for off := 0; off < len(voice); off += 960 {
				if c.PushAgentAudio(voice[off:off+960]) != nil {
					return
				}
			}
		}()
		time.Sleep(time.Duration(rand.Intn(3000)) * time.Microsecond)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		<-pushed
	}
}

// TestCallOnsetsToTheSampleOnBothChannels: the caller's and the agent's voice start off the 10 ms
// grid, inside a tick (the caller 1234 samples into the call, the agent after 2021 samples of
// silence at the start of its response); the call's speech starts are stamped at the sample where
// each voice begins in the recording, or the one after (audiotest.SpeechLike's first sample is
// noise). The session's barge-in onset (ref_ms) is the caller's speech start.
func TestCallOnsetsToTheSampleOnBothChannels(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, CallConfig{CallerInput: CallerPCM})
	const callerAt, agentLead = 1234 + 12*audio.FrameSamples, 2021
	voice := speechLike(audio.RecordRate, audio.RecordRate/2, 5)
	caller := append(make([]int16, callerAt), voice...)
	h.call.PushCallerPCM(caller)
	h.call.PushAgentAudio(append(make([]int16, agentLead), voice...))
	h.clock.AdvanceN(40)
	w := h.closeAndRead()
	nonZero := func(ch []int16) int { return slices.IndexFunc(ch, func(v int16) bool { return v != 0 }) }
	for _, c := range []struct {
		kind EventKind
		ch   []int16
	}{{CallerSpeechStart, w.Channel(0)}, {AgentSpeechStart, w.Channel(1)}} {
		first := nonZero(c.ch)
		starts := h.eventsOf(c.kind)
		if first < 0 || len(starts) != 1 {
			t.Fatalf("%s: voice at sample %d, speech starts %+v", c.kind, first, starts)
		}
		got := int(math.Round(starts[0].At.Seconds() * audio.RecordRate))
		if d := got - first; d < 0 || d > 1 {
			t.Errorf("%s stamped at sample %d; the voice begins at sample %d of the recording (%+d)", c.kind, got, first, d)
		}
	}
	if first := nonZero(w.Channel(0)); first != callerAt {
		t.Errorf("caller voice at sample %d of the recording, pushed at %d", first, callerAt)
	}
}
