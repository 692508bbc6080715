package dialog

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
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
	refund := map[string]string{"duplicate_payment_ref": `{"type":"string"}`, "refund_method": `{"type":"string","enum":["ach","check","card"]}`}
	const refundInstructions = "Look up the payments and search the refund policy for how the refund is paid."
	const duplicatePolicy = "A duplicate payment is refunded to the customer by the method of the duplicate payment: an ACH payment is returned by ACH to the originating account, a check payment by check, a card payment to the card."
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
		{"refunded by the duplicate's method", refundInstructions, refund, []string{duplicatePolicy}, nil,
			map[string]any{"duplicate_payment_ref": "ACH-0925-7781"}, map[string]any{"refund_method": "ach"}},
		{"a check duplicate", refundInstructions, refund, []string{duplicatePolicy}, nil,
			map[string]any{"duplicate_payment_ref": "CHK-4471"}, map[string]any{"refund_method": "check"}},
		{"duplicate not known yet", refundInstructions, refund, []string{duplicatePolicy}, nil,
			map[string]any{}, map[string]any{"refund_method": nil}},
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

// TestFormulaFromKnowledge: an amount a rule spells out as arithmetic is computed from the values
// the call holds, for the case a lookup returned, to the cent; a rule whose values the call lacks,
// or whose case is not the one on file, computes nothing.
func TestFormulaFromKnowledge(t *testing.T) {
	num := `{"type":["number","string"]}`
	const credit = "When a customer receives fewer cases than invoiced, the credit is the number of missing cases times the sum of the unit price and the freight surcharge per case shown on the invoice."
	const parcels = "Uninsured parcels are reimbursed up to $100. Insured parcels are reimbursed at the declared value less the $15 claims deductible."
	const installments = "Each installment is the balance divided by the number of installments, rounded up to the next cent."
	invoice := map[string]any{"cases_billed": 40.0, "unit_price": "38.50", "freight_per_case": "2.25"}
	for _, c := range []struct {
		name    string
		props   map[string]string
		kb      string
		lookups []map[string]any
		given   map[string]any
		field   string
		want    any // nil: nothing computed
	}{
		{"short shipment credit", map[string]string{"units_billed": num, "units_received": num, "unit_price": num, "credit_amount": num},
			credit, []map[string]any{invoice}, map[string]any{"units_billed": 40.0, "units_received": 38.0}, "credit_amount", 81.5},
		{"nothing missing yet", map[string]string{"units_billed": num, "units_received": num, "unit_price": num, "credit_amount": num},
			credit, []map[string]any{invoice}, map[string]any{"units_billed": 40.0}, "credit_amount", nil},
		{"no invoice looked up", map[string]string{"units_billed": num, "units_received": num, "credit_amount": num},
			credit, nil, map[string]any{"units_billed": 40.0, "units_received": 38.0}, "credit_amount", nil},
		{"insured parcel", map[string]string{"declared_value": num, "reimbursement_amount": num},
			parcels, []map[string]any{{"insured": "yes", "declared_value": "240.00"}}, nil, "reimbursement_amount", 225.0},
		{"uninsured parcel: a cap, not a formula", map[string]string{"declared_value": num, "reimbursement_amount": num},
			parcels, []map[string]any{{"insured": "no", "declared_value": "240.00"}}, nil, "reimbursement_amount", nil},
		{"a parcel not looked up: insured or not is unknown", map[string]string{"declared_value": num, "reimbursement_amount": num},
			parcels, nil, map[string]any{"declared_value": 240.0}, "reimbursement_amount", nil},
		{"damaged goods: the rule for another case", map[string]string{"units_billed": num, "units_received": num, "unit_price": num, "credit_amount": num,
			"dispute_reason": `{"type":"string","enum":["short_shipment","damaged"]}`},
			"Credit for damaged cases is the unit price times the number of damaged cases.", []map[string]any{invoice},
			map[string]any{"units_billed": 40.0, "units_received": 38.0, "dispute_reason": "short_shipment"}, "credit_amount", nil},
		{"installments rounded up", map[string]string{"installment_count": `{"type":["integer","string"]}`, "installment_amount": num},
			installments, []map[string]any{{"past_due_balance": "1284.17"}}, map[string]any{"installment_count": 4.0}, "installment_amount", 321.05},
		{"installments before the count is known", map[string]string{"installment_count": `{"type":["integer","string"]}`, "installment_amount": num},
			installments, []map[string]any{{"past_due_balance": "1284.17"}}, nil, "installment_amount", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := ruleModel(t, "Search the knowledge base for the rules.", c.props)
			p := newPolicy(m)
			p.kbTexts, p.lookups = []string{c.kb}, c.lookups
			for name, v := range c.given {
				p.values[name] = fieldValue{field: m.fieldByName[name], value: v}
			}
			p.deriveFromKnowledge()
			got, ok := p.values[c.field]
			switch {
			case c.want == nil && ok:
				t.Errorf("%s = %v, want nothing computed", c.field, got.value)
			case c.want != nil && (!ok || fmt.Sprint(got.value) != fmt.Sprint(c.want)):
				t.Errorf("%s = %v (set %v), want %v", c.field, got.value, ok, c.want)
			}
		})
	}
}

