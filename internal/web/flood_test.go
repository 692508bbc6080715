package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/mediadevices/pkg/codec/opus"
	"github.com/pion/mediadevices/pkg/io/audio"
	"github.com/pion/mediadevices/pkg/prop"
	"github.com/pion/mediadevices/pkg/wave"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/web"
)

// callerPeer plays a participant's browser with pion on loopback: a microphone track fed with
// pre-encoded Opus and the "control" DataChannel.
type callerPeer struct {
	pc    *webrtc.PeerConnection
	track *webrtc.TrackLocalStaticRTP
	up    chan struct{}
}

func newCallerPeer(t *testing.T) *callerPeer {
	t.Helper()
	m := &webrtc.MediaEngine{}
	codec := webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2, SDPFmtpLine: "minptime=10;useinbandfec=1"}
	if err := m.RegisterCodec(webrtc.RTPCodecParameters{RTPCodecCapability: codec, PayloadType: 111}, webrtc.RTPCodecTypeAudio); err != nil {
		t.Fatal(err)
	}
	se := webrtc.SettingEngine{}
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	se.SetIncludeLoopbackCandidate(true)
	se.SetInterfaceFilter(func(name string) bool { return name == "lo" })
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	pc, err := webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithSettingEngine(se)).NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	c := &callerPeer{pc: pc, up: make(chan struct{})}
	if c.track, err = webrtc.NewTrackLocalStaticRTP(codec, "mic", "caller"); err != nil {
		t.Fatal(err)
	}
	if _, err := pc.AddTrack(c.track); err != nil {
		t.Fatal(err)
	}
	if _, err := pc.CreateDataChannel("control", nil); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	pc.OnConnectionStateChange(func(s webrtc.PeerConnectionState) {
		if s == webrtc.PeerConnectionStateConnected {
			once.Do(func() { close(c.up) })
		}
	})
	return c
}

// connect offers to the console's signalling endpoint and waits for the connection.
func (c *callerPeer) connect(t *testing.T, offerURL string) {
	t.Helper()
	o, err := c.pc.CreateOffer(nil)
	if err != nil {
		t.Fatal(err)
	}
	gathered := webrtc.GatheringCompletePromise(c.pc)
	if err := c.pc.SetLocalDescription(o); err != nil {
		t.Fatal(err)
	}
	<-gathered
	res, answer := request(t, "POST", offerURL, c.pc.LocalDescription().SDP, map[string]string{"Content-Type": "application/sdp"})
	if res.StatusCode != 201 {
		t.Fatalf("offer: %d %s", res.StatusCode, answer)
	}
	if err := c.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.up:
	case <-time.After(15 * time.Second):
		t.Fatal("caller peer did not connect")
	}
}

// stream sends 20 ms Opus packets until stop is closed, looping over pkts; it returns how many
// it sent.
func (c *callerPeer) stream(pkts [][]byte, stop <-chan struct{}, sent *atomic.Int64) {
	start := time.Now()
	var p rtp.Packet
	for k := 0; ; k++ {
		select {
		case <-stop:
			return
		case <-time.After(time.Until(start.Add(time.Duration(k) * 20 * time.Millisecond))):
		}
		p.Header = rtp.Header{Version: 2, PayloadType: 111, SequenceNumber: uint16(k), Timestamp: uint32(k * 960)}
		p.Payload = pkts[k%len(pkts)]
		if c.track.WriteRTP(&p) == nil {
			sent.Add(1)
		}
	}
}

