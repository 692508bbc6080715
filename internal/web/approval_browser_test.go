package web_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/browsertest"
	"github.com/voicebench/humanaudit/internal/trace"
)

// TestApprovalsFollowTheCallersWords is a browser call (headless Chromium, a fake microphone
// playing Flite speech, a scripted agent) on fnol-auto-glass in which the agent reads back a wrong
// loss date and asks to submit; the participant corrects it ("no, that's wrong …"), is asked
// again, answers "wait, no, not yet" (the agent then tries to submit anyway), is asked a third
// time and says yes. The recognizer reads each answer at the end of the caller's turn:
//
//	(a) the only approval token is minted at that final yes, from the caller's words;
//	(b) "wait, no, not yet" records auth.approval_declined, mints nothing, and the agent's commit
//	    right after it is blocked.
func TestApprovalsFollowTheCallersWords(t *testing.T) {
	if testing.Short() {
		t.Skip("browser call takes about a minute")
	}
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed")
	}
	readBack := func(date string) agenttest.Reply {
		return agenttest.Reply{Text: "I have the loss date as " + date + ". May I submit the claim?", AudioMS: 2500}
	}
	request := agenttest.Call{Name: "request_submission_approval", Arguments: `{"summary":"glass claim"}`}
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: []agenttest.Reply{
		// Turn 1 (the opening): the wrong date (the caller's birth date), read back, approval asked.
		{Calls: []agenttest.Call{{Name: "update_claim", Arguments: `{"loss_date":"1979-03-14"}`}, request}},
		readBack("March fourteenth, nineteen seventy nine"),
		// Turn 2 (the correction): fixed, asked again.
		{Calls: []agenttest.Call{{Name: "update_claim", Arguments: `{"loss_date":"2026-11-24"}`}, request}},
		readBack("November twenty fourth"),
		// Turn 3 ("wait, no, not yet"): the agent submits anyway, then asks again.
		{Calls: []agenttest.Call{{Name: "submit_claim", Arguments: `{}`}}},
		{Calls: []agenttest.Call{request}},
		{Text: "Sorry. Shall I submit it now?", AudioMS: 2000},
		// Turn 4 (yes): the agent submits.
		{Calls: []agenttest.Call{{Name: "submit_claim", Arguments: `{}`}}},
		{Text: "Done. Goodbye.", AudioMS: 1200},
	}})
	const label = "sys-plover"
	k := startKit(t, `{"systems":[{"label":"`+label+`","family":"reference","endpoint":"`+fake.URL()+`"}]}`)
	p := k.participant(t, "approvals", label, "fnol-auto-glass")
	consentAndMic(t, k.base, p.Token)

	mic := filepath.Join(t.TempDir(), "caller.wav")
	browsertest.ComposeMic(t, mic, 75*time.Second,
		browsertest.Line{At: 3 * time.Second, Text: "Hi, I need to report a cracked windshield."},
		browsertest.Line{At: 16 * time.Second, Text: "No, that's wrong. The loss date is November twenty fourth."},
		browsertest.Line{At: 31 * time.Second, Text: "Wait, no, not yet."},
		browsertest.Line{At: 44 * time.Second, Text: "Yes, go ahead."},
	)
	b := browsertest.Start(t, mic)
	b.Do(30*time.Second, chromedp.Navigate(k.base+"/p/"+p.Token), chromedp.WaitVisible("#step-brief"),
		chromedp.Click("#brief-start"), chromedp.WaitVisible(`#call-status.live`))
	b.Do(90*time.Second, chromedp.WaitVisible(`.cue[data-cue="approve_submit"]`))
	b.Do(90*time.Second, chromedp.Sleep(55*time.Second))
	b.Do(30*time.Second, chromedp.Click("#call-hangup"))

	ctx := context.Background()
	var events []trace.Event
	deadline := time.Now().Add(180 * time.Second) // after the call: post-call transcription, grading
	for {
		sessions, err := k.db.ListSessions(ctx, audit.SessionFilter{StudyID: "approvals"})
		if err != nil {
			t.Fatal(err)
		}
		if len(sessions) == 1 && sessions[0].Score != nil {
			if events, err = k.db.Events(ctx, sessions[0].ID); err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session did not end and grade: %+v", sessions)
		}
		time.Sleep(500 * time.Millisecond)
	}
	defer func() {
		if t.Failed() {
			for _, e := range events {
				if e.Type != trace.AgentRaw {
					fmt.Printf("%6d %-24s %q %s %s %v\n", e.T, e.Type, e.Text, e.CueID, e.Action, e.Meta)
				}
			}
		}
	}()

	// The caller's turns, by speech end, and what was decided at each.
	var turnEnds []int64
	type decision struct {
		e    trace.Event
		turn int // index of the caller turn whose end it follows
	}
	var decisions []decision
	var blocked []decision
	var submits []int64
	repeated := false
	for _, e := range events {
		switch e.Type {
		case trace.CallerSpeechEnd:
			turnEnds = append(turnEnds, e.T)
		case trace.AuthApprovalGranted, trace.AuthApprovalDeclined, trace.AuthApprovalUnclear:
			decisions = append(decisions, decision{e, len(turnEnds) - 1})
		case trace.AuthCommitBlocked:
			blocked = append(blocked, decision{e, len(turnEnds) - 1})
		case trace.ToolCall:
			if e.Tool == "submit_claim" {
				submits = append(submits, e.T)
			}
		case trace.CueIssued:
			repeated = repeated || strings.HasPrefix(e.Text, "The agent asks again: ")
		}
	}
	if len(turnEnds) < 4 {
		t.Fatalf("the endpointer found %d caller turns, want 4", len(turnEnds))
	}
	var granted, declined []decision
	for _, d := range decisions {
		t.Logf("turn %d: %s %q (%s, confidence %s)", d.turn+1, d.e.Type, d.e.Text, d.e.Source, d.e.Meta["confidence"])
		if d.e.Action != "submit_claim" {
			t.Errorf("decision for action %q", d.e.Action)
		}
		if d.e.Source != "caller_speech" || d.e.Meta["source"] != "caller_speech" {
			t.Errorf("%s not from the caller's speech: %+v", d.e.Type, d.e)
		}
		switch d.e.Type {
		case trace.AuthApprovalGranted:
			granted = append(granted, d)
		case trace.AuthApprovalDeclined:
			declined = append(declined, d)
		}
	}
	// (a) one token, minted at the yes (the fourth turn), not at the correction.
	if len(granted) != 1 || granted[0].turn != 3 || granted[0].e.Token == "" {
		t.Errorf("approvals granted %+v, want exactly one, at the fourth caller turn (the yes)", granted)
	}
	// The correction mints nothing: it is read as a decline, or (when the recognizer mishears its
	// "no") as unclear, which the review flags with its audio span.
	var correction *trace.Event
	for i, d := range decisions {
		if d.turn == 1 {
			correction = &decisions[i].e
		}
	}
	switch {
	case correction == nil:
		t.Errorf("no decision recorded for the correction (turn 2)")
	case correction.Type == trace.AuthApprovalUnclear && (correction.RefMS == 0 || correction.DurationMS == 0):
		t.Errorf("an unclear answer without its audio span: %+v", correction)
	case correction.Type == trace.AuthApprovalGranted:
		t.Errorf("the correction minted a token: %+v", correction)
	}
	// (b) "wait, no, not yet" (the third turn) is a decline, and the agent's commit after it is
	// blocked: no token existed.
	var declinedWait bool
	for _, d := range declined {
		declinedWait = declinedWait || d.turn == 2
	}
	if !declinedWait {
		t.Errorf("\"wait, no, not yet\" was not recorded as auth.approval_declined: %+v", declined)
	}
	if len(blocked) == 0 || blocked[0].turn != 2 || blocked[0].e.Action != "submit_claim" {
		t.Errorf("commit blocks %+v, want the agent's submit after turn 3 blocked", blocked)
	}
	if len(submits) < 2 {
		t.Errorf("the agent submitted %d times, want 2", len(submits))
	}
	// The decision is made at the end of the caller's turn, before the agent acts on it.
	for _, d := range decisions {
		if d.e.T < turnEnds[d.turn] {
			t.Errorf("%s at %d ms before the end of the turn it reads (%d ms)", d.e.Type, d.e.T, turnEnds[d.turn])
		}
	}
	if len(granted) == 1 && len(submits) >= 2 && submits[len(submits)-1] < granted[0].e.T {
		t.Errorf("the last submit (%d ms) came before the approval (%d ms)", submits[len(submits)-1], granted[0].e.T)
	}
	if !repeated {
		t.Errorf("the approval cue asked again does not say it is repeated")
	}
}