// TestPriorityMatrix: a choice set by a matrix of the knowledge base is the first heading with a
// case the call meets (a temperature within the case's bound, in the case's season, a case about
// the call's problem); "everything else" only once every case could be judged.
func TestPriorityMatrix(t *testing.T) {
	const matrix = "Emergency (technician within 4 hours): no heat when the indoor temperature is below 60°F between October 1 and April 30; active water leaks; no water. Urgent (within 48 hours): no heat above 60°F; no hot water; a refrigerator not cooling. Routine (within 7 days): everything else."
	props := map[string]string{
		"issue_category": `{"type":"string","enum":["heating","plumbing","appliance","other"]}`,
		"indoor_temp":    `{"type":["number","string"],"description":"Degrees Fahrenheit"}`,
		"priority":       `{"type":"string","enum":["emergency","urgent","routine"]}`,
	}
	winter := time.Date(2026, 12, 2, 22, 0, 0, 0, time.UTC)
	summer := time.Date(2027, 7, 2, 22, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name  string
		now   time.Time
		given map[string]any
		want  any
	}{
		{"no heat in winter, 57 inside", winter, map[string]any{"issue_category": "heating", "indoor_temp": 57.0}, "emergency"},
		{"no heat, 64 inside", winter, map[string]any{"issue_category": "heating", "indoor_temp": 64.0}, "urgent"},
		{"no heat in summer, 57 inside", summer, map[string]any{"issue_category": "heating", "indoor_temp": 57.0}, "routine"},
		{"no heat, temperature not given yet", winter, map[string]any{"issue_category": "heating"}, nil},
		{"an appliance", winter, map[string]any{"issue_category": "appliance"}, "routine"},
		{"nothing recorded", winter, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := ruleModel(t, "Search the maintenance policy to set the request's priority.", props)
			p := newPolicy(m)
			p.now = func() time.Time { return c.now }
			p.kbTexts = []string{matrix}
			for name, v := range c.given {
				p.values[name] = fieldValue{field: m.fieldByName[name], value: v}
			}
			p.deriveFromKnowledge()
			got, ok := p.values["priority"]
			switch {
			case c.want == nil && ok:
				t.Errorf("priority = %v, want nothing set", got.value)
			case c.want != nil && (!ok || got.value != c.want):
				t.Errorf("priority = %v (set %v), want %v", got.value, ok, c.want)
			}
		})
	}
}

