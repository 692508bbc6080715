package bank

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

func TestRatingSetHas72ItemsThreePerAudit24Task(t *testing.T) {
	tasks := mustSuite(t)
	items, err := RatingSet(tasks)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 72 {
		t.Fatalf("%d items, want 72", len(items))
	}
	byTask := map[string][]RatingItem{}
	for _, it := range items {
		byTask[it.Task] = append(byTask[it.Task], it)
	}
	kinds := map[string]int{}
	for _, tk := range tasks {
		got := byTask[tk.ID]
		if !tk.InSubset(task.SubsetAudit24) {
			if len(got) > 0 {
				t.Errorf("%s is not audit24 but has items", tk.ID)
			}
			continue
		}
		if len(got) != 3 {
			t.Fatalf("%s: %d items, want 3", tk.ID, len(got))
		}
		if got[0].Plan != "open" || got[1].UserPlan.Kind != string(trace.PlanAnswer) || len(got[1].UserPlan.Facts) == 0 {
			t.Errorf("%s: items %s, %s: want the opening then an information-bearing answer", tk.ID, got[0].Plan, got[1].Plan)
		}
		third := got[2].UserPlan.Kind
		kinds[third]++
		wantEvent := hasEvent(tk, task.Correction) || hasEvent(tk, task.Revocation) || hasEvent(tk, task.Approval)
		if wantEvent != (third == string(trace.PlanCorrect) || third == string(trace.PlanRevoke) || third == string(trace.PlanApprove)) {
			t.Errorf("%s: third item is a %s plan; the task has a correction, revocation or approval: %v", tk.ID, third, wantEvent)
		}
		if hasEvent(tk, task.Correction) && third != string(trace.PlanCorrect) {
			t.Errorf("%s: third item is %s, want its correction", tk.ID, third)
		}
		if got[1].Plan == got[2].Plan {
			t.Errorf("%s: the same plan twice", tk.ID)
		}
		for _, it := range got {
			if !containsString(tk.Bank[it.Plan], it.Transcript) || tk.Bank[it.Plan][it.Variant-1] != it.Transcript {
				t.Errorf("%s %s: transcript %q is not variant %d", tk.ID, it.Plan, it.Transcript, it.Variant)
			}
			if it.Audio != FileName(Variant{Task: it.Task, Plan: it.Plan, Variant: it.Variant}) {
				t.Errorf("%s %s: audio %q", tk.ID, it.Plan, it.Audio)
			}
			if it.UserState.Title != tk.Title || len(it.UserState.Facts) == 0 {
				t.Errorf("%s %s: empty user state", tk.ID, it.Plan)
			}
		}
	}
	for _, k := range []string{"correct", "revoke", "approve", "answer"} {
		if kinds[k] == 0 {
			t.Errorf("no task's third item is a %s plan: %v", k, kinds)
		}
	}
}

// TestRatingItemsHideTheGraderSide is the leakage barrier for annotators: an item shows only what
// the caller could know at that moment.
func TestRatingItemsHideTheGraderSide(t *testing.T) {
	tasks := mustSuite(t)
	items, err := RatingSet(tasks)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*task.Task{}
	for _, tk := range tasks {
		byID[tk.ID] = tk
	}
	for _, it := range items {
		tk := byID[it.Task]
		raw, _ := json.Marshal(it)
		var keys map[string]json.RawMessage
		json.Unmarshal(raw, &keys)
		for k := range keys {
			switch k {
			case "task", "plan", "variant", "user_state", "user_plan", "transcript", "audio":
			default:
				t.Errorf("%s %s: unexpected key %q", it.Task, it.Plan, k)
			}
		}
		known := KnownOnCard(tk, it.UserState)
		fired := map[string]bool{}
		for _, c := range it.UserState.Cues {
			fired[strings.SplitN(c.ID, "#", 2)[0]] = true
		}
		if leaks := Leaks(tk, visibleText(it), known, fired); len(leaks) > 0 {
			t.Errorf("%s %s leaks: %v", it.Task, it.Plan, leaks)
		}
		// The opening and the answer are rated before any event fired.
		if it.UserPlan.Kind == "open" || it.UserPlan.Kind == "answer" {
			if len(it.UserState.Cues) > 0 {
				t.Errorf("%s %s: cues on an initial card", it.Task, it.Plan)
			}
			if leaks := Leaks(tk, visibleText(it), InitialKnown(tk), nil); len(leaks) > 0 {
				t.Errorf("%s %s leaks: %v", it.Task, it.Plan, leaks)
			}
		}
	}
}

// visibleText is every string an annotator sees in an item.
func visibleText(it RatingItem) string {
	var b strings.Builder
	add := func(ss ...string) {
		for _, s := range ss {
			b.WriteString(s)
			b.WriteString(". ")
		}
	}
	c := it.UserState
	add(c.Title, c.Persona.Name, c.Persona.Role, c.Persona.Speaking)
	add(c.Goals...)
	add(c.Constraints...)
	for _, f := range c.Facts {
		add(f.Label, f.Value, f.Hint)
	}
	for _, cue := range c.Cues {
		add(cue.Text)
	}
	for _, f := range it.UserPlan.Facts {
		add(f.Label, f.Value, f.Spoken)
	}
	add(it.Transcript)
	return b.String()
}

// TestLeaksCatchesEachKindOfHiddenValue: the leakage checker itself must not be blind.
func TestLeaksCatchesEachKindOfHiddenValue(t *testing.T) {
	tk := mustTask(t, "fnol-auto-glass")
	initial := InitialKnown(tk)
	cases := map[string]string{
		"gold-only value": "Your deductible will be $100.",
		"protected value": "VIN 4S4BSANC2K3318820",
		"future version":  "Your callback number is 503-555-0174.",
		"on_event fact":   "The shop quoted six hundred twelve dollars and forty cents.",
		"has not fired":   tk.Events[0].Cue,
		"instructions":    "Look up the policy's coverage tier and search the knowledge base for the glass deductible that applies.",
		"the grader term": "The gold value is hidden.",
	}
	for want, text := range cases {
		if got := Leaks(tk, text, initial, nil); !anyContains(got, want) {
			t.Errorf("Leaks(%q) = %q, want one mentioning %q", text, got, want)
		}
	}
	if got := Leaks(tk, "Your callback number is 503-555-0147. Where it happened: 2150 SW Borland Road.", initial, nil); len(got) > 0 {
		t.Errorf("known values reported as leaks: %q", got)
	}
	after := Known{"callback_phone": 2}
	if got := Leaks(tk, "Your callback number is 503-555-0174.", after, map[string]bool{"phone_fix": true}); len(got) > 0 {
		t.Errorf("a revealed version reported as a leak: %q", got)
	}
}
