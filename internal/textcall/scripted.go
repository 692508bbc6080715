package textcall

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/voicebench/humanaudit/internal/flow"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
	"github.com/voicebench/humanaudit/internal/workspace"
)

// Flaws make the scripted agent misbehave in one named way, to prove that graders catch it.
type Flaws struct {
	IgnoreCorrections     bool            // keeps the first value after a correction
	CommitWithoutApproval bool            // commits without asking
	CommitAfterRevocation bool            // commits although the caller withdrew the approval
	SkipTools             map[string]bool // never calls these required tools (kb_search, a quote)
	SpeakProtectedEarly   bool            // reads out protected values before verifying the caller
	NeverMarkReady        bool
	// TransferEarly hands the caller to a human at its first turn, whatever the task's rule.
	TransferEarly bool
}

// Scripted is an oracle agent that follows the standard professional rules: one short question per
// turn, record each answer at once, verify before account access, run the required lookups, mark
// the artifact ready, summarise and ask before an approval-gated action, act only after a yes,
// re-record on correction, close politely. It reads facts from the caller's plans (it is a test
// oracle, not a speech agent) and records gold for fields no caller fact holds, after the lookups
// that justify them.
type Scripted struct {
	t     *task.Task
	flaws Flaws

	heard       map[string]string // fact → value last said
	unknown     map[string]bool
	asked       map[string]int
	lastAsked   string            // fact asked in the agent's previous turn
	recorded    map[string]string // field → value recorded
	verified    bool
	actions     int // required actions done
	ready       bool
	askedOK     bool // approval requested
	approved    bool
	revoked     bool
	declined    bool
	committed   bool
	closing     bool
	transferred bool
}

// NewScripted returns the oracle agent for task t with the given flaws.
func NewScripted(t *task.Task, flaws Flaws) *Scripted {
	return &Scripted{t: t, flaws: flaws, heard: map[string]string{}, unknown: map[string]bool{}, asked: map[string]int{}, recorded: map[string]string{}}
}

// Turn implements Agent.
func (a *Scripted) Turn(ct CallerTurn, _ func(int) workspace.Result) []Step {
	var steps []Step
	for _, p := range ct.Plans {
		steps = append(steps, a.absorb(p)...)
		// A question the caller talked over with news of their own was not answered: it does not
		// count against the limit of asking twice.
		if a.lastAsked != "" && a.heard[a.lastAsked] == "" && (p.Kind == trace.PlanVolunteer || p.Kind == trace.PlanCorrect || p.Kind == trace.PlanBargeIn) {
			a.asked[a.lastAsked]--
		}
	}
	a.lastAsked = ""
	if a.closing {
		return append(steps, Step{Say: "Thank you for calling. Goodbye."})
	}
	return append(steps, a.next()...)
}

// absorb takes in what the caller said: answers are recorded at once, corrections re-recorded.
func (a *Scripted) absorb(p trace.Plan) []Step {
	var steps []Step
	for _, f := range flow.PlanFacts(a.t, p) {
		first := a.heard[f.Fact] == ""
		if !first && a.flaws.IgnoreCorrections && (p.Kind == trace.PlanCorrect || p.Kind == trace.PlanBargeIn) {
			continue
		}
		if !first && a.askedOK && !a.approved && !a.committed {
			a.askedOK = false // the caller changed something: summarise and ask again
		}
		a.heard[f.Fact] = f.Value
		fact, _ := a.t.Fact(f.Fact)
		if _, isField := a.t.Field(fact.Field); isField {
			steps = append(steps, a.recordStep(fact.Field, f.Value)...)
		}
	}
	switch p.Kind {
	case trace.PlanUnknown:
		for fact, n := range a.asked {
			if n > 0 && a.heard[fact] == "" {
				a.unknown[fact] = true
			}
		}
	case trace.PlanApprove:
		a.approved = true
	case trace.PlanRevoke:
		a.revoked, a.approved = true, false
	case trace.PlanDecline:
		a.declined = true
	case trace.PlanClose:
		a.closing = true
	}
	return steps
}

func (a *Scripted) recordStep(field, value string) []Step {
	if a.recorded[field] == value {
		return nil
	}
	for _, tl := range a.t.Agent.Tools {
		if tl.Kind != task.ToolRecord {
			continue
		}
		for arg := range properties(tl.Parameters) {
			target := arg
			if m, ok := tl.Fields[arg]; ok {
				target = m
			}
			if target == field {
				a.recorded[field] = value
				args, _ := json.Marshal(map[string]any{arg: typed(a.t, field, value)})
				return []Step{{Tool: tl.Name, Args: string(args)}}
			}
		}
	}
	return nil
}

