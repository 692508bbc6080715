package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/browsertest"
	"github.com/voicebench/humanaudit/internal/console"
	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/pgcluster"
	"github.com/voicebench/humanaudit/internal/store/storetest"
	"github.com/voicebench/humanaudit/internal/trace"
	"github.com/voicebench/humanaudit/internal/web"
)

// consoleChildEnv makes the test binary run as the console: its value is the JSON list of
// arguments to `audit`. The child runs main's own signal handling, so SIGKILL and SIGTERM hit a
// real console process.
const consoleChildEnv = "AUDIT_TEST_CONSOLE_ARGS"

func runConsoleChild(argsJSON string) int {
	var args []string
	if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
		fmt.Fprintln(os.Stderr, "console child:", err)
		return 2
	}
	ctx, stop := signalContext()
	defer stop()
	return exitCode(run(ctx, args, os.Stdout, os.Stderr), os.Stderr)
}

// consoleProc is a console running in a child process.
type consoleProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdout syncBuffer
	stderr syncBuffer
	done   chan error
}

// startConsole runs `audit serve` in a child process and waits until it serves.
func startConsole(t *testing.T, env []string, args ...string) *consoleProc {
	t.Helper()
	b, _ := json.Marshal(append([]string{"serve"}, args...))
	c := &consoleProc{t: t, cmd: exec.Command(os.Args[0], "-test.run=^$"), done: make(chan error, 1)}
	c.cmd.Env = append(append(os.Environ(), consoleChildEnv+"="+string(b)), env...)
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			c.cmd.Process.Kill()
			<-c.done
		}
		if t.Failed() {
			t.Logf("console pid %d stderr:\n%s", c.cmd.Process.Pid, c.stderr.String())
		}
	})
	deadline := time.After(90 * time.Second)
	for !strings.Contains(c.stdout.String(), "console:") {
		select {
		case err := <-c.done:
			c.done <- err
			t.Fatalf("console exited before serving: %v\n%s", err, c.stderr.String())
		case <-deadline:
			t.Fatalf("console not serving after 90 s:\n%s", c.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return c
}

// kill sends SIGKILL and waits for the process to be gone.
func (c *consoleProc) kill() {
	c.t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatal(err)
	}
	<-c.done
}

// alive reports whether the console process is still running.
func (c *consoleProc) alive() bool {
	select {
	case err := <-c.done:
		c.done <- err
		return false
	default:
		return true
	}
}

// crashKit is what the crash tests share: a fake agent, the console's files and the study.
type crashKit struct {
	fake    *agenttest.OpenAIFake
	dbURL   string
	data    string
	addr    string
	args    []string
	db      *store.DB
	xtoken  string
	console *consoleProc
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func newCrashKit(t *testing.T, dbURL string) *crashKit {
	t.Helper()
	if testing.Short() {
		t.Skip("live browser calls against a console in a child process")
	}
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed")
	}
	k := &crashKit{dbURL: dbURL, data: t.TempDir(), addr: freeAddr(t)}
	var replies []agenttest.Reply
	for range 12 {
		// Every caller turn is answered with 2.5 s of speech streamed in real time (a delta every
		// 100 ms, each committed as an agent.raw event), so a kill lands while events flow.
		replies = append(replies, agenttest.Reply{Text: "Thanks, I have noted that. What else is affected?", AudioMS: 2500, ChunkMS: 100, Pace: 100 * time.Millisecond})
	}
	k.fake = agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: replies})
	sys := filepath.Join(k.data, "systems.json")
	os.WriteFile(sys, []byte(`{"systems":[{"label":"sys-kite","family":"reference","endpoint":"`+k.fake.URL()+`"}]}`), 0o644)
	k.args = []string{"--addr", k.addr, "--data", k.data, "--tasks", filepath.Join("..", "..", "internal", "grade", "testdata", "tasks"),
		"--systems", sys, "--secrets", filepath.Join(k.data, "no-secrets.txt"), "--loopback-only"}
	return k
}

