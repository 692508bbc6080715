package flow

import (
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// RoleCard is everything a human caller may see at one moment: who they are, why they call, the
// facts available now and the cues fired so far. It is built only from the user-visible state, so
// gold values, grader state, the agent's procedure and future fact versions cannot reach it.
type RoleCard struct {
	Title       string     `json:"title"`
	Persona     Persona    `json:"persona"`
	Goals       []string   `json:"goals"`
	Constraints []string   `json:"constraints,omitempty"`
	Facts       []CardFact `json:"facts"`
	Cues        []CardCue  `json:"cues"`
	ElapsedMS   int64      `json:"elapsed_ms"` // the call's media time
}

// Persona is the caller's persona as shown on the card.
type Persona struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	Speaking string `json:"speaking,omitempty"`
}

// Fact hints on the card.
const (
	HintVolunteer = "say it when it fits"
	HintOnAsk     = "only if asked"
	HintNew       = "new: use it from now on"
)

// CardFact is one fact the caller knows now.
type CardFact struct {
	ID      string `json:"id"`
	Label   string `json:"label"`
	Value   string `json:"value"`
	Hint    string `json:"hint"`
	Updated bool   `json:"updated,omitempty"` // a later version replaced the first one
	SinceMS int64  `json:"since_ms,omitempty"`
}

// CardCue is a private cue shown to the caller.
type CardCue struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Text     string `json:"text"`
	IssuedMS int64  `json:"issued_ms"` // media time of its cue.issued
}

// InitialRoleCard is the briefing card before the call: facts known at the start only.
func InitialRoleCard(t *task.Task) RoleCard {
	return New(t).RoleCard(0)
}

// RoleCard builds the caller's card at media time tMS.
func (e *Engine) RoleCard(tMS int64) RoleCard {
	u := e.t.User
	rc := RoleCard{
		Title:       e.t.Title,
		Persona:     Persona{Name: u.Persona.Name, Role: u.Persona.Role, Speaking: u.Persona.Speaking},
		Goals:       append([]string(nil), u.Goals...),
		Constraints: append([]string(nil), u.Constraints...),
		Facts:       []CardFact{},
		Cues:        []CardCue{},
	}
	// One clock for the card and the trace: the call's media time, so "Cue at m:ss" reads the same
	// number as the trace's cue.issued.
	rc.ElapsedMS = max(0, tMS)
	for _, f := range u.Facts {
		v := e.known[f.ID]
		if v == 0 {
			continue
		}
		cf := CardFact{ID: f.ID, Label: f.Label, Value: f.Versions[v-1].Value}
		switch {
		case v > 1 || f.Reveal == task.OnEvent:
			cf.Hint = HintNew
			cf.Updated = v > 1
			cf.SinceMS = e.knownSince[f.ID]
		case f.Reveal == task.Volunteer:
			cf.Hint = HintVolunteer
		default:
			cf.Hint = HintOnAsk
		}
		rc.Facts = append(rc.Facts, cf)
	}
	for _, fi := range e.firings {
		rc.Cues = append(rc.Cues, CardCue{ID: fi.CueID, Kind: string(fi.Event.Kind), Text: fi.CueText(), IssuedMS: fi.T})
	}
	return rc
}

// PlanFacts returns the fact versions a plan uses, with their values, for rendering the plan to a
// synthetic caller or an annotator.
func PlanFacts(t *task.Task, p trace.Plan) []PlanFact {
	var out []PlanFact
	for _, r := range p.Facts {
		f, ok := t.Fact(r.Fact)
		if !ok || r.Version < 1 || r.Version > len(f.Versions) {
			continue
		}
		v := f.Versions[r.Version-1]
		out = append(out, PlanFact{Fact: r.Fact, Label: f.Label, Version: r.Version, Value: v.Value, Spoken: v.Say()})
	}
	return out
}

// PlanFact is a fact version named by a plan.
type PlanFact struct {
	Fact    string `json:"fact"`
	Label   string `json:"label"`
	Version int    `json:"version"`
	Value   string `json:"value"`
	Spoken  string `json:"spoken"`
}

// ReachablePlans lists every user plan the engine can produce for task t, in a stable order: the
// plans the frozen caller bank must cover.
func ReachablePlans(t *task.Task) []trace.Plan {
	var out []trace.Plan
	add := func(p trace.Plan) {
		for _, q := range out {
			if q.ID == p.ID {
				return
			}
		}
		out = append(out, p)
	}
	open := trace.Plan{ID: "open", Kind: trace.PlanOpen}
	for _, f := range t.User.Facts {
		if f.Reveal == task.Volunteer {
			open.Facts = append(open.Facts, trace.FactRef{Fact: f.ID, Version: 1})
		}
	}
	add(open)
	for _, f := range t.User.Facts {
		if len(f.AskedAs) == 0 {
			continue
		}
		for v := 1; v <= len(f.Versions); v++ {
			if v == 1 && f.Reveal == task.OnEvent && !revealedBy(t, f.ID, 1) {
				continue
			}
			add(trace.Plan{ID: planID("answer", f.ID, v), Kind: trace.PlanAnswer, Facts: []trace.FactRef{{Fact: f.ID, Version: v}}})
		}
	}
	// A value the agent reads back wrong is corrected at the version the caller knows.
	for _, f := range t.User.Facts {
		if f.Field == "" {
			continue
		}
		for v := 1; v <= len(f.Versions); v++ {
			if !versionReachable(t, f, v) {
				continue
			}
			add(trace.Plan{ID: planID("fix_readback", f.ID, v), Kind: trace.PlanCorrect, Facts: []trace.FactRef{{Fact: f.ID, Version: v}}})
		}
	}
	e := New(t)
	for i := range t.Events {
		te := &t.Events[i]
		f := Firing{Event: te, CueID: te.ID}
		if te.Fact != "" && te.Kind != task.Approval && te.Kind != task.Revocation {
			v := te.Version
			if v == 0 {
				v = 1
			}
			f.Reveals = &trace.FactRef{Fact: te.Fact, Version: v}
		}
		if p, ok := e.planFor(te, f); ok {
			add(p)
		}
	}
	actions := map[string]bool{}
	for _, tl := range t.Agent.Tools {
		if tl.Kind == task.ToolCommit || tl.Kind == task.ToolRequestApproval {
			actions[tl.Action] = true
		}
	}
	for _, a := range sortedKeys(actions) {
		add(trace.Plan{ID: "decline:" + a, Kind: trace.PlanDecline, Action: a})
	}
	for _, p := range []trace.Plan{{ID: "affirm", Kind: trace.PlanAffirm}, {ID: "unknown", Kind: trace.PlanUnknown},
		{ID: "acknowledge", Kind: trace.PlanAcknowledge}, {ID: "close", Kind: trace.PlanClose}} {
		add(p)
	}
	return out
}

// versionReachable reports whether the caller can come to know version v of fact f.
func versionReachable(t *task.Task, f task.Fact, v int) bool {
	if v == 1 {
		return f.Reveal != task.OnEvent || revealedBy(t, f.ID, 1)
	}
	return revealedBy(t, f.ID, v)
}

func revealedBy(t *task.Task, fact string, version int) bool {
	for _, e := range t.Events {
		v := e.Version
		if v == 0 {
			v = 1
		}
		if e.Fact == fact && v == version {
			return true
		}
	}
	return false
}