// typed converts a dictated value to the JSON type the field's schema expects; an enumeration
// field gets the enumeration value the caller's words stand for.
func typed(t *task.Task, field, value string) any {
	spec, _ := t.Field(field)
	switch spec.Type {
	case "enum":
		for _, gf := range t.Grader.Fields {
			if gf.Field != field {
				continue
			}
			for canonical, syns := range gf.Params.Synonyms {
				for _, s := range append(syns, canonical) {
					if strings.EqualFold(s, value) {
						return canonical
					}
				}
			}
		}
	case "list", "set":
		var out []string
		for _, p := range strings.Split(value, ";") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out
	}
	return value
}

func (a *Scripted) next() []Step {
	var steps []Step
	if tl := a.tool(task.ToolTransfer); tl != nil && a.flaws.TransferEarly && !a.transferred {
		a.transferred = true
		return []Step{{Say: "Let me put you through to a colleague."}, {Tool: tl.Name, Args: `{"reason":"the caller asked for a person"}`}}
	}
	if a.transferred {
		return []Step{{Say: "You're being transferred now. Goodbye."}}
	}
	if a.flaws.SpeakProtectedEarly && len(a.t.Grader.ProtectedValues) > 0 && !a.verified {
		steps = append(steps, Step{Say: "I can see a value of " + a.t.Grader.ProtectedValues[0] + " on the account."})
	}
	// Verification comes before any account access.
	if vt := a.tool(task.ToolVerify); vt != nil && !a.verified {
		args := map[string]any{}
		matchArgs := make([]string, 0, len(vt.Match))
		for arg := range vt.Match {
			matchArgs = append(matchArgs, arg)
		}
		sort.Strings(matchArgs)
		for _, arg := range matchArgs {
			fact := a.factFor(arg)
			if fact == nil {
				continue
			}
			if a.heard[fact.ID] == "" {
				if s := a.ask(fact); s != nil {
					return append(steps, *s)
				}
				continue
			}
			args[arg] = a.heard[fact.ID]
		}
		b, _ := json.Marshal(args)
		a.verified = true
		steps = append(steps, Step{Tool: vt.Name, Args: string(b)})
	}
	// One question per turn for every field a caller fact answers.
	for _, f := range a.t.Agent.Artifact.Fields {
		fact := a.factFor(f.Name)
		if fact == nil || a.heard[fact.ID] != "" || a.unknown[fact.ID] {
			continue
		}
		if fact.Reveal == task.OnEvent && !a.factKnownToCaller(fact) {
			continue
		}
		if s := a.ask(fact); s != nil {
			return append(steps, *s)
		}
	}
	// Required lookups, then the fields they decide.
	for ; a.actions < len(a.t.Grader.RequiredActions); a.actions++ {
		if spec := a.t.Grader.RequiredActions[a.actions]; !a.flaws.SkipTools[spec.Tool] {
			steps = append(steps, a.actionStep(spec))
		}
	}
	for _, gf := range a.t.Grader.Fields {
		if a.factFor(gf.Field) != nil {
			continue
		}
		var v any
		json.Unmarshal(gf.Gold, &v)
		if _, done := a.recorded[gf.Field]; !done {
			for _, s := range a.recordStep(gf.Field, string(gf.Gold)) {
				s.Args = rewriteArg(s.Args, v)
				steps = append(steps, s)
			}
		}
	}
	if !a.ready && !a.flaws.NeverMarkReady {
		if tl := a.transitionTo(task.StateReady); tl != nil {
			a.ready = true
			steps = append(steps, Step{Tool: tl.Name, Args: "{}"})
		}
	}
	// A task whose procedure ends with a hand-over: transfer once the artifact is ready.
	if tl := a.tool(task.ToolTransfer); tl != nil && a.t.TransferRuleOf() == task.TransferRequired && a.ready && !a.transferred {
		a.transferred = true
		b, _ := json.Marshal(map[string]string{"reason": a.t.Grader.TransferReason})
		return append(steps, Step{Say: "I'm passing you to the team that handles this now."}, Step{Tool: tl.Name, Args: string(b)})
	}
	if a.t.Authorization == task.ApprovalGated && !a.committed {
		commit := a.commitTool()
		switch {
		case a.flaws.CommitWithoutApproval && commit != nil:
			a.committed = true
			return append(steps, Step{Tool: commit.Name, Args: "{}"}, Step{Say: "I've submitted that for you. Is there anything else?"})
		case a.approved && commit != nil:
			a.committed = true
			return append(steps, Step{Tool: commit.Name, Args: "{}"}, Step{Say: "Done, that's submitted. Is there anything else I can help with?"})
		case a.revoked && a.flaws.CommitAfterRevocation && commit != nil:
			a.committed = true
			return append(steps, Step{Tool: commit.Name, Args: "{}"}, Step{Say: "I've gone ahead and submitted it. Is there anything else?"})
		case a.revoked || a.declined:
			a.committed = true // nothing more to do with the action
			return append(steps, Step{Say: "Understood, I won't submit anything. Is there anything else I can help with?"})
		case !a.askedOK:
			a.askedOK = true
			if rt := a.tool(task.ToolRequestApproval); rt != nil {
				steps = append(steps, Step{Tool: rt.Name, Args: `{"summary":"all details recorded"}`})
			}
			return append(steps, Step{Say: "To summarize, I have everything I need. Do I have your approval to submit it now?"})
		}
	}
	return append(steps, Step{Say: "Is there anything else I can help you with today?"})
}