func (k *crashKit) start(t *testing.T) {
	t.Helper()
	k.console = startConsole(t, []string{"DATABASE_URL=" + k.dbURL}, k.args...)
}

// setup opens the test's own connection and creates the study (after the console registered the
// tasks and systems): one slot per participant, one call each.
func (k *crashKit) setup(t *testing.T, study string, participants int) []audit.Participant {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, store.Config{URL: k.dbURL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	k.db = db
	if _, err := db.CreateStudy(ctx, audit.Study{ID: study, Name: study, Seed: 1, Config: json.RawMessage(`{"completion_code":"CRASH-OK"}`)}); err != nil {
		t.Fatal(err)
	}
	var ps []audit.Participant
	for i := range participants {
		slot := fmt.Sprintf("P%d", i+1)
		if _, err := db.AddPlan(ctx, study, []audit.PlanRow{{Slot: slot, Position: 1, Task: "it-vpn-incident", System: "sys-kite", Repeat: 1}}); err != nil {
			t.Fatal(err)
		}
		p, err := db.CreateParticipant(ctx, audit.NewParticipant{StudyID: study})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ path, body string }{{"/consent", `{"agree":true}`},
			{"/miccheck", `{"echoCancellation":true,"noiseSuppression":true,"autoGainControl":true,"device":"test","level":0.3,"playbackOk":true}`}} {
			if st, body := k.api(t, "POST", "/api/p/"+p.Token+c.path, c.body, ""); st != 200 {
				t.Fatalf("%s: %d %s", c.path, st, body)
			}
		}
		ps = append(ps, p)
	}
	x, err := db.CreateExperimenter(ctx, "eve", "correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	if k.xtoken, err = db.CreateExperimenterSession(ctx, x.ID, "password", audit.SessionLimits{}); err != nil {
		t.Fatal(err)
	}
	return ps
}

