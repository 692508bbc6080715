package dialog

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/bank"
	"github.com/voicebench/humanaudit/internal/flow"
	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
	"github.com/voicebench/humanaudit/internal/workspace"
)

// textSuiteCall plays one call of a task between the frozen bank's caller (its words as text, as
// a perfect recognizer would pass them in) and the dialogue, with the real flow engine and
// workspace, and grades it. It is the ceiling the dialogue reaches when recognition is perfect:
// what it loses is lost by the policy, not by the recognizer.
type textSuiteCall struct {
	t     *task.Task
	ms    int64
	log   *trace.Log
	eng   *flow.Engine
	ws    *workspace.Workspace
	lines []string
	calls int
}

func (c *textSuiteCall) MediaMS() int64 { return c.ms }
func (c *textSuiteCall) Now() time.Time {
	return time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC).Add(time.Duration(c.ms) * time.Millisecond)
}

func (c *textSuiteCall) emit(e trace.Event) trace.Event {
	e.T = c.ms
	stored, err := c.log.Append(context.Background(), e)
	if err != nil {
		panic(err)
	}
	for _, f := range c.eng.Observe(stored) {
		c.fired(f)
	}
	return stored
}

func (c *textSuiteCall) fired(f flow.Firing) {
	c.emit(trace.Event{Type: trace.EnvEvent, Actor: trace.ActorEnv, EventID: f.Event.ID, Text: string(f.Event.Kind)})
	if f.Reveals != nil {
		c.emit(trace.Event{Type: trace.FactRevealed, Actor: trace.ActorEnv, Fact: f.Reveals.Fact, Version: f.Reveals.Version, EventID: f.Event.ID})
	}
}

// advance moves media time by ms words' worth, firing what comes due.
func (c *textSuiteCall) advance(ms int64) {
	target := c.ms + ms
	for {
		due, ok := c.eng.NextDue()
		if !ok || due > target {
			break
		}
		c.ms = max(c.ms, due)
		for _, f := range c.eng.Advance(c.ms) {
			c.fired(f)
		}
	}
	c.ms = target
	for _, f := range c.eng.Advance(c.ms) {
		c.fired(f)
	}
}

func wordsMS(s string) int64 { return int64(len(strings.Fields(s))+1) * 320 }

// runTextSuiteCall runs task t with the caller bank's seed and returns the grade and the dialogue.
func runTextSuiteCall(tb testing.TB, t *task.Task, seed int64) (grade.Result, *textSuiteCall) {
	tb.Helper()
	c := &textSuiteCall{t: t, eng: flow.New(t)}
	c.log = trace.NewLog(c)
	ws, err := workspace.New(t, c.emit)
	if err != nil {
		tb.Fatal(err)
	}
	c.ws = ws
	speaker := bank.Speaker(t, seed)
	d := New(Config{Now: c.Now})
	tools := make([]Tool, len(t.Agent.Tools))
	for i, tl := range t.Agent.Tools {
		tools[i] = Tool{Name: tl.Name, Description: tl.Description, Parameters: tl.Parameters}
	}
	d.Configure(t.Agent.Instructions, tools)
	c.emit(trace.Event{Type: trace.SessionStart, Actor: trace.ActorSystem, Meta: map[string]string{"task": t.ID, "seed": fmt.Sprint(seed), "mode": "synthetic"}})
	c.emit(trace.Event{Type: trace.CallerAudioStart, Actor: trace.ActorCaller})
	say := func(text string) {
		c.lines = append(c.lines, fmt.Sprintf("%6d agent: %s", c.ms, text))
		c.emit(trace.Event{Type: trace.AgentTranscript, Actor: trace.ActorAgent, Text: text})
		for _, a := range flow.Classify(t, text) {
			c.emit(trace.Event{Type: trace.AgentAct, Actor: trace.ActorAgent, Act: a.String()})
		}
		c.advance(wordsMS(text))
	}
	respond := func() {
		for range 12 {
			act := d.Next()
			if len(act.Calls) == 0 {
				say(act.Say)
				return
			}
			for _, cl := range act.Calls {
				c.calls++
				res := c.ws.Call(fmt.Sprintf("call_%d", c.calls), cl.Name, cl.Args)
				c.lines = append(c.lines, fmt.Sprintf("%6d   tool %s %s -> %s", c.ms, cl.Name, cl.Args, res.Output))
				d.ToolResult(cl.Name, string(res.Output))
				c.advance(250)
			}
		}
		tb.Errorf("%s: the agent made tool calls twelve times in a row without speaking", t.ID)
	}
	respond() // the greeting
	for turn := 0; turn < 60; turn++ {
		q := d.Question()
		p := c.eng.NextPlan()
		text := speaker(p)
		c.emit(trace.Event{Type: trace.CallerPlan, Actor: trace.ActorCaller, Plan: &p})
		c.emit(trace.Event{Type: trace.CallerUtterance, Actor: trace.ActorCaller, Text: text, Plan: &p})
		switch p.Kind {
		case trace.PlanApprove:
			c.ws.Approve(p.Action)
		case trace.PlanRevoke:
			c.ws.Revoke(p.Action)
		case trace.PlanDecline:
			c.ws.Decline(p.Action)
		}
		for {
			next, ok := c.eng.Continuation()
			if !ok {
				break
			}
			more := speaker(next)
			c.emit(trace.Event{Type: trace.CallerPlan, Actor: trace.ActorCaller, Plan: &next})
			c.emit(trace.Event{Type: trace.CallerUtterance, Actor: trace.ActorCaller, Text: more, Plan: &next})
			if next.Kind == trace.PlanRevoke {
				c.ws.Revoke(next.Action)
			}
			text += " " + more
		}
		c.lines = append(c.lines, fmt.Sprintf("%6d caller[%s]: %s", c.ms, p.ID, text))
		c.advance(wordsMS(text))
		if p.Kind == trace.PlanClose {
			break
		}
		h := q.UnderstandText(context.Background(), text)
		c.lines = append(c.lines, fmt.Sprintf("         heard %s", h.Intent()))
		d.Heard(h)
		respond()
	}
	c.emit(trace.Event{Type: trace.SessionEnd, Actor: trace.ActorSystem, Text: "caller_hung_up"})
	g, err := grade.Grade(context.Background(), t, c.log.Events(), grade.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return g, c
}

// suiteTasks loads the audit24 tasks of tasks/.
func suiteTasks(tb testing.TB) []*task.Task {
	tb.Helper()
	paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "tasks", "*.json"))
	var out []*task.Task
	only := os.Getenv("DIALOG_SUITE_TASKS")
	for _, p := range paths {
		tk, err := task.LoadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		if tk.InSubset("audit24") && (only == "" || slices.Contains(strings.Split(only, ","), tk.ID)) {
			out = append(out, tk)
		}
	}
	return out
}