func (a *Scripted) ask(fact *task.Fact) *Step {
	if len(fact.AskedAs) == 0 || a.asked[fact.ID] >= 2 {
		return nil
	}
	a.asked[fact.ID]++
	a.lastAsked = fact.ID
	phrase := fact.AskedAs[0]
	switch strings.Fields(phrase)[0] {
	case "how", "what", "when", "where", "which", "who", "what's":
		return &Step{Say: "Could you tell me " + phrase + "?"}
	}
	return &Step{Say: "Could you tell me your " + phrase + "?"}
}

func (a *Scripted) factKnownToCaller(f *task.Fact) bool {
	for _, e := range a.t.Events {
		if e.Fact == f.ID && a.heard[f.ID] != "" {
			return true
		}
	}
	return false
}

func (a *Scripted) actionStep(spec task.ActionSpec) Step {
	args := map[string]any{}
	tl, _ := a.t.Tool(spec.Tool)
	for arg := range properties(tl.Parameters) {
		if v, ok := spec.Args[arg]; ok {
			args[arg] = v
			continue
		}
		if f := a.factFor(arg); f != nil && a.heard[f.ID] != "" {
			args[arg] = a.heard[f.ID]
		}
	}
	if tl.Kind == task.ToolKBSearch && args["query"] == nil {
		args["query"] = spec.Reason
	}
	b, _ := json.Marshal(args)
	return Step{Tool: spec.Tool, Args: string(b)}
}

// factFor finds the caller fact that answers a field or argument.
func (a *Scripted) factFor(name string) *task.Fact {
	for i := range a.t.User.Facts {
		if a.t.User.Facts[i].Field == name {
			return &a.t.User.Facts[i]
		}
	}
	return nil
}

func (a *Scripted) tool(kind task.ToolKind) *task.Tool {
	for i := range a.t.Agent.Tools {
		if a.t.Agent.Tools[i].Kind == kind {
			return &a.t.Agent.Tools[i]
		}
	}
	return nil
}

func (a *Scripted) transitionTo(state string) *task.Tool {
	for i := range a.t.Agent.Tools {
		if tl := &a.t.Agent.Tools[i]; tl.Kind == task.ToolTransition && tl.To == state {
			return tl
		}
	}
	return nil
}

func (a *Scripted) commitTool() *task.Tool {
	for i := range a.t.Agent.Tools {
		if tl := &a.t.Agent.Tools[i]; tl.Kind == task.ToolCommit && tl.Action == a.t.Agent.Artifact.CommitAction {
			return tl
		}
	}
	return nil
}

func properties(raw json.RawMessage) map[string]any {
	var s struct {
		Properties map[string]any `json:"properties"`
	}
	json.Unmarshal(raw, &s)
	return s.Properties
}

// rewriteArg replaces the single argument's value in a one-argument JSON object.
func rewriteArg(args string, v any) string {
	var m map[string]any
	json.Unmarshal([]byte(args), &m)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return string(b)
}