// TestAccessPolicy: the access a policy grants a contractor is read for "read-only" (the access the
// instructions say the knowledge decides, not the one the manager asked for), and the approvers
// are read system by system from the approval matrix, for the systems the caller named in their
// own words; a system the matrix does not list leaves the approvers open.
func TestAccessPolicy(t *testing.T) {
	const contractors = "Contractors and temporary workers (worker IDs starting CTR or TMP) receive read-only access to Finance data, whatever level the manager requests; write access to Finance systems requires an employee."
	const approvals = "Finance shared drive: approved by the data owner, the Finance Controller. Workday reporting: approved by the HRIS Lead. VPN and e-mail are provisioned automatically and need no approver."
	props := map[string]string{
		"systems":          `{"type":"array","items":{"type":"string"}}`,
		"requested_access": `{"type":"string","enum":["read","read_write"]}`,
		"granted_access":   `{"type":"string","enum":["read","read_write"]}`,
		"approvers":        `{"type":"array","items":{"type":"string"}}`,
	}
	const instructions = "Look the worker up, and search the access policy to decide the access level that can be granted and who must approve each system."
	for _, c := range []struct {
		name    string
		systems []string
		want    any
	}{
		{"two systems", []string{"she needs to finance shared drive", "workday reporting"}, []string{"Finance Controller", "HRIS Lead"}},
		{"a system with no approver listed", []string{"Finance shared drive", "Salesforce"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := ruleModel(t, instructions, props)
			p := newPolicy(m)
			p.kbTexts = []string{contractors, approvals}
			p.lookups = []map[string]any{{"worker_type": "contractor", "department": "Finance - EMEA"}}
			p.values["systems"] = fieldValue{field: m.fieldByName["systems"], value: c.systems}
			p.deriveFromKnowledge()
			if got := p.values["granted_access"].value; got != "read" {
				t.Errorf("granted access %v, want read", got)
			}
			if got, ok := p.values["requested_access"]; ok {
				t.Errorf("the access the manager asks for was taken from the policy: %v", got.value)
			}
			got, ok := p.values["approvers"]
			switch {
			case c.want == nil && ok:
				t.Errorf("approvers %v, want none read", got.value)
			case c.want != nil && fmt.Sprint(got.value) != fmt.Sprint(c.want):
				t.Errorf("approvers %v, want %v", got.value, c.want)
			}
		})
	}
}

// TestLookupRetriesOtherReadings: a lookup that finds nothing is called again with the
// recognizer's other readings of its key (each a real call); the reading that finds the record is
// what the caller said, recorded and said so; when none does, the caller is told and asked for
// the key again, once.
func TestLookupRetriesOtherReadings(t *testing.T) {
	tools := []Tool{
		{Name: "lookup_worker", Description: "Look up a worker.", Parameters: json.RawMessage(`{"type":"object","properties":{"new_hire_employee_id":{"type":"string"}},"required":["new_hire_employee_id"]}`)},
		{Name: "record_request", Description: "Record fields of the access request.", Parameters: json.RawMessage(`{"type":"object","properties":{"new_hire_employee_id":{"type":"string"},"new_hire_name":{"type":"string"}}}`)},
	}
	setup := func() (*policy, *field) {
		d := New(Config{})
		d.Configure("You are the IT desk. Look the worker up.", tools)
		p := d.p
		p.opened = true
		f := d.m.fieldByName["new_hire_employee_id"]
		p.values[f.Name] = fieldValue{field: f, value: "CGR20931", spoken: "C G R 2 0 9 3 1",
			alts: []fieldValue{{field: f, value: "CGR20981", spoken: "C G R 2 0 9 8 1"}, {field: f, value: "CTR20931", spoken: "C T R 2 0 9 3 1"}}}
		return p, f
	}
	const notFound = `{"error":"not_found","message":"no matching record","ok":false}`

	p, f := setup()
	var called []string
	act := p.next()
	for round := 0; round < 4 && len(act.calls) > 0; round++ {
		c := act.calls[len(act.calls)-1]
		if c.name != "lookup_worker" {
			break
		}
		called = append(called, string(c.args))
		if strings.Contains(string(c.args), "CTR20931") {
			p.toolResult(c.name, `{"ok":true,"record":{"name":"Adaeze Fontaine-Osei","worker_type":"contractor"}}`)
		} else {
			p.toolResult(c.name, notFound)
		}
		act = p.next()
	}
	if want := []string{`{"new_hire_employee_id":"CGR20931"}`, `{"new_hire_employee_id":"CGR20981"}`, `{"new_hire_employee_id":"CTR20931"}`}; fmt.Sprint(called) != fmt.Sprint(want) {
		t.Fatalf("lookups %v, want %v", called, want)
	}
	if got := p.values[f.Name].value; got != "CTR20931" {
		t.Errorf("the key that found the record was not taken: %v", got)
	}
	if got := p.values["new_hire_name"].value; got != "Adaeze Fontaine-Osei" {
		t.Errorf("the record's name was not taken: %v", got)
	}
	recorded := false
	for _, c := range act.calls {
		recorded = recorded || c.name == "record_request" && strings.Contains(string(c.args), "CTR20931")
	}
	if !recorded {
		t.Errorf("the key found was not recorded: %v", act.calls)
	}

	// No reading finds it: the caller is told, and asked for the key again.
	p, f = setup()
	act = p.next()
	for round := 0; round < 5 && len(act.calls) > 0; round++ {
		p.toolResult(act.calls[len(act.calls)-1].name, notFound)
		act = p.next()
	}
	if !strings.Contains(act.say, "couldn't find a record") || p.exp.field != f {
		t.Errorf("after every reading failed the agent said %q asking for %v", act.say, p.exp.field)
	}
	if _, ok := p.values[f.Name]; ok {
		t.Errorf("the key no reading found is kept: %v", p.values[f.Name].value)
	}
}

