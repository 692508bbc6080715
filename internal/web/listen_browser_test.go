package web_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/browsertest"
)

// listenStats is what the review page's listenStats() reports for one channel.
type listenStats struct {
	Packets int64   `json:"packets"`
	Muted   bool    `json:"muted"`
	PeakDB  float64 `json:"peak_db"`
}

// An experimenter follows a live call from the dashboard to its review page, listens in (both
// channels arrive in Chromium, muted until clicked, with levels measured from the received audio),
// watches the waveform grow, the artifact so far beside gold and the media-health line with its
// threshold; after the call the review page shows the transcript with tools and cues inline,
// clicking a turn seeks the recording, and the filters and the flat list work. Every page passes
// axe-core without serious or critical violations and its controls are reachable by keyboard.
func TestExperimenterListensInAndReviews(t *testing.T) {
	if testing.Short() {
		t.Skip("browser call takes about a minute")
	}
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed")
	}
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: []agenttest.Reply{
		{Calls: []agenttest.Call{{Name: "record_incident", Arguments: `{"caller_name":"Priya Venkataraman"}`}}},
		{Text: "Thanks Priya. What's your employee ID?", AudioMS: 2500},
		{Calls: []agenttest.Call{{Name: "record_incident", Arguments: `{"employee_id":"417"}`}}},
		{Text: "Got it. Which systems are affected?", AudioMS: 2500},
		{Text: "Noted. Goodbye!", AudioMS: 1500},
	}})
	k := startKit(t, `{"systems":[{"label":"sys-lark","family":"reference","endpoint":"`+fake.URL()+`"}]}`)
	p := k.participant(t, "listen", "sys-lark", "it-vpn-incident")
	consentAndMic(t, k.base, p.Token)
	mic := filepath.Join(t.TempDir(), "caller.wav")
	browsertest.ComposeMic(t, mic, 60*time.Second,
		browsertest.Line{At: 3 * time.Second, Text: "Hi, this is Priya Venkataraman. I can't connect to the VPN."},
		browsertest.Line{At: 12 * time.Second, Text: "It's four one seven."},
		browsertest.Line{At: 20 * time.Second, Text: "The VPN, Outlook and SharePoint."},
		// The caller keeps talking while the experimenter signs in and starts listening.
		browsertest.Line{At: 28 * time.Second, Text: "I restarted the laptop twice already."},
		browsertest.Line{At: 35 * time.Second, Text: "I also reinstalled the VPN client this morning."},
		browsertest.Line{At: 42 * time.Second, Text: "And I tried my phone hotspot, no luck either."},
		browsertest.Line{At: 49 * time.Second, Text: "Are you still there? Hello?"},
		browsertest.Line{At: 55 * time.Second, Text: "Okay, thank you."},
	)
	caller := browsertest.Start(t, mic)
	caller.Do(30*time.Second, chromedp.Navigate(k.base+"/p/"+p.Token), chromedp.WaitVisible("#step-brief"),
		chromedp.Click("#brief-start"), chromedp.WaitVisible(`#call-status.live`))
	sessions, err := k.db.ListSessions(context.Background(), audit.SessionFilter{StudyID: "listen"})
	if err != nil || len(sessions) != 1 {
		t.Fatalf("sessions %v %v", sessions, err)
	}
	sid := sessions[0].ID

	x, err := k.db.CreateExperimenter(context.Background(), "eve", "correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := k.db.IssueSignInLink(context.Background(), x.ID, "test", time.Hour)
	shots := browsertest.ArtifactsDir(t)
	b := browsertest.Start(t, "")
	b.Do(30*time.Second, chromedp.Navigate(k.base+"/x/login"), chromedp.WaitVisible("form"))
	b.Shot(shots, "0-sign-in")
	b.AssertAccessible("sign-in")
	b.Do(30*time.Second, chromedp.Navigate(k.base+"/x/login?token="+tok), chromedp.WaitVisible("#live tbody tr"))
	b.Shot(shots, "1-dashboard-live")
	if row := b.Text("#live tbody tr"); !strings.Contains(row, "#"+itoa(p.ID)) || !strings.Contains(row, "connected") || !strings.Contains(row, "Listen") {
		t.Errorf("live row %q: want the participant's id, the link state and a Listen link", row)
	}
	b.AssertAccessible("dashboard")
	if missed := b.KeyboardUnreachable(80); len(missed) > 0 {
		t.Errorf("dashboard: not reachable by keyboard: %q", missed)
	}

	// The live review page.
	b.Do(30*time.Second, chromedp.Click(`#live tbody a.button`), chromedp.WaitVisible("#live #listen-start"))
	b.Do(20*time.Second, chromedp.Poll[chromedp.Void](`document.getElementById("media-health").textContent.includes("ticks late")`))
	health := b.Text("#media-health") + " " + b.Text("#media-explained")
	if !strings.Contains(health, "more than 10 ms after due") || !strings.Contains(health, "A tick is late when") {
		t.Errorf("media health %q: want the late ticks with their threshold and what they mean", health)
	}
	b.Do(30*time.Second, chromedp.Click("#listen-start"), chromedp.WaitVisible("#listen-controls"))
	// Both channels arrive: packets and audio energy on each, while both stay muted.
	var st map[string]listenStats
	deadline := time.Now().Add(40 * time.Second)
	for time.Now().Before(deadline) {
		st = browsertest.Eval[map[string]listenStats](b, 20*time.Second, `window.listenStats()`, chromedp.EvalAwaitPromise)
		if st["caller"].Packets > 100 && st["agent"].Packets > 100 && st["caller"].PeakDB > -40 && st["agent"].PeakDB > -40 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("listening: %+v", st)
	for _, ch := range []string{"caller", "agent"} {
		if s := st[ch]; s.Packets <= 100 || s.PeakDB < -40 {
			t.Errorf("%s channel while listening: %+v; want packets and audio above -40 dBFS", ch, s)
		}
		if !st[ch].Muted {
			t.Errorf("%s channel plays before it was unmuted", ch)
		}
	}
	b.Do(10*time.Second, chromedp.Click("#unmute-caller"))
	if st = browsertest.Eval[map[string]listenStats](b, 20*time.Second, `window.listenStats()`, chromedp.EvalAwaitPromise); st["caller"].Muted || !st["agent"].Muted {
		t.Errorf("after unmuting the caller: caller muted %v, agent muted %v", st["caller"].Muted, st["agent"].Muted)
	}
	if got := b.Text(`#listen-controls`); !strings.Contains(got, "Mute caller") || !strings.Contains(got, "Unmute agent") {
		t.Errorf("listen controls after unmuting the caller: %q", got)
	}
	// The waveform grows with the recording, and the artifact so far stands beside gold.
	first := browsertest.Eval[string](b, 5*time.Second, `document.getElementById("wave").dataset.samples || "0"`)
	time.Sleep(4500 * time.Millisecond)
	second := browsertest.Eval[string](b, 5*time.Second, `document.getElementById("wave").dataset.samples || "0"`)
	if atoi(second) <= atoi(first) || atoi(first) == 0 {
		t.Errorf("live waveform: %s samples, then %s 4.5 s later; want it growing", first, second)
	}
	b.Do(30*time.Second, chromedp.Poll[chromedp.Void](`document.querySelector("#fields tbody") && document.querySelector("#fields tbody").textContent.includes("Priya Venkataraman")`))
	fields := b.Text("#fields")
	if !strings.Contains(fields, "agent so far") || !strings.Contains(fields, "matches") {
		t.Errorf("running artifact beside gold: %q", fields)
	}
	b.Shot(shots, "2-review-live-listening")
	b.AssertAccessible("review-live")

	// The call ends; the listener's connection ends with it.
	l, ok := k.console.Live(sid)
	if !ok {
		t.Fatal("session not live")
	}
	l.Session.HangUp()
	<-l.Ended()
	b.Do(30*time.Second, chromedp.Poll[chromedp.Void](`document.getElementById("listen-state").textContent !== "listening (muted until you unmute a channel)"`))

	// The review after the call: the transcript view.
	b.Do(30*time.Second, chromedp.Reload(), chromedp.WaitVisible("#transcript li.turn.agent"),
		chromedp.Poll[chromedp.Void](`document.getElementById("audio").readyState >= 1`))
	b.Shot(shots, "3-review-transcript")
	// Consecutive utterances of one side are one turn; how many turns there are depends on how the
	// agent kept up, so the test asks for both sides, not for a count.
	if n := browsertest.Eval[int](b, 5*time.Second, `document.querySelectorAll("#transcript li.turn.caller").length`); n < 1 {
		t.Errorf("%d caller turns in the transcript", n)
	}
	tr := b.Text("#transcript")
	for _, want := range []string{"Caller", "Agent", "What's your employee ID?", "tool.call", "record_incident"} {
		if !strings.Contains(tr, want) {
			t.Errorf("transcript lacks %q:\n%s", want, tr)
		}
	}
	if strings.Contains(tr, "agent.usage") || strings.Contains(tr, "media.stats") {
		t.Error("the transcript view shows provider or media rows by default")
	}
	// Clicking an agent turn seeks the recording to its time.
	const lastAgentTurn = `[...document.querySelectorAll("#transcript li.turn.agent")].pop()`
	want := browsertest.Eval[float64](b, 5*time.Second, `Number(`+lastAgentTurn+`.dataset.t) / 1000`)
	b.Do(10*time.Second, chromedp.Evaluate[chromedp.Void](lastAgentTurn+`.click()`))
	if got := browsertest.Eval[float64](b, 5*time.Second, `document.getElementById("audio").currentTime`); got < want-0.05 || got > want+1.5 {
		t.Errorf("after clicking the turn at %.2f s the audio is at %.2f s", want, got)
	}
	// Filters: without tools no tool row; the flat list with every category shows every event.
	b.Do(10*time.Second, chromedp.Click(`.filters input[value=tools]`))
	if tr := b.Text("#transcript"); strings.Contains(tr, "tool.call") {
		t.Error("tool calls still shown with the tools filter off")
	}
	b.Do(10*time.Second, chromedp.Click(`.filters input[value=tools]`), chromedp.Click(`.filters input[value=media]`),
		chromedp.Click(`.filters input[value=provider]`), chromedp.Click(`input[name=view][value=events]`), chromedp.WaitVisible("#events tbody tr"))
	rows := browsertest.Eval[int](b, 5*time.Second, `document.querySelectorAll("#events tbody tr").length`)
	events, _ := k.db.Events(context.Background(), sid)
	shown := 0
	for _, e := range events {
		if e.Type != "agent.raw" {
			shown++
		}
	}
	if rows != shown {
		t.Errorf("flat list with every filter on: %d rows, the session has %d events (besides provider raw events)", rows, shown)
	}
	b.Shot(shots, "4-review-all-events")
	b.AssertAccessible("review")
	if missed := b.KeyboardUnreachable(200); len(missed) > 0 {
		t.Errorf("review: not reachable by keyboard: %q", missed)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func atoi(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
