// Package flow is the runtime flow engine of a task's reveal graph. From the observed trace
// (agent acts, tool calls, artifact and approval events, media time) it decides when authored
// events fire, which facts the caller knows now, which private cues a human caller sees, and the
// synthetic caller's next user plan. It is deterministic: the same observations give the same
// firings and plans.
package flow

import (
	"fmt"
	"sort"

	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// Firing is an authored event that fired: the session records it (env.event, fact.revealed,
// cue.issued) and shows its cue.
type Firing struct {
	Event   *task.Event
	T       int64  // media time it fired
	CueID   string // unique per firing
	Reveals *trace.FactRef
	// Repeat counts earlier firings of the same event (0 the first time): an approval asked
	// again after the caller declined it.
	Repeat int
}

// CueText is the cue the caller sees for this firing; a repeated cue says it is repeated, so a
// participant does not take it for the one they already answered.
func (f Firing) CueText() string {
	if f.Repeat > 0 && f.Event.Cue != "" {
		return "The agent asks again: " + f.Event.Cue
	}
	return f.Event.Cue
}

type scheduled struct {
	at    int64
	order int // task event index, for deterministic ties
	ev    *task.Event
}

// Engine is the flow engine of one call.
type Engine struct {
	t *task.Task

	anchor int64 // media time of the first caller audio; -1 before it
	now    int64

	fireCount map[string]int
	queue     []scheduled
	firings   []Firing

	known      map[string]int   // fact → version the caller knows (0: unknown)
	knownSince map[string]int64 // fact → media time its current version was revealed
	said       map[string]int   // fact → version the caller has said
	lastGiven  []string         // facts the caller's last turn gave

	pending       []trace.Plan
	pendingMark   int // len(pending) when the current caller turn began
	turnActs      []Act
	turnRead      []ReadValue     // values the agent read back in this turn
	turnApproval  map[string]bool // actions whose approval the agent asked for in this turn
	approvalFired map[string]bool // of those, actions an approval event answered
	approvals     map[string]string
	opened        bool
	closed        bool
}

// Approval disposition of the caller per action.
const (
	approvalPending = "pending"
	approvalGranted = "granted"
	approvalRevoked = "revoked"
)

// New returns the engine for task t at the start of a call.
func New(t *task.Task) *Engine {
	e := &Engine{
		t:             t,
		anchor:        -1,
		fireCount:     map[string]int{},
		known:         map[string]int{},
		knownSince:    map[string]int64{},
		said:          map[string]int{},
		turnApproval:  map[string]bool{},
		approvalFired: map[string]bool{},
		approvals:     map[string]string{},
	}
	for _, f := range t.User.Facts {
		if f.Reveal != task.OnEvent {
			e.known[f.ID] = 1
		}
	}
	return e
}

// Observe updates the engine with one trace event and returns the authored events that fire
// because of it (including delayed ones now due).
func (e *Engine) Observe(ev trace.Event) []Firing {
	start := len(e.firings)
	if ev.T > e.now {
		e.now = ev.T
	}
	switch ev.Type {
	case trace.CallerAudioStart:
		if e.anchor < 0 {
			e.anchor = ev.T
			for i := range e.t.Events {
				te := &e.t.Events[i]
				if te.Trigger.On == task.OnMediaTime {
					e.schedule(te, i, e.anchor+te.Trigger.AtMS)
				}
			}
		}
	case trace.AgentTranscript:
		// A read-back is checked value by value against what the caller knows now.
		if readsBack(Classify(e.t, ev.Text)) {
			read := ReadBack(e.t, e.known, ev.Text)
			if len(read) == 0 && len(e.lastGiven) == 1 {
				read = UnnamedReadBack(e.t, e.known, e.lastGiven[0], ev.Text)
			}
			e.turnRead = append(e.turnRead, read...)
		}
	case trace.AgentAct:
		act := parseAct(ev.Act)
		e.turnActs = append(e.turnActs, act)
		e.condition(ev.T, func(tr task.Trigger) bool {
			return tr.On == task.OnAgentAct && (tr.Act == act.String() || tr.Act == act.Kind)
		})
		if act.Kind == "request_approval" {
			e.approvalRequested(ev.T, e.t.Agent.Artifact.CommitAction)
		}
	case trace.AuthApprovalRequested:
		e.approvalRequested(ev.T, ev.Action)
	case trace.ToolCall:
		e.condition(ev.T, func(tr task.Trigger) bool { return tr.On == task.OnToolCalled && tr.Tool == ev.Tool })
	case trace.ArtifactUpdate:
		e.condition(ev.T, func(tr task.Trigger) bool { return tr.On == task.OnFieldRecorded && tr.Field == ev.Field })
	case trace.ArtifactState:
		e.condition(ev.T, func(tr task.Trigger) bool { return tr.On == task.OnStateReached && tr.State == ev.State })
	case trace.AuthApprovalGranted:
		e.approvals[ev.Action] = approvalGranted
		e.condition(ev.T, func(tr task.Trigger) bool { return tr.On == task.OnApprovalGranted && tr.Action == ev.Action })
	case trace.AuthRevoked:
		e.approvals[ev.Action] = approvalRevoked
	case trace.AuthApprovalDeclined:
		// A human caller refused what was read back (a wrong value): the agent's next request is
		// a new question and fires the approval again.
		if e.approvals[ev.Action] == approvalPending {
			delete(e.approvals, ev.Action)
		}
	}
	e.runDue(e.now)
	return append([]Firing(nil), e.firings[start:]...)
}

// Advance moves media time to tMS and returns events whose time has come.
func (e *Engine) Advance(tMS int64) []Firing {
	start := len(e.firings)
	if tMS > e.now {
		e.now = tMS
	}
	e.runDue(e.now)
	return append([]Firing(nil), e.firings[start:]...)
}

// NextDue returns the media time of the next scheduled firing, if any.
func (e *Engine) NextDue() (int64, bool) {
	if len(e.queue) == 0 {
		return 0, false
	}
	return e.queue[0].at, true
}

func parseAct(s string) Act {
	for i := 0; i < len(s); i++ {
		if s[i] == ':' {
			return Act{Kind: s[:i], Fact: s[i+1:]}
		}
	}
	return Act{Kind: s}
}

func (e *Engine) approvalRequested(t int64, action string) {
	if action == "" {
		return
	}
	e.turnApproval[action] = true
	if d := e.approvals[action]; d == approvalPending || d == approvalRevoked {
		if d == approvalPending {
			e.approvalFired[action] = true
		}
		return
	}
	for i := range e.t.Events {
		te := &e.t.Events[i]
		if te.Kind == task.Approval && te.Action == action && te.Trigger.On == task.OnApprovalRequested && te.Trigger.Action == action {
			e.approvalFired[action] = true
			e.schedule(te, i, t+te.Trigger.DelayMS)
		}
	}
	// Other events waiting on the request (a revocation cue, a barge-in) fire once as usual.
	e.condition(t, func(tr task.Trigger) bool {
		return tr.On == task.OnApprovalRequested && tr.Action == action
	})
}

// condition schedules every not-yet-fired, non-approval event whose trigger matches.
func (e *Engine) condition(t int64, match func(task.Trigger) bool) {
	for i := range e.t.Events {
		te := &e.t.Events[i]
		if te.Kind == task.Approval && te.Trigger.On == task.OnApprovalRequested {
			continue // approvals re-arm per request; see approvalRequested
		}
		if e.fireCount[te.ID] > 0 || e.isQueued(te.ID) || !match(te.Trigger) {
			continue
		}
		e.schedule(te, i, t+te.Trigger.DelayMS)
	}
}

func (e *Engine) isQueued(id string) bool {
	for _, s := range e.queue {
		if s.ev.ID == id {
			return true
		}
	}
	return false
}

func (e *Engine) schedule(te *task.Event, order int, at int64) {
	e.queue = append(e.queue, scheduled{at: at, order: order, ev: te})
	sort.SliceStable(e.queue, func(i, j int) bool {
		if e.queue[i].at != e.queue[j].at {
			return e.queue[i].at < e.queue[j].at
		}
		return e.queue[i].order < e.queue[j].order
	})
}

func (e *Engine) runDue(now int64) {
	for len(e.queue) > 0 && e.queue[0].at <= now {
		s := e.queue[0]
		e.queue = e.queue[1:]
		e.fire(s.ev, s.at)
	}
}

func (e *Engine) fire(te *task.Event, at int64) {
	e.fireCount[te.ID]++
	f := Firing{Event: te, T: at, CueID: te.ID}
	if n := e.fireCount[te.ID]; n > 1 {
		f.CueID = fmt.Sprintf("%s#%d", te.ID, n)
		f.Repeat = n - 1
	}
	if te.Fact != "" && te.Kind != task.Approval && te.Kind != task.Revocation {
		ver := te.Version
		if ver == 0 {
			ver = 1
		}
		if ver > e.known[te.Fact] {
			e.known[te.Fact] = ver
			e.knownSince[te.Fact] = at
		}
		f.Reveals = &trace.FactRef{Fact: te.Fact, Version: ver}
	}
	e.firings = append(e.firings, f)
	if p, ok := e.planFor(te, f); ok {
		e.pending = append(e.pending, p)
	}
	if te.Kind == task.Approval {
		e.approvals[te.Action] = approvalPending
	}
	// Chains: events waiting for this one.
	for i := range e.t.Events {
		next := &e.t.Events[i]
		if next.Trigger.On == task.OnEventFired && next.Trigger.Event == te.ID && e.fireCount[next.ID] == 0 && !e.isQueued(next.ID) {
			e.schedule(next, i, at+next.Trigger.DelayMS)
		}
	}
}

// planFor is the user plan an authored event asks of the caller.
func (e *Engine) planFor(te *task.Event, f Firing) (trace.Plan, bool) {
	switch te.Kind {
	case task.Correction:
		return trace.Plan{ID: planID("correct", te.Fact, f.Reveals.Version), Kind: trace.PlanCorrect, Facts: []trace.FactRef{*f.Reveals}, Event: te.ID}, true
	case task.World:
		if f.Reveals == nil {
			return trace.Plan{}, false
		}
		return trace.Plan{ID: planID("volunteer", te.Fact, f.Reveals.Version), Kind: trace.PlanVolunteer, Facts: []trace.FactRef{*f.Reveals}, Event: te.ID}, true
	case task.Approval:
		return trace.Plan{ID: "approve:" + te.Action, Kind: trace.PlanApprove, Action: te.Action, Event: te.ID}, true
	case task.Revocation:
		return trace.Plan{ID: "revoke:" + te.Action, Kind: trace.PlanRevoke, Action: te.Action, Event: te.ID}, true
	case task.BargeIn:
		p := trace.Plan{ID: "barge_in:" + te.ID, Kind: trace.PlanBargeIn, Event: te.ID}
		if f.Reveals != nil {
			p.Facts = []trace.FactRef{*f.Reveals}
		}
		return p, true
	}
	return trace.Plan{}, false
}

// planID names a plan; version 1 is implicit so that a task's plain answers read "answer:dob".
func planID(kind, fact string, version int) string {
	if version <= 1 {
		return kind + ":" + fact
	}
	return fmt.Sprintf("%s:%s@v%d", kind, fact, version)
}

// NextPlan decides the synthetic caller's next turn from the agent's acts since the last caller
// turn and the events that fired. It consumes those acts.
func (e *Engine) NextPlan() trace.Plan {
	p := e.decide()
	e.turnActs = nil
	e.turnRead = nil
	e.turnApproval = map[string]bool{}
	e.approvalFired = map[string]bool{}
	e.pendingMark = len(e.pending)
	e.markSaid(p)
	return p
}

func (e *Engine) decide() trace.Plan {
	if !e.opened {
		e.opened = true
		p := trace.Plan{ID: "open", Kind: trace.PlanOpen}
		for _, f := range e.t.User.Facts {
			if f.Reveal == task.Volunteer {
				p.Facts = append(p.Facts, trace.FactRef{Fact: f.ID, Version: 1})
			}
		}
		return p
	}
	// A value read back wrong is corrected before anything but a barge-in or news: the caller
	// neither affirms nor approves until every value it heard matches what it knows.
	if fix, ok := e.readBackFix(); ok && e.readBackAsked() && !e.hasRank(0, pendingRank) && !e.hasRank(1, pendingRank) {
		return fix
	}
	if p, ok := e.popPending(); ok {
		return p
	}
	for _, action := range sortedKeys(e.turnApproval) {
		if !e.approvalFired[action] {
			return trace.Plan{ID: "decline:" + action, Kind: trace.PlanDecline, Action: action}
		}
	}
	var confirm, closing bool
	for _, a := range e.turnActs {
		switch a.Kind {
		case "ask":
			if e.readBackOf(a.Fact) {
				continue // the fact was named to read its value back, not to ask for it
			}
			v := e.known[a.Fact]
			if v == 0 {
				return trace.Plan{ID: "unknown", Kind: trace.PlanUnknown}
			}
			return trace.Plan{ID: planID("answer", a.Fact, v), Kind: trace.PlanAnswer, Facts: []trace.FactRef{{Fact: a.Fact, Version: v}}}
		case "confirm", "summarise":
			confirm = true
		case "close":
			closing = true
		}
	}
	if confirm {
		return trace.Plan{ID: "affirm", Kind: trace.PlanAffirm}
	}
	if closing {
		e.closed = true
		return trace.Plan{ID: "close", Kind: trace.PlanClose}
	}
	return trace.Plan{ID: "acknowledge", Kind: trace.PlanAcknowledge}
}

// popPending takes the most urgent plan an event queued: a barge-in first (it interrupts), then
// unsolicited news (corrections, revocations, world events), then an approval, which is only
// given in answer to the agent's request in its last turn. An approval the agent stopped asking
// for is dropped, and re-armed for its next request.
func (e *Engine) popPending() (trace.Plan, bool) {
	rank := pendingRank
	best := -1
	for i, p := range e.pending {
		if p.Kind == trace.PlanApprove && !e.turnApproval[p.Action] && !e.hasRank(0, rank) && !e.hasRank(1, rank) {
			// Stale: the agent did not ask this turn.
			e.pending = append(e.pending[:i], e.pending[i+1:]...)
			e.approvals[p.Action] = ""
			return e.popPending()
		}
		if best < 0 || rank(p.Kind) < rank(e.pending[best].Kind) {
			best = i
		}
	}
	if best < 0 {
		return trace.Plan{}, false
	}
	p := e.pending[best]
	e.pending = append(e.pending[:best], e.pending[best+1:]...)
	return p, true
}

// pendingRank orders queued plans: a barge-in (0), news (1), an approval (2).
func pendingRank(k trace.PlanKind) int {
	switch k {
	case trace.PlanBargeIn:
		return 0
	case trace.PlanApprove:
		return 2
	}
	return 1
}

// readsBack reports whether speech with these acts reads values back for the caller to check.
func readsBack(acts []Act) bool {
	for _, a := range acts {
		if a.Kind == "confirm" || a.Kind == "summarise" || a.Kind == "request_approval" {
			return true
		}
	}
	return false
}

// readBackOf reports whether the agent read back a value of fact in its last turn.
func (e *Engine) readBackOf(fact string) bool {
	for _, rv := range e.turnRead {
		if rv.Fact == fact {
			return true
		}
	}
	return false
}

// readBackAsked reports whether the agent's last turn read values back for the caller to check: a
// confirm or summarise act, or an approval request.
func (e *Engine) readBackAsked() bool {
	if len(e.turnApproval) > 0 {
		return true
	}
	for _, a := range e.turnActs {
		if a.Kind == "confirm" || a.Kind == "summarise" || a.Kind == "request_approval" {
			return true
		}
	}
	return false
}

func (e *Engine) hasRank(r int, rank func(trace.PlanKind) int) bool {
	for _, p := range e.pending {
		if rank(p.Kind) == r {
			return true
		}
	}
	return false
}

// Continuation returns a revocation or correction that fired during the caller's current turn, to be
// said in the same breath ("yes, go ahead — actually, no, wait"), and consumes it.
func (e *Engine) Continuation() (trace.Plan, bool) {
	for i := e.pendingMark; i < len(e.pending); i++ {
		p := e.pending[i]
		if p.Kind == trace.PlanRevoke || p.Kind == trace.PlanCorrect {
			e.pending = append(e.pending[:i], e.pending[i+1:]...)
			e.markSaid(p)
			return p, true
		}
	}
	return trace.Plan{}, false
}

func (e *Engine) markSaid(p trace.Plan) {
	e.lastGiven = e.lastGiven[:0]
	for _, f := range p.Facts {
		e.lastGiven = append(e.lastGiven, f.Fact)
		if f.Version > e.said[f.Fact] {
			e.said[f.Fact] = f.Version
		}
	}
}

// Closed reports whether the caller has closed the call.
func (e *Engine) Closed() bool { return e.closed }

// Firings returns every firing so far.
func (e *Engine) Firings() []Firing { return append([]Firing(nil), e.firings...) }

func sortedKeys(m map[string]bool) []string {
	ks := make([]string, 0, len(m))
	for k, v := range m {
		if v {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	return ks
}
