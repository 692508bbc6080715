package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/browsertest"
	"github.com/voicebench/humanaudit/internal/report"
	"github.com/voicebench/humanaudit/internal/trace"
)

// The participant pages' tests at the two widths the brief names: a phone (390×844) and a laptop
// (1280×900). Every page is checked for horizontal overflow and with axe-core, and screenshotted
// at both widths into audit_data/artifacts/<test>.

var participantSizes = [][2]int64{{390, 844}, {1280, 900}}

// studyWith creates a study with config cfg and one participant whose plan runs tasks on system.
func (k *consoleKit) studyWith(t *testing.T, study, cfg, system string, tasks ...string) audit.Participant {
	t.Helper()
	ctx := context.Background()
	if _, err := k.db.CreateStudy(ctx, audit.Study{ID: study, Name: "Test study " + study, Seed: 7, Config: json.RawMessage(cfg)}); err != nil {
		t.Fatal(err)
	}
	var rows []audit.PlanRow
	for i, tk := range tasks {
		rows = append(rows, audit.PlanRow{Slot: "p1", Position: i + 1, Task: tk, System: system, Repeat: 1})
	}
	if _, err := k.db.AddPlan(ctx, study, rows); err != nil {
		t.Fatal(err)
	}
	p, err := k.db.CreateParticipant(ctx, audit.NewParticipant{StudyID: study})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func evalJS[T any](t *testing.T, b *browsertest.Browser, expr string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	c, cancel := context.WithTimeout(b.Ctx, 60*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		t.Fatalf("evaluate %.80s: %v", expr, err)
	}
	return v
}

// overflowJS names the elements wider than the viewport (empty: no horizontal overflow).
const overflowJS = `(() => {
  const de = document.documentElement, out = [];
  if (de.scrollWidth > de.clientWidth) out.push("page scrollWidth " + de.scrollWidth + " > " + de.clientWidth);
  for (const e of document.querySelectorAll("body *")) {
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > de.clientWidth + 1 && getComputedStyle(e).position !== "fixed")
      out.push(e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className ? "." + e.className : "") + " right=" + Math.round(r.right));
  }
  return out.slice(0, 8); })()`

// inViewJS reports whether the element matching the selector is at least half inside the viewport
// and on top there (not covered), after the page was scrolled to its end.
func inViewJS(sel string) string {
	return `(() => { window.scrollTo(0, document.documentElement.scrollHeight);
  const e = document.querySelector(` + strconv.Quote(sel) + `); if (!e) return "missing";
  const r = e.getBoundingClientRect(), vw = document.documentElement.clientWidth, vh = innerHeight;
  const visH = Math.min(r.bottom, vh) - Math.max(r.top, 0), visW = Math.min(r.right, vw) - Math.max(r.left, 0);
  if (r.height === 0 || visH < r.height / 2 || visW < r.width / 2) return "out of view: " + JSON.stringify(r) + " viewport " + vw + "x" + vh;
  const hit = document.elementFromPoint(Math.max(0, r.left) + Math.min(visW, r.width) / 2, Math.max(0, r.top) + visH / 2);
  if (!hit || !(hit === e || e.contains(hit))) return "covered by " + (hit ? hit.tagName + "#" + hit.id : "nothing");
  return ""; })()`
}

// checkPage checks the current participant page at both widths: no horizontal overflow, the
// selectors in mustSee at least half in view after scrolling to the end, axe-core clean; and
// saves a screenshot of each.
func checkPage(t *testing.T, b *browsertest.Browser, name string, mustSee ...string) {
	t.Helper()
	shots := browsertest.ArtifactsDir(t)
	for _, sz := range participantSizes {
		b.Do(10*time.Second, chromedp.EmulateViewport(sz[0], sz[1]), chromedp.Sleep(300*time.Millisecond))
		label := fmt.Sprintf("%s-%dx%d", name, sz[0], sz[1])
		if over := evalJS[[]string](t, b, overflowJS); len(over) > 0 {
			t.Errorf("%s: horizontal overflow: %v", label, over)
		}
		for _, sel := range mustSee {
			if why := evalJS[string](t, b, inViewJS(sel)); why != "" {
				t.Errorf("%s: %s is not in view: %s", label, sel, why)
			}
		}
		assertAccessible(t, b, label)
		b.Do(5*time.Second, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
		b.Shot(shots, label)
	}
}

// assertAccessible runs axe-core (vendored from npm in internal/browsertest/axe) over the page and
// fails the test on every serious or critical violation. It does what browsertest's own
// AssertAccessible does, for the participant pages' tests.
func assertAccessible(t *testing.T, b *browsertest.Browser, page string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "browsertest", "axe", "axe.min.js"))
	if err != nil {
		t.Fatalf("axe-core: %v", err)
	}
	q, _ := json.Marshal(string(src))
	evalJS[chromedp.Void](t, b, `window.axe ? undefined : (0, eval)(`+string(q)+`)`)
	out := evalJS[string](t, b, `axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]}, resultTypes: ["violations"]})
	  .then(r => JSON.stringify(r.violations.map(v => ({id: v.id, impact: v.impact || "", help: v.help,
	    nodes: v.nodes.map(n => n.target.join(" ") + "  " + n.html.slice(0, 160))}))))`, chromedp.EvalAwaitPromise)
	var vs []struct {
		ID, Impact, Help string
		Nodes            []string
	}
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		t.Fatalf("axe results: %v", err)
	}
	for _, v := range vs {
		msg := fmt.Sprintf("%s: axe %s (%s): %s\n    %s", page, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "\n    "))
		if v.Impact == "serious" || v.Impact == "critical" {
			t.Error(msg)
		} else {
			t.Log(msg)
		}
	}
}