// TestRecordNamesTheGuest: the name on a record found by the caller's own key fills the name field
// it names ("guest" is guest_name, "carrier" insurance_carrier), over the open vocabulary's guess;
// a record's plain "name" column names nobody the lookup's key does not.
func TestRecordNamesTheGuest(t *testing.T) {
	tools := []Tool{
		{Name: "lookup_reservation", Description: "Look up a reservation.", Parameters: json.RawMessage(`{"type":"object","properties":{"confirmation_number":{"type":"string"}},"required":["confirmation_number"]}`)},
		{Name: "record_extension", Description: "Record the extension.", Parameters: json.RawMessage(`{"type":"object","properties":{"confirmation_number":{"type":"string"},"guest_name":{"type":"string"},"insurance_carrier":{"type":"string"},"driver_name":{"type":"string"}}}`)},
	}
	d := New(Config{})
	d.Configure("You are the front desk. Look the reservation up.", tools)
	p := d.p
	guest := d.m.fieldByName["guest_name"]
	p.values[guest.Name] = fieldValue{field: guest, value: "Emily's Okay Anneli"}
	p.fillFromLookup(p.toolByName("lookup_reservation"), map[string]any{"guest": "Anneliese Okafor", "carrier": "Blue Cross", "name": "Jonas Abernathy", "room": "1412"})
	if got := p.values["guest_name"].value; got != "Anneliese Okafor" {
		t.Errorf("guest_name %v, want the reservation's guest", got)
	}
	if got := p.values["insurance_carrier"].value; got != "Blue Cross" {
		t.Errorf("insurance_carrier %v, want the record's carrier", got)
	}
	if p.filled("driver_name") {
		t.Errorf("driver_name filled from a plain name column: %v", p.values["driver_name"].value)
	}
}

// TestRecordNamesWhoseIDFoundIt: the worker found by the new hire's ID is the new hire, so the
// record's name is new_hire_name, over a misheard one, though "new" in the key reads like a
// search; the requester, whom the key does not identify, keeps what was heard.
func TestRecordNamesWhoseIDFoundIt(t *testing.T) {
	tools := []Tool{
		{Name: "lookup_worker", Description: "Look up a worker by ID.", Parameters: json.RawMessage(`{"type":"object","properties":{"new_hire_employee_id":{"type":"string"}},"required":["new_hire_employee_id"]}`)},
		{Name: "record_request", Description: "Record the access request.", Parameters: json.RawMessage(`{"type":"object","properties":{"requester_name":{"type":"string"},"new_hire_name":{"type":"string"},"new_hire_employee_id":{"type":"string"}}}`)},
	}
	d := New(Config{})
	d.Configure("You are the IT service desk.", tools)
	p := d.p
	for name, heard := range map[string]string{"requester_name": "Peto Mash Wierzbicki", "new_hire_name": "Cindy's Bady Eiji"} {
		f := d.m.fieldByName[name]
		p.values[name] = fieldValue{field: f, value: heard}
	}
	p.fillFromLookup(p.toolByName("lookup_worker"), map[string]any{"name": "Adaeze Fontaine-Osei", "worker_type": "contractor"})
	if got := p.values["new_hire_name"].value; got != "Adaeze Fontaine-Osei" {
		t.Errorf("new_hire_name %v, want the name on the worker found by the new hire's ID", got)
	}
	if got := p.values["requester_name"].value; got != "Peto Mash Wierzbicki" {
		t.Errorf("requester_name %v, want what was heard: the key is not the requester's", got)
	}
}

