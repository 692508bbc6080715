package dialog

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// ruleModel is a record tool with the given fields (name → JSON schema), the instructions naming
// what to search the knowledge base for.
func ruleModel(t *testing.T, instructions string, props map[string]string) *model {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	first := true
	for _, name := range slices.Sorted(maps.Keys(props)) {
		if !first {
			b.WriteString(",")
		}
		first = false
		fmt.Fprintf(&b, "%q:%s", name, props[name])
	}
	b.WriteString(`}}`)
	tools := []Tool{
		{Name: "kb_search", Description: "Search the guide.", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)},
		{Name: "record_change", Description: "Record fields of the change.", Parameters: json.RawMessage(b.String())},
	}
	d := New(Config{})
	d.Configure(instructions, tools)
	return d.m
}

const (
	fsaLimits     = "Health care FSA: an employee may elect up to $3,300 for the 2027 plan year; an election above the limit is reduced to the limit. Dependent care FSA: up to $5,000 per household for children under 13 ($2,500 if married filing separately)."
	fsaDeductions = "Each account's per-paycheck deduction is the annual election divided by the number of paychecks in the plan year: 24 for semi-monthly pay, 26 for biweekly pay. Round to the nearest cent."
	premiums      = "Evergreen PPO 1500: Employee only $48.12; Employee + Spouse $131.40; Employee + Child(ren) $97.85; Family $188.26. Evergreen HDHP 3000: Employee only $21.70; Employee + Spouse $74.95; Employee + Child(ren) $55.10; Family $109.64. Adding a child to Employee only coverage moves it to Employee + Child(ren); adding a child to Employee + Spouse coverage moves it to Family."
	newborn       = "Birth is a qualifying life event. Coverage for a newborn is effective on the date of birth, and the new tier's premium starts with the first paycheck after the change is processed."
)

// TestComputedFromKnowledge: amounts, tiers and dates the caller cannot know are worked out from
// the knowledge base's rules and what the call holds, and only when the call holds what the rule
// needs (no lookup, no requested amount, another relationship: nothing is computed).
func TestComputedFromKnowledge(t *testing.T) {
	num := `{"type":["number","string"]}`
	fsa := map[string]string{"health_fsa_requested": num, "health_fsa_annual": num, "health_fsa_per_paycheck": num,
		"dependent_care_requested": num, "dependent_care_annual": num, "dependent_care_per_paycheck": num}
	const fsaInstructions = "Look up the pay schedule and search the benefits guide for the annual limits and how per-paycheck deductions are computed."
	tiers := `{"type":"string","enum":["employee_only","employee_spouse","employee_children","family"]}`
	benefits := map[string]string{"relationship": `{"type":"string","enum":["child","spouse"]}`, "new_coverage_tier": tiers,
		"per_paycheck_premium": num, "dependent_dob": `{"type":"string","description":"YYYY-MM-DD"}`,
		"coverage_effective_date": `{"type":"string","description":"YYYY-MM-DD"}`}
	const benefitsInstructions = "Look up the plan and tier, and search the benefits guide for the tier the change moves them to, the per-paycheck premium of that tier and the coverage effective date."
	payroll := map[string]any{"pay_frequency": "semi-monthly", "paychecks_per_year": 24.0}
	enrollment := map[string]any{"plan_name": "Evergreen PPO 1500", "coverage_tier": "Employee + Spouse"}
	for _, c := range []struct {
		name         string
		instructions string
		props        map[string]string
		kb           []string
		lookups      []map[string]any
		given        map[string]any
		want         map[string]any // field → value; a nil value: not computed
	}{
		{"capped and divided", fsaInstructions, fsa, []string{fsaLimits, fsaDeductions}, []map[string]any{payroll},
			map[string]any{"health_fsa_requested": 3500.0, "dependent_care_requested": 5000.0},
			map[string]any{"health_fsa_annual": 3300.0, "health_fsa_per_paycheck": 137.5, "dependent_care_annual": 5000.0, "dependent_care_per_paycheck": 208.33}},
		{"under the limit", fsaInstructions, fsa, []string{fsaLimits, fsaDeductions}, []map[string]any{payroll},
			map[string]any{"health_fsa_requested": 1200.0},
			map[string]any{"health_fsa_annual": 1200.0, "health_fsa_per_paycheck": 50.0, "dependent_care_annual": nil}},
		{"no pay schedule looked up", fsaInstructions, fsa, []string{fsaLimits, fsaDeductions}, nil,
			map[string]any{"health_fsa_requested": 3500.0},
			map[string]any{"health_fsa_annual": 3300.0, "health_fsa_per_paycheck": nil}},
		{"a child added to employee and spouse", benefitsInstructions, benefits, []string{premiums, newborn}, []map[string]any{enrollment},
			map[string]any{"relationship": "child", "dependent_dob": "2026-10-31"},
			map[string]any{"new_coverage_tier": "family", "per_paycheck_premium": 188.26, "coverage_effective_date": "2026-10-31", "relationship": "child"}},
		{"a relationship the rule does not name", benefitsInstructions, benefits, []string{premiums, newborn}, []map[string]any{enrollment},
			map[string]any{"relationship": "spouse"},
			map[string]any{"new_coverage_tier": nil, "per_paycheck_premium": nil, "coverage_effective_date": nil}},
		{"relationship not given yet", benefitsInstructions, benefits, []string{premiums, newborn}, []map[string]any{enrollment},
			map[string]any{}, map[string]any{"new_coverage_tier": nil, "relationship": nil}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := ruleModel(t, c.instructions, c.props)
			p := newPolicy(m)
			p.kbTexts, p.lookups = c.kb, c.lookups
			for name, v := range c.given {
				f := m.fieldByName[name]
				if f == nil {
					t.Fatalf("no field %s", name)
				}
				p.values[name] = fieldValue{field: f, value: v, spoken: fmt.Sprint(v)}
			}
			p.deriveFromKnowledge()
			for name, want := range c.want {
				got, ok := p.values[name]
				switch {
				case want == nil && ok:
					t.Errorf("%s = %v, want nothing computed", name, got.value)
				case want != nil && (!ok || fmt.Sprint(got.value) != fmt.Sprint(want)):
					t.Errorf("%s = %v (set %v), want %v", name, got.value, ok, want)
				}
			}
		})
	}
}

