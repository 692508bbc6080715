package textcall

import (
	"strings"

	"github.com/voicebench/humanaudit/internal/flow"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// RenderPlan says a plan in plain template words: the fallback when a task has no bank variant for
// it. It uses only the facts the plan names.
func RenderPlan(t *task.Task, p trace.Plan) string {
	facts := flow.PlanFacts(t, p)
	said := make([]string, len(facts))
	for i, f := range facts {
		said[i] = f.Spoken
	}
	values := strings.Join(said, ", and ")
	switch p.Kind {
	case trace.PlanOpen:
		s := "Hi, I'm calling because I need to " + firstPerson(lowerFirst(strings.TrimSuffix(t.User.Goals[0], "."))) + "."
		for _, f := range facts {
			s += " " + says(f.Label, f.Spoken)
		}
		return s
	case trace.PlanAnswer:
		return "It's " + values + "."
	case trace.PlanVolunteer:
		return "Oh, and something came up. " + says(facts[0].Label, values)
	case trace.PlanCorrect:
		return "Sorry, I need to correct something. " + says(facts[0].Label, "actually "+values)
	case trace.PlanBargeIn:
		if len(facts) > 0 {
			return "Sorry to cut in. " + says(facts[0].Label, "actually "+values)
		}
		return "Sorry to cut in, could you slow down a bit?"
	case trace.PlanApprove:
		return "Yes, go ahead."
	case trace.PlanDecline:
		return "No, please don't do that."
	case trace.PlanRevoke:
		return "Actually, wait. No, don't go ahead with that. I'm withdrawing my approval."
	case trace.PlanAffirm:
		return "Yes, that's right."
	case trace.PlanUnknown:
		return "Sorry, I don't have that."
	case trace.PlanClose:
		return "No, that's everything. Thanks, bye."
	}
	return "Okay."
}

// firstPerson turns the card's second person ("your car") into the caller's first person.
func firstPerson(s string) string {
	r := strings.NewReplacer(" your ", " my ", " you ", " I ", " yourself ", " myself ")
	return strings.TrimSpace(r.Replace(" " + s + " "))
}

// says puts a card label and a value into the caller's words: "Your date of birth" becomes "My
// date of birth is …", any other label "About <label>: …".
func says(label, value string) string {
	for _, p := range []string{"Your ", "your "} {
		if strings.HasPrefix(label, p) {
			return "My " + label[len(p):] + " is " + value + "."
		}
	}
	return "About " + lowerFirst(label) + ": " + value + "."
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