// TestMerchantOnTheStatement: a merchant heard in part ("studio") is the one charge on the card's
// recent transactions whose name shares the most words with it, written as the statement writes
// it; a heard name that matches none, or two as well, is kept as heard; a person's name is never
// taken from the statement.
func TestMerchantOnTheStatement(t *testing.T) {
	tools := []Tool{
		{Name: "lookup_transactions", Description: "Recent transactions on the card.", Parameters: json.RawMessage(`{"type":"object","properties":{"card_last4":{"type":"string"}},"required":["card_last4"]}`)},
		{Name: "record_dispute", Description: "Record the dispute.", Parameters: json.RawMessage(`{"type":"object","properties":{"card_last4":{"type":"string"},"merchant":{"type":"string"},"contact_name":{"type":"string"}}}`)},
	}
	d := New(Config{})
	d.Configure("You are the card disputes desk.", tools)
	p := d.p
	p.toolResult("lookup_transactions", `{"ok":true,"record":{"recent_transactions":"2027-01-14 ZENFIT*STUDIO 8821 $219.00; 2027-01-12 TRADER JOE'S #231 $64.18; 2027-01-09 XCEL ENERGY $88.40; 2027-01-02 ENERGY STUDIO 11 $20.00"}}`)
	merchant, contact := d.m.fieldByName["merchant"], d.m.fieldByName["contact_name"]
	for heard, want := range map[string]string{
		"Fuck Studio the Old Applies": "Fuck Studio the Old Applies", // two entries say studio
		"Then Zenfit Studio":          "Zenfit Studio",
		"Corner Market":               "Corner Market", // no word in common
		"Trader Hose":                 "Trader Joe's",
		"Excel Energy":                "Excel Energy", // two entries say energy
	} {
		p.apply([]fieldValue{{field: merchant, value: heard, spoken: heard}}, intentAnswer)
		if got := p.values["merchant"]; got.value != want || got.spoken != want {
			t.Errorf("merchant heard %q: recorded %v, read back %q; want %q", heard, got.value, got.spoken, want)
		}
	}
	p.apply([]fieldValue{{field: contact, value: "Trader Smith", spoken: "Trader Smith"}}, intentAnswer)
	if got := p.values["contact_name"].value; got != "Trader Smith" {
		t.Errorf("a person's name taken from the statement: %v", got)
	}
}