func (k *crashKit) api(t *testing.T, method, path, body, bearer string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+k.addr+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// callerMic is the participant's fake microphone: a turn every nine seconds for three minutes.
func callerMic(t *testing.T) string {
	t.Helper()
	mic := filepath.Join(t.TempDir(), "caller.wav")
	lines := []string{"Hi, this is Priya Venkataraman. I can't connect to the VPN.", "It's four one seven.",
		"The VPN, Outlook and SharePoint.", "I restarted the laptop.", "My whole team is affected.", "Teams stopped working too."}
	var ls []browsertest.Line
	for i := range 20 {
		ls = append(ls, browsertest.Line{At: time.Duration(3+9*i) * time.Second, Text: lines[i%len(lines)]})
	}
	browsertest.ComposeMic(t, mic, 190*time.Second, ls...)
	return mic
}

// startCall opens the participant's link and starts the call.
func (k *crashKit) startCall(t *testing.T, b *browsertest.Browser, p audit.Participant) {
	t.Helper()
	b.Do(30*time.Second, chromedp.Navigate("http://"+k.addr+"/p/"+p.Token), chromedp.WaitVisible("#step-brief"),
		chromedp.Click("#brief-start"), chromedp.WaitVisible(`#call-status.live`))
}

// sessionsOf lists a participant's sessions, first attempt first.
func (k *crashKit) sessionsOf(t *testing.T, study string, p audit.Participant) []audit.SessionSummary {
	t.Helper()
	all, err := k.db.ListSessions(context.Background(), audit.SessionFilter{StudyID: study})
	if err != nil {
		t.Fatal(err)
	}
	var out []audit.SessionSummary
	for _, s := range all {
		if s.ParticipantID == p.ID {
			out = append(out, s)
		}
	}
	return out
}

// waitAgentSpeaking waits until the session's trace shows the agent speaking, so a kill lands
// while events and audio flow.
func (k *crashKit) waitAgentSpeaking(t *testing.T, sid string, after int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		evs, _ := k.db.Events(context.Background(), sid)
		n := 0
		for _, e := range evs {
			if e.Type == trace.AgentSpeechStart {
				n++
			}
		}
		if n > after {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("the agent never spoke")
}

// checkRecovered checks the interrupted session after recovery: closed with reason and a
// platform_lost exclusion, its recording registered and served on the review page, at most
// 200 ms of audio lost against the last committed event, graded with a partial note. It returns
// the audio lost, and logs it also against the media clock at the moment of the crash (killed,
// the wall time of the kill), estimated from the events' media and wall times.
func (k *crashKit) checkRecovered(t *testing.T, sid, reason string, killed time.Time) time.Duration {
	t.Helper()
	ctx := context.Background()
	s, err := k.db.Session(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != audit.SessionEnded || s.EndReason != reason || s.Exclusion == nil || s.Exclusion.Reason != audit.ReasonPlatformLost {
		t.Fatalf("interrupted session: status %s, reason %q, exclusion %+v; want ended, %s, platform_lost", s.Status, s.EndReason, s.Exclusion, reason)
	}
	events, _ := k.db.Events(ctx, sid)
	n := len(events)
	if n < 10 || events[n-1].Type != trace.SessionEnd || events[n-1].Text != reason || events[n-2].Type != trace.Exclusion || events[n-2].Text != "platform_lost" {
		t.Fatalf("the trace does not end with session.exclusion platform_lost and session.end %s: %+v", reason, events[max(0, n-3):])
	}
	var lastT int64
	start := time.Time{}             // the earliest media-clock origin the events allow: wall - media time
	for _, e := range events[:n-2] { // the committed events, before what the closing added
		lastT = max(lastT, e.T)
		if o := e.Wall.Add(-time.Duration(e.T) * time.Millisecond); e.Type != trace.SessionStart && (start.IsZero() || o.Before(start)) {
			start = o
		}
	}
	recs, _ := k.db.Recordings(ctx, sid)
	if len(recs) != 1 {
		t.Fatalf("recording not registered: %+v", recs)
	}
	w, err := audio.ReadWAV(recs[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	lost := time.Duration(lastT)*time.Millisecond - w.Duration()
	atKill := killed.Sub(start)
	t.Logf("%s: recording %v, last committed event at %d ms (%d events): audio lost %v; media clock at the kill about %v: %v short of it",
		reason, w.Duration(), lastT, n-2, lost, atKill.Round(time.Millisecond), (atKill - w.Duration()).Round(time.Millisecond))
	if lost > 200*time.Millisecond {
		t.Errorf("audio lost %v, want at most 200 ms", lost)
	}
	for _, path := range []string{"/recording.wav", "/peaks?n=100"} {
		st, body := k.api(t, "GET", "/api/x/sessions/"+sid+path, "", k.xtoken)
		if st != 200 || len(body) < 100 {
			t.Errorf("review page %s: %d, %d bytes", path, st, len(body))
		}
		if path == "/peaks?n=100" {
			var pk web.Peaks
			if json.Unmarshal(body, &pk) != nil || pk.Samples != int64(w.Frames()) {
				t.Errorf("waveform of %d samples, the recording has %d", pk.Samples, w.Frames())
			}
		}
	}
	scores, _ := k.db.Scores(ctx, sid)
	if len(scores) != 1 {
		t.Fatalf("interrupted session not graded: %+v", scores)
	}
	var g grade.Result
	json.Unmarshal(scores[0].Grade, &g)
	if !strings.Contains(g.Partial, reason) {
		t.Errorf("the grade does not say it is partial: %q", g.Partial)
	}
	return lost
}

// rerun has the same participant page (which retries by itself) offer the interrupted call again,
// start it as attempt 2 without a conflict and finish it; the study counts the cell once.
func (k *crashKit) rerun(t *testing.T, b *browsertest.Browser, study string, p audit.Participant, first string) {
	t.Helper()
	b.Do(90*time.Second, chromedp.WaitVisible("#brief-interrupted"))
	b.Shot(browsertest.ArtifactsDir(t), "briefing-after-interruption-"+strconv.FormatInt(p.ID, 10))
	if got := b.Text("#brief-interrupted"); !strings.Contains(got, "Your call was interrupted by a technical problem. You can start it again.") &&
		!strings.Contains(got, "ended on the study's side") {
		t.Errorf("briefing after the interruption says %q", got)
	}
	b.Do(30*time.Second, chromedp.Click("#brief-start"), chromedp.WaitVisible(`#call-status.live`))
	if msg, _ := chromedp.Run(b.Ctx, chromedp.Evaluate[string](`document.getElementById("error").hidden ? "" : document.getElementById("error").textContent`)); msg != "" {
		t.Errorf("the page shows an error after starting again: %q", msg)
	}
	time.Sleep(8 * time.Second)
	b.Do(60*time.Second, chromedp.Click("#call-hangup"), chromedp.WaitVisible("#step-done"))
	ss := k.sessionsOf(t, study, p)
	if len(ss) != 2 || ss[0].ID != first {
		t.Fatalf("sessions of the participant: %+v", ss)
	}
	again := ss[1]
	if again.EndReason != "caller_hung_up" || again.Exclusion != nil || again.Score == nil || again.Attempt != 2 || again.Reruns != first {
		t.Fatalf("second attempt: reason %q exclusion %+v score %v attempt %d reruns %q", again.EndReason, again.Exclusion, again.Score != nil, again.Attempt, again.Reruns)
	}
	evs, _ := k.db.Events(context.Background(), again.ID)
	if len(evs) == 0 || evs[0].Meta["attempt"] != "2" || evs[0].Meta["reruns"] != first {
		t.Errorf("session.start of the second attempt: %v", evs[0].Meta)
	}
}

// studyStatus checks that audit study status counts every cell once: all done, none excluded.
func studyStatus(t *testing.T, study string, cells int) {
	t.Helper()
	var out, errOut syncBuffer
	if err := run(context.Background(), []string{"study", "status", "--study", study}, &out, &errOut); err != nil {
		t.Fatalf("study status: %v\n%s", err, errOut.String())
	}
	t.Logf("audit study status:\n%s", out.String())
	if !strings.Contains(out.String(), fmt.Sprintf("study %s: %d of %d planned sessions done (100%%), 0 running, 0 pending, 0 excluded", study, cells, cells)) {
		t.Errorf("study status does not count the cell once:\n%s", out.String())
	}
}

// TestConsoleKilledMidCall kills a real console process (SIGKILL) in the middle of a live
// browser call, restarts it on the same data, and checks that the session is closed as
// console_crash at once, that its recording is served and lost at most 200 ms, and that the
// participant's link carries on with a new attempt of the same cell.
func TestConsoleKilledMidCall(t *testing.T) {
	k := newCrashKit(t, storetest.NewURL(t))
	t.Setenv("DATABASE_URL", k.dbURL) // for audit study status
	k.start(t)
	ps := k.setup(t, "crash", 1)
	b := browsertest.Start(t, callerMic(t))
	k.startCall(t, b, ps[0])
	sid := k.sessionsOf(t, "crash", ps[0])[0].ID
	k.waitAgentSpeaking(t, sid, 1)
	time.Sleep(1200 * time.Millisecond) // mid-reply: agent audio and its events are flowing
	killed := time.Now()
	k.console.kill()
	b.Shot(browsertest.ArtifactsDir(t), "1-console-killed")

	restarted := time.Now()
	k.start(t)
	var s audit.Session
	for {
		var err error
		if s, err = k.db.Session(context.Background(), sid); err == nil && s.Status == audit.SessionEnded {
			break
		}
		if time.Since(restarted) > 30*time.Second {
			t.Fatalf("30 s after the restart the session is still %s", s.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("session closed %v after the restart began", time.Since(restarted).Round(time.Millisecond))
	if !strings.Contains(k.console.stderr.String(), "reconciled sessions left running") || !strings.Contains(k.console.stderr.String(), "closed=1") {
		t.Errorf("no reconciliation log line with the counts:\n%s", k.console.stderr.String())
	}
	lost := k.checkRecovered(t, sid, "console_crash", killed)
	t.Logf("AUDIO LOST (console SIGKILL): %d ms", lost.Milliseconds())
	k.rerun(t, b, "crash", ps[0], sid)
	studyStatus(t, "crash", 1)
	b.Shot(browsertest.ArtifactsDir(t), "2-done")
}

// TestDatabaseKilledMidCall kills the PostgreSQL postmaster (SIGKILL) of a private cluster in the
// middle of a live browser call: the call stops at the first failed write, the console keeps
// serving a "temporarily unavailable, your progress is saved" page and JSON, and once the server
// is back the session is closed through the same path (storage_error), the pool reconnects, and
// the participant carries on.
func TestDatabaseKilledMidCall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster and a browser")
	}
	ctx := context.Background()
	pgDir := filepath.Join(storetest.ClusterDir(t), "pg")
	cluster, err := pgcluster.Start(ctx, pgcluster.Config{Dir: pgDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pgcluster.Stop(context.Background(), pgcluster.Config{Dir: pgDir})
		cluster.Close(context.Background())
	})
	if err := store.CreateDatabase(ctx, cluster.URL("postgres"), "audit"); err != nil {
		t.Fatal(err)
	}
	k := newCrashKit(t, cluster.URL("audit"))
	t.Setenv("DATABASE_URL", k.dbURL)
	k.start(t)
	ps := k.setup(t, "pgcrash", 1)
	b := browsertest.Start(t, callerMic(t))
	k.startCall(t, b, ps[0])
	sid := k.sessionsOf(t, "pgcrash", ps[0])[0].ID
	k.waitAgentSpeaking(t, sid, 1)
	time.Sleep(1200 * time.Millisecond)

	pid := cluster.PID()
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The participant is told the call was interrupted, then that the study is temporarily
	// unavailable; the console process keeps running.
	b.Do(60*time.Second, chromedp.WaitVisible("#error.unavailable"))
	b.Shot(browsertest.ArtifactsDir(t), "1-database-down")
	if got := b.Text("#error"); !strings.Contains(got, "temporarily unavailable") || !strings.Contains(got, "progress is saved") {
		t.Errorf("page while the database is down: %q", got)
	}
	st, body := k.api(t, "GET", "/api/p/"+ps[0].Token+"/state", "", "")
	if st != 503 || !strings.Contains(string(body), web.MsgUnavailable) {
		t.Errorf("state while the database is down: %d %s", st, body)
	}
	st, body = k.api(t, "GET", "/p/"+ps[0].Token, "", "")
	if st != 503 || !strings.Contains(string(body), "Temporarily unavailable") || !strings.Contains(string(body), "http-equiv=\"refresh\"") {
		t.Errorf("participant page while the database is down: %d %.300s", st, body)
	}
	if !k.console.alive() {
		t.Fatalf("the console died with the database:\n%s", k.console.stderr.String())
	}

	// The server comes back on the same data directory (once the killed postmaster's backends
	// have noticed and exited).
	restarted := time.Now()
	var back *pgcluster.Cluster
	for back == nil {
		back, err = pgcluster.Start(ctx, pgcluster.Config{Dir: pgDir, StartTimeout: 10 * time.Second})
		if err != nil && time.Since(restarted) > 60*time.Second {
			t.Fatalf("postgres did not start again: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Cleanup(func() { back.Close(context.Background()) })
	t.Logf("postgres started again in %v", time.Since(restarted).Round(time.Millisecond))
	restarted = time.Now()
	var s audit.Session
	for {
		if s, err = k.db.Session(ctx, sid); err == nil && s.Status == audit.SessionEnded {
			break
		}
		if time.Since(restarted) > 30*time.Second {
			t.Fatalf("30 s after the database came back the session is %s (%v)\n%s", s.Status, err, k.console.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("session closed %v after the database came back", time.Since(restarted).Round(time.Millisecond))
	lost := k.checkRecovered(t, sid, "storage_error", killed)
	t.Logf("AUDIO LOST (postmaster SIGKILL): %d ms", lost.Milliseconds())
	k.rerun(t, b, "pgcrash", ps[0], sid)
	studyStatus(t, "pgcrash", 1)
	if !k.console.alive() {
		t.Fatal("the console exited")
	}
}

// TestSIGTERMEndsLiveCalls stops a console with SIGTERM during two live calls: both end as
// console_shutdown, flushed (every tick recorded, every event stored, the journal complete) and
// graded, each participant page says the call ended on the study's side, and after a restart each
// participant can run the call again.
func TestSIGTERMEndsLiveCalls(t *testing.T) {
	k := newCrashKit(t, storetest.NewURL(t))
	t.Setenv("DATABASE_URL", k.dbURL)
	k.start(t)
	ps := k.setup(t, "stop", 2)
	mic := callerMic(t)
	var browsers []*browsertest.Browser
	for _, p := range ps {
		b := browsertest.Start(t, mic)
		k.startCall(t, b, p)
		browsers = append(browsers, b)
	}
	for _, p := range ps {
		k.waitAgentSpeaking(t, k.sessionsOf(t, "stop", p)[0].ID, 0)
	}
	if err := k.console.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-k.console.done:
		k.console.done <- err
		if err != nil {
			t.Fatalf("console exit after SIGTERM: %v\n%s", err, k.console.stderr.String())
		}
	case <-time.After(90 * time.Second):
		t.Fatal("console still running 90 s after SIGTERM")
	}
	ctx := context.Background()
	for i, p := range ps {
		ss := k.sessionsOf(t, "stop", p)
		if len(ss) != 1 {
			t.Fatalf("participant %d: %d sessions", i, len(ss))
		}
		s := ss[0]
		if s.EndReason != "console_shutdown" || s.Exclusion == nil || s.Exclusion.Reason != audit.ReasonPlatformLost || s.Score == nil {
			t.Errorf("call %d after SIGTERM: reason %q exclusion %+v graded %v", i, s.EndReason, s.Exclusion, s.Score != nil)
		}
		events, _ := k.db.Events(ctx, s.ID)
		var ticks int64
		seen := map[trace.Type]bool{}
		for j, e := range events {
			if e.Seq != int64(j+1) {
				t.Fatalf("call %d: event %d has seq %d", i, j+1, e.Seq)
			}
			seen[e.Type] = true
			if e.Type == trace.MediaStats {
				ticks, _ = strconv.ParseInt(e.Meta["ticks"], 10, 64)
			}
		}
		if !seen[trace.MediaStats] || !seen[trace.Exclusion] || events[len(events)-1].Type != trace.SessionEnd || events[len(events)-1].Text != "console_shutdown" {
			t.Errorf("call %d: the trace was not finished by the session itself: %v", i, seen)
		}
		w, err := audio.ReadWAV(s.RecordingPath)
		if err != nil || int64(w.Frames()) != ticks*audio.FrameSamples {
			t.Errorf("call %d: recording %v frames (%v); want all %d ticks", i, w.Frames(), err, ticks)
		}
		jev, torn, err := trace.ReadFileTolerant(filepath.Join(k.data, "traces", s.ID+".jsonl"))
		if err != nil || torn != nil || len(jev) != len(events) {
			t.Errorf("call %d: journal of %d events (torn %+v, %v); the database has %d", i, len(jev), torn, err, len(events))
		}
		var g grade.Result
		json.Unmarshal(s.Score.Grade, &g)
		if !strings.Contains(g.Partial, "console_shutdown") {
			t.Errorf("call %d: grade not marked partial: %q", i, g.Partial)
		}
		b := browsers[i]
		b.Do(30*time.Second, chromedp.WaitVisible("#notice"))
		if got := b.Text("#notice"); got != console.EndNotice("console_shutdown") {
			t.Errorf("participant %d page says %q", i, got)
		}
		b.Shot(browsertest.ArtifactsDir(t), fmt.Sprintf("participant-%d-stopped", i+1))
	}
	// Started again, the console offers each participant the same call again.
	k.start(t)
	for i, p := range ps {
		k.rerun(t, browsers[i], "stop", p, k.sessionsOf(t, "stop", p)[0].ID)
	}
	studyStatus(t, "stop", 2)
}
