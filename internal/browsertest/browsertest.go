// Package browsertest drives headless Debian Chromium for end-to-end tests of the console's pages:
// a fake microphone composed from Flite speech, every response body and DataChannel message the
// page receives kept for leakage scans, and screenshots as test artifacts.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/tts"
)

// Chromium is Debian's Chromium (scripts/deps.sh installs it).
const Chromium = "/usr/bin/chromium"

// Browser is one headless Chromium with one page.
type Browser struct {
	Ctx context.Context
	t   testing.TB

	mu       sync.Mutex
	payloads []string
}

// Start launches Chromium; mic, when not empty, is the WAV its fake microphone plays once; extra
// adds command-line options (a host mapping, a trusted test certificate). It skips the test when
// Chromium is not installed.
func Start(t testing.TB, mic string, extra ...chromedp.ExecAllocatorOption) *Browser {
	t.Helper()
	if _, err := os.Stat(Chromium); err != nil {
		t.Skip("chromium not installed (scripts/deps.sh installs it)")
	}
	profile := t.TempDir()
	opts := []chromedp.ExecAllocatorOption{
		// Chromium keeps its singleton socket in a directory of its own under TMPDIR, removed only
		// on a clean exit; the test's temporary directory holds it, and is removed with it.
		chromedp.ExecPath(Chromium), chromedp.UserDataDir(profile), chromedp.Env("TMPDIR=" + profile), chromedp.WindowSize(1280, 900),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("use-fake-ui-for-media-stream", true), chromedp.Flag("use-fake-device-for-media-stream", true),
		chromedp.Flag("allow-loopback-in-peer-connection", true), chromedp.Flag("autoplay-policy", "no-user-gesture-required"),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true),
	}
	if mic != "" {
		opts = append(opts, chromedp.Flag("use-file-for-fake-audio-capture", mic+"%noloop"))
	}
	opts = append(opts, extra...)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	b := &Browser{Ctx: ctx, t: t}
	// Every DataChannel message the page receives is kept for the leakage scan.
	hook := `window.__dcMessages = [];
	const origCreate = RTCPeerConnection.prototype.createDataChannel;
	RTCPeerConnection.prototype.createDataChannel = function(...a) {
	  const dc = origCreate.apply(this, a);
	  dc.addEventListener("message", (m) => window.__dcMessages.push(String(m.data)));
	  return dc;
	};`
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: hook}); err != nil {
		t.Fatal(err)
	}
	finished := make(chan network.RequestID, 4096)
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventLoadingFinished); ok {
			select {
			case finished <- e.RequestID:
			default:
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for id := range finished {
			res, err := chromedp.Call(ctx, network.GetResponseBody, network.GetResponseBodyParams{RequestID: id})
			if err == nil {
				b.mu.Lock()
				b.payloads = append(b.payloads, string(res.Body))
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { close(finished); <-done })
	go func() {
		for msg, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			t.Logf("browser console: %v", msg)
		}
	}()
	return b
}

// Attach wraps a tab a test opened itself (its own chromedp context) for the page checks: Do, Text,
// Shot, Axe, AssertAccessible, Focused, KeyboardUnreachable. It records no payloads.
func Attach(t testing.TB, ctx context.Context) *Browser { return &Browser{Ctx: ctx, t: t} }

// Payloads returns every response body and DataChannel message the page has received.
func (b *Browser) Payloads() []string {
	dc, err := chromedp.Run(b.Ctx, chromedp.Evaluate[[]string](`window.__dcMessages || []`))
	if err != nil {
		b.t.Logf("read data channel messages: %v", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return append(append([]string(nil), b.payloads...), dc...)
}

// Do runs actions within timeout; on failure it saves a screenshot and fails the test with the
// page's error text.
func (b *Browser) Do(timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	c, cancel := context.WithTimeout(b.Ctx, timeout)
	defer cancel()
	if err := chromedp.Do(c, actions...); err != nil {
		b.Shot(ArtifactsDir(b.t), "failure")
		msg, _ := chromedp.Run(b.Ctx, chromedp.Evaluate[string](`(document.getElementById("error")||{}).textContent || ""`))
		b.t.Fatalf("%v (page error: %q; screenshot failure.png)", err, msg)
	}
}

// Text returns the visible text of the first node matching sel.
func (b *Browser) Text(sel string) string {
	b.t.Helper()
	c, cancel := context.WithTimeout(b.Ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(c, chromedp.Text(sel))
	if err != nil {
		b.t.Fatal(err)
	}
	return s
}

// Shot saves a full-page PNG screenshot as dir/name.png.
func (b *Browser) Shot(dir, name string) {
	if png, err := chromedp.Run(b.Ctx, chromedp.FullScreenshot(100)); err == nil {
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
	}
}

// ArtifactsDir is where a test's screenshots go: audit_data/artifacts/<test> at the repository
// root (ignored by git).
func ArtifactsDir(t testing.TB) string {
	dir, _ := os.Getwd()
	for d := dir; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "audit_data", "artifacts", filepath.Base(t.Name()))
		}
	}
	return filepath.Join(os.TempDir(), "audit-artifacts", t.Name())
}

// Line is one utterance of a composed fake-microphone recording.
type Line struct {
	At    time.Duration
	Text  string
	Voice string // Flite voice; default slt
}

// ComposeMic writes a fake microphone recording: each line spoken by Flite at its time, silence
// between, 48 kHz mono 16-bit (what Chromium's fake capture device plays).
func ComposeMic(t testing.TB, path string, total time.Duration, lines ...Line) {
	t.Helper()
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed (scripts/deps.sh installs it)")
	}
	const rate = 48000
	speaker := &tts.Flite{Rate: rate}
	pcm := make([]int16, int(total.Seconds()*rate))
	for _, l := range lines {
		voice := l.Voice
		if voice == "" {
			voice = "slt"
		}
		speech, err := speaker.Speak(context.Background(), voice, l.Text)
		if err != nil {
			t.Fatal(err)
		}
		if start := int(l.At.Seconds() * rate); start < len(pcm) {
			copy(pcm[start:], speech)
		}
	}
	if err := audio.WriteWAV(path, rate, 1, pcm); err != nil {
		t.Fatal(err)
	}
}