// waitEvent polls the session's stored trace until an event matches.
func waitEvent(t *testing.T, k *consoleKit, sid string, within time.Duration, match func(trace.Event) bool) (trace.Event, bool) {
	t.Helper()
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		evs, err := k.db.Events(context.Background(), sid)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if match(e) {
				return e, true
			}
		}
	}
	return trace.Event{}, false
}

func onlySession(t *testing.T, k *consoleKit, study string) audit.SessionSummary {
	t.Helper()
	ss, err := k.db.ListSessions(context.Background(), audit.SessionFilter{StudyID: study})
	if err != nil || len(ss) != 1 {
		t.Fatalf("sessions of %s: %v %v", study, ss, err)
	}
	return ss[0]
}

// cueMS parses a cue's "Cue at m:ss.d" label.
func cueMS(t *testing.T, label string) int64 {
	t.Helper()
	var m, s, d int64
	if _, err := fmt.Sscanf(strings.TrimPrefix(label, "Cue at "), "%d:%d.%d", &m, &s, &d); err != nil {
		t.Fatalf("cue label %q: %v", label, err)
	}
	return (m*60+s)*1000 + d*100
}

func browserCallPrereqs(t *testing.T) {
	if testing.Short() {
		t.Skip("browser call")
	}
	if _, err := os.Stat(browsertest.Chromium); err != nil {
		t.Skip("chromium not installed (scripts/deps.sh installs it)")
	}
}

