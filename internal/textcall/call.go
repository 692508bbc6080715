// Package textcall runs a task end to end at the text level: the flow engine's synthetic caller
// (speaking bank variants or rendered plans), a scripted agent, and the real workspace, on a
// simulated media clock. It produces the same canonical trace a live call does, without audio, so
// tasks can be proven solvable, golden traces generated, and graders checked.
package textcall

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/voicebench/humanaudit/internal/flow"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
	"github.com/voicebench/humanaudit/internal/workspace"
)

// Step is one thing an agent does in its turn: a tool call or speech.
type Step struct {
	Say  string
	Tool string
	Args string // JSON object
}

// CallerTurn is what the caller did in one turn: the plans spoken (an approval may be followed by a
// revocation in the same breath) and the text.
type CallerTurn struct {
	Plans []trace.Plan
	Text  string
}

// Agent is a scripted agent: it sees the caller's turn (an oracle agent may read the plans) and
// the tool results of its own calls, and returns its next steps.
type Agent interface {
	Turn(caller CallerTurn, results func(step int) workspace.Result) []Step
}

// Speaker renders a user plan as the caller's words.
type Speaker func(p trace.Plan) string

// Options configure a text-level call.
type Options struct {
	Seed     int64
	Speaker  Speaker   // default: RenderPlan
	Start    time.Time // wall time of media time 0 (default 2026-01-01T09:00:00Z)
	MaxTurns int       // default 60
}

// Timing of the simulated media clock: speech takes time per word, turns leave a gap.
const (
	callerMSPerWord = 330
	agentMSPerWord  = 300
	turnGapMS       = 700
	toolLatencyMS   = 250
	continuationMS  = 500
)

type simClock struct {
	t    int64
	base time.Time
}

func (c *simClock) MediaMS() int64 { return c.t }
func (c *simClock) Now() time.Time { return c.base.Add(time.Duration(c.t) * time.Millisecond) }

type call struct {
	ctx   context.Context
	t     *task.Task
	clock *simClock
	log   *trace.Log
	eng   *flow.Engine
	ws    *workspace.Workspace
	err   error
}

// Run plays one call of task t between the flow engine's caller and agent and returns the trace.
func Run(ctx context.Context, t *task.Task, agent Agent, opts Options) ([]trace.Event, error) {
	if opts.Speaker == nil {
		opts.Speaker = func(p trace.Plan) string { return RenderPlan(t, p) }
	}
	if opts.Start.IsZero() {
		opts.Start = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	}
	if opts.MaxTurns == 0 {
		opts.MaxTurns = 60
	}
	c := &call{ctx: ctx, t: t, clock: &simClock{base: opts.Start}, eng: flow.New(t)}
	c.log = trace.NewLog(c.clock)
	ws, err := workspace.New(t, c.emit)
	if err != nil {
		return nil, err
	}
	c.ws = ws
	c.emit(trace.Event{Type: trace.SessionStart, Actor: trace.ActorSystem, Meta: map[string]string{
		"task": t.ID, "task_version": fmt.Sprint(t.Version), "mode": "synthetic", "seed": fmt.Sprint(opts.Seed), "caller": "textcall"}})
	c.emit(trace.Event{Type: trace.CallerAudioStart, Actor: trace.ActorCaller})

	reason := "turn_limit"
	for turn := 0; turn < opts.MaxTurns && c.err == nil; turn++ {
		ct, closed := c.callerTurn(opts.Speaker)
		if closed {
			reason = "caller_hung_up"
			break
		}
		c.agentTurn(agent, ct, opts.Speaker)
	}
	c.emit(trace.Event{Type: trace.SessionEnd, Actor: trace.ActorSystem, Text: reason})
	return c.log.Events(), c.err
}

// emit appends an event and lets the flow engine observe it, recording what fires.
func (c *call) emit(e trace.Event) trace.Event {
	if e.T == 0 {
		e.T = c.clock.t
	}
	stored, err := c.log.Append(c.ctx, e)
	if err != nil {
		if c.err == nil {
			c.err = err
		}
		return e
	}
	c.record(c.eng.Observe(stored))
	return stored
}

func (c *call) record(firings []flow.Firing) {
	for _, f := range firings {
		c.emit(trace.Event{Type: trace.EnvEvent, Actor: trace.ActorEnv, T: f.T, EventID: f.Event.ID, Text: string(f.Event.Kind)})
		if f.Reveals != nil {
			c.emit(trace.Event{Type: trace.FactRevealed, Actor: trace.ActorEnv, T: f.T, Fact: f.Reveals.Fact, Version: f.Reveals.Version, EventID: f.Event.ID})
		}
		c.emit(trace.Event{Type: trace.CueIssued, Actor: trace.ActorEnv, T: f.T, CueID: f.CueID, EventID: f.Event.ID, Text: f.CueText()})
	}
}

