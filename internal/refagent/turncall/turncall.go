// Package turncall plays one call of a task turn by turn between the frozen bank's caller and the
// reference agent's dialogue, with the real flow engine and workspace but no media: media time
// advances by the words said. How a caller turn reaches the dialogue is the player's choice: as
// text (a perfect recognizer, the dialogue's ceiling) or rendered, coded and recognized (the
// offline audio suite, which shows what recognition loses in minutes rather than the real-time
// suite's hour). Tests use it; the console does not.
package turncall

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/voicebench/humanaudit/internal/bank"
	"github.com/voicebench/humanaudit/internal/flow"
	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/refagent/dialog"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
	"github.com/voicebench/humanaudit/internal/workspace"
)

// Hear turns what the caller said into what the dialogue understood, for the question it asked.
type Hear func(ctx context.Context, q dialog.Question, said string) dialog.Heard

// AsText hears the caller's words exactly.
func AsText(ctx context.Context, q dialog.Question, said string) dialog.Heard {
	return q.UnderstandText(ctx, said)
}

// Epoch is the wall clock at media time zero: dates said without a year resolve against it.
var Epoch = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// Call is one played call: its dialogue as lines ("<ms> agent: …", "<ms> caller[plan]: …", the
// tool calls and what each turn was heard as) and its trace.
type Call struct {
	Task  *task.Task
	Lines []string

	ms    int64
	log   *trace.Log
	eng   *flow.Engine
	ws    *workspace.Workspace
	calls int
	err   error
}

// MediaMS and Now are the trace log's clock.
func (c *Call) MediaMS() int64 { return c.ms }
func (c *Call) Now() time.Time { return Epoch.Add(time.Duration(c.ms) * time.Millisecond) }

// Events is the call's trace.
func (c *Call) Events() []trace.Event { return c.log.Events() }

func (c *Call) emit(e trace.Event) trace.Event {
	e.T = c.ms
	stored, err := c.log.Append(context.Background(), e)
	if err != nil {
		if c.err == nil {
			c.err = fmt.Errorf("trace: %w", err)
		}
		return e
	}
	for _, f := range c.eng.Observe(stored) {
		c.fired(f)
	}
	return stored
}

func (c *Call) fired(f flow.Firing) {
	c.emit(trace.Event{Type: trace.EnvEvent, Actor: trace.ActorEnv, EventID: f.Event.ID, Text: string(f.Event.Kind)})
	if f.Reveals != nil {
		c.emit(trace.Event{Type: trace.FactRevealed, Actor: trace.ActorEnv, Fact: f.Reveals.Fact, Version: f.Reveals.Version, EventID: f.Event.ID})
	}
}