// TestCueClockAndShownWhenInView (issue 14, acceptance d): the role card's "Cue at" is the trace's
// cue.issued media time to within 100 ms; a cue that arrives while it is out of the viewport is
// stamped cue.shown only when it comes into view; the newest cue and Hang up stay in view at both
// widths during the call.
func TestCueClockAndShownWhenInView(t *testing.T) {
	browserCallPrereqs(t)
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: []agenttest.Reply{
		{Text: "Hello, which systems are affected?", AudioMS: 1500},
		{Text: "Thanks, noted.", AudioMS: 1200},
	}})
	k := startKit(t, `{"systems":[{"label":"sys-ibis","family":"reference","endpoint":"`+fake.URL()+`"}]}`)
	p := k.studyWith(t, "cue", `{"min_call_seconds":0}`, "sys-ibis", "it-vpn-incident")
	consentAndMic(t, k.base, p.Token)
	mic := filepath.Join(t.TempDir(), "caller.wav")
	browsertest.ComposeMic(t, mic, 60*time.Second, browsertest.Line{At: 3 * time.Second, Text: "Hi, my VPN is down."})
	b := browsertest.Start(t, mic)
	b.Do(30*time.Second, chromedp.EmulateViewport(390, 844), chromedp.Navigate(k.base+"/p/"+p.Token), chromedp.WaitVisible("#step-brief"),
		chromedp.Click("#brief-start"), chromedp.WaitVisible(`#call-status.live`))
	sid := onlySession(t, k, "cue").ID

	// The participant's window shrinks to a strip (the call bar fills it): the cue that the task
	// fires 30 s into the call arrives out of view.
	b.Do(10*time.Second, chromedp.EmulateViewport(390, 60))
	b.Do(60*time.Second, chromedp.WaitReady(`#cue-now .cue[data-cue="teams_down"]`))
	arrived := time.Now()
	issued, ok := waitEvent(t, k, sid, 5*time.Second, func(e trace.Event) bool { return e.Type == trace.CueIssued && e.CueID == "teams_down" })
	if !ok {
		t.Fatal("no cue.issued in the trace")
	}
	const hold = 5 * time.Second
	time.Sleep(hold)
	if e, ok := waitEvent(t, k, sid, 0, func(e trace.Event) bool { return e.Type == trace.CueShown }); ok {
		t.Fatalf("cue.shown at %d ms while the cue was out of view", e.T)
	}
	b.Do(10*time.Second, chromedp.EmulateViewport(390, 844))
	scrolledIn := time.Since(arrived)
	shown, ok := waitEvent(t, k, sid, 10*time.Second, func(e trace.Event) bool { return e.Type == trace.CueShown && e.CueID == "teams_down" })
	if !ok {
		t.Fatal("no cue.shown after the cue came into view")
	}
	// Stamped when it came into view: about the hold after cue.issued at least, and not long after.
	// The hold is wall time and the trace media time, which the browser's audio paces: on a loaded
	// machine it fell 40 ms behind over the hold (4960 ms in a CI rehearsal), hence the tenth.
	if lag := time.Duration(shown.T-issued.T) * time.Millisecond; lag < hold*9/10 || lag > scrolledIn+3*time.Second {
		t.Errorf("cue.shown %d ms after cue.issued; it came into view %v after it arrived", shown.T-issued.T, scrolledIn.Round(time.Millisecond))
	}
	label := b.Text(`#cue-now .cue[data-cue="teams_down"] .when`)
	if d := cueMS(t, label) - issued.T; math.Abs(float64(d)) >= 100 {
		t.Errorf("role card says %q, the trace's cue.issued is at %d ms: %d ms apart", label, issued.T, d)
	}
	if live := evalJS[string](t, b, `document.getElementById("cue-now").getAttribute("aria-live") || ""`); live == "" {
		t.Error("the newest cue's area is not an aria-live region")
	}
	checkPage(t, b, "call-with-cue", "#call-hangup", `#cue-now .cue[data-cue="teams_down"]`)
}

