package rtc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/webrtc/v4"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/openai"
	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/media"
	"github.com/voicebench/humanaudit/internal/media/libopus"
	"github.com/voicebench/humanaudit/internal/session"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// The impaired link: 10% random loss and 30 ms of jitter (a delay uniform in 0..60 ms, which also
// reorders packets) on every packet, both ways.
const (
	impairLoss   = 0.10
	impairDelay  = 30 * time.Millisecond
	impairJitter = 30 * time.Millisecond
	// impairedStream is how long the browser speaks.
	impairedStream = 8 * time.Second
)

// Environment of the child process that makes the impaired call inside the network namespace.
const (
	impairedModeEnv = "RTC_IMPAIRED_CALL" // netem or relay
	impairedOutEnv  = "RTC_IMPAIRED_RESULT"
)

// impairedResult is what the child measured: the call's media.stats and the recording checks.
type impairedResult struct {
	Mode            string  `json:"mode"` // netem: tc netem on the namespace's loopback; relay: impaired in user space
	Packets         int     `json:"packets"`
	Received        int64   `json:"received"`
	Lost            int64   `json:"lost"`
	Late            int64   `json:"late"`
	Missing         int     `json:"missing"` // packets whose 20 ms are silence in the recording
	ConcealedMS     int64   `json:"concealed_ms"`
	JitterMS        int64   `json:"jitter_ms"`
	AlignedPackets  int     `json:"aligned_packets"` // received in time and found sample-exact at their timestamps
	RecordingMS     int64   `json:"recording_ms"`
	MediaTimeMS     int64   `json:"media_time_ms"`
	LossPct         float64 `json:"loss_pct"`
	ConcealedPct    float64 `json:"concealed_pct"`
	LateTicks       int64   `json:"late_ticks"`
	ConnectSeconds  float64 `json:"connect_s"`
	StreamStartedMS int64   `json:"stream_started_ms"`
}

