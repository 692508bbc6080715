package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/systems"
	"github.com/voicebench/humanaudit/internal/annotate"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/browsertest"
	"github.com/voicebench/humanaudit/internal/console"
	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/media"
	"github.com/voicebench/humanaudit/internal/media/libopus"
	"github.com/voicebench/humanaudit/internal/rtc"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
	"github.com/voicebench/humanaudit/internal/web"
)

// consoleKit is a running console on loopback: a store (real PostgreSQL unless the test runs on
// each backend: onEachStore), real WebRTC endpoint, real web app.
type consoleKit struct {
	db      kitStore
	console *console.Service
	srv     *web.Server
	base    string
	tasks   map[string]*task.Task
	data    string
}

func startKit(t *testing.T, sysJSON string) *consoleKit {
	t.Helper()
	return startKitOn(t, postgres, sysJSON, nil)
}

// startKitWith is startKit with the web app's configuration adjusted by configure (TLS, limits).
func startKitWith(t *testing.T, sysJSON string, configure func(*web.Config)) *consoleKit {
	t.Helper()
	return startKitOn(t, postgres, sysJSON, configure)
}

// startKitOn is startKitWith on a store of the given backend.
func startKitOn(t *testing.T, backend backend, sysJSON string, configure func(*web.Config)) *consoleKit {
	t.Helper()
	db := backend.open(t)
	tasks, probs := task.LoadAll(filepath.Join("..", "grade", "testdata", "tasks"))
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	sys, err := systems.Parse("test-systems.json", []byte(sysJSON))
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	ctx := context.Background()
	svc, err := console.New(ctx, console.Config{NewEncoder: media.Encoders(libopus.NewEncoder), Store: db, Tasks: tasks, Systems: sys, DataDir: data, TimeLimit: 3 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := rtc.NewEndpoint(rtc.Config{LoopbackOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	wc := web.Config{Store: db, Console: svc, RTC: ep, DataDir: data}
	if configure != nil {
		configure(&wc)
	}
	srv, err := web.New(wc)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	t.Cleanup(func() {
		srv.Close()
		svc.Close()
		ep.Close()
	})
	k := &consoleKit{db: db, console: svc, srv: srv, base: srv.URL(), tasks: map[string]*task.Task{}, data: data}
	for _, tk := range tasks {
		k.tasks[tk.ID] = tk
	}
	return k
}

// participant creates a study with one participant whose plan runs the given tasks on system.
func (k *consoleKit) participant(t *testing.T, study, system string, tasks ...string) audit.Participant {
	t.Helper()
	ctx := context.Background()
	if _, err := k.db.CreateStudy(ctx, audit.Study{ID: study, Name: "Test study " + study, Seed: 7,
		Config: json.RawMessage(`{"completion_code":"DONE-123"}`)}); err != nil {
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

func TestParticipantCallInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser call takes about a minute")
	}
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed")
	}
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: []agenttest.Reply{
		{Calls: []agenttest.Call{{Name: "record_incident", Arguments: `{"caller_name":"Priya Venkataraman"}`}}},
		{Text: "Thanks Priya. What's your employee ID?", AudioMS: 1500},
		{Calls: []agenttest.Call{{Name: "record_incident", Arguments: `{"employee_id":"417"}`}}},
		{Text: "Got it. Which systems are affected?", AudioMS: 1500},
		{Calls: []agenttest.Call{{Name: "record_incident", Arguments: `{"affected_systems":["VPN","Outlook","SharePoint","Teams"]}`}}},
		{Text: "Noted, I've added Teams. Goodbye!", AudioMS: 1200},
	}})
	const label = "sys-kestrel-9f"
	k := startKit(t, `{"systems":[{"label":"`+label+`","family":"reference","endpoint":"`+fake.URL()+`"}]}`)
	p := k.participant(t, "s1", label, "it-vpn-incident")

	mic := filepath.Join(t.TempDir(), "caller.wav")
	browsertest.ComposeMic(t, mic, 60*time.Second,
		browsertest.Line{At: 4 * time.Second, Text: "Hi, this is Priya Venkataraman. I can't connect to the VPN."},
		browsertest.Line{At: 14 * time.Second, Text: "It's four one seven."},
		browsertest.Line{At: 22 * time.Second, Text: "The VPN, Outlook and SharePoint."},
		browsertest.Line{At: 36 * time.Second, Text: "Oh, and Teams stopped working too."},
	)
	b := browsertest.Start(t, mic)
	shots := browsertest.ArtifactsDir(t)
	b.Do(30*time.Second,
		chromedp.Navigate(k.base+"/p/"+p.Token+"?PROLIFIC_PID=pp123&STUDY_ID=st1&SESSION_ID=se1"),
		chromedp.WaitVisible("#step-consent"),
	)
	b.Shot(shots, "1-consent")
	b.Do(30*time.Second,
		chromedp.Click("#consent-check"), chromedp.Click("#consent-agree"),
		chromedp.WaitVisible("#step-mic"), chromedp.WaitEnabled("#mic-record"),
	)
	b.Shot(shots, "2-mic-check")
	// The fake microphone's file plays from the first capture; the check consumes a few seconds.
	b.Do(30*time.Second,
		chromedp.Click("#mic-record"), chromedp.WaitVisible("#mic-playback"),
		chromedp.Click("#mic-heard"), chromedp.Click("#mic-done"),
		chromedp.WaitVisible("#step-brief"),
	)
	b.Shot(shots, "3-briefing")
	agentName := b.Text("#brief-agent")
	b.Do(30*time.Second, chromedp.Click("#brief-start"),
		chromedp.WaitVisible("#step-call"), chromedp.WaitVisible(`#call-status.live`))
	if agentName != "Agent A" {
		t.Errorf("participant sees agent %q, want the blind alias Agent A", agentName)
	}
	// The correction cue fires 30 s after the first caller audio.
	b.Do(60*time.Second, chromedp.WaitVisible(`.cue[data-cue="teams_down"]`))
	b.Shot(shots, "4-call-with-cue")
	time.Sleep(12 * time.Second) // the caller acts on the cue; the agent records Teams
	b.Do(30*time.Second, chromedp.Click("#call-hangup"), chromedp.WaitVisible("#step-done"))
	b.Shot(shots, "5-debrief")
	if code := b.Text("#done-code"); code != "DONE-123" {
		t.Errorf("completion code %q", code)
	}

	// The trace, from the database.
	sessions, err := k.db.ListSessions(context.Background(), audit.SessionFilter{StudyID: "s1"})
	if err != nil || len(sessions) != 1 {
		t.Fatalf("sessions: %v %v", sessions, err)
	}
	sid := sessions[0].ID
	events, err := k.db.Events(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	var seq []string
	cueT := map[string]int64{}
	for _, e := range events {
		seq = append(seq, string(e.Type))
		if strings.HasPrefix(string(e.Type), "cue.") && e.CueID == "teams_down" {
			cueT[string(e.Type)] = e.T
			if e.Type == "cue.acted" {
				cueT["onset"] = e.RefMS
			}
		}
	}
	joined := strings.Join(seq, " ")
	for _, want := range []string{"caller.audio_start", "caller.speech_start", "caller.speech_end", "agent.speech_start", "tool.call", "artifact.update", "cue.issued", "cue.shown", "cue.acted", "session.end"} {
		if !strings.Contains(joined, want) {
			t.Errorf("trace lacks %s", want)
		}
	}
	if !(cueT["cue.issued"] <= cueT["cue.shown"] && cueT["cue.shown"] <= cueT["onset"]) {
		t.Errorf("cue times out of order: %v", cueT)
	}
	if sessions[0].Score == nil {
		t.Fatalf("session not graded")
	}
	// The JSONL trace exported from the database grades to the stored grade, byte for byte.
	var exported bytes.Buffer
	if err := k.db.WriteTrace(context.Background(), sid, &exported); err != nil {
		t.Fatal(err)
	}
	reread, err := trace.ReadJSONL(&exported)
	if err != nil {
		t.Fatal(err)
	}
	regraded, err := grade.Grade(context.Background(), k.tasks["it-vpn-incident"], reread, grade.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if doc, _ := grade.Encode(regraded); !bytes.Equal(doc, sessions[0].Score.Grade) {
		t.Errorf("regrading the exported trace differs from the stored grade:\n%s\n%s", doc, sessions[0].Score.Grade)
	}
	if sessions[0].ProlificPID != "pp123" {
		t.Errorf("PROLIFIC_PID not captured: %+v", sessions[0])
	}

	// Leakage barrier: nothing the participant received holds gold-only values, grader terms, the
	// system's label or a future fact version before its cue.
	tk := k.tasks["it-vpn-incident"]
	payloads := b.Payloads()
	if len(payloads) < 5 {
		t.Fatalf("only %d payloads captured", len(payloads))
	}
	forbidden := []string{label, `"gold"`, `"grader"`, `"target_state"`, `"violations"`, tk.Agent.Instructions[:30]}
	for _, f := range tk.Grader.ForbiddenActions {
		forbidden = append(forbidden, f.Reason)
	}
	v2 := tk.User.Facts[4].Versions[1].Value // affected systems with Teams, revealed by teams_down
	hidden := annotate.HiddenValues(tk)
	for i, pl := range payloads {
		for _, leak := range annotate.Scan(pl, hidden) {
			t.Errorf("payload %d leaks %s", i, leak)
		}
		for _, f := range forbidden {
			if f != "" && strings.Contains(pl, f) {
				t.Errorf("payload %d contains %q: %.200s", i, f, pl)
			}
		}
		if strings.Contains(pl, v2) && !strings.Contains(pl, "teams_down") {
			t.Errorf("payload %d shows the corrected fact before its cue: %.200s", i, pl)
		}
	}
	if t.Failed() {
		if b, err := os.ReadFile(filepath.Join(k.data, "recordings", sid+".wav")); err == nil {
			os.WriteFile("/tmp/failed-call.wav", b, 0o644)
		}
		for _, e := range events {
			if e.Type != "agent.raw" {
				fmt.Printf("%6d %-22s %s %s %v\n", e.T, e.Type, e.Text, e.CueID, e.Meta)
			}
		}
	}
}

// TestReloadRejoinsAndLostAgentExcludes: a reload mid-call rejoins the same session on the same
// media clock (the gap is recorded); killing the agent mid-call ends it as a platform_lost
// exclusion and returns the cell to the pool; the experimenter review page renders the session.
func TestReloadRejoinsAndLostAgentExcludes(t *testing.T) {
	if testing.Short() {
		t.Skip("browser call")
	}
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed")
	}
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: []agenttest.Reply{
		{Text: "Hello, which systems are affected?", AudioMS: 1500},
		{Text: "Thanks, one moment please.", AudioMS: 1500},
	}})
	k := startKit(t, `{"systems":[{"label":"sys-heron","family":"reference","endpoint":"`+fake.URL()+`"}]}`)
	p := k.participant(t, "reload", "sys-heron", "it-vpn-incident")
	consentAndMic(t, k.base, p.Token)
	mic := filepath.Join(t.TempDir(), "caller.wav")
	browsertest.ComposeMic(t, mic, 40*time.Second, browsertest.Line{At: 3 * time.Second, Text: "Hi, my VPN is down."}, browsertest.Line{At: 16 * time.Second, Text: "The VPN and Outlook."})
	b := browsertest.Start(t, mic)
	b.Do(30*time.Second, chromedp.Navigate(k.base+"/p/"+p.Token), chromedp.WaitVisible("#step-brief"),
		chromedp.Click("#brief-start"), chromedp.WaitVisible(`#call-status.live`))
	time.Sleep(6 * time.Second)
	b.Do(30*time.Second, chromedp.Reload(), chromedp.WaitVisible("#step-brief"))
	if label := b.Text("#brief-start"); label != "Rejoin call" {
		t.Fatalf("after a reload the button says %q", label)
	}
	b.Do(30*time.Second, chromedp.Click("#brief-start"), chromedp.WaitVisible(`#call-status.live`))
	time.Sleep(10 * time.Second)

	sessions, _ := k.db.ListSessions(context.Background(), audit.SessionFilter{StudyID: "reload"})
	if len(sessions) != 1 {
		t.Fatalf("a reload must rejoin the same session, got %d sessions", len(sessions))
	}
	sid := sessions[0].ID
	fake.DropAll() // the agent's connection dies mid-call
	l, ok := k.console.Live(sid)
	if ok {
		select {
		case <-l.Ended():
		case <-time.After(30 * time.Second):
			t.Fatal("session did not end after the agent was lost")
		}
	}
	sess, err := k.db.Session(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	if sess.EndReason != "platform_lost" || sess.Exclusion == nil || sess.Exclusion.Reason != "platform_lost" {
		t.Errorf("session after agent loss: reason %q exclusion %+v", sess.EndReason, sess.Exclusion)
	}
	events, _ := k.db.Events(context.Background(), sid)
	var gaps, streams int
	for _, e := range events {
		if e.Type == "media.gap" && strings.Contains(e.Text, "restarted") {
			gaps++
		}
		if e.Type == "media.stats" {
			streams, _ = strconv.Atoi(e.Meta["caller_streams"])
		}
	}
	if gaps != 1 || streams != 2 {
		t.Errorf("reload: %d stream restarts recorded, %d caller streams; want 1 and 2", gaps, streams)
	}
	as, _ := k.db.Assignments(context.Background(), "reload")
	pending := 0
	for _, a := range as {
		if a.Status == audit.StatusPending {
			pending++
		}
	}
	if pending != 1 {
		t.Errorf("the excluded cell did not return to the pool: %+v", as)
	}

	// The experimenter reviews it.
	x, err := k.db.CreateExperimenter(context.Background(), "eve", "correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := k.db.IssueSignInLink(context.Background(), x.ID, "test", time.Hour)
	b.Do(30*time.Second, chromedp.Navigate(k.base+"/x/login?token="+tok), chromedp.WaitVisible("#sessions"),
		chromedp.Navigate(k.base+"/x/session/"+sid), chromedp.WaitVisible("#events tbody tr"), chromedp.Sleep(2*time.Second))
	b.Shot(browsertest.ArtifactsDir(t), "review")
	if s := b.Text("#exclusion"); !strings.Contains(s, "platform_lost") {
		t.Errorf("review page exclusion: %q", s)
	}
}

// A participant who closes the tab mid-call does not leave the agent session running: after the
// grace period the call ends, excluded, and its cell returns to the pool.
func TestAbandonedCallEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("browser call")
	}
	old := web.ParticipantGrace
	web.ParticipantGrace = 3 * time.Second
	t.Cleanup(func() { web.ParticipantGrace = old })
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{})
	k := startKit(t, `{"systems":[{"label":"sys-wren","family":"reference","endpoint":"`+fake.URL()+`"}]}`)
	p := k.participant(t, "gone", "sys-wren", "it-vpn-incident")
	consentAndMic(t, k.base, p.Token)
	mic := filepath.Join(t.TempDir(), "caller.wav")
	browsertest.ComposeMic(t, mic, 10*time.Second, browsertest.Line{At: time.Second, Text: "Hello."})
	b := browsertest.Start(t, mic)
	b.Do(30*time.Second, chromedp.Navigate(k.base+"/p/"+p.Token), chromedp.WaitVisible("#step-brief"),
		chromedp.Click("#brief-start"), chromedp.WaitVisible(`#call-status.live`))
	sessions, _ := k.db.ListSessions(context.Background(), audit.SessionFilter{StudyID: "gone"})
	if len(sessions) != 1 {
		t.Fatalf("sessions: %d", len(sessions))
	}
	l, ok := k.console.Live(sessions[0].ID)
	if !ok {
		t.Fatal("call not live")
	}
	b.Do(10*time.Second, chromedp.Navigate("about:blank")) // the tab leaves the call
	select {
	case <-l.Ended():
	case <-time.After(60 * time.Second):
		t.Fatal("the abandoned call is still running")
	}
	sess, _ := k.db.Session(context.Background(), sessions[0].ID)
	if sess.EndReason != "caller_disconnected" || sess.Exclusion == nil || sess.Exclusion.Reason != "other" {
		t.Errorf("abandoned call: reason %q exclusion %+v", sess.EndReason, sess.Exclusion)
	}
}