// TestBookedRecordIsTheOriginal: the flight on a booking looked up by its reference is the
// original flight; the flight a search for the new date finds is the new one; the date an invoice
// was delivered is its delivery date.
func TestBookedRecordIsTheOriginal(t *testing.T) {
	tools := []Tool{
		{Name: "lookup_booking", Description: "Look up a booking.", Parameters: json.RawMessage(`{"type":"object","properties":{"booking_ref":{"type":"string"}},"required":["booking_ref"]}`)},
		{Name: "lookup_flights", Description: "Flights on a date.", Parameters: json.RawMessage(`{"type":"object","properties":{"new_travel_date":{"type":"string","description":"YYYY-MM-DD"}},"required":["new_travel_date"]}`)},
		{Name: "record_rebooking", Description: "Record the rebooking.", Parameters: json.RawMessage(`{"type":"object","properties":{"booking_ref":{"type":"string"},"original_flight":{"type":"string"},"new_flight":{"type":"string"}}}`)},
	}
	d := New(Config{})
	d.Configure("You are the rebooking desk. Look up the booking and the flights.", tools)
	p := d.p
	p.fillFromLookup(p.toolByName("lookup_booking"), map[string]any{"flight": "CA 418", "route": "PDX-ORD"})
	if got := p.values["original_flight"].value; got != "CA 418" {
		t.Errorf("original_flight %v, want the booked flight", got)
	}
	d2 := New(Config{})
	d2.Configure("You are accounts receivable. Look up the invoice.", []Tool{
		{Name: "lookup_invoice", Description: "Look up an invoice.", Parameters: json.RawMessage(`{"type":"object","properties":{"invoice_number":{"type":"string"}},"required":["invoice_number"]}`)},
		{Name: "record_claim", Description: "Record the claim.", Parameters: json.RawMessage(`{"type":"object","properties":{"delivery_date":{"type":"string","description":"YYYY-MM-DD"},"claim_date":{"type":"string","description":"YYYY-MM-DD"}}}`)},
	})
	d2.p.fillFromLookup(d2.p.toolByName("lookup_invoice"), map[string]any{"delivered": "2026-11-30", "posted": "2026-12-01"})
	if got := d2.p.values["delivery_date"].value; got != "2026-11-30" {
		t.Errorf("delivery_date %v, want the invoice's delivered date", got)
	}
	if d2.p.filled("claim_date") {
		t.Errorf("claim_date filled from the invoice: %v", d2.p.values["claim_date"].value)
	}
	if p.filled("new_flight") {
		t.Errorf("new_flight filled from the booking: %v", p.values["new_flight"].value)
	}
	p.fillFromLookup(p.toolByName("lookup_flights"), map[string]any{"flight": "CA 1187"})
	if got := p.values["new_flight"].value; got != "CA 1187" {
		t.Errorf("new_flight %v, want the flight found for the new date", got)
	}
}

// TestCodeOnRecord: a code the caller reads for the asked field is the reference on record it is
// heard as ("ach … nine to five … seven seven eight one" is ACH-0925-7781 of the two payments the
// lookup returned), read back; a code that matches no reference is left as heard.
func TestCodeOnRecord(t *testing.T) {
	tools := []Tool{
		{Name: "lookup_payments", Description: "Payments posted to an invoice.", Parameters: json.RawMessage(`{"type":"object","properties":{"invoice_number":{"type":"string"}},"required":["invoice_number"]}`)},
		{Name: "record_request", Description: "Record the request.", Parameters: json.RawMessage(`{"type":"object","properties":{"invoice_number":{"type":"string"},"duplicate_payment_ref":{"type":"string"},"claim_number":{"type":"string"}}}`)},
	}
	d := New(Config{})
	d.Configure("You are accounts receivable. Look up the payments.", tools)
	p := d.p
	p.opened = true
	p.lookups = append(p.lookups, map[string]any{"invoice_total": "3,862.40",
		"payments": "CHK-4471 $3,862.40 posted 2026-11-02; ACH-0925-7781 $3,862.40 posted 2026-11-04"})
	if got := p.codesOnRecord(); fmt.Sprint(got) != "[CHK-4471 ACH-0925-7781]" {
		t.Fatalf("codes on record %v", got)
	}
	for _, c := range []struct {
		field, heard string
		want         any
	}{
		{"duplicate_payment_ref", "the reference on the deck is ach rational mind to five bash seven seven eight one", "ACH-0925-7781"},
		{"duplicate_payment_ref", "the second payment was another reference ach go nine to five seven seven eight one", "ACH-0925-7781"},
		{"duplicate_payment_ref", "it's c h k four four seven one", "CHK-4471"},
		{"claim_number", "it's c l five five two nine one", nil},
	} {
		f := d.m.fieldByName[c.field]
		p.say(f.Question, expectation{kind: expectField, field: f})
		h := d.Question().UnderstandText(t.Context(), c.heard)
		var got any
		if vs := h.h.values; len(vs) == 1 && vs[0].field == f {
			got = vs[0].value
		}
		if c.want == nil {
			if got != nil && strings.Contains(fmt.Sprint(got), "-") {
				t.Errorf("%q: %v, want no reference on record", c.heard, got)
			}
			continue
		}
		if got != c.want || !h.h.values[0].unsure {
			t.Errorf("%q: %v, want %v to read back (%s)", c.heard, got, c.want, h.h.why)
		}
	}
}
