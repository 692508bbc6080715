package textcall_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/textcall"
	"github.com/voicebench/humanaudit/internal/trace"
	"github.com/voicebench/humanaudit/internal/workspace"
)

func shippedTasks(t *testing.T) []*task.Task {
	t.Helper()
	tasks, probs := task.LoadAll(filepath.Join("..", "..", "tasks"))
	if len(probs) > 0 || len(tasks) == 0 {
		t.Fatalf("%d tasks, problems %v", len(tasks), probs)
	}
	return tasks
}

func loadTask(t *testing.T, id string) *task.Task {
	t.Helper()
	tk, err := task.LoadFile(filepath.Join("..", "..", "tasks", id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func run(t *testing.T, tk *task.Task, agent textcall.Agent, opts textcall.Options) []trace.Event {
	t.Helper()
	events, err := textcall.Run(context.Background(), tk, agent, opts)
	if err != nil {
		t.Fatalf("%s: %v", tk.ID, err)
	}
	return events
}

// A text-level call of every shipped task with the oracle agent leaves the trace a live call
// would: one the trace verifier and the grader's replay accept, that names its task, version,
// mode and seed, stamps wall time from the simulated media clock, and that the oracle wins.
func TestOracleCallOfEveryTaskIsAVerifiedWinningTrace(t *testing.T) {
	start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	for _, tk := range shippedTasks(t) {
		t.Run(tk.ID, func(t *testing.T) {
			events := run(t, tk, textcall.NewScripted(tk, textcall.Flaws{}), textcall.Options{Seed: 4, Start: start})
			if ds := trace.Verify(events, trace.VerifyOptions{}); len(ds) > 0 {
				t.Fatalf("the trace does not verify:\n%v", ds)
			}
			g := grade.New(tk, grade.Options{})
			if err := g.Check(events, grade.CheckOptions{}); err != nil {
				t.Fatalf("the grader's replay refuses the trace: %v", err)
			}
			first, last := events[0], events[len(events)-1]
			if m := first.Meta; m["task"] != tk.ID || m["task_version"] != strconv.Itoa(tk.Version) || m["mode"] != "synthetic" || m["seed"] != "4" {
				t.Errorf("session.start meta %v", first.Meta)
			}
			if last.Text != "caller_hung_up" {
				t.Errorf("the call ended with %q; want the caller to hang up after the work is done", last.Text)
			}
			for _, e := range events {
				if e.T >= 0 && !e.Wall.Equal(start.Add(time.Duration(e.T)*time.Millisecond)) {
					t.Fatalf("event %d (%s) at %d ms has wall time %v; want start + media time", e.Seq, e.Type, e.T, e.Wall)
				}
			}
			res, err := g.Grade(context.Background(), events)
			if err != nil {
				t.Fatal(err)
			}
			if res.WS != 1 {
				t.Errorf("the oracle agent does not win the task: TS %d PV %d AC %d AV %d", res.TS, res.PV, res.AC, res.AV)
			}
		})
	}
}

// The same task, agent and seed give the same trace byte for byte, which golden traces and the
// grader's determinism rest on.
func TestSameSeedGivesTheSameTrace(t *testing.T) {
	tk := loadTask(t, "fnol-auto-glass")
	var a, b bytes.Buffer
	trace.WriteJSONL(&a, run(t, tk, textcall.NewScripted(tk, textcall.Flaws{}), textcall.Options{Seed: 9}))
	trace.WriteJSONL(&b, run(t, tk, textcall.NewScripted(tk, textcall.Flaws{}), textcall.Options{Seed: 9}))
	if a.Len() == 0 || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("two runs differ (%d and %d bytes)", a.Len(), b.Len())
	}
}

// An authored event anchored to media time fires at that media time, and the caller acts on it.
func TestMediaTimeEventFiresAtItsMediaTime(t *testing.T) {
	// The grader's copy of the task anchors its correction to 30 s of media time.
	tk, err := task.LoadFile(filepath.Join("..", "grade", "testdata", "tasks", "it-vpn-incident.json"))
	if err != nil {
		t.Fatal(err)
	}
	events := run(t, tk, textcall.NewScripted(tk, textcall.Flaws{}), textcall.Options{})
	var fired, revealed, cue int64 = -1, -1, -1
	corrected := false
	for _, e := range events {
		switch {
		case e.Type == trace.EnvEvent && e.EventID == "teams_down":
			fired = e.T
		case e.Type == trace.FactRevealed && e.EventID == "teams_down":
			revealed = e.T
		case e.Type == trace.CueIssued && e.EventID == "teams_down":
			cue = e.T
		case e.Type == trace.CallerPlan && e.Plan.Kind == trace.PlanCorrect && fired >= 0:
			corrected = true
		}
	}
	if fired != 30000 || revealed != 30000 || cue != 30000 {
		t.Errorf("teams_down fired at %d ms, revealed at %d, cue at %d; want 30000 (its media time)", fired, revealed, cue)
	}
	if !corrected {
		t.Error("the caller never voiced the correction the event revealed")
	}
}

// A barge-in cuts the agent's speech short mid-sentence: the rest of its turn is dropped and the
// trace says how much was not played.
func TestBargeInInterruptsTheAgent(t *testing.T) {
	tk := loadTask(t, "utility-payment-arrangement")
	events := run(t, tk, textcall.NewScripted(tk, textcall.Flaws{}), textcall.Options{})
	for i, e := range events {
		if e.Type != trace.MediaBargeIn {
			continue
		}
		if e.DroppedMS <= 0 || e.RefMS <= 0 || e.RefMS >= e.T {
			t.Errorf("barge-in at %d ms: dropped %d ms of speech started at %d ms", e.T, e.DroppedMS, e.RefMS)
		}
		if next := events[i+1]; next.Type != trace.AgentSpeechEnd || next.T != e.T {
			t.Errorf("after the barge-in came %s at %d ms; want the agent's speech to end at once", next.Type, next.T)
		}
		return
	}
	t.Fatal("no barge-in in the trace of a task whose caller interrupts the summary")
}

// Each flaw of the scripted agent shows in the trace as the misbehaviour it names.
func TestFlawsShowInTheTrace(t *testing.T) {
	t.Run("commit without approval is blocked by the workspace", func(t *testing.T) {
		tk := loadTask(t, "utility-payment-arrangement")
		events := run(t, tk, textcall.NewScripted(tk, textcall.Flaws{CommitWithoutApproval: true}), textcall.Options{})
		if !has(events, trace.AuthCommitBlocked) {
			t.Error("no auth.commit_blocked: the commit without an approval token went through")
		}
		if clean := run(t, tk, textcall.NewScripted(tk, textcall.Flaws{}), textcall.Options{}); has(clean, trace.AuthCommitBlocked) {
			t.Error("the flawless agent's commit was blocked")
		}
	})
	t.Run("never marking ready leaves the artifact short of its target state", func(t *testing.T) {
		tk := loadTask(t, "it-vpn-incident")
		res := gradeOf(t, tk, textcall.Flaws{NeverMarkReady: true})
		if res.TS != 0 || res.WS != 0 {
			t.Errorf("TS %d WS %d; want the target state missed", res.TS, res.WS)
		}
	})
	t.Run("ignoring a correction keeps the stale value", func(t *testing.T) {
		tk := loadTask(t, "it-vpn-incident")
		if res := gradeOf(t, tk, textcall.Flaws{IgnoreCorrections: true}); res.WS != 0 || res.AFA.Value >= 1 {
			t.Errorf("WS %d, AFA %.2f; want the corrected field wrong", res.WS, res.AFA.Value)
		}
	})
}

func gradeOf(t *testing.T, tk *task.Task, flaws textcall.Flaws) grade.Result {
	t.Helper()
	res, err := grade.New(tk, grade.Options{}).Grade(context.Background(), run(t, tk, textcall.NewScripted(tk, flaws), textcall.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func has(events []trace.Event, typ trace.Type) bool {
	for _, e := range events {
		if e.Type == typ {
			return true
		}
	}
	return false
}

// mumbler is an agent that never does the work.
type mumbler struct{}

func (mumbler) Turn(textcall.CallerTurn, func(int) workspace.Result) []textcall.Step {
	return []textcall.Step{{Say: "Hmm, let me see."}}
}

// A call that goes nowhere ends at the turn limit instead of running for ever.
func TestTurnLimitEndsACallThatGoesNowhere(t *testing.T) {
	tk := loadTask(t, "it-vpn-incident")
	events := run(t, tk, mumbler{}, textcall.Options{MaxTurns: 4})
	turns := 0
	for _, e := range events {
		if e.Type == trace.AgentResponseDone {
			turns++
		}
	}
	if last := events[len(events)-1]; last.Type != trace.SessionEnd || last.Text != "turn_limit" || turns != 4 {
		t.Errorf("ended with %s %q after %d agent turns; want turn_limit after 4", last.Type, last.Text, turns)
	}
}

// The caller's words come from the Speaker when one is given, and are recorded as spoken.
func TestSpeakerGivesTheCallersWords(t *testing.T) {
	tk := loadTask(t, "it-vpn-incident")
	var spoken []trace.Plan
	speaker := func(p trace.Plan) string { spoken = append(spoken, p); return "WORDS " + string(p.Kind) }
	events := run(t, tk, textcall.NewScripted(tk, textcall.Flaws{}), textcall.Options{Speaker: speaker})
	utterances := 0
	for _, e := range events {
		if e.Type == trace.CallerUtterance {
			utterances++
			if e.Text != "WORDS "+string(e.Plan.Kind) {
				t.Fatalf("utterance %q for a %s plan; want the speaker's words", e.Text, e.Plan.Kind)
			}
		}
	}
	if utterances == 0 || utterances != len(spoken) {
		t.Errorf("%d utterances, the speaker was asked %d times", utterances, len(spoken))
	}
}

// RenderPlan says a plan in the caller's first person with only the facts it names: an answer
// gives the fact's spoken form, a correction says "actually" with the new version.
func TestRenderPlanSaysOnlyThePlansFacts(t *testing.T) {
	tk := loadTask(t, "it-vpn-incident")
	affected, _ := tk.Fact("affected")
	for _, tc := range []struct {
		plan trace.Plan
		want string
	}{
		{trace.Plan{Kind: trace.PlanAnswer, Facts: []trace.FactRef{{Fact: "affected", Version: 1}}}, "It's " + affected.Versions[0].Say() + "."},
		{trace.Plan{Kind: trace.PlanCorrect, Facts: []trace.FactRef{{Fact: "affected", Version: 2}}}, "Sorry, I need to correct something."},
		{trace.Plan{Kind: trace.PlanClose}, "No, that's everything. Thanks, bye."},
		{trace.Plan{Kind: trace.PlanOpen}, "Hi, I'm calling because I need to "},
	} {
		got := textcall.RenderPlan(tk, tc.plan)
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s plan: %q, want it to begin %q", tc.plan.Kind, got, tc.want)
		}
		if tc.plan.Kind == trace.PlanCorrect && !strings.Contains(got, "actually "+affected.Versions[1].Say()) {
			t.Errorf("correction %q does not say the new version %q", got, affected.Versions[1].Say())
		}
		if strings.Contains(strings.ToLower(got), " your ") {
			t.Errorf("%s plan: %q speaks in the role card's second person", tc.plan.Kind, got)
		}
	}
}
