package rtc

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/media"
	"github.com/voicebench/humanaudit/internal/media/libopus"
)

const chromiumPath = "/usr/bin/chromium"

// browserStats is what the test page's inboundAudio() returns.
type browserStats struct {
	Connection               string  `json:"connection"`
	PacketsReceived          int64   `json:"packetsReceived"`
	BytesReceived            int64   `json:"bytesReceived"`
	TotalSamplesReceived     int64   `json:"totalSamplesReceived"`
	ConcealedSamples         int64   `json:"concealedSamples"`
	AudioLevel               float64 `json:"audioLevel"`
	JitterBufferDelay        float64 `json:"jitterBufferDelay"`
	JitterBufferEmittedCount float64 `json:"jitterBufferEmittedCount"`
	PacketsSent              int64   `json:"packetsSent"`
}

// goertzel returns the power of frequency hz in x relative to the total power.
func goertzel(x []int16, rate int, hz float64) float64 {
	k := 2 * math.Cos(2*math.Pi*hz/float64(rate))
	var s1, s2, total float64
	for _, v := range x {
		f := float64(v)
		s := f + k*s1 - s2
		s2, s1 = s1, s
		total += f * f
	}
	p := s1*s1 + s2*s2 - k*s1*s2
	return p / (total * float64(len(x)) / 2)
}