// opusTone encodes ms of a quiet 200 Hz tone as 20 ms Opus packets (libopus, as a browser does).
func opusTone(t *testing.T, ms int) [][]byte {
	t.Helper()
	const frame = 960
	pcm := make([]int16, ms*48)
	for i := range pcm {
		pcm[i] = int16(1500 * math.Sin(2*math.Pi*200*float64(i)/48000))
	}
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
	enc, err := params.BuildAudioEncoder(r, prop.Media{Audio: prop.Audio{SampleRate: 48000, ChannelCount: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	var out [][]byte
	for pos+frame <= len(pcm) {
		b, _, err := enc.Read()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, slices.Clone(b))
	}
	return out
}

// rssBytes is this process's resident set size.
func rssBytes(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestSignInFlood: 500 concurrent wrong sign-ins against one account while a call is live. At most
// 5 passwords are checked (the rest are refused with 429 before any hashing), the process's memory
// grows by less than 100 MB, and the call goes on receiving the caller's audio throughout.
func TestSignInFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("a live call and 500 requests")
	}
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{})
	k := startKitWith(t, `{"systems":[{"label":"sys-owl","family":"reference","endpoint":"`+fake.URL()+`"}]}`, func(c *web.Config) {
		c.Security.SignIn = web.SignInLimits{} // the defaults: 5 per 10 minutes, 2 hashes at once
	})
	ctx := context.Background()
	if _, err := k.db.CreateExperimenter(ctx, "flood-target", "a long enough passphrase"); err != nil {
		t.Fatal(err)
	}

	// The live call.
	p := k.participant(t, "flood", "sys-owl", "it-vpn-incident")
	consentAndMic(t, k.base, p.Token)
	st, body := get(t, "POST", k.base+"/api/p/"+p.Token+"/call", "{}")
	if st != 200 {
		t.Fatalf("start call: %d %s", st, body)
	}
	var started struct{ Session string }
	json.Unmarshal([]byte(body), &started)
	live, ok := k.console.Live(started.Session)
	if !ok {
		t.Fatal("call not live")
	}
	peer := newCallerPeer(t)
	peer.connect(t, k.base+"/api/p/"+p.Token+"/call/"+started.Session+"/offer")
	stop := make(chan struct{})
	var sent atomic.Int64
	var streaming sync.WaitGroup
	streaming.Add(1)
	go func() { defer streaming.Done(); peer.stream(opusTone(t, 2000), stop, &sent) }()
	defer func() { close(stop); streaming.Wait() }()
	time.Sleep(2 * time.Second) // the call settles

	runtime.GC()
	debug.FreeOSMemory()
	base := rssBytes(t)
	var peak atomic.Int64
	peak.Store(base)
	sampling := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		for {
			select {
			case <-sampling:
				return
			case <-time.After(2 * time.Millisecond):
			}
			if r := rssBytes(t); r > peak.Load() {
				peak.Store(r)
			}
		}
	}()
	checksBefore := k.srv.PasswordChecks()
	before := live.Session.Stats()
	sentBefore := sent.Load()

	// The flood comes from another process (this test binary re-run as a client), so the RSS
	// measured here is the console's own.
	const n = 500
	floodStart := time.Now()
	codes := floodFromChild(t, k.base+"/x/login", n)
	flood := time.Since(floodStart)
	time.Sleep(300 * time.Millisecond) // the call after the flood
	close(sampling)
	sampler.Wait()
	after := live.Session.Stats()
	sentDuring := sent.Load() - sentBefore

	count := map[int]int{}
	for _, c := range codes {
		count[c]++
	}
	checked := k.srv.PasswordChecks() - checksBefore
	growth := peak.Load() - base
	received := after.CallerPacketsReceived - before.CallerPacketsReceived
	t.Logf("500 concurrent wrong sign-ins in %v: statuses %v; passwords checked %d; RSS %.1f MB → peak %.1f MB (+%.1f MB)",
		flood.Round(time.Millisecond), count, checked, float64(base)/1e6, float64(peak.Load())/1e6, float64(growth)/1e6)
	t.Logf("live call during the flood: caller packets sent %d, received %d; media clock %v → %v; late ticks %d → %d",
		sentDuring, received, before.MediaTime, after.MediaTime, before.LateTicks, after.LateTicks)

	if checked > 5 || count[401] > 5 {
		t.Errorf("%d passwords checked (%d answered 401), want at most 5", checked, count[401])
	}
	if count[401]+count[429] != n {
		t.Errorf("statuses %v: every request is either a checked wrong password (401) or refused (429)", count)
	}
	if growth >= 100<<20 {
		t.Errorf("RSS grew by %.1f MB, want < 100 MB", float64(growth)/1e6)
	}
	select {
	case <-live.Ended():
		t.Fatal("the live call ended during the flood")
	default:
	}
	if sentDuring < 10 || float64(received) < 0.9*float64(sentDuring)-3 { // a few may be in flight
		t.Errorf("the call received %d of %d caller packets sent during the flood", received, sentDuring)
	}
	if after.MediaTime-before.MediaTime < flood*8/10 {
		t.Errorf("the media clock advanced %v during a %v flood", after.MediaTime-before.MediaTime, flood)
	}
	// The window holds after the flood: wrong passwords are checked until 5 in all, then even the
	// right password waits.
	for range 10 {
		res, _ := request(t, "POST", k.base+"/x/login", "name=flood-target&password=one-more-guess", formHeader)
		if res.StatusCode == 429 {
			break
		}
	}
	if total := k.srv.PasswordChecks() - checksBefore; total != 5 {
		t.Errorf("%d passwords checked in the window, want exactly 5", total)
	}
	res, _ := request(t, "POST", k.base+"/x/login", "name=flood-target&password=a+long+enough+passphrase", formHeader)
	if res.StatusCode != 429 || res.Header.Get("Retry-After") == "" {
		t.Errorf("right password within the window: %d (Retry-After %q), want 429", res.StatusCode, res.Header.Get("Retry-After"))
	}
}

// floodFromChild runs TestFloodClient in a child process against url and returns its statuses.
func floodFromChild(t *testing.T, url string, n int) []int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFloodClient$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AUDIT_FLOOD_URL="+url, "AUDIT_FLOOD_N="+strconv.Itoa(n))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("flood client: %v\n%s", err, out)
	}
	i := strings.Index(string(out), "CODES ")
	if i < 0 {
		t.Fatalf("flood client printed no codes:\n%s", out)
	}
	line, _, _ := strings.Cut(string(out[i+6:]), "\n")
	var codes []int
	if err := json.Unmarshal([]byte(line), &codes); err != nil || len(codes) != n {
		t.Fatalf("flood client codes %q: %v", line, err)
	}
	return codes
}

// TestFloodClient is the flood's client, run in its own process by TestSignInFlood: n concurrent
// wrong sign-ins, released at once, each on its own connection.
func TestFloodClient(t *testing.T) {
	url := os.Getenv("AUDIT_FLOOD_URL")
	if url == "" {
		t.Skip("run by TestSignInFlood")
	}
	n, _ := strconv.Atoi(os.Getenv("AUDIT_FLOOD_N"))
	transport := &http.Transport{MaxIdleConnsPerHost: n}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 2 * time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var wg sync.WaitGroup
	gate := make(chan struct{})
	codes := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			req, _ := http.NewRequest("POST", url, strings.NewReader("name=flood-target&password=guess-"+strconv.Itoa(i)))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			res, err := client.Do(req)
			if err != nil {
				codes[i] = -1
				return
			}
			res.Body.Close()
			codes[i] = res.StatusCode
		}()
	}
	close(gate)
	wg.Wait()
	b, _ := json.Marshal(codes)
	fmt.Printf("CODES %s\n", b)
}
