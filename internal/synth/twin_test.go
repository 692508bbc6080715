package synth

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/openai"
	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/bank"
	"github.com/voicebench/humanaudit/internal/media"
	"github.com/voicebench/humanaudit/internal/session"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// toneVoice is the frozen caller's bank text spoken as a loud tone, 220 ms a word: the media
// pipeline and the endpointer see speech of the right length without a speech synthesiser.
type toneVoice struct {
	once    sync.Once
	t       *task.Task
	speaker func(trace.Plan) string
}

func (v *toneVoice) Speak(_ context.Context, p trace.Plan) (string, string, []int16, error) {
	v.once.Do(func() { v.speaker = bank.Speaker(v.t, 1) })
	text := v.speaker(p)
	ms := 220 * len(strings.Fields(text))
	return text, SourceRender, agenttest.Speech(ms, audio.RecordRate), nil
}

// scaledClock runs the media clock speed times faster than the wall (the fakes answer in wall
// time, so their latency shrinks by the same factor).
type scaledClock struct {
	start time.Time
	speed int64
	mu    sync.Mutex
	shift time.Duration
	stop  chan struct{}
	once  sync.Once
}

func (c *scaledClock) Due(n int64) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.start.Add(time.Duration(n)*media.TickDuration/time.Duration(c.speed) + c.shift)
}

func (c *scaledClock) Shift(d time.Duration) { c.mu.Lock(); c.shift += d; c.mu.Unlock() }

func (c *scaledClock) Next(n int64) (media.Tick, error) {
	due := c.Due(n)
	if err := c.WaitUntil(due); err != nil {
		return media.Tick{}, err
	}
	return media.Tick{N: n, Due: due, Start: time.Now()}, nil
}

func (c *scaledClock) WaitUntil(t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-c.stop:
		return media.ErrClosed
	}
}

func (c *scaledClock) Stop() { c.once.Do(func() { close(c.stop) }) }

const clockSpeed = 4

// runFast calls task tk's fast scripted agent with the synthetic caller, on a clock four times
// faster than real time.
func runFast(t *testing.T, tk *task.Task, fa agenttest.FastAgent, limit time.Duration) session.Result {
	t.Helper()
	return runReplies(t, tk, fa.Replies(tk), limit)
}

// runReplies is runFast with the agent's replies given.
func runReplies(t *testing.T, tk *task.Task, replies []agenttest.Reply, limit time.Duration) session.Result {
	t.Helper()
	f := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: replies})
	adapter := openai.New(openai.Options{URL: f.URL(), Model: "gpt-realtime", Dialect: openai.GA})
	clock := &scaledClock{start: time.Now(), speed: clockSpeed, stop: make(chan struct{})}
	s, err := session.Start(context.Background(), session.Config{ID: "fast", Task: tk, Mode: session.Synthetic, Seed: 1,
		System: "fast", Adapter: adapter, Caller: &toneVoice{t: tk}, Clock: clock,
		RecordingPath: filepath.Join(t.TempDir(), "call.wav"), TimeLimit: limit})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(limit/clockSpeed + 60*time.Second):
		t.Fatal("session did not end")
	}
	return s.Result()
}