// TestTooShortHangUpIsOfferedAgain (issue 14, acceptance e): Hang up asks first; a 20-second call
// the participant hung up is excluded too_short, and the same participant link offers the same call
// again as attempt 2.
func TestTooShortHangUpIsOfferedAgain(t *testing.T) {
	browserCallPrereqs(t)
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: []agenttest.Reply{{Text: "Hello, how can I help?", AudioMS: 1500}}})
	k := startKit(t, `{"systems":[{"label":"sys-tern","family":"reference","endpoint":"`+fake.URL()+`"}]}`)
	p := k.studyWith(t, "short", `{}`, "sys-tern", "it-vpn-incident") // the default minimum, 45 s
	consentAndMic(t, k.base, p.Token)
	mic := filepath.Join(t.TempDir(), "caller.wav")
	browsertest.ComposeMic(t, mic, 40*time.Second, browsertest.Line{At: 2 * time.Second, Text: "Hi, my VPN is down."})
	b := browsertest.Start(t, mic)
	b.Do(30*time.Second, chromedp.Navigate(k.base+"/p/"+p.Token), chromedp.WaitVisible("#step-brief"),
		chromedp.Click("#brief-start"), chromedp.WaitVisible(`#call-status.live`))
	first := onlySession(t, k, "short")
	l, ok := k.console.Live(first.ID)
	if !ok {
		t.Fatal("call not live")
	}
	for l.Session.MediaMS() < 20000 {
		time.Sleep(100 * time.Millisecond)
	}
	b.Do(10*time.Second, chromedp.Click("#call-hangup"), chromedp.WaitVisible("#hangup-confirm"))
	if warn := b.Text("#hangup-short"); !strings.Contains(warn, "45 seconds") {
		t.Errorf("the confirmation does not warn that the call is too short: %q", warn)
	}
	checkPage(t, b, "hangup-confirm", "#hangup-yes")
	// "Keep talking" keeps the call.
	b.Do(10*time.Second, chromedp.Click("#hangup-no"), chromedp.WaitNotVisible("#hangup-confirm"))
	if _, ok := k.console.Live(first.ID); !ok {
		t.Fatal("Keep talking ended the call")
	}
	b.Do(60*time.Second, chromedp.Click("#call-hangup"), chromedp.Click("#hangup-yes"), chromedp.WaitVisible("#step-brief"))
	sess, err := k.db.Session(context.Background(), first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if sess.EndReason != "caller_hung_up" || sess.Exclusion == nil || sess.Exclusion.Reason != audit.ReasonTooShort {
		t.Fatalf("a 20 s hung-up call: reason %q exclusion %+v; want caller_hung_up, too_short", sess.EndReason, sess.Exclusion)
	}
	a, err := k.db.Assignment(context.Background(), first.AssignmentID)
	if err != nil {
		t.Fatal(err)
	}
	// Back to the same participant, without a session (the briefing's state claims it again).
	if a.Status == audit.StatusExcluded || a.Status == audit.StatusDone || a.SessionID != "" || a.ParticipantID != p.ID {
		t.Errorf("the too_short call's assignment: %+v; want it open again for participant %d", a, p.ID)
	}
	if as, _ := k.db.Assignments(context.Background(), "short"); len(as) != 1 {
		t.Errorf("the too_short call's cell went to the pool: %+v", as)
	}
	if got := b.Text("#brief-interrupted"); !strings.Contains(got, "minimum call length") {
		t.Errorf("briefing after a too-short call says %q", got)
	}
	if got := b.Text("#brief-position"); got != "1" {
		t.Errorf("briefed for call %q, want the same call 1", got)
	}
	b.Shot(browsertest.ArtifactsDir(t), "briefing-after-too-short")
	b.Do(30*time.Second, chromedp.Click("#brief-start"), chromedp.WaitVisible(`#call-status.live`))
	as, err := k.db.AssignmentSessions(context.Background(), first.AssignmentID)
	if err != nil || len(as) != 2 || as[1].Attempt != 2 || as[1].Reruns != first.ID || as[1].ParticipantID != p.ID {
		t.Fatalf("the call offered again: %+v %v; want attempt 2 of the same assignment re-running %s", as, err, first.ID)
	}
}

