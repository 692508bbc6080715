package bank

import (
	"context"
	"fmt"
	"strings"

	"github.com/voicebench/humanaudit/internal/flow"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/textcall"
	"github.com/voicebench/humanaudit/internal/trace"
)

// RatingItemsPerTask is the number of frozen utterances rated per audit24 task.
const RatingItemsPerTask = 3

// RatingItem is one frozen utterance for the annotators: what the synthetic caller said, for which
// plan, in which task-visible situation. It holds nothing from the grader side.
type RatingItem struct {
	Task       string        `json:"task"`
	Plan       string        `json:"plan"`
	Variant    int           `json:"variant"`
	UserState  flow.RoleCard `json:"user_state"`
	UserPlan   UserPlan      `json:"user_plan"`
	Transcript string        `json:"transcript"`
	Audio      string        `json:"audio"` // the variant's WAV, relative to the bank directory
}

// UserPlan is the structured user plan an utterance realises, with the values of its facts.
type UserPlan struct {
	ID     string          `json:"id"`
	Kind   string          `json:"kind"`
	Facts  []flow.PlanFact `json:"facts"`
	Action string          `json:"action,omitempty"`
}

// RatingSet exports the frozen utterances of the annotator study: for every audit24 task (in ID
// order) the opening, one information-bearing answer, and the task's correction, revocation or
// approval (in that order of preference; another answer when it has none). The variant is the one
// seed 0 selects. The user state is the role card at that moment: the initial card for the
// opening and the answer, and for the event the card the flow engine shows when the ideal agent's
// call reaches it.
func RatingSet(tasks []*task.Task) ([]RatingItem, error) {
	var out []RatingItem
	for _, t := range tasks {
		if !t.InSubset(task.SubsetAudit24) {
			continue
		}
		items, err := ratingItems(t)
		if err != nil {
			return nil, fmt.Errorf("rating set: task %s: %w", t.ID, err)
		}
		out = append(out, items...)
	}
	return out, nil
}

func ratingItems(t *task.Task) ([]RatingItem, error) {
	plans := map[string]trace.Plan{}
	for _, p := range flow.ReachablePlans(t) {
		plans[p.ID] = p
	}
	initial := flow.InitialRoleCard(t)
	event, eventPlan := eventPlan(t, plans)
	answers := answerPlans(t, plans, event)
	if len(answers) == 0 || event == "" && len(answers) < 2 {
		return nil, fmt.Errorf("not enough information-bearing answers for the rating set")
	}
	first := answers[Select(t.ID, 0, "rating:answer", len(answers))]

	items := []RatingItem{}
	add := func(p trace.Plan, card flow.RoleCard) error {
		vs := t.Bank[p.ID]
		if len(vs) == 0 {
			return fmt.Errorf("the bank has no variant for plan %s", p.ID)
		}
		i := Select(t.ID, 0, p.ID, len(vs))
		v := Variant{Task: t.ID, Plan: p.ID, Variant: i + 1, Text: vs[i]}
		items = append(items, RatingItem{Task: t.ID, Plan: p.ID, Variant: v.Variant, UserState: card,
			UserPlan:   UserPlan{ID: p.ID, Kind: string(p.Kind), Facts: orEmpty(flow.PlanFacts(t, p)), Action: p.Action},
			Transcript: v.Text, Audio: FileName(v)})
		return nil
	}
	if err := add(plans["open"], initial); err != nil {
		return nil, err
	}
	if err := add(first, initial); err != nil {
		return nil, err
	}
	if event == "" {
		for _, a := range answers {
			if a.ID != first.ID {
				return items, add(a, initial)
			}
		}
	}
	card, err := cardAt(t, eventPlan.ID)
	if err != nil {
		return nil, err
	}
	return items, add(eventPlan, card)
}

func orEmpty(fs []flow.PlanFact) []flow.PlanFact {
	if fs == nil {
		return []flow.PlanFact{}
	}
	return fs
}

// eventPlan picks the task's authored correction, else revocation, else approval plan.
func eventPlan(t *task.Task, plans map[string]trace.Plan) (string, trace.Plan) {
	for _, kind := range []trace.PlanKind{trace.PlanCorrect, trace.PlanRevoke, trace.PlanApprove} {
		for _, p := range flow.ReachablePlans(t) {
			if p.Kind == kind && p.Event != "" { // an authored event's plan, not a read-back fix
				return p.ID, plans[p.ID]
			}
		}
	}
	return "", trace.Plan{}
}

// answerPlans lists the answers the caller can give from the start (on_ask facts, first version),
// about a fact the event does not change; answers that carry a specific value (digits) come
// first, since dictated values are what fidelity ratings must check.
func answerPlans(t *task.Task, plans map[string]trace.Plan, event string) []trace.Plan {
	var eventFact string
	if p, ok := plans[event]; ok && len(p.Facts) > 0 {
		eventFact = p.Facts[0].Fact
	}
	var specific, other []trace.Plan
	for _, f := range t.User.Facts {
		p, ok := plans["answer:"+f.ID]
		if !ok || f.Reveal != task.OnAsk || f.ID == eventFact {
			continue
		}
		if strings.ContainsAny(f.Versions[0].Value, "0123456789") {
			specific = append(specific, p)
		} else {
			other = append(other, p)
		}
	}
	return append(specific, other...)
}

// cardAt plays the task with the ideal scripted agent and the bank caller (seed 0) and returns
// the role card at the moment the caller speaks the plan: the trace is replayed through a fresh
// flow engine, which shows exactly what a human caller would have seen then.
func cardAt(t *task.Task, planID string) (flow.RoleCard, error) {
	events, err := textcall.Run(context.Background(), t, textcall.NewScripted(t, textcall.Flaws{}), textcall.Options{Speaker: Speaker(t, 0)})
	if err != nil {
		return flow.RoleCard{}, err
	}
	eng := flow.New(t)
	for _, e := range events {
		if e.Type == trace.CallerPlan && e.Plan != nil && e.Plan.ID == planID {
			return eng.RoleCard(e.T), nil
		}
		eng.Observe(e)
	}
	return flow.RoleCard{}, fmt.Errorf("the ideal agent's call never reaches plan %s", planID)
}