// TestChromiumCallsThroughTheEngine drives headless Debian Chromium with a fake microphone (a WAV
// with a 440 Hz tone) against the endpoint: the browser connects, its tone arrives in the call's
// recording, the agent's 1 kHz tone is played back to it (getStats), and DataChannel messages
// flow both ways.
func TestChromiumCallsThroughTheEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("headless Chromium test")
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("Chromium not installed at %s (scripts/deps.sh installs it): %v", chromiumPath, err)
	}
	checkLeaks(t)
	dir := t.TempDir()

	// The fake microphone: 16-bit PCM (what Chromium reads), 48 kHz, 0.5 s silence then 440 Hz.
	mic := make([]int16, 8*48000)
	for i := 24000; i < len(mic); i++ {
		mic[i] = int16(9000 * math.Sin(2*math.Pi*440*float64(i)/48000))
	}
	micPath := filepath.Join(dir, "caller.wav")
	if err := audio.WriteWAV(micPath, 48000, 1, mic); err != nil {
		t.Fatal(err)
	}

	e := newLoopbackEndpoint(t, true)
	recPath := filepath.Join(dir, "call.wav")
	call, err := media.NewCall(media.CallConfig{NewEncoder: media.Encoders(libopus.NewEncoder), AgentRate: 16000, RecordingPath: recPath})
	if err != nil {
		t.Fatal(err)
	}
	defer call.Close()
	agentTone := make([]int16, 10*24000)
	for i := range agentTone {
		agentTone[i] = int16(8000 * math.Sin(2*math.Pi*1000*float64(i)/24000))
	}

	var mu sync.Mutex
	var peer *Peer
	var msgs []Message
	page, err := os.ReadFile("testdata/browser.html")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	})
	mux.HandleFunc("POST /offer", func(w http.ResponseWriter, r *http.Request) {
		offer, _ := io.ReadAll(io.LimitReader(r.Body, maxOfferBytes+1))
		p, answer, err := e.Answer(r.Context(), string(offer), PeerOptions{Name: "chromium", OnMessage: func(m Message) {
			mu.Lock()
			msgs = append(msgs, m)
			mu.Unlock()
		}})
		switch {
		case errors.Is(err, ErrBadOffer):
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		case err != nil:
			http.Error(w, "could not answer", http.StatusInternalServerError)
			return
		}
		if err := p.Attach(call); err != nil {
			p.Close()
			http.Error(w, "call ended", http.StatusGone)
			return
		}
		mu.Lock()
		peer = p
		mu.Unlock()
		w.Header().Set("Content-Type", "application/sdp")
		io.WriteString(w, answer)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.Env("TMPDIR=" + dir), // its singleton socket's directory goes with the test's
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("use-fake-ui-for-media-stream", true),
		chromedp.Flag("use-fake-device-for-media-stream", true),
		chromedp.Flag("use-file-for-fake-audio-capture", micPath+"%noloop"),
		chromedp.Flag("allow-loopback-in-peer-connection", true),
		chromedp.Flag("autoplay-policy", "no-user-gesture-required"),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	// The first action starts the browser and must not carry a timeout (it would kill it).
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	type pageState struct {
		State string `json:"state"`
		Error string `json:"error"`
	}
	var state pageState
	var st browserStats
	deadline := time.Now().Add(20 * time.Second)
	for {
		if state, err = chromedp.Run(ctx, chromedp.Evaluate[pageState](`window.result`)); err != nil {
			t.Fatalf("evaluate: %v", err)
		}
		if st, err = chromedp.Run(ctx, chromedp.Evaluate[browserStats](`window.inboundAudio()`, awaitPromise)); err != nil {
			t.Fatalf("evaluate: %v", err)
		}
		if state.State == "error" {
			t.Fatalf("page failed: %s", state.Error)
		}
		if st.Connection == "connected" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("browser not connected: page %+v, stats %+v", state, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	p := peer
	mu.Unlock()
	select {
	case <-p.Connected():
	case <-time.After(10 * time.Second):
		t.Fatal("server peer not connected")
	}
	call.PushAgentAudio(agentTone)
	if err := p.Send(map[string]string{"type": "cue.issued", "cue_id": "c7", "text": "withdraw your approval now"}); err != nil {
		t.Fatal(err)
	}

	// Let 3 s of call run, then read both sides.
	time.Sleep(3 * time.Second)
	if st, err = chromedp.Run(ctx, chromedp.Evaluate[browserStats](`window.inboundAudio()`, awaitPromise)); err != nil {
		t.Fatal(err)
	}
	pageMsgs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.result.messages`))
	if err != nil {
		t.Fatal(err)
	}
	cs := call.Stats()
	ps := p.Stats()
	t.Logf("browser inbound-rtp: %+v", st)
	t.Logf("engine: caller packets %d lost %d late %d jitter %v level %.1f dBFS peak %.1f; agent sent %d; RTT %v; selected pair %s <-> %s",
		cs.CallerPacketsReceived, cs.CallerPacketsLost, cs.CallerPacketsLate, cs.CallerJitter, cs.CallerLevel, cs.CallerPeak,
		cs.AgentPacketsSent, cs.Link.RTT, ps.LocalCandidate, ps.RemoteCandidate)
	if st.PacketsReceived < 100 || st.BytesReceived == 0 || st.TotalSamplesReceived < 48000 {
		t.Fatalf("the browser did not receive the agent's audio: %+v", st)
	}
	if st.AudioLevel < 0.05 {
		t.Fatalf("the agent's tone is not audible at the browser: audioLevel %.3f", st.AudioLevel)
	}
	if cs.CallerPacketsReceived < 100 {
		t.Fatalf("the browser's audio did not reach the engine: %d packets", cs.CallerPacketsReceived)
	}
	mu.Lock()
	gotMsgs := len(msgs) == 1 && msgs[0].Type == "cue.shown"
	mu.Unlock()
	if !gotMsgs || len(pageMsgs) != 1 {
		t.Fatalf("DataChannel: server got %+v, page got %q", msgs, pageMsgs)
	}

	cancel()
	cancelBrowser()
	cancelAlloc()
	p.Close()
	if err := call.Close(); err != nil {
		t.Fatal(err)
	}
	w, err := audio.ReadWAV(recPath)
	if err != nil {
		t.Fatal(err)
	}
	left, right := w.Channel(0), w.Channel(1)
	// The last second before hanging up: the caller channel carries Chromium's 440 Hz, the agent
	// channel the 1 kHz tone.
	end := w.Frames() - 24000/4
	seg := left[end-24000 : end]
	r440, r1k := goertzel(seg, 24000, 440), goertzel(seg, 24000, 1000)
	t.Logf("caller channel: RMS %.1f dBFS, 440 Hz holds %.0f%% of the power, 1 kHz %.1f%%", audio.RMSDBFS(seg), 100*r440, 100*r1k)
	if audio.RMSDBFS(seg) < -30 || r440 < 0.8 {
		t.Fatal("the browser's 440 Hz microphone tone is not on the caller channel")
	}
	if a := goertzel(right[end-24000:end], 24000, 1000); a < 0.9 {
		t.Fatalf("agent channel: 1 kHz holds %.0f%% of the power", 100*a)
	}
}

// awaitPromise makes Evaluate wait for the page's async function.
func awaitPromise(p *runtime.EvaluateParams) {
	yes := true
	p.AwaitPromise = &yes
}