func suiteTask(t *testing.T, id string) *task.Task {
	t.Helper()
	tk, err := task.LoadFile(filepath.Join("..", "..", "tasks", id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// bargeInTasks are the suite's tasks that author a barge-in.
func bargeInTasks(t *testing.T) []*task.Task {
	t.Helper()
	all := loadSuite(t)
	var out []*task.Task
	for _, tk := range all {
		for _, ev := range tk.Events {
			if ev.Kind == task.BargeIn {
				out = append(out, tk)
				break
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("the suite authors no barge-in")
	}
	return out
}

// TestFastAgentNeverLoopsOnBargeInTasks: against a scripted agent that answers at once or after
// 500 ms (media time) with long turns, the synthetic caller barges in no more often than the task
// authors, never ends on the time limit, and hangs up only after the agent's goodbye has played
// (no agent.speech_start without its end).
func TestFastAgentNeverLoopsOnBargeInTasks(t *testing.T) {
	if testing.Short() {
		t.Skip("calls of a few minutes of media time each; skipped with -short")
	}
	for _, tk := range bargeInTasks(t) {
		authored := 0
		for _, ev := range tk.Events {
			if ev.Kind == task.BargeIn {
				authored++
			}
		}
		for _, lat := range []time.Duration{0, 500 * time.Millisecond} {
			t.Run(tk.ID+"/latency "+lat.String(), func(t *testing.T) {
				res := runFast(t, tk, agenttest.FastAgent{Latency: lat / clockSpeed, UtteranceMS: 12000}, 8*time.Minute)
				bargeIns, callerBarge, starts, ends := 0, 0, 0, 0
				for _, e := range res.Events {
					switch e.Type {
					case trace.MediaBargeIn:
						if e.Source == "caller" {
							bargeIns++
						}
					case trace.CallerPlan:
						if e.Plan.Kind == trace.PlanBargeIn {
							callerBarge++
						}
					case trace.AgentSpeechStart:
						starts++
					case trace.AgentSpeechEnd:
						ends++
					}
				}
				t.Logf("%s: ended %s, %d barge-ins (%d authored), %d events", tk.ID, res.Reason, bargeIns, authored, len(res.Events))
				if res.Reason != session.EndCallerHungUp {
					t.Errorf("call ended %s, want %s (trace: %s)", res.Reason, session.EndCallerHungUp, planSeq(res.Events))
				}
				if bargeIns > authored {
					t.Errorf("%d caller barge-ins over agent audio, the task authors %d (trace: %s)", bargeIns, authored, planSeq(res.Events))
				}
				if callerBarge > authored {
					t.Errorf("%d barge-in plans, the task authors %d", callerBarge, authored)
				}
				if starts != ends {
					t.Errorf("%d agent.speech_start, %d agent.speech_end: the caller hung up during the agent's speech", starts, ends)
				}
			})
		}
	}
}

// planSeq lists the caller plans and agent speech of a trace, for failure messages.
func planSeq(evs []trace.Event) string {
	var b strings.Builder
	for _, e := range evs {
		switch e.Type {
		case trace.CallerPlan:
			b.WriteString(" caller:" + e.Plan.ID)
		case trace.AgentTranscript:
			b.WriteString(" agent:" + e.Text)
		case trace.MediaBargeIn:
			b.WriteString(" [barge-in " + e.Source + "]")
		}
		b.WriteString("")
	}
	return b.String()
}

// loadSuite loads the suite's task files (tasks/).
func loadSuite(t *testing.T) []*task.Task {
	t.Helper()
	all, probs := task.LoadAll(filepath.Join("..", "..", "tasks"))
	if len(probs) > 0 {
		t.Fatalf("suite: %v", probs)
	}
	return all
}

// TestWrongReadBackIsCorrected: a fast agent records and reads back one value wrong (the invoice
// number, one digit off). The synthetic caller corrects it (fix_readback:invoice) rather than
// affirming, affirms and approves only after the agent reads everything back right, and the grade
// shows the agent's corrected field.
func TestWrongReadBackIsCorrected(t *testing.T) {
	if testing.Short() {
		t.Skip("a call of a few minutes of media time; skipped with -short")
	}
	tk := suiteTask(t, "invoice-duplicate-payment")
	res := runFast(t, tk, agenttest.FastAgent{UtteranceMS: 2500, WrongReadBack: "invoice"}, 8*time.Minute)
	if res.Grade == nil {
		t.Fatalf("not graded: %v", res.GradeErr)
	}
	var plans []string
	wrongRead, rightRead := -1, -1
	for _, e := range res.Events {
		switch {
		case e.Type == trace.AgentTranscript && strings.Contains(e.Text, "INV-77311"):
			wrongRead = len(plans)
		case e.Type == trace.AgentTranscript && strings.Contains(e.Text, "corrected it") && strings.Contains(e.Text, "INV-77310"):
			rightRead = len(plans)
		case e.Type == trace.CallerPlan:
			plans = append(plans, e.Plan.ID)
		}
	}
	t.Logf("plans %v; wrong read-back before plan %d, right one before plan %d", plans, wrongRead, rightRead)
	if wrongRead < 0 || rightRead < 0 {
		t.Fatalf("the agent's read-backs are missing (trace: %s)", planSeq(res.Events))
	}
	if wrongRead >= len(plans) || plans[wrongRead] != "fix_readback:invoice" {
		t.Errorf("after the wrong read-back the caller said %v, want fix_readback:invoice", plans[wrongRead:])
	}
	for _, p := range plans[wrongRead:rightRead] {
		if p == "affirm" || strings.HasPrefix(p, "approve:") {
			t.Errorf("the caller said %s before the agent read the value back right", p)
		}
	}
	if rightRead >= len(plans) || plans[rightRead] != "affirm" {
		t.Errorf("after the right read-back the caller said %v, want affirm", plans[rightRead:])
	}
	if !slices.Contains(plans[rightRead:], "approve:submit_refund") {
		t.Errorf("the caller never approved after the right read-back: %v", plans[rightRead:])
	}
	graded := false
	for _, f := range res.Grade.Fields {
		if f.Field == "invoice_number" {
			graded = true
			if !f.Pass || !strings.Contains(string(f.Pred), "INV-77310") {
				t.Errorf("graded invoice_number %s pass=%v, want the corrected INV-77310", f.Pred, f.Pass)
			}
		}
	}
	if !graded {
		t.Error("the grade has no invoice_number field")
	}
	t.Logf("grade: WS=%d TS=%d PV=%d AC=%d AV=%d AFA %d/%d final %s", res.Grade.WS, res.Grade.TS, res.Grade.PV, res.Grade.AC, res.Grade.AV, res.Grade.AFA.Correct, res.Grade.AFA.Total, res.Grade.FinalState)
}

// TestSlowAgentIsNudgedNotDropped: an agent that takes 16 s (media time) before every reply gets a
// nudge each time it is silent past the caller's patience, but it keeps answering, so the call is
// not ended as agent_unresponsive: only nudges in a row count. (A loaded reference agent used to
// lose calls this way after its third slow reply.)
func TestSlowAgentIsNudgedNotDropped(t *testing.T) {
	if testing.Short() {
		t.Skip("a call of a few minutes of media time; skipped with -short")
	}
	tk := suiteTask(t, "it-vpn-incident")
	res := runFast(t, tk, agenttest.FastAgent{Latency: 16 * time.Second / clockSpeed, UtteranceMS: 1500}, 10*time.Minute)
	nudges := 0
	for _, e := range res.Events {
		if e.Type == trace.CallerPlan && e.Plan.ID == "acknowledge" {
			nudges++
		}
	}
	t.Logf("ended %s after %d acknowledgements: %s", res.Reason, nudges, planSeq(res.Events))
	if res.Reason != session.EndCallerHungUp {
		t.Errorf("call ended %s, want %s (trace: %s)", res.Reason, session.EndCallerHungUp, planSeq(res.Events))
	}
	if nudges <= 3 {
		t.Errorf("%d nudges: the test needs an agent slow enough to be nudged more than three times", nudges)
	}
}

// TestPoliteEndings: after its goodbye the caller hears the agent's closing speech out and hangs
// up when it ends; an agent that says nothing more gets 3 s (media time) from when it stopped.
func TestPoliteEndings(t *testing.T) {
	if testing.Short() {
		t.Skip("calls of a few minutes of media time; skipped with -short")
	}
	tk := suiteTask(t, "benefits-fsa-election")
	lastUtterance := func(evs []trace.Event) (closeEnd, agentEnd, end int64) {
		for _, e := range evs {
			switch e.Type {
			case trace.CallerUtterance:
				if e.Plan != nil && e.Plan.Kind == trace.PlanClose {
					closeEnd = e.T + e.DurationMS
				}
			case trace.AgentSpeechEnd:
				agentEnd = e.T
			case trace.SessionEnd:
				end = e.T
			}
		}
		return
	}
	t.Run("closing speech heard out", func(t *testing.T) {
		replies := (agenttest.FastAgent{UtteranceMS: 1500}).Replies(tk)
		replies[len(replies)-1].AudioMS = 6000 // a long goodbye after the caller's
		res := runReplies(t, tk, replies, 8*time.Minute)
		closeEnd, agentEnd, end := lastUtterance(res.Events)
		t.Logf("caller's goodbye ends %d ms, agent speech ends %d ms, hang-up %d ms", closeEnd, agentEnd, end)
		if res.Reason != session.EndCallerHungUp || agentEnd < closeEnd || end < agentEnd || end > agentEnd+1500 {
			t.Errorf("ended %s at %d ms; want a hang-up just after the agent's closing speech ended at %d ms", res.Reason, end, agentEnd)
		}
	})
	t.Run("silent agent gets 3 s", func(t *testing.T) {
		replies := (agenttest.FastAgent{UtteranceMS: 1500}).Replies(tk)
		replies[len(replies)-1] = agenttest.Reply{Hang: true} // no answer to the goodbye
		res := runReplies(t, tk, replies, 8*time.Minute)
		closeEnd, agentEnd, end := lastUtterance(res.Events)
		quiet := max(closeEnd, agentEnd)
		t.Logf("caller's goodbye ends %d ms, agent speech ends %d ms, hang-up %d ms", closeEnd, agentEnd, end)
		if res.Reason != session.EndCallerHungUp || end < quiet+2900 || end > quiet+4500 {
			t.Errorf("ended %s at %d ms; want a hang-up about 3 s after %d ms", res.Reason, end, quiet)
		}
	})
}