// reportNumbers is everything the study's report computes, as JSON.
func reportNumbers(t *testing.T, k *consoleKit, study string) string {
	t.Helper()
	src, ok := k.db.(report.Source)
	if !ok {
		t.Fatal("the kit's store is not a report source")
	}
	in, err := report.Load(context.Background(), src, study)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := report.Build(in, report.Options{Seed: 1, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestParticipantPagesAndPracticeCall walks a participant through every page of a study with a
// practice call (issue 14, acceptance f; issue 18 item 1): consent (and declining, with the study's
// contact), the microphone check, the practice briefing, the practice call and its feedback, the
// counted call, and the completion code with its copy button and return link. Every page is
// checked at both widths; the practice call leaves the report's numbers unchanged.
func TestParticipantPagesAndPracticeCall(t *testing.T) {
	browserCallPrereqs(t)
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: []agenttest.Reply{{Text: "Hello, how can I help?", AudioMS: 1500}}})
	const label = "sys-plover"
	k := startKit(t, `{"systems":[{"label":"`+label+`","family":"reference","endpoint":"`+fake.URL()+`"}]}`)
	cfg := `{"completion_code":"PRAC-42","completion_url":"https://app.prolific.example/submissions/complete","min_call_seconds":0,
		"contact":"Dr. Ada Example, ada@example.org","practice":{"task":"utility-payment-arrangement"}}`
	// An earlier participant made the practice call and one counted call (over the API, without
	// audio), so the report has a session to count before the participant below practises.
	p0 := k.studyWith(t, "prac", cfg, label, "it-vpn-incident")
	consentAndMic(t, k.base, p0.Token)
	for _, want := range []bool{true, false} {
		st, body := get(t, "POST", k.base+"/api/p/"+p0.Token+"/call", "{}")
		var started struct {
			Session  string
			Practice bool
		}
		json.Unmarshal([]byte(body), &started)
		if st != 200 || started.Practice != want {
			t.Fatalf("participant 0's call (practice %v): %d %s", want, st, body)
		}
		time.Sleep(time.Second)
		if st, body := get(t, "POST", k.base+"/api/p/"+p0.Token+"/call/"+started.Session+"/hangup", "{}"); st != 200 {
			t.Fatalf("hang up: %d %s", st, body)
		}
	}
	if _, err := k.db.AddPlan(context.Background(), "prac", []audit.PlanRow{{Slot: "p2", Position: 1, Task: "it-vpn-incident", System: label, Repeat: 1}}); err != nil {
		t.Fatal(err)
	}
	p, err := k.db.CreateParticipant(context.Background(), audit.NewParticipant{StudyID: "prac"})
	if err != nil {
		t.Fatal(err)
	}
	mic := filepath.Join(t.TempDir(), "caller.wav")
	browsertest.ComposeMic(t, mic, 60*time.Second, browsertest.Line{At: 8 * time.Second, Text: "Hi, I would like to set up a payment plan."})
	b := browsertest.Start(t, mic)
	focused := func() string {
		return evalJS[string](t, b, `document.activeElement ? document.activeElement.tagName + " " + document.activeElement.textContent.trim() : ""`)
	}

	b.Do(30*time.Second, chromedp.Navigate(k.base+"/p/"+p.Token), chromedp.WaitVisible("#step-consent"))
	if f := focused(); !strings.HasPrefix(f, "H2 Consent") {
		t.Errorf("focus on the consent step: %q", f)
	}
	checkPage(t, b, "1-consent", "#consent-agree")
	b.Do(10*time.Second, chromedp.Click("#consent-decline"), chromedp.WaitVisible("#step-declined"))
	if s := b.Text("#declined-contact"); s != "Dr. Ada Example, ada@example.org" {
		t.Errorf("declining shows contact %q", s)
	}
	checkPage(t, b, "1b-declined")
	b.Do(10*time.Second, chromedp.Click("#declined-back"), chromedp.WaitVisible("#step-consent"),
		chromedp.Click("#consent-check"), chromedp.Click("#consent-agree"), chromedp.WaitVisible("#step-mic"), chromedp.WaitEnabled("#mic-record"))
	if f := focused(); !strings.HasPrefix(f, "H2 Microphone check") {
		t.Errorf("focus on the microphone step: %q", f)
	}
	if s := b.Text("#mic-granted"); strings.Contains(strings.ToLower(s), "echo cancellation") || strings.Contains(s, "AGC") {
		t.Errorf("the mic check speaks jargon: %q", s)
	}
	checkPage(t, b, "2-mic-check")
	b.Do(30*time.Second, chromedp.Click("#mic-record"), chromedp.WaitVisible("#mic-playback"), chromedp.Click("#mic-heard"),
		chromedp.Click("#mic-done"), chromedp.WaitVisible("#step-brief"))
	if !evalJS[bool](t, b, `!document.getElementById("brief-practice").hidden`) {
		t.Fatal("the first briefing is not the practice call's")
	}
	if s := strings.Join(strings.Fields(b.Text("#steps")), " "); s != "Consent Microphone Practice call Call 1 of 1 Done" {
		t.Errorf("step indicator at the practice briefing: %q", s)
	}
	checkPage(t, b, "3-practice-briefing", "#brief-start")

	before := reportNumbers(t, k, "prac")
	b.Do(30*time.Second, chromedp.Click("#brief-start"), chromedp.WaitVisible(`#call-status.live`))
	practice := k.console.LiveSessions()
	if len(practice) != 1 || practice[0].Assignment.ID != 0 {
		t.Fatalf("practice call: %+v", practice)
	}
	time.Sleep(4 * time.Second)
	checkPage(t, b, "4-practice-call", "#call-hangup", "#own-meter")
	b.Do(60*time.Second, chromedp.Click("#call-hangup"), chromedp.Click("#hangup-yes"), chromedp.WaitVisible("#step-practice-done"))
	if got := b.Text("#practice-result"); !strings.Contains(got, "the agent recorded 0 of") {
		t.Errorf("practice feedback: %q", got)
	}
	checkPage(t, b, "5-practice-done", "#practice-continue")
	ps, err := k.db.Session(context.Background(), practice[0].ID)
	if err != nil || ps.StudyID != "" || ps.AssignmentID != 0 || ps.Status != audit.SessionEnded {
		t.Fatalf("the practice session: %+v %v; want ended, outside the study", ps, err)
	}
	if after := reportNumbers(t, k, "prac"); after != before {
		t.Errorf("the practice call changed the report:\nbefore %s\nafter  %s", before, after)
	}
	if ss, _ := k.db.ListSessions(context.Background(), audit.SessionFilter{StudyID: "prac"}); len(ss) != 1 {
		t.Errorf("the study's sessions after the practice call: %+v; want participant 0's counted call only", ss)
	}

	b.Do(30*time.Second, chromedp.Click("#practice-continue"), chromedp.WaitVisible("#step-brief"))
	if !evalJS[bool](t, b, `document.getElementById("brief-practice").hidden`) || b.Text("#brief-position") != "1" {
		t.Fatal("after the practice the briefing is not call 1's")
	}
	checkPage(t, b, "6-briefing", "#brief-start")
	b.Do(30*time.Second, chromedp.Click("#brief-start"), chromedp.WaitVisible(`#call-status.live`))
	time.Sleep(3 * time.Second)
	if s := evalJS[string](t, b, `document.getElementById("agent-speaking").textContent`); s != "Agent speaking" {
		t.Errorf("agent indicator says %q", s)
	}
	checkPage(t, b, "7-call", "#call-hangup")
	b.Do(60*time.Second, chromedp.Click("#call-hangup"), chromedp.Click("#hangup-yes"), chromedp.WaitVisible("#step-done"))
	if code := b.Text("#done-code"); code != "PRAC-42" {
		t.Errorf("completion code %q", code)
	}
	href := evalJS[string](t, b, `document.getElementById("done-return").href`)
	if href != "https://app.prolific.example/submissions/complete?cc=PRAC-42" {
		t.Errorf("completion URL %q", href)
	}
	b.Do(10*time.Second, chromedp.Click("#done-copy"), chromedp.WaitReady(`#done-copied`))
	time.Sleep(300 * time.Millisecond)
	if s := b.Text("#done-copied"); s == "" {
		t.Error("the copy button says nothing")
	}
	checkPage(t, b, "8-done", "#done-copy")
	ss, _ := k.db.ListSessions(context.Background(), audit.SessionFilter{StudyID: "prac"})
	if len(ss) != 2 || ss[1].ParticipantID != p.ID || ss[1].Exclusion != nil || ss[1].Score == nil {
		t.Errorf("the study's sessions: %+v; want two counted, graded calls", ss)
	}

	// A participant the plan has no room for is told so, with the study's contact.
	late, err := k.db.CreateParticipant(context.Background(), audit.NewParticipant{StudyID: "prac"})
	if err != nil {
		t.Fatal(err)
	}
	consentAndMic(t, k.base, late.Token)
	b.Do(30*time.Second, chromedp.Navigate(k.base+"/p/"+late.Token), chromedp.WaitVisible("#step-none"))
	if s := b.Text("#step-none"); !strings.Contains(s, "ada@example.org") {
		t.Errorf("no-call page: %q", s)
	}
	checkPage(t, b, "9-no-call")
}

// TestExclusionChoosesWhoCallsAgain (issue 14 item 5): an experimenter excluding an ended session
// chooses the same participant (their link offers the call again, as attempt 2, and no cell goes
// to the pool) or the pool (a fresh cell for someone else); return_to is checked.
func TestExclusionChoosesWhoCallsAgain(t *testing.T) {
	onEachStore(t, testExclusionChoosesWhoCallsAgain)
}

func testExclusionChoosesWhoCallsAgain(t *testing.T, bk backend) {
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{})
	k := startKitOn(t, bk, `{"systems":[{"label":"sys-rail","family":"reference","endpoint":"`+fake.URL()+`"}]}`, nil)
	p := k.participant(t, "again", "sys-rail", "it-vpn-incident")
	ctx := context.Background()
	consentAndMic(t, k.base, p.Token)
	call := func(who audit.Participant) string {
		t.Helper()
		st, body := get(t, "POST", k.base+"/api/p/"+who.Token+"/call", "{}")
		var started struct{ Session string }
		json.Unmarshal([]byte(body), &started)
		if st != 200 || started.Session == "" {
			t.Fatalf("start call: %d %s", st, body)
		}
		if st, body := get(t, "POST", k.base+"/api/p/"+who.Token+"/call/"+started.Session+"/hangup", "{}"); st != 200 {
			t.Fatalf("hang up: %d %s", st, body)
		}
		return started.Session
	}
	first := call(p)
	x, _ := k.db.CreateExperimenter(ctx, "eve", "correct horse battery staple")
	tok, _ := k.db.CreateExperimenterSession(ctx, x.ID, "password", audit.SessionLimits{})
	exclude := func(sid, body string) (int, string) {
		return get(t, "POST", k.base+"/api/x/sessions/"+sid+"/exclude", body, "Authorization", "Bearer "+tok)
	}
	if st, body := exclude(first, `{"reason":"other","return_to":"someone"}`); st != 400 || !strings.Contains(body, "return_to") {
		t.Errorf("a bad return_to: %d %s", st, body)
	}
	if st, body := exclude(first, `{"reason":"caller_broke_script","note":"read the card aloud","return_to":"participant"}`); st != 200 || !strings.Contains(body, `"same_participant":true`) {
		t.Fatalf("exclude for the same participant: %d %s", st, body)
	}
	as, _ := k.db.Assignments(ctx, "again")
	if len(as) != 1 || as[0].Status != audit.StatusPending || as[0].ParticipantID != p.ID || as[0].SessionID != "" {
		t.Fatalf("after excluding for the same participant: %+v", as)
	}
	st, body := get(t, "GET", k.base+"/api/p/"+p.Token+"/state", "")
	if st != 200 || !strings.Contains(body, `"position":1`) || !strings.Contains(body, "asked you to make this call again") {
		t.Errorf("the participant's state after the exclusion: %d %s", st, body)
	}
	second := call(p)
	ss, _ := k.db.AssignmentSessions(ctx, as[0].ID)
	if len(ss) != 2 || ss[1].ID != second || ss[1].Attempt != 2 || ss[1].Reruns != first {
		t.Fatalf("the call made again: %+v", ss)
	}
	// To the pool: the assignment is excluded and a fresh copy of the cell waits for someone else.
	if st, body := exclude(second, `{"reason":"other","return_to":"pool"}`); st != 200 || strings.Contains(body, `"returned_cell":0`) {
		t.Fatalf("exclude to the pool: %d %s", st, body)
	}
	as, _ = k.db.Assignments(ctx, "again")
	if len(as) != 2 || as[0].Status != audit.StatusExcluded || as[1].Status != audit.StatusPending || as[1].ParticipantID != 0 || as[1].Replaces != as[0].ID {
		t.Errorf("after excluding to the pool: %+v", as)
	}
}