// advance moves the clock, firing media-time events that come due on the way.
func (c *call) advance(ms int64) {
	target := c.clock.t + ms
	for {
		due, ok := c.eng.NextDue()
		if !ok || due > target {
			break
		}
		if due > c.clock.t {
			c.clock.t = due
		}
		c.record(c.eng.Advance(c.clock.t))
	}
	c.clock.t = target
	c.record(c.eng.Advance(target))
}

// speak delivers one caller plan: the plan, its words, and its effect on authorizations.
func (c *call) speak(p trace.Plan, speaker Speaker) string {
	text := speaker(p)
	c.emit(trace.Event{Type: trace.CallerPlan, Actor: trace.ActorCaller, Plan: &p})
	c.emit(trace.Event{Type: trace.CallerUtterance, Actor: trace.ActorCaller, Text: text, Source: "bank", Plan: &p})
	c.ws.ApplyPlan(p)
	c.advance(words(text) * callerMSPerWord)
	return text
}

func (c *call) callerTurn(speaker Speaker) (CallerTurn, bool) {
	c.advance(turnGapMS)
	p := c.eng.NextPlan()
	c.emit(trace.Event{Type: trace.CallerSpeechStart, Actor: trace.ActorCaller})
	ct := CallerTurn{Plans: []trace.Plan{p}, Text: c.speak(p, speaker)}
	for {
		next, ok := c.eng.Continuation()
		if !ok {
			break
		}
		c.advance(continuationMS)
		ct.Plans = append(ct.Plans, next)
		ct.Text += " " + c.speak(next, speaker)
	}
	c.emit(trace.Event{Type: trace.CallerSpeechEnd, Actor: trace.ActorCaller})
	return ct, p.Kind == trace.PlanClose
}

func (c *call) agentTurn(agent Agent, ct CallerTurn, speaker Speaker) {
	c.advance(turnGapMS)
	var results []workspace.Result
	steps := agent.Turn(ct, func(i int) workspace.Result { return results[i] })
	callN := 0
	for _, s := range steps {
		if s.Tool != "" {
			callN++
			c.advance(toolLatencyMS)
			results = append(results, c.ws.Call(fmt.Sprintf("call_%03d_%d", c.log.Len(), callN), s.Tool, []byte(s.Args)))
			continue
		}
		results = append(results, workspace.Result{})
		if s.Say != "" {
			if c.say(s.Say) {
				break // interrupted: the rest of the turn is dropped
			}
		}
	}
	c.emit(trace.Event{Type: trace.AgentResponseDone, Actor: trace.ActorAgent})
}

// say plays agent speech word by word so that a barge-in that fires mid-sentence interrupts it.
func (c *call) say(text string) (interrupted bool) {
	start := c.clock.t
	c.emit(trace.Event{Type: trace.AgentSpeechStart, Actor: trace.ActorAgent})
	c.emit(trace.Event{Type: trace.AgentTranscript, Actor: trace.ActorAgent, Text: text, Source: "script"})
	for _, a := range flow.Classify(c.t, text) {
		c.emit(trace.Event{Type: trace.AgentAct, Actor: trace.ActorAgent, Act: a.String()})
	}
	total := words(text) * agentMSPerWord
	for elapsed := int64(0); elapsed < total; elapsed += agentMSPerWord {
		c.advance(agentMSPerWord)
		if c.bargeInPending() {
			c.emit(trace.Event{Type: trace.MediaBargeIn, Actor: trace.ActorCaller, DroppedMS: total - elapsed - agentMSPerWord, RefMS: start})
			c.emit(trace.Event{Type: trace.AgentSpeechEnd, Actor: trace.ActorAgent})
			return true
		}
	}
	c.emit(trace.Event{Type: trace.AgentSpeechEnd, Actor: trace.ActorAgent})
	return false
}

func (c *call) bargeInPending() bool {
	for _, f := range c.eng.Firings() {
		if f.Event.Kind == task.BargeIn && f.T >= c.clock.t-agentMSPerWord && f.T <= c.clock.t {
			return true
		}
	}
	return false
}

func words(s string) int64 {
	n := int64(len(strings.Fields(s)))
	if n == 0 {
		n = 1
	}
	return n
}
