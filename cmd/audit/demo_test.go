package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/voicebench/humanaudit/internal/annotate"
	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/browsertest"
	"github.com/voicebench/humanaudit/internal/store/storetest"
	"github.com/voicebench/humanaudit/internal/trace"
)

// TestDemoEndToEnd runs `audit demo`'s stack (console, in-process reference agent, demo study) and
// makes the demo participant's first call in headless Chromium with a fake microphone built from
// the task's frozen bank lines: consent, microphone check, briefing, a call with a correction cue,
// the next briefing. Then it checks the trace, the recording's alignment, the stored grade and the
// experimenter's review page, and scans everything the participant received for leaks.
func TestDemoEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("a live call with the reference agent takes about two minutes")
	}
	if browsertest.Race {
		// The offline recognizer must follow the caller's speech in real time; make check runs
		// this test again without the race detector.
		t.Skip("the race detector slows the live call's media path too much for real-time speech recognition")
	}
	t.Setenv("DATABASE_URL", storetest.NewURL(t))
	data := t.TempDir()
	fs := newFlags("demo", io.Discard)
	f := addStackFlags(fs, "127.0.0.1:0")
	// The grader's frozen copies of the demo tasks: their correction cue fires at a fixed media time
	// (30 s), which a fake microphone's fixed schedule can answer.
	if err := fs.Parse([]string{"--data", data, "--tasks", filepath.Join("..", "..", "internal", "grade", "testdata", "tasks"),
		"--systems", filepath.Join(data, "no-systems.json"), "--loopback-only"}); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	ctx := context.Background()
	st, err := startStack(ctx, f, &logs)
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	defer st.Close()
	links, err := setupDemo(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(links.Participant, "/p/") || !strings.Contains(links.Experimenter, "/x/login?token=") {
		t.Fatalf("links: %+v", links)
	}

	// The caller speaks the bank's lines for it-vpn-incident in the voice of its persona, a few
	// seconds apart; the correction cue fires 30 s into the call.
	mic := filepath.Join(t.TempDir(), "caller.wav")
	v := "kal16"
	browsertest.ComposeMic(t, mic, 120*time.Second,
		browsertest.Line{At: 9 * time.Second, Text: "Hi. Priya Venkataraman. I can't get on the VPN.", Voice: v},
		browsertest.Line{At: 20 * time.Second, Text: "Four one seven.", Voice: v},
		browsertest.Line{At: 30 * time.Second, Text: "priya dot v at northwind dot example.", Voice: v},
		browsertest.Line{At: 40 * time.Second, Text: "It says zero x eight zero zero seven two E E seven.", Voice: v},
		browsertest.Line{At: 50 * time.Second, Text: "Sorry, one more. Teams is down now too.", Voice: v},
		browsertest.Line{At: 60 * time.Second, Text: "VPN, Outlook, SharePoint, and Teams.", Voice: v},
		browsertest.Line{At: 70 * time.Second, Text: "Restarted the laptop. Reinstalled the VPN client. Then tried my phone hotspot.", Voice: v},
		browsertest.Line{At: 82 * time.Second, Text: "My whole team.", Voice: v},
		browsertest.Line{At: 92 * time.Second, Text: "That's all. Thanks, bye.", Voice: v},
	)
	b := browsertest.Start(t, mic)
	shots := browsertest.ArtifactsDir(t)
	b.Do(30*time.Second, chromedp.Navigate(links.Participant), chromedp.WaitVisible("#step-consent"))
	b.Shot(shots, "1-consent")
	b.Do(30*time.Second, chromedp.Click("#consent-check"), chromedp.Click("#consent-agree"),
		chromedp.WaitVisible("#step-mic"), chromedp.WaitEnabled("#mic-record"))
	b.Do(30*time.Second, chromedp.Click("#mic-record"), chromedp.WaitVisible("#mic-playback"), chromedp.Click("#mic-heard"))
	b.Shot(shots, "2-mic-check")
	b.Do(30*time.Second, chromedp.Click("#mic-done"), chromedp.WaitVisible("#step-brief"))
	b.Shot(shots, "3-briefing")
	b.Do(30*time.Second, chromedp.Click("#brief-start"), chromedp.WaitVisible(`#call-status.live`))
	b.Do(90*time.Second, chromedp.WaitVisible(`.cue[data-cue="teams_down"]`))
	b.Shot(shots, "4-call-with-cue")
	b.Do(70*time.Second, chromedp.Sleep(55*time.Second))
	b.Shot(shots, "5-call-later")
	b.Do(60*time.Second, chromedp.Click("#call-hangup"), chromedp.WaitVisible("#step-brief"))
	b.Shot(shots, "6-next-briefing")
	if pos := b.Text("#brief-position"); pos != "2" {
		t.Errorf("after the first call the participant should be briefed for call 2, got %q", pos)
	}

	// The trace.
	sessions, err := st.db.ListSessions(ctx, audit.SessionFilter{StudyID: demoStudy})
	if err != nil || len(sessions) != 1 {
		t.Fatalf("sessions: %v %v", sessions, err)
	}
	s := sessions[0]
	events, err := st.db.Events(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	count := map[trace.Type]int{}
	cue := map[trace.Type]trace.Event{}
	var firstAgentSpeech, firstCallerSpeech int64 = -1, -1
	ticks := int64(0)
	for _, e := range events {
		count[e.Type]++
		if e.CueID == "teams_down" {
			cue[e.Type] = e
		}
		if e.Type == trace.AgentSpeechStart && firstAgentSpeech < 0 {
			firstAgentSpeech = e.T
		}
		if e.Type == trace.CallerSpeechStart && firstCallerSpeech < 0 {
			firstCallerSpeech = e.T
		}
		if e.Type == trace.MediaStats {
			ticks, _ = strconv.ParseInt(e.Meta["ticks"], 10, 64)
		}
	}
	t.Logf("trace: %d events; %v", len(events), count)
	for _, typ := range []trace.Type{trace.CallerAudioStart, trace.CallerSpeechStart, trace.CallerSpeechEnd, trace.AgentSpeechStart,
		trace.AgentSpeechEnd, trace.AgentTranscript, trace.ToolCall, trace.CueIssued, trace.CueShown, trace.CueActed, trace.SessionEnd} {
		if count[typ] == 0 {
			t.Errorf("trace has no %s", typ)
		}
	}
	acted := cue[trace.CueActed]
	if !(cue[trace.CueIssued].T <= cue[trace.CueShown].T && cue[trace.CueShown].T <= acted.RefMS && acted.RefMS > 0) {
		t.Errorf("cue issued %d, shown %d, acted onset %d: want that order", cue[trace.CueIssued].T, cue[trace.CueShown].T, acted.RefMS)
	}
	if s.Score == nil {
		t.Fatal("the session was not graded")
	}
	t.Logf("grade: ws=%v afa=%v end=%s", s.Score.WS, *s.Score.AFA, s.EndReason)
	for _, e := range events {
		switch e.Type {
		case trace.ArtifactUpdate:
			t.Logf("  %6d recorded %s = %s", e.T, e.Field, e.Value)
		case trace.AgentTranscript, trace.CallerUtterance:
			t.Logf("  %6d %s [%s] %s", e.T, e.Type, e.Source, e.Text)
		}
	}

	// The recording: both channels from the same ticks, as long as the call's media clock ran,
	// each channel's first speech where the trace says it began.
	recs, err := st.db.Recordings(ctx, s.ID)
	if err != nil || len(recs) != 1 {
		t.Fatalf("recordings: %v %v", recs, err)
	}
	w, err := audio.ReadWAV(recs[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	if w.Channels != 2 || w.Rate != 24000 || int64(w.Frames()) != ticks*960 {
		t.Errorf("recording: %d channels at %d Hz, %d frames; want 2 at 24000 and %d frames (%d ticks)", w.Channels, w.Rate, w.Frames(), ticks*960, ticks)
	}
	for _, c := range []struct {
		name    string
		channel int
		onsetMS int64
	}{{"caller", 0, firstCallerSpeech}, {"agent", 1, firstAgentSpeech}} {
		pcm := w.Channel(c.channel)
		at := int(c.onsetMS * 24)
		before, after := audio.RMSDBFS(pcm[max(0, at-24*400):max(0, at-24*100)]), audio.RMSDBFS(pcm[at:min(len(pcm), at+24*300)])
		if !(after > before+15) {
			t.Errorf("%s channel around its first speech onset at %d ms: %.1f dBFS before, %.1f after", c.name, c.onsetMS, before, after)
		}
	}

	// Leakage: nothing the participant's browser received carries the system's label, grader data or the hidden procedure.
	tk := st.console
	task, _ := tk.Task("it-vpn-incident")
	hidden := annotate.HiddenValues(task)
	for i, p := range b.Payloads() {
		for _, leak := range annotate.Scan(p, hidden) {
			t.Errorf("participant payload %d leaks %s", i, leak)
		}
		for _, bad := range []string{referenceAgentLabel, `"gold"`, `"grader"`, "target_state", task.Agent.Instructions[:40]} {
			if strings.Contains(p, bad) {
				t.Errorf("participant payload %d contains %q", i, bad)
			}
		}
	}
	// The experimenter's review page.
	b.Do(30*time.Second, chromedp.Navigate(links.Experimenter), chromedp.WaitVisible("#sessions"),
		chromedp.Navigate(strings.Split(links.Experimenter, "/x/")[0]+"/x/session/"+s.ID), chromedp.WaitVisible("#grade .gates"),
		chromedp.WaitVisible("#fields table"), chromedp.Sleep(2*time.Second))
	b.Shot(shots, "7-review")
	if g := b.Text("#grade"); !strings.Contains(g, "Process validity") || !strings.Contains(g, "Artifact field accuracy") {
		t.Errorf("review page grade section: %q", g)
	}

	if t.Failed() {
		os.WriteFile(filepath.Join(shots, "logs.txt"), logs.Bytes(), 0o644)
	}
}