// TestCallUnderLossAndJitter runs a participant's call (a pion peer playing the browser, the
// console's endpoint, a human session with the matched endpointer and an agent that stays silent)
// through a network namespace whose loopback has 10% loss and 30 ms of jitter (tc netem). The
// recording is as long as the media clock ran, every packet that arrived in time is at its
// timestamp sample for sample, and media.stats counts the loss, the late packets and the
// concealed audio exactly as the recording shows them. It needs root (a namespace and a qdisc);
// where the kernel has no netem it impairs the browser's socket in user space with the same
// figures, and says so.
func TestCallUnderLossAndJitter(t *testing.T) {
	if mode := os.Getenv(impairedModeEnv); mode != "" {
		res := runImpairedCall(t, mode)
		if out := os.Getenv(impairedOutEnv); out != "" && !t.Failed() {
			raw, _ := json.Marshal(res)
			if err := os.WriteFile(out, raw, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	if testing.Short() {
		t.Skip("real-time streaming test")
	}
	res := impairedCall(t)
	t.Logf("%s: %d packets, %d received, %d lost (%.1f%%), %d late, %d silent in the recording, concealed %d ms (%.1f%%), "+
		"jitter %d ms, %d packets sample-exact at their timestamps, recording %d ms = media time %d ms; connected in %.1f s",
		res.Mode, res.Packets, res.Received, res.Lost, res.LossPct, res.Late, res.Missing, res.ConcealedMS, res.ConcealedPct,
		res.JitterMS, res.AlignedPackets, res.RecordingMS, res.MediaTimeMS, res.ConnectSeconds)
}

// BenchmarkMediaPathLossAndJitter reports the figures of TestCallUnderLossAndJitter's call for
// make bench: loss, late packets and concealment as media.stats counts them, the jitter estimate,
// and the share of packets found sample-exact in the recording.
func BenchmarkMediaPathLossAndJitter(b *testing.B) {
	var res impairedResult
	for range b.N {
		res = impairedCall(b)
	}
	b.Logf("impaired by %s", res.Mode)
	b.ReportMetric(res.LossPct, "loss_pct")
	b.ReportMetric(100*float64(res.Late)/float64(res.Packets), "late_pct")
	b.ReportMetric(res.ConcealedPct, "concealed_pct")
	b.ReportMetric(float64(res.JitterMS), "jitter_ms")
	b.ReportMetric(100*float64(res.AlignedPackets)/float64(max(1, int64(res.Packets)-res.Lost-res.Late)), "aligned_pct")
	b.ReportMetric(float64(res.RecordingMS-res.MediaTimeMS), "recording_minus_clock_ms")
	b.ReportMetric(0, "ns/op")
}

// impairedCall sets up the network namespace and its impairment, runs the call in a child
// process inside it and returns what the child measured.
func impairedCall(tb testing.TB) impairedResult {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root to create a network namespace and a tc netem qdisc (CI runs as root)")
	}
	ipBin, err := exec.LookPath("ip")
	if err != nil {
		tb.Fatalf("ip not found (%v): scripts/deps.sh installs iproute2", err)
	}
	if _, err := exec.LookPath("tc"); err != nil {
		tb.Fatalf("tc not found (%v): scripts/deps.sh installs iproute2", err)
	}
	ns := fmt.Sprintf("audit-impaired-%d-%d", os.Getpid(), rand.IntN(1e6))
	run := func(args ...string) (string, error) {
		out, err := exec.Command(ipBin, args...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := run("netns", "add", ns); err != nil {
		tb.Fatalf("ip netns add %s: %v: %s", ns, err, out)
	}
	tb.Cleanup(func() {
		if out, err := run("netns", "delete", ns); err != nil {
			tb.Errorf("ip netns delete %s: %v: %s", ns, err, out)
		}
	})
	if out, err := run("netns", "exec", ns, "ip", "link", "set", "lo", "up"); err != nil {
		tb.Fatalf("bring up lo in %s: %v: %s", ns, err, out)
	}
	mode := "netem"
	netem := []string{"netns", "exec", ns, "tc", "qdisc", "add", "dev", "lo", "root", "netem",
		"loss", fmt.Sprintf("%g%%", 100*impairLoss), "delay", impairDelay.String(), impairJitter.String()}
	if out, err := run(netem...); err != nil {
		if !strings.Contains(out, "qdisc kind is unknown") {
			tb.Fatalf("tc %s: %v: %s", strings.Join(netem[3:], " "), err, out)
		}
		// This kernel was built without sch_netem (CONFIG_NET_SCH_NETEM): impair in user space.
		mode = "relay"
		tb.Logf("the kernel has no netem qdisc (tc: %s); impairing the browser's socket in user space instead, "+
			"with the same %g%% loss and %v ± %v delay", out, 100*impairLoss, impairDelay, impairJitter)
	}
	out := filepath.Join(tb.TempDir(), "result.json")
	cmd := exec.Command(ipBin, "netns", "exec", ns, os.Args[0], "-test.run=^TestCallUnderLossAndJitter$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), impairedModeEnv+"="+mode, impairedOutEnv+"="+out)
	cmd.Dir, _ = os.Getwd()
	logs, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("the call through the impaired link failed: %v\n%s", err, logs)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		tb.Fatalf("the child wrote no result (%v):\n%s", err, logs)
	}
	var res impairedResult
	if err := json.Unmarshal(raw, &res); err != nil {
		tb.Fatal(err)
	}
	return res
}

// firstArrived returns which packet the recording's caller stream starts with at sample s0: the
// first whose audio, decoded as the engine decodes a stream's first packet (a fresh decoder), is
// what the recording holds there.
func firstArrived(t *testing.T, left []int16, s0 int, pkts [][]byte) int {
	t.Helper()
	for k := 0; k < len(pkts) && k < 20; k++ {
		if ref := decode24k(t, pkts[k:k+1]); s0+len(ref) <= len(left) && slices.Equal(left[s0:s0+len(ref)], ref) {
			return k
		}
	}
	t.Fatalf("the caller stream at sample %d is none of the first 20 packets' audio", s0)
	return 0
}

// silentAgent answers nothing: the call is about the caller's link.
func silentAgent(t *testing.T) *openai.Adapter {
	var hang []agenttest.Reply
	for range 20 {
		hang = append(hang, agenttest.Reply{Hang: true})
	}
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: hang})
	return openai.New(openai.Options{URL: fake.URL(), Model: "m", Dialect: openai.GA})
}

// runImpairedCall is the child's call: it runs inside the namespace.
func runImpairedCall(t *testing.T, mode string) impairedResult {
	tk, err := task.LoadFile(filepath.Join("..", "grade", "testdata", "tasks", "it-vpn-incident.json"))
	if err != nil {
		t.Fatal(err)
	}
	e := newLoopbackEndpoint(t, true)
	rec := filepath.Join(t.TempDir(), "call.wav")
	sess, err := session.Start(context.Background(), session.Config{ID: "impaired", Task: tk, Mode: session.Human,
		Adapter: silentAgent(t), NewEncoder: media.Encoders(libopus.NewEncoder), RecordingPath: rec, TimeLimit: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	api := browserAPI(t)
	if mode == "relay" {
		conn, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		api = browserAPIOn(t, newImpairedConn(conn, impairLoss, impairDelay, impairJitter, 22))
	}
	b := newTestPeer(t, api)
	t0 := time.Now()
	p := b.connect(e, PeerOptions{Name: "impaired"})
	connect := time.Since(t0)
	if err := p.Attach(sess); err != nil {
		t.Fatal(err)
	}
	pkts := encode48k(t, voice48k(impairedStream.Seconds(), 11))
	b.stream(pkts, 5000, 777, nil)
	time.Sleep(2 * (impairDelay + impairJitter)) // the last packets are still on the wire
	sess.HangUp()
	res := sess.Result()
	p.Close()

	var stats, anchor *trace.Event
	for i, ev := range res.Events {
		switch ev.Type {
		case trace.MediaStats:
			stats = &res.Events[i]
		case trace.CallerAudioStart:
			anchor = &res.Events[i]
		}
	}
	if stats == nil || anchor == nil {
		t.Fatalf("trace lacks media.stats or caller.audio_start (%d events)", len(res.Events))
	}
	meta := func(k string) int64 {
		v, err := strconv.ParseInt(stats.Meta[k], 10, 64)
		if err != nil {
			t.Fatalf("media.stats %s = %q: %v", k, stats.Meta[k], err)
		}
		return v
	}
	w, err := audio.ReadWAV(rec)
	if err != nil {
		t.Fatal(err)
	}
	mediaTime := time.Duration(meta("ticks")) * media.TickDuration
	if w.Duration() != mediaTime {
		t.Fatalf("recording %v long, the media clock ran %v", w.Duration(), mediaTime)
	}
	if meta("caller_streams") != 1 {
		t.Fatalf("media.stats: %d caller streams, want 1 (loss and reordering must not restart the stream)", meta("caller_streams"))
	}
	// The stream is anchored on a 20 ms boundary, so caller.audio_start's milliseconds are exact.
	// It is anchored at the first packet that arrived, which under 10% loss is not always packet 0:
	// the packets lost before it are missing, and the stream's start lies that much earlier.
	s0 := int(audio.DurationToSamples(time.Duration(anchor.T)*time.Millisecond, audio.RecordRate))
	left := w.Channel(0)
	first := firstArrived(t, left, s0, pkts)
	missing := map[int]bool{}
	for k := range first {
		missing[k] = true
	}
	s0 -= first * 480
	missing = matchStream(t, left, s0, pkts, missing)
	lost, late, received := meta("caller_packets_lost"), meta("caller_packets_late"), meta("caller_packets_received")
	discarded := meta("caller_packets_discarded")
	// The packets the recording holds are exactly those received in time.
	if aligned := int64(len(pkts) - len(missing)); aligned != received-late-discarded {
		t.Fatalf("%d packets are in the recording at their timestamps; media.stats counts %d received, %d of them late and %d discarded",
			aligned, received, late, discarded)
	}
	// RFC 3550 counts the loss between the first and the last packet received.
	edge := 0
	for k := 0; k < len(pkts) && missing[k]; k++ {
		edge++
	}
	for k := len(pkts) - 1; k >= 0 && missing[k]; k-- {
		edge++
	}
	if never := int64(len(pkts)) - received; lost > never || lost < never-int64(edge) {
		t.Fatalf("media.stats counts %d lost; %d of %d packets never arrived (%d missing at the edges)", lost, never, len(pkts), edge)
	}
	end := audio.SamplesToDuration(int64(s0+len(pkts)*480), audio.RecordRate)
	// Concealment runs from the stream's anchor: the packets lost before the first that arrived lie
	// before it, and the receiver never knew of them.
	wantConcealed := time.Duration(len(missing)-first)*20*time.Millisecond + max(0, mediaTime-end)
	if got := time.Duration(meta("caller_concealed_ms")) * time.Millisecond; got != wantConcealed.Truncate(time.Millisecond) {
		t.Fatalf("media.stats concealed %v; the recording's silent packets and tail make %v", got, wantConcealed)
	}
	lossPct := 100 * float64(lost) / float64(len(pkts))
	if lossPct < 100*impairLoss/3 || lossPct > 100*impairLoss*2 {
		t.Fatalf("lost %.1f%% of the packets: the link is not impaired by %g%%", lossPct, 100*impairLoss)
	}
	if j := meta("caller_jitter_ms"); j < 5 {
		t.Fatalf("media.stats jitter %d ms under %v of jitter", j, impairJitter)
	}
	return impairedResult{
		Mode: mode, Packets: len(pkts), Received: received, Lost: lost, Late: late, Missing: len(missing),
		ConcealedMS: meta("caller_concealed_ms"), JitterMS: meta("caller_jitter_ms"), AlignedPackets: len(pkts) - len(missing),
		RecordingMS: w.Duration().Milliseconds(), MediaTimeMS: mediaTime.Milliseconds(), LossPct: lossPct,
		ConcealedPct: 100 * float64(meta("caller_concealed_ms")) / float64(mediaTime.Milliseconds()), LateTicks: meta("late_ticks"),
		ConnectSeconds: connect.Seconds(), StreamStartedMS: anchor.T,
	}
}

// browserAPIOn is browserAPI with every packet going through conn (one socket for ICE, DTLS and
// media, as a browser's is).
func browserAPIOn(t testing.TB, conn net.PacketConn) *webrtc.API {
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
	mux := webrtc.NewICEUDPMux(nil, conn)
	se.SetICEUDPMux(mux)
	t.Cleanup(func() { mux.Close() })
	return webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithInterceptorRegistry(ir), webrtc.WithSettingEngine(se))
}

// impairedConn is a UDP socket that loses and delays packets both ways like netem: each packet is
// dropped with probability loss, else held for delay ± jitter (uniform, so packets reorder).
type impairedConn struct {
	net.PacketConn
	loss          float64
	delay, jitter time.Duration

	mu     sync.Mutex
	rnd    *rand.Rand
	in     chan datagram
	closed chan struct{}
	once   sync.Once
	timers sync.WaitGroup
}

type datagram struct {
	b    []byte
	from net.Addr
}

func newImpairedConn(c net.PacketConn, loss float64, delay, jitter time.Duration, seed uint64) *impairedConn {
	ic := &impairedConn{PacketConn: c, loss: loss, delay: delay, jitter: jitter, rnd: rand.New(rand.NewPCG(seed, seed)),
		in: make(chan datagram, 1024), closed: make(chan struct{})}
	go ic.pump()
	return ic
}

// hold decides one packet's fate: false to lose it, else how long it is delayed.
func (c *impairedConn) hold() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rnd.Float64() < c.loss {
		return 0, false
	}
	d := c.delay - c.jitter + time.Duration(c.rnd.Int64N(int64(2*c.jitter)+1))
	return max(d, 0), true
}

// later runs fn after d unless the socket closed meanwhile.
func (c *impairedConn) later(d time.Duration, fn func()) {
	c.timers.Add(1)
	time.AfterFunc(d, func() {
		defer c.timers.Done()
		select {
		case <-c.closed:
		default:
			fn()
		}
	})
}

func (c *impairedConn) pump() {
	buf := make([]byte, 1500)
	for {
		n, from, err := c.PacketConn.ReadFrom(buf)
		if err != nil {
			c.Close()
			return
		}
		d, ok := c.hold()
		if !ok {
			continue
		}
		b := append([]byte(nil), buf[:n]...)
		c.later(d, func() {
			select {
			case c.in <- datagram{b, from}:
			case <-c.closed:
			}
		})
	}
}

func (c *impairedConn) ReadFrom(p []byte) (int, net.Addr, error) {
	select {
	case d := <-c.in:
		return copy(p, d.b), d.from, nil
	case <-c.closed:
		return 0, nil, net.ErrClosed
	}
}

func (c *impairedConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	d, ok := c.hold()
	if !ok {
		return len(p), nil // lost on the way
	}
	b := append([]byte(nil), p...)
	c.later(d, func() { _, _ = c.PacketConn.WriteTo(b, addr) })
	return len(p), nil
}

func (c *impairedConn) Close() error {
	var err error
	c.once.Do(func() {
		close(c.closed)
		err = c.PacketConn.Close()
		if errors.Is(err, net.ErrClosed) {
			err = nil
		}
	})
	return err
}