// advance moves media time by ms, firing what comes due.
func (c *Call) advance(ms int64) {
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

// wordsMS is how long saying s takes, roughly.
func wordsMS(s string) int64 { return int64(len(strings.Fields(s))+1) * 320 }

// maxTurns bounds a call; the frozen caller closes long before.
const maxTurns = 60

// Play runs task t with the bank's caller for seed, each caller turn heard by hear, and grades it.
// cfg configures the dialogue (its Now is the call's clock).
func Play(ctx context.Context, t *task.Task, seed int64, cfg dialog.Config, hear Hear) (grade.Result, *Call, error) {
	c := &Call{Task: t, eng: flow.New(t)}
	c.log = trace.NewLog(c)
	ws, err := workspace.New(t, c.emit)
	if err != nil {
		return grade.Result{}, c, fmt.Errorf("%s: workspace: %w", t.ID, err)
	}
	c.ws = ws
	speaker := bank.Speaker(t, seed)
	cfg.Now = c.Now
	d := dialog.New(cfg)
	tools := make([]dialog.Tool, len(t.Agent.Tools))
	for i, tl := range t.Agent.Tools {
		tools[i] = dialog.Tool{Name: tl.Name, Description: tl.Description, Parameters: tl.Parameters}
	}
	d.Configure(t.Agent.Instructions, tools)
	c.emit(trace.Event{Type: trace.SessionStart, Actor: trace.ActorSystem, Meta: map[string]string{"task": t.ID, "seed": fmt.Sprint(seed), "mode": "synthetic"}})
	c.emit(trace.Event{Type: trace.CallerAudioStart, Actor: trace.ActorCaller})
	say := func(text string) {
		c.Lines = append(c.Lines, fmt.Sprintf("%6d agent: %s", c.ms, text))
		c.emit(trace.Event{Type: trace.AgentTranscript, Actor: trace.ActorAgent, Text: text})
		for _, a := range flow.Classify(t, text) {
			c.emit(trace.Event{Type: trace.AgentAct, Actor: trace.ActorAgent, Act: a.String()})
		}
		c.advance(wordsMS(text))
	}
	respond := func() error {
		for range 12 {
			act := d.Next()
			if len(act.Calls) == 0 {
				say(act.Say)
				return nil
			}
			for _, cl := range act.Calls {
				c.calls++
				res := c.ws.Call(fmt.Sprintf("call_%d", c.calls), cl.Name, cl.Args)
				c.Lines = append(c.Lines, fmt.Sprintf("%6d   tool %s %s -> %s", c.ms, cl.Name, cl.Args, res.Output))
				d.ToolResult(cl.Name, string(res.Output))
				c.advance(250)
			}
		}
		return fmt.Errorf("%s: the agent made tool calls twelve times in a row without speaking", t.ID)
	}
	if err := respond(); err != nil { // the greeting
		return grade.Result{}, c, err
	}
	for range maxTurns {
		if err := ctx.Err(); err != nil {
			return grade.Result{}, c, err
		}
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
		c.Lines = append(c.Lines, fmt.Sprintf("%6d caller[%s]: %s", c.ms, p.ID, text))
		c.advance(wordsMS(text))
		if p.Kind == trace.PlanClose {
			break
		}
		h := hear(ctx, q, text)
		line := "         heard " + h.Intent()
		if h.Transcript() != "" && h.Transcript() != text {
			line += fmt.Sprintf(" %v from %q", h.Fields(), h.Transcript())
		}
		if h.Why() != "" {
			line += " (" + h.Why() + ")"
		}
		c.Lines = append(c.Lines, line)
		d.Heard(h)
		if err := respond(); err != nil {
			return grade.Result{}, c, err
		}
	}
	c.emit(trace.Event{Type: trace.SessionEnd, Actor: trace.ActorSystem, Text: "caller_hung_up"})
	if c.err != nil {
		return grade.Result{}, c, c.err
	}
	g, err := grade.Grade(ctx, t, c.log.Events(), grade.Options{})
	if err != nil {
		return grade.Result{}, c, fmt.Errorf("%s: grade: %w", t.ID, err)
	}
	return g, c, nil
}

// Audit24 loads the audit24 tasks of dir (the repository's tasks/), sorted by id; only, when not
// empty, names the tasks to load instead, each of which must exist.
func Audit24(dir string, only []string) ([]*task.Task, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, id := range only {
		if id = strings.TrimSpace(id); id != "" {
			want[id] = true
		}
	}
	all := len(want) == 0
	var out []*task.Task
	for _, p := range paths {
		tk, err := task.LoadFile(p)
		if err != nil {
			return nil, err
		}
		if (all && tk.InSubset("audit24")) || want[tk.ID] {
			out = append(out, tk)
			delete(want, tk.ID)
		}
	}
	if len(want) > 0 {
		missing := make([]string, 0, len(want))
		for id := range want {
			missing = append(missing, id)
		}
		slices.Sort(missing)
		return nil, fmt.Errorf("no task %s in %s", strings.Join(missing, ", "), dir)
	}
	slices.SortFunc(out, func(a, b *task.Task) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Table is one line per graded call and the wrong fields under it, as the suites print them.
func Table(ids []string, grades []grade.Result) string {
	var b strings.Builder
	for i, g := range grades {
		var wrong []string
		for _, f := range g.Fields {
			if !f.Pass {
				wrong = append(wrong, fmt.Sprintf("%s=%s (gold %s)", f.Field, f.Pred, f.Gold))
			}
		}
		fmt.Fprintf(&b, "%-30s AFA %2d/%-2d WS %d TS %d PV %d AC %d final %-16s missing %v\n      wrong: %s\n", ids[i], g.AFA.Correct, g.AFA.Total, g.WS,
			g.TS, g.PV, g.AC, g.FinalState, g.MissingActions, strings.Join(wrong, "; "))
	}
	return b.String()
}