// TestComputedFollowsItsSource: a date computed from another follows it when the caller corrects
// the source.
func TestComputedFollowsItsSource(t *testing.T) {
	m := ruleModel(t, "Search the benefits guide for the coverage effective date.", map[string]string{
		"dependent_dob": `{"type":"string","description":"YYYY-MM-DD"}`, "coverage_effective_date": `{"type":"string","description":"YYYY-MM-DD"}`})
	p := newPolicy(m)
	p.kbTexts = []string{newborn}
	p.values["dependent_dob"] = fieldValue{field: m.fieldByName["dependent_dob"], value: "2026-10-30"}
	p.deriveFromKnowledge()
	p.values["dependent_dob"] = fieldValue{field: m.fieldByName["dependent_dob"], value: "2026-10-31"}
	rec := p.deriveFromKnowledge()
	if got := p.values["coverage_effective_date"].value; got != "2026-10-31" {
		t.Errorf("coverage effective date %v after the date of birth was corrected, want 2026-10-31", got)
	}
	if string(rec["coverage_effective_date"]) != `"2026-10-31"` {
		t.Errorf("the recomputed date was not recorded again: %s", rec)
	}
}

// TestRestatedValueDoesNotReopen: a caller who "corrects" a value to what is on record already
// (a number in the summary taken for another) is told so, and the approval is not asked again: the
// bank caller and the agent otherwise went round the summary until the call timed out.
func TestRestatedValueDoesNotReopen(t *testing.T) {
	tc := newTextCall(t)
	tc.say(t, "Hi, I'd like to book a specialist visit.")
	tc.say(t, "It's four four one seven.")
	tc.say(t, "February third, nineteen eighty.")
	tc.say(t, "It's December fifth.")
	expectSaid(t, tc.say(t, "Five oh three, five five five, oh one four seven."), "Do I have your approval to book the visit?")
	n := len(tc.calls)
	got := tc.say(t, "No, that's wrong, my callback number is five oh three, five five five, oh one four seven.")
	expectSaid(t, got, "I have that as")
	for _, c := range tc.calls[n:] {
		if strings.HasPrefix(c, "request_booking_approval") || strings.HasPrefix(c, "mark_ready") {
			t.Errorf("a restated value reopened the request: %s", c)
		}
	}
}