// TestTextSuite plays every audit24 task with the bank's words as text: the dialogue's ceiling.
// DIALOG_SUITE_TASKS limits it to some tasks; -v prints each dialogue.
func TestTextSuite(t *testing.T) {
	tasks := suiteTasks(t)
	var afa float64
	ws := 0
	var table strings.Builder
	for _, tk := range tasks {
		g, c := runTextSuiteCall(t, tk, 1)
		afa += g.AFA.Value
		ws += g.WS
		var wrong []string
		for _, f := range g.Fields {
			if !f.Pass {
				wrong = append(wrong, fmt.Sprintf("%s=%s (gold %s)", f.Field, f.Pred, f.Gold))
			}
		}
		fmt.Fprintf(&table, "%-30s AFA %2d/%-2d WS %d TS %d PV %d AC %d final %-16s missing %v\n      wrong: %s\n", tk.ID, g.AFA.Correct, g.AFA.Total, g.WS,
			g.TS, g.PV, g.AC, g.FinalState, g.MissingActions, strings.Join(wrong, "; "))
		if testing.Verbose() && os.Getenv("DIALOG_SUITE_TASKS") != "" {
			t.Logf("%s:\n%s", tk.ID, strings.Join(c.lines, "\n"))
		}
		if g.PV == 0 {
			t.Errorf("%s: process violations %v", tk.ID, g.Violations)
		}
	}
	t.Logf("text suite: mean AFA %.3f, WS %d of %d\n%s", afa/float64(len(tasks)), ws, len(tasks), table.String())
	// With perfect recognition the dialogue must at least reach the audio targets of issue 17
	// (mean AFA 0.75, WS on 8 of the 24 tasks): what recognition loses comes on top.
	if os.Getenv("DIALOG_SUITE_TASKS") == "" && (afa/float64(len(tasks)) < 0.75 || ws < 8) {
		t.Errorf("the dialogue's ceiling fell: mean AFA %.3f (want >= 0.75), WS %d (want >= 8)", afa/float64(len(tasks)), ws)
	}
}

var _ = json.Marshal

// TestQuestionsAskTheirFact: every question the agent asks for a field is heard by the task's
// caller as a question about the fact that field holds.
func TestQuestionsAskTheirFact(t *testing.T) {
	for _, tk := range suiteTasks(t) {
		tools := make([]Tool, len(tk.Agent.Tools))
		for i, tl := range tk.Agent.Tools {
			tools[i] = Tool{Name: tl.Name, Description: tl.Description, Parameters: tl.Parameters}
		}
		d := New(Config{})
		d.Configure(tk.Agent.Instructions, tools)
		for _, f := range d.m.allFields() {
			var fact *task.Fact
			for i := range tk.User.Facts {
				if tk.User.Facts[i].Field == f.Name {
					fact = &tk.User.Facts[i]
				}
			}
			if fact == nil {
				continue
			}
			acts := flow.Classify(tk, f.Question)
			var got []string
			for _, a := range acts {
				got = append(got, a.String())
			}
			if !slices.Contains(got, "ask:"+fact.ID) {
				t.Errorf("%s: %s: %q is heard as %v, asked_as %q", tk.ID, f.Name, f.Question, got, fact.AskedAs)
			}
		}
	}
}

func TestPrintKinds(t *testing.T) {
	if os.Getenv("DIALOG_PRINT_KINDS") == "" {
		t.Skip("set DIALOG_PRINT_KINDS")
	}
	kinds := []string{"text", "name", "email", "address", "list", "datelist", "digits", "identifier", "phone", "date", "daterange", "number", "choice", "yesno"}
	for _, tk := range suiteTasks(t) {
		tools := make([]Tool, len(tk.Agent.Tools))
		for i, tl := range tk.Agent.Tools {
			tools[i] = Tool{Name: tl.Name, Description: tl.Description, Parameters: tl.Parameters}
		}
		d := New(Config{})
		d.Configure(tk.Agent.Instructions, tools)
		for _, f := range d.m.allFields() {
			gr := ""
			for _, gf := range tk.Grader.Fields {
				if gf.Field == f.Name {
					gr = gf.Grader
				}
			}
			fmt.Printf("%-28s %-28s %-10s %-12s %q\n", tk.ID, f.Name, kinds[f.Kind], gr, f.Question)
		}
	}
}
