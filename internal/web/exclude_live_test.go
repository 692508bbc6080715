package web_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/browsertest"
	"github.com/voicebench/humanaudit/internal/console"
	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/trace"
)

// TestExcludingALiveCallEndsItFirst: an experimenter who excludes a call that is still running
// ends it (session.end excluded_by_experimenter, after the session's own flush: media.stats,
// recording, grade), and only then is it excluded and its cell returned to the pool, so the cell
// is never handed to someone else mid-call. The participant is told the researcher ended it.
func TestExcludingALiveCallEndsItFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("browser call")
	}
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed")
	}
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: []agenttest.Reply{
		{Text: "Hello, which systems are affected?", AudioMS: 1500}}})
	k := startKit(t, `{"systems":[{"label":"sys-ibis","family":"reference","endpoint":"`+fake.URL()+`"}]}`)
	p := k.participant(t, "excl", "sys-ibis", "it-vpn-incident")
	consentAndMic(t, k.base, p.Token)
	mic := filepath.Join(t.TempDir(), "caller.wav")
	browsertest.ComposeMic(t, mic, 30*time.Second, browsertest.Line{At: 2 * time.Second, Text: "Hi, my VPN is down."})
	b := browsertest.Start(t, mic)
	b.Do(30*time.Second, chromedp.Navigate(k.base+"/p/"+p.Token), chromedp.WaitVisible("#step-brief"),
		chromedp.Click("#brief-start"), chromedp.WaitVisible(`#call-status.live`))
	time.Sleep(6 * time.Second)
	ctx := context.Background()
	sessions, _ := k.db.ListSessions(ctx, audit.SessionFilter{StudyID: "excl"})
	if len(sessions) != 1 {
		t.Fatalf("sessions: %d", len(sessions))
	}
	sid := sessions[0].ID
	if _, ok := k.console.Live(sid); !ok {
		t.Fatal("call not live")
	}
	x, _ := k.db.CreateExperimenter(ctx, "eve", "correct horse battery staple")
	tok, _ := k.db.CreateExperimenterSession(ctx, x.ID, "password", audit.SessionLimits{})
	st, body := get(t, "POST", k.base+"/api/x/sessions/"+sid+"/exclude", `{"reason":"caller_broke_script","note":"read the role card aloud"}`,
		"Authorization", "Bearer "+tok, "Content-Type", "application/json")
	if st != 200 {
		t.Fatalf("exclude: %d %s", st, body)
	}
	var res struct {
		Excluded bool   `json:"excluded"`
		Ended    string `json:"ended"`
		Cell     int64  `json:"returned_cell"`
	}
	json.Unmarshal([]byte(body), &res)
	if !res.Excluded || res.Ended != "excluded_by_experimenter" || res.Cell == 0 {
		t.Fatalf("exclude answered %s", body)
	}
	if _, ok := k.console.Live(sid); ok {
		t.Fatal("the call is still live after its exclusion")
	}
	sess, _ := k.db.Session(ctx, sid)
	if sess.Status != audit.SessionEnded || sess.EndReason != "excluded_by_experimenter" || sess.Exclusion == nil ||
		sess.Exclusion.Reason != audit.ReasonCallerBrokeScript || sess.Exclusion.By != "eve" || sess.Exclusion.Note != "read the role card aloud" {
		t.Fatalf("excluded session %+v, exclusion %+v", sess, sess.Exclusion)
	}
	events, _ := k.db.Events(ctx, sid)
	n := len(events)
	if events[n-1].Type != trace.SessionEnd || events[n-1].Text != "excluded_by_experimenter" ||
		events[n-2].Type != trace.Exclusion || events[n-2].Text != "caller_broke_script" {
		t.Fatalf("trace ends %+v", events[n-2:])
	}
	stats := false
	for _, e := range events {
		stats = stats || e.Type == trace.MediaStats
	}
	if !stats || sess.RecordingPath == "" {
		t.Errorf("the call was not finished by its session first: media.stats %v, recording %q", stats, sess.RecordingPath)
	}
	// The cell went back to the pool only once the call had ended.
	cell, err := k.db.Assignment(ctx, res.Cell)
	if err != nil || cell.Replaces != sessions[0].AssignmentID || cell.Status != audit.StatusPending || cell.CreatedAt.Before(sess.EndedAt) {
		t.Fatalf("returned cell %+v (%v), session ended at %v", cell, err, sess.EndedAt)
	}
	scores, _ := k.db.Scores(ctx, sid)
	if len(scores) != 1 {
		t.Fatalf("scores %+v", scores)
	}
	var g grade.Result
	json.Unmarshal(scores[0].Grade, &g)
	if !strings.Contains(g.Partial, "excluded_by_experimenter") {
		t.Errorf("grade not partial: %q", g.Partial)
	}
	b.Do(30*time.Second, chromedp.WaitVisible("#notice"))
	if got := b.Text("#notice"); got != console.EndNotice("excluded_by_experimenter") {
		t.Errorf("participant page says %q", got)
	}
	b.Shot(browsertest.ArtifactsDir(t), "excluded")
	// Excluding it again is a conflict, as for any excluded session.
	if st, _ := get(t, "POST", k.base+"/api/x/sessions/"+sid+"/exclude", `{"reason":"other"}`, "Authorization", "Bearer "+tok); st != 409 {
		t.Errorf("second exclusion: %d", st)
	}
}
