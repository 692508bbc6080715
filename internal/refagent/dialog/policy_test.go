package dialog

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// An approval-gated desk, as a real agent would get it over the protocol.
var clinicTools = []Tool{
	{Name: "verify_member", Description: "Check the caller's identity against the member record.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"member_id":{"type":"string"},"date_of_birth":{"type":"string","description":"Date of birth, YYYY-MM-DD"}},"required":["member_id","date_of_birth"]}`)},
	{Name: "lookup_plan", Description: "Look up a verified member's plan.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"member_id":{"type":"string"}},"required":["member_id"]}`)},
	{Name: "kb_search", Description: "Search clinic policies.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)},
	{Name: "update_request", Description: "Record one or more fields of the booking request.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"member_id":{"type":"string"},"visit_date":{"type":"string","description":"YYYY-MM-DD"},` +
			`"callback_phone":{"type":"string"},"visit_type":{"type":"string","enum":["checkup","specialist"]},` +
			`"copay":{"type":["number","string"],"description":"Copay that applies, in dollars"}},"additionalProperties":false}`)},
	{Name: "mark_ready", Description: "Mark the request complete and ready for the caller's review.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	{Name: "request_booking_approval", Description: "Record that you are asking the caller to approve the booking.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"summary":{"type":"string"}}}`)},
	{Name: "book_visit", Description: "Book the visit. Only after the caller approved it.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	{Name: "cancel_membership", Description: "Cancel the caller's membership.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
}

const clinicInstructions = "You are the Lakeside clinic line. Verify the member with member ID and date of birth before looking up the plan. " +
	"Search the knowledge base for the copay rules. Record details with update_request as you learn them, mark the request ready, " +
	"summarise it and ask for approval before you book."

// clinicEnv answers the agent's tool calls like the console's workspace would.
func clinicEnv(name string, args map[string]any) string {
	switch name {
	case "verify_member":
		if args["member_id"] == "4417" && args["date_of_birth"] == "1980-02-03" {
			return `{"verified":true}`
		}
		return `{"verified":false,"message":"the details do not match our records"}`
	case "lookup_plan":
		return `{"record":{"plan_tier":"Gold","member_since":"2011"}}`
	case "kb_search":
		return `{"results":[{"id":"copays","title":"Copays","text":"Silver tier: a specialist visit carries a $40 copay. Gold tier: a specialist visit carries a $25 copay. Visit type for a referral is specialist."}]}`
	case "request_booking_approval":
		return `{"status":"approval_requested"}`
	case "book_visit":
		return `{"committed":"book_visit"}`
	}
	return `{"ok":true}`
}

// textCall holds a text conversation with the agent: each caller turn is typed text, and the
// agent's tool calls are answered by clinicEnv until it speaks, as a client would over the wire.
type textCall struct {
	d     *Dialog
	calls []string // "name args" in order
}

func newTextCall(tb testing.TB) *textCall {
	d := New(Config{Now: func() time.Time { return time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) }})
	d.Configure(clinicInstructions, clinicTools)
	return &textCall{d: d}
}

// say sends a caller text turn and returns what the agent says back, answering its tool calls.
func (tc *textCall) say(tb testing.TB, text string) string {
	tb.Helper()
	tc.d.Heard(tc.d.Question().UnderstandText(tb.Context(), text))
	for range 12 {
		act := tc.d.Next()
		if len(act.Calls) == 0 {
			return act.Say
		}
		for _, c := range act.Calls {
			var args map[string]any
			json.Unmarshal(c.Args, &args)
			tc.calls = append(tc.calls, c.Name+" "+string(c.Args))
			tc.d.ToolResult(c.Name, clinicEnv(c.Name, args))
		}
	}
	tb.Fatal("the agent kept calling tools")
	return ""
}

func expectSaid(t *testing.T, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("agent said %q, want it to contain %q", got, w)
		}
	}
}

// TestPolicyApprovalFlow follows the professional rules end to end in text: what the opening
// names recorded, identity first, lookup after verification, the knowledge base when the
// instructions ask (once for each thing they name, once more about what the call is about before
// marking it ready), each answer recorded at once, values the caller cannot know taken from the
// knowledge, the artifact marked ready, a summary and an approval question after the approval
// tool, a correction re-recorded (and approval asked again), one last turn in which the caller can
// take the yes back, the gated action only then, and a goodbye. The other action tool is never
// called.
func TestPolicyApprovalFlow(t *testing.T) {
	tc := newTextCall(t)
	expectSaid(t, tc.say(t, "Hi, I'd like to book a specialist visit."), "Thank you for calling the Lakeside clinic line.", "What is your member ID?")
	expectSaid(t, tc.say(t, "It's four four one seven."), "What is your date of birth?")
	expectSaid(t, tc.say(t, "February third, nineteen eighty."), "you're verified", "What is the visit date?")
	expectSaid(t, tc.say(t, "It's December fifth."), "What is your callback phone number?")
	got := tc.say(t, "Five oh three, five five five, oh one four seven.")
	expectSaid(t, got, "Here's what I have:", "callback phone number 5 0 3 5 5 5 0 1 4 7", "Do I have your approval to book the visit?")
	got = tc.say(t, "Sorry, I need to correct something. My callback number is actually five oh three, five five five, oh one seven four.")
	expectSaid(t, got, "I've updated that", "5 0 3 5 5 5 0 1 7 4", "Do I have your approval to book the visit?")
	expectSaid(t, tc.say(t, "Yes, go ahead."), "Give me a moment")
	expectSaid(t, tc.say(t, "Okay."), "I've booked the visit", "anything else")
	expectSaid(t, tc.say(t, "No, that's everything. Thanks, bye."), "Goodbye")
	want := []string{
		`update_request {"visit_type":"specialist"}`,
		`update_request {"member_id":"4417"}`,
		`verify_member {"date_of_birth":"1980-02-03","member_id":"4417"}`,
		`lookup_plan {"member_id":"4417"}`,
		`kb_search {"query":"copay rules"}`,
		`update_request {"copay":25}`,
		`update_request {"visit_date":"2026-12-05"}`,
		`update_request {"callback_phone":"503-555-0147"}`,
		`kb_search {"query":"specialist gold"}`,
		`mark_ready {}`,
		`request_booking_approval`,
		`update_request {"callback_phone":"503-555-0174"}`,
		`mark_ready {}`,
		`request_booking_approval`,
		`book_visit {}`,
	}
	if len(tc.calls) != len(want) {
		t.Fatalf("tool calls:\n%s\nwant:\n%s", strings.Join(tc.calls, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(tc.calls[i], want[i]) {
			t.Errorf("call %d = %s, want %s", i, tc.calls[i], want[i])
		}
	}
}

// TestPolicyNoCommitWithoutYes: a declined approval, a yes withdrawn in the same breath, and a yes
// withdrawn in the turn before the agent acts all leave the gated action undone.
func TestPolicyNoCommitWithoutYes(t *testing.T) {
	for name, answer := range map[string]string{"declined": "No, please don't do that.",
		"withdrawn in the same breath": "Yes, go ahead. Actually, wait. No, don't go ahead with that. I'm withdrawing my approval.",
		"withdrawn in the last turn":   "Yes, go ahead."} {
		t.Run(name, func(t *testing.T) {
			tc := newTextCall(t)
			for _, turn := range []string{"Hi, I'd like to book a visit.", "It's four four one seven.", "February third, nineteen eighty.",
				"It's December fifth.", "Five oh three, five five five, oh one four seven."} {
				tc.say(t, turn)
			}
			got := tc.say(t, answer)
			if strings.Contains(got, "Give me a moment") {
				got = tc.say(t, "Actually, wait. No, don't go ahead with that.") // the yes taken back in the last turn
			}
			expectSaid(t, got, "I will not go ahead", "anything else")
			tc.say(t, "No, that's everything. Bye.")
			for _, c := range tc.calls {
				if strings.HasPrefix(c, "book_visit") || strings.HasPrefix(c, "cancel_membership") {
					t.Errorf("called %s without an approval", c)
				}
			}
		})
	}
}

// TestPolicyVerificationFails: details that do not match are asked for again once; after a second
// failure the agent says it cannot access the account and never looks it up.
func TestPolicyVerificationFails(t *testing.T) {
	tc := newTextCall(t)
	tc.say(t, "Hi, I'd like to book a visit.")
	tc.say(t, "It's nine nine nine nine.")
	expectSaid(t, tc.say(t, "February third, nineteen eighty."), "don't match our records", "What is your member ID?")
	tc.say(t, "It's nine nine nine nine.")
	expectSaid(t, tc.say(t, "February third, nineteen eighty."), "couldn't verify", "What is the visit date?")
	n := 0
	for _, c := range tc.calls {
		if strings.HasPrefix(c, "lookup_plan") {
			t.Errorf("looked up an unverified member: %s", c)
		}
		if strings.HasPrefix(c, "verify_member") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("verified %d times, want 2", n)
	}
}

// TestModelFromToolDefinitions checks what the agent derives from tool definitions alone.
func TestModelFromToolDefinitions(t *testing.T) {
	tools := make([]toolInfo, len(clinicTools))
	for i, tl := range clinicTools {
		tools[i] = parseTool(tl.Name, tl.Description, tl.Parameters)
	}
	m := newModel(clinicInstructions, tools)
	roles := map[string]string{}
	for _, tl := range m.tools {
		roles[tl.Name] = tl.Role.String()
	}
	want := map[string]string{"verify_member": "verify", "lookup_plan": "lookup", "kb_search": "kb_search", "update_request": "record",
		"mark_ready": "transition", "request_booking_approval": "approval", "book_visit": "commit", "cancel_membership": "other"}
	for k, v := range want {
		if roles[k] != v {
			t.Errorf("%s: role %s, want %s", k, roles[k], v)
		}
	}
	var order []string
	for _, f := range m.fields {
		order = append(order, f.Name)
	}
	if !slices.Equal(order, []string{"member_id", "visit_date", "callback_phone", "visit_type", "copay"}) {
		t.Errorf("fields in schema order: %v", order)
	}
	if m.org != "the Lakeside clinic line" || m.kbQuery != "copay rules" || m.artifact != "booking request" {
		t.Errorf("org %q, kb query %q, artifact %q", m.org, m.kbQuery, m.artifact)
	}
	for _, tc := range []struct{ name, kind, question string }{
		{"loss_date", "date", "What is the loss date?"},
		{"date_of_birth", "date", "What is your date of birth?"},
		{"callback_phone", "phone", "What is your callback phone number?"},
		{"policy_number", "identifier", "What is your policy number?"},
		{"installment_count", "number", "Next, the installment count. How many installments?"},
		{"steps_tried", "list", "Next, the steps tried. What steps have you already tried?"},
		{"water_shut_off", "yes/no", "Was the water shut off?"},
		{"loss_cause", "choice", "Next, the loss cause. What caused the loss: plumbing leak or storm?"},
		{"email", "email", "What is your email address?"},
	} {
		params := map[string]any{"type": "string"}
		switch tc.kind {
		case "list":
			params = map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
		case "number":
			params = map[string]any{"type": []string{"integer", "string"}}
		case "yes/no":
			params["enum"] = []string{"yes", "no"}
		case "choice":
			params["enum"] = []string{"plumbing_leak", "storm"}
		}
		b, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{tc.name: params}})
		f := parseTool("record_x", "Record fields.", b).Params[0]
		if f.Question != tc.question {
			t.Errorf("%s: question %q, want %q", tc.name, f.Question, tc.question)
		}
		if got := fmt.Sprint(kindNames[f.Kind]); got != tc.kind {
			t.Errorf("%s: kind %s, want %s", tc.name, got, tc.kind)
		}
	}
}

var kindNames = map[valueKind]string{kindText: "text", kindName: "name", kindEmail: "email", kindAddress: "address", kindList: "list",
	kindDateList: "date list", kindDigits: "digits", kindIdentifier: "identifier", kindPhone: "phone", kindDate: "date",
	kindDateRange: "date range", kindNumber: "number", kindChoice: "choice", kindYesNo: "yes/no"}

// Amounts the caller cannot know, read from policy sentences: a fee the rule names as none, one
// amount for the field named in full, and a rate over the time between two looked-up moments.
// Rates, caps and moments nothing looked up are not read as the amount.
func TestKnowledgeAmounts(t *testing.T) {
	num := func(name string) *field {
		return &field{Name: name, Kind: kindNumber, JSONTypes: []string{"number", "string"}}
	}
	lookups := []map[string]any{{"scheduled_departure": "2026-12-14 19:05", "flight": "CA 418"},
		{"departs": "2026-12-15 06:40", "flight": "CA 1187"}}
	const rate = "Meal vouchers: $12 for every full 4 hours between the original scheduled departure and the new departure, up to $48"
	for _, c := range []struct {
		f        *field
		sentence string
		lookups  []map[string]any
		want     any // nil: nothing read
	}{
		{num("change_fee"), "Rebooking on the same route within 7 days carries no change fee and no fare difference", nil, 0.0},
		{num("change_fee"), "A change fee of $75 applies to basic fares", nil, 75.0},
		{num("cancellation_fee"), "Rebooking carries no change fee", nil, nil},
		{num("hotel_voucher"), "If the traveller has to stay overnight away from home, issue a hotel voucher of $150 for the night", nil, 150.0},
		{num("hotel_voucher"), "Hotel vouchers cover up to $150 a night", nil, nil},
		{num("meal_voucher"), rate, lookups, 24.0},                                            // 11 h 35 min: two full 4-hour blocks
		{num("meal_voucher"), strings.Replace(rate, "every full", "every", 1), lookups, 36.0}, // three started blocks
		{num("meal_voucher"), strings.Replace(rate, "up to $48", "up to $20", 1), lookups, 20.0},
		{num("meal_voucher"), rate, lookups[:1], nil}, // no new departure looked up yet
		{num("meal_voucher"), rate, nil, nil},
	} {
		p := newPolicy(&model{})
		p.lookups = c.lookups
		low := " " + strings.ToLower(c.sentence) + " "
		v, ok := p.knowledgeValue(c.f, c.sentence, low, false)
		switch {
		case c.want == nil && ok:
			t.Errorf("%s from %q = %v; want nothing read", c.f.Name, c.sentence, v.value)
		case c.want != nil && (!ok || fmt.Sprint(v.value) != fmt.Sprint(c.want)):
			t.Errorf("%s from %q = %v, %v; want %v", c.f.Name, c.sentence, v.value, ok, c.want)
		}
	}
}

// TestReadBackResumesAfterNews: a caller who breaks into "That's Based. Is that right?" with a
// change of another field ("Actually, I need to change the start date …") has not answered the
// read-back: once the change is recorded, the name is read back again before the request is
// marked ready, and a yes then settles it. It is put again once: a caller who breaks in again is
// not asked round and round (the synthetic caller, whose policy-number repair landed in the phone
// turn after turn, was, until the call's time ran out).
func TestReadBackResumesAfterNews(t *testing.T) {
	tools := []Tool{
		{Name: "record_leave", Description: "Record fields of the leave request.", Parameters: json.RawMessage(
			`{"type":"object","properties":{"leave_start":{"type":"string","description":"YYYY-MM-DD"},"manager_name":{"type":"string"}}}`)},
		{Name: "mark_ready", Description: "Mark the request ready for review.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	}
	start := func() (*policy, *field, *field) {
		d := New(Config{Now: func() time.Time { return time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) }})
		d.Configure("You are the HR leave line. Record the request and mark it ready.", tools)
		p := d.p
		p.opened = true
		start, manager := d.m.fieldByName["leave_start"], d.m.fieldByName["manager_name"]
		p.values[start.Name] = fieldValue{field: start, value: "2027-01-11", spoken: "January eleventh"}
		heardName := fieldValue{field: manager, value: "Based", spoken: "Based"}
		p.values[manager.Name] = heardName
		p.exp = expectation{kind: expectConfirm, field: manager, value: &heardName}
		return p, start, manager
	}
	// breakIn says a change of the start date and returns what the agent says next; first, the
	// request must not be marked ready on the way.
	breakIn := func(p *policy, start *field, date string, first bool) string {
		p.heard(heard{intent: intentCorrection, spoken: true, values: []fieldValue{{field: start, value: date, spoken: date}}})
		for range 6 {
			act := p.next()
			if len(act.calls) == 0 {
				return act.say
			}
			for _, c := range act.calls {
				if c.name == "mark_ready" && first {
					t.Fatalf("marked ready with the name's read-back unanswered")
				}
				p.toolResult(c.name, `{"ok":true}`)
			}
		}
		t.Fatal("the agent kept calling tools")
		return ""
	}

	p, startDate, manager := start()
	said := breakIn(p, startDate, "2027-01-18", true)
	if !strings.Contains(said, "That's Based") && !strings.Contains(said, "that's Based") || p.exp.kind != expectConfirm || p.exp.field != manager {
		t.Fatalf("after the change the agent said %q (expecting %v), want the name read back again", said, p.exp.kind)
	}
	p.heard(heard{intent: intentYes, spoken: true})
	if !p.state(manager.Name).confirmed {
		t.Errorf("the yes to the resumed read-back did not confirm the name")
	}

	p, startDate, manager = start()
	breakIn(p, startDate, "2027-01-18", true)
	if said := breakIn(p, startDate, "2027-01-25", false); p.exp.kind == expectConfirm && p.exp.field == manager {
		t.Errorf("the name's read-back was put a third time: %q", said)
	}
}

// TestUnsettledValuesCheckedBeforeReady: before the request is marked ready, a value the caller
// refused and never gave again is asked for once more (one character at a time), and a value whose
// read-back the caller broke into twice is read back once more; a value the caller refused is not
// filed while the caller can still be asked, and nothing is asked round and round.
func TestUnsettledValuesCheckedBeforeReady(t *testing.T) {
	tools := []Tool{
		{Name: "record_leave", Description: "Record fields of the leave request.", Parameters: json.RawMessage(
			`{"type":"object","properties":{"employee_id":{"type":"string"},"leave_start":{"type":"string","description":"YYYY-MM-DD"},"manager_name":{"type":"string"}}}`)},
		{Name: "mark_ready", Description: "Mark the request ready for review.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	}
	start := func() (*policy, map[string]*field) {
		d := New(Config{Now: func() time.Time { return time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) }})
		d.Configure("You are the HR leave line. Record the request and mark it ready.", tools)
		p := d.p
		p.opened = true
		return p, d.m.fieldByName
	}
	// turn applies one spoken caller turn and returns what the agent says next and whether it
	// marked the request ready on the way.
	turn := func(p *policy, h heard) (string, bool) {
		h.spoken = true
		p.heard(h)
		ready := false
		for range 6 {
			act := p.next()
			if len(act.calls) == 0 {
				return act.say, ready
			}
			for _, c := range act.calls {
				ready = ready || c.name == "mark_ready"
				p.toolResult(c.name, `{"ok":true}`)
			}
		}
		t.Fatal("the agent kept calling tools")
		return "", false
	}
	answer := func(f *field, v string) heard {
		return heard{intent: intentAnswer, values: []fieldValue{{field: f, value: v, spoken: v}}}
	}

	// A refused employee ID whose repair was not understood.
	p, fs := start()
	id, startDate, manager := fs["employee_id"], fs["leave_start"], fs["manager_name"]
	said, _ := turn(p, answer(id, "PL30960U"))
	expectSaid(t, said, "That's P, L, three, zero, nine, six, zero, U.")
	said, _ = turn(p, heard{intent: intentNo})
	expectSaid(t, said, "What is your employee ID?")
	said, ready := turn(p, heard{intent: intentNone})
	if ready {
		t.Fatalf("marked ready with the refused PL30960U on record")
	}
	expectSaid(t, said, "What is the leave start date?")
	said, _ = turn(p, answer(startDate, "2027-01-18"))
	expectSaid(t, said, "What is the manager name?")
	said, _ = turn(p, answer(manager, "Gustavo Ferreira"))
	expectSaid(t, said, "That's Gustavo Ferreira. Is that right?")
	said, ready = turn(p, heard{intent: intentYes})
	if ready || p.exp.field != id || !p.exp.spell {
		t.Fatalf("with the ID refused the agent said %q (ready %v), want the ID asked for one character at a time", said, ready)
	}
	expectSaid(t, said, "Before I finish, I still need the employee ID.", "one letter or digit at a time")
	said, _ = turn(p, answer(id, "PL30962"))
	expectSaid(t, said, "That's P, L, three, zero, nine, six, two.")
	if _, ready = turn(p, heard{intent: intentYes}); !ready {
		t.Errorf("the confirmed ID did not let the request be marked ready")
	}
	if got := p.values[id.Name].value; got != "PL30962" {
		t.Errorf("employee ID on record %v, want PL30962", got)
	}

	// Asked once more only: a second repair not understood lets the request go ahead.
	p, fs = start()
	id, startDate, manager = fs["employee_id"], fs["leave_start"], fs["manager_name"]
	p.values[startDate.Name] = fieldValue{field: startDate, value: "2027-01-18", spoken: "January eighteenth"}
	p.values[manager.Name] = fieldValue{field: manager, value: "Gustavo Ferreira", spoken: "Gustavo Ferreira"}
	turn(p, answer(id, "PL30960U"))
	turn(p, heard{intent: intentNo})
	said, _ = turn(p, heard{intent: intentNone})
	expectSaid(t, said, "Before I finish, I still need the employee ID.")
	if _, ready = turn(p, heard{intent: intentNone}); !ready {
		t.Errorf("the ID was asked for a third time instead of the request going ahead")
	}

	// A read-back broken into twice is put once more before the request is marked ready.
	p, fs = start()
	id, startDate, manager = fs["employee_id"], fs["leave_start"], fs["manager_name"]
	p.values[id.Name] = fieldValue{field: id, value: "PL30962", spoken: "PL30962"}
	p.state(id.Name).confirmed = true
	turn(p, answer(startDate, "2027-01-11"))
	said, _ = turn(p, answer(manager, "Based"))
	expectSaid(t, said, "That's Based.")
	correct := func(v string) heard {
		return heard{intent: intentCorrection, values: []fieldValue{{field: startDate, value: v, spoken: v}}}
	}
	said, _ = turn(p, correct("2027-01-18"))
	expectSaid(t, said, "that's Based")
	said, ready = turn(p, correct("2027-01-25"))
	if ready || p.exp.kind != expectConfirm || p.exp.field != manager {
		t.Fatalf("after the second break-in the agent said %q (ready %v), want the name read back before marking ready", said, ready)
	}
	expectSaid(t, said, "Before I finish, the name of the manager: that's Based. Is that right?")
	if _, ready = turn(p, heard{intent: intentYes}); !ready {
		t.Errorf("the confirmed name did not let the request be marked ready")
	}
}

// TestCorrectedReadBackIsSettled: a value the caller gave in reply to a refused read-back, and
// that needs no read-back of its own, is not read back again before the request is marked ready.
func TestCorrectedReadBackIsSettled(t *testing.T) {
	tools := []Tool{
		{Name: "record_election", Description: "Record fields of the election.", Parameters: json.RawMessage(
			`{"type":"object","properties":{"plan_year":{"type":"integer"}}}`)},
		{Name: "mark_ready", Description: "Mark the election ready for review.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	}
	d := New(Config{Now: func() time.Time { return time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) }})
	d.Configure("You are the benefits line. Record the election and mark it ready.", tools)
	p := d.p
	p.opened = true
	year := d.m.fieldByName["plan_year"]
	p.heard(heard{intent: intentAnswer, spoken: true, values: []fieldValue{{field: year, value: 20.27, spoken: "20.27", unsure: true}}})
	act := p.next()
	for ; len(act.calls) > 0; act = p.next() {
		p.toolResult(act.calls[0].name, `{"ok":true}`)
	}
	expectSaid(t, act.say, "That's 20.27. Is that right?")
	p.heard(heard{intent: intentCorrection, spoken: true, values: []fieldValue{{field: year, value: 2027, spoken: "2027"}}})
	for range 6 {
		act := p.next()
		if len(act.calls) == 0 {
			t.Fatalf("the agent said %q, want the corrected year taken and the election marked ready", act.say)
		}
		for _, c := range act.calls {
			if c.name == "mark_ready" {
				return
			}
			p.toolResult(c.name, `{"ok":true}`)
		}
	}
	t.Fatal("the agent kept calling tools")
}

// TestLeaveDatesStayInOrder: a corrected date the caller did not place by name goes to the end of
// a start/end pair when taking it for the start would start the leave after it ends; and a
// correction said without its year does not take the year of the reading the caller refused.
func TestLeaveDatesStayInOrder(t *testing.T) {
	tools := []Tool{
		{Name: "record_leave", Description: "Record fields of the leave request.", Parameters: json.RawMessage(
			`{"type":"object","properties":{"leave_start":{"type":"string","description":"YYYY-MM-DD"},"leave_end":{"type":"string","description":"YYYY-MM-DD"},"manager_name":{"type":"string"}}}`)},
		{Name: "mark_ready", Description: "Mark the request ready for review.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	}
	start := func() (*Dialog, *policy, map[string]*field) {
		d := New(Config{Now: func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) }})
		d.Configure("You are the HR leave line. Record the request and mark it ready.", tools)
		d.p.opened = true
		return d, d.p, d.m.fieldByName
	}

	d, p, fs := start()
	begin, end, manager := fs["leave_start"], fs["leave_end"], fs["manager_name"]
	p.values[begin.Name] = fieldValue{field: begin, value: "2027-01-18", spoken: "January 18th"}
	p.values[end.Name] = fieldValue{field: end, value: "2027-02-05", spoken: "February 5th"}
	name := fieldValue{field: manager, value: "Gustavo Ferreira", spoken: "Gustavo Ferreira"}
	p.values[manager.Name] = name
	p.lastField = begin
	p.say("And the name of the manager: that's Gustavo Ferreira. Is that right?", expectation{kind: expectConfirm, field: manager, value: &name})
	h := d.Question().UnderstandText(t.Context(), "And since it's still four weeks, hyundai changes too. Sorry, it should be Friday, February twelfth.")
	if got := h.Fields(); got["leave_end"] != "2027-02-12" || got["leave_start"] != nil {
		t.Errorf("the unplaced correction gave %v (%s), want leave_end 2027-02-12", got, h.Why())
	}
	// Named, the field is the caller's to choose.
	h = d.Question().UnderstandText(t.Context(), "Actually the start date should be Friday, February twelfth.")
	if got := h.Fields(); got["leave_start"] != "2027-02-12" {
		t.Errorf("the correction naming the start date gave %v, want leave_start 2027-02-12", got)
	}

	_, p, fs = start()
	begin = fs["leave_start"]
	misheard := fieldValue{field: begin, value: "2029-03-28", spoken: "March 28th, 2029"}
	p.values[begin.Name] = misheard
	p.say("That's March 28th, 2029. Is that right?", expectation{kind: expectConfirm, field: begin, value: &misheard})
	p.heard(heard{intent: intentCorrection, spoken: true, values: []fieldValue{{field: begin, value: "2027-01-11", spoken: "January 11th", yearless: true}}})
	if got := p.values[begin.Name].value; got != "2027-01-11" {
		t.Errorf("the corrected start date is %v, want 2027-01-11 (not the refused reading's year)", got)
	}
}

// TestShortPhoneIsReadBack: a spoken phone number without its area code is read back for a yes or
// no ("My cell is best, two oh eight, five five five, oh one six six" was recorded as 555-0166);
// a whole one is not.
func TestShortPhoneIsReadBack(t *testing.T) {
	for value, readBack := range map[string]bool{"555-0166": true, "208-555-0166": false} {
		tc := newTextCall(t)
		p := tc.d.p
		p.opened = true
		f := tc.d.m.fieldByName["callback_phone"]
		p.heard(heard{intent: intentVolunteer, spoken: true, values: []fieldValue{{field: f, value: value, spoken: value}}})
		act := p.next()
		for ; len(act.calls) > 0; act = p.next() {
			for _, c := range act.calls {
				p.toolResult(c.name, `{"ok":true}`)
			}
		}
		if got := p.exp.kind == expectConfirm && p.exp.field == f; got != readBack {
			t.Errorf("%s: agent said %q (read back %v), want read back %v", value, act.say, got, readBack)
		}
	}
}

// TestRefusedReadingNotRecordedAgain: the same words said the same way are heard the same way, so
// a reading the caller said was wrong comes back when they repeat it. The agent puts the
// recognizer's best other reading of the turn to them instead, and records that; only when every
// reading was refused does the value stand as heard.
func TestRefusedReadingNotRecordedAgain(t *testing.T) {
	tools := []Tool{
		{Name: "record_leave", Description: "Record fields of the leave request.", Parameters: json.RawMessage(
			`{"type":"object","properties":{"employee_id":{"type":"string"},"manager_name":{"type":"string"}}}`)},
		{Name: "mark_ready", Description: "Mark the request ready for review.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	}
	d := New(Config{Now: func() time.Time { return time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) }})
	d.Configure("You are the HR leave line. Record the request and mark it ready.", tools)
	p := d.p
	p.opened = true
	id := d.m.fieldByName["employee_id"]
	var recorded []string
	turn := func(h heard) string {
		h.spoken = true
		p.heard(h)
		for range 6 {
			act := p.next()
			if len(act.calls) == 0 {
				return act.say
			}
			for _, c := range act.calls {
				if c.name == "record_leave" {
					recorded = append(recorded, string(c.args))
				}
				p.toolResult(c.name, `{"ok":true}`)
			}
		}
		t.Fatal("the agent kept calling tools")
		return ""
	}
	reading := func(v string) fieldValue { return fieldValue{field: id, value: v, spoken: v} }
	// The n-best of "P L, three oh nine six two" as the code grammar hears it, best first.
	heardID := func() heard {
		v := reading("PL30960U")
		v.alts = []fieldValue{reading("PL3096U"), reading("PL30962")}
		return heard{intent: intentAnswer, values: []fieldValue{v}}
	}

	expectSaid(t, turn(heardID()), "That's P, L, three, zero, nine, six, zero, U. Is that right?")
	expectSaid(t, turn(heard{intent: intentNo}), "What is your employee ID?")
	said := turn(heardID())
	expectSaid(t, said, "That's P, L, three, zero, nine, six, U. Is that right?")
	if got := p.values[id.Name].value; got != "PL3096U" {
		t.Fatalf("after PL30960U was refused the same turn recorded %v, want the next reading PL3096U", got)
	}
	expectSaid(t, turn(heard{intent: intentNo}), "one letter or digit at a time")
	said = turn(heardID())
	expectSaid(t, said, "That's P, L, three, zero, nine, six, two. Is that right?")
	if got := p.values[id.Name].value; got != "PL30962" {
		t.Errorf("with two readings refused the turn recorded %v, want PL30962", got)
	}
	if want := `{"employee_id":"PL30962"}`; recorded[len(recorded)-1] != want {
		t.Errorf("last record call %s, want %s", recorded[len(recorded)-1], want)
	}

	// Every reading refused: the value stands as heard (the caller is not left without one).
	st := p.state(id.Name)
	for _, v := range []string{"PL30960U", "PL3096U", "PL30962"} {
		st.refuse(v)
	}
	if got := st.notRefused(heardID().values[0]); got.value != "PL30960U" {
		t.Errorf("every reading refused: got %v, want the best reading PL30960U", got.value)
	}
}

// TestDirectoryAfterARefusedName: a name the caller never refused stands as the open vocabulary
// heard it; once they refused one reading of it, the names directory's reading of the next turn
// is put to them instead of the open vocabulary's new guess.
func TestDirectoryAfterARefusedName(t *testing.T) {
	manager := &field{Name: "manager_name", Kind: kindName, Subject: "name of the manager"}
	heardAs := fieldValue{field: manager, value: "Base On the Ferry", spoken: "Base On the Ferry",
		alts: []fieldValue{{field: manager, value: "Gustavo Ferreira", spoken: "Gustavo Ferreira", directory: true, unsure: true}}}
	st := &fieldState{}
	if got := st.notRefused(heardAs); got.value != "Base On the Ferry" {
		t.Errorf("nothing refused yet: got %v, want the open reading", got.value)
	}
	st.refuse("Based")
	got := st.notRefused(heardAs)
	if got.value != "Gustavo Ferreira" || !got.unsure {
		t.Errorf("after Based was refused: got %v (unsure %v), want the directory's Gustavo Ferreira, read back", got.value, got.unsure)
	}
	st.refuse("Gustavo Ferreira")
	if got := st.notRefused(heardAs); got.value != "Base On the Ferry" {
		t.Errorf("the directory's reading refused too: got %v, want the open reading", got.value)
	}
}

// TestNamesDirectoryOnlyWhereUsed: the names directory's decode (seconds on a long turn, waited
// for before the agent answers) is asked for only on turns whose directory reading can be used:
// a name read back (decoded once the turn is understood to give the name), a name asked again
// after a refusal, and a name a verify tool takes (decoded alongside the grammars). A name asked
// the first time is recorded as heard; a "yes" to its read-back gives no name.
func TestNamesDirectoryOnlyWhereUsed(t *testing.T) {
	tools := []Tool{
		{Name: "verify_member", Description: "Verify the member by name and date of birth.", Parameters: json.RawMessage(
			`{"type":"object","properties":{"member_name":{"type":"string"},"date_of_birth":{"type":"string"}},"required":["member_name","date_of_birth"]}`)},
		{Name: "record_leave", Description: "Record fields of the leave request.", Parameters: json.RawMessage(
			`{"type":"object","properties":{"manager_name":{"type":"string"}}}`)},
		{Name: "mark_ready", Description: "Mark the request ready for review.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	}
	d := New(Config{Now: func() time.Time { return time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) }})
	d.Configure("You are the HR leave line. Verify the member, record the request and mark it ready.", tools)
	p := d.p
	verify := d.m.tool(roleVerify)
	if verify == nil {
		t.Fatal("the desk has no verify tool")
	}
	manager, member, dob := d.m.fieldByName["manager_name"], d.m.paramField(verify, "member_name"), d.m.paramField(verify, "date_of_birth")
	if manager == nil || member == nil || dob == nil || manager.Kind != kindName || member.Kind != kindName {
		t.Fatalf("the desk's fields: manager %+v, member %+v, date of birth %+v", manager, member, dob)
	}
	name := func(f *field, v string) heard {
		return heard{intent: intentAnswer, values: []fieldValue{{field: f, value: v, spoken: v}}, spoken: true}
	}
	for _, c := range []struct {
		what         string
		exp          expectation
		refused      bool
		wants, ahead bool
	}{
		{"a name asked the first time", expectation{kind: expectField, field: manager}, false, false, false},
		{"a name asked again after a refusal", expectation{kind: expectField, field: manager}, true, true, true},
		{"a name a verify tool takes", expectation{kind: expectField, field: member}, false, true, true},
		{"a name's read-back", expectation{kind: expectConfirm, field: manager}, false, true, false},
		{"a date asked", expectation{kind: expectField, field: dob}, false, false, false},
	} {
		p.fields = map[string]*fieldState{}
		if c.refused {
			p.state(manager.Name).refuse("Based")
		}
		p.exp = c.exp
		q := d.Question()
		if q.WantsNames() != c.wants || q.NamesAhead() != c.ahead {
			t.Errorf("%s: WantsNames %v NamesAhead %v, want %v %v", c.what, q.WantsNames(), q.NamesAhead(), c.wants, c.ahead)
		}
		if c.exp.kind == expectConfirm {
			if q.NeedsNames(Heard{heard{intent: intentYes, spoken: true}}) {
				t.Errorf("%s: a yes needs the directory", c.what)
			}
			if !q.NeedsNames(Heard{name(manager, "Gustavo Ferrier")}) {
				t.Errorf("%s: the name said again does not need the directory", c.what)
			}
			if q.NeedsNames(Heard{name(member, "Anders Obi")}) {
				t.Errorf("%s: another field's name needs the directory", c.what)
			}
		}
	}
}

// A failed verification is retried with the readings of its arguments combined, nearest what was
// heard first; the value heard before the caller was asked again is the first other reading when
// this turn's readings hold it too, the last otherwise; a value the caller said yes to is changed
// only after the others' readings were tried with it.
func TestVerifyCandidatesCombineReadings(t *testing.T) {
	tool := parseTool("verify_account", "Verify the caller with account number and service address.", json.RawMessage(
		`{"type":"object","properties":{"account_number":{"type":"string"},"service_address":{"type":"string"}},"required":["account_number","service_address"]}`))
	m := newModel("You are the billing desk. Verify the caller.", []toolInfo{tool})
	acct, addr := &tool.Params[0], &tool.Params[1]
	val := func(f *field, s string) fieldValue { return fieldValue{field: f, value: s, spoken: s} }
	candidates := func(p *policy) []string {
		var out []string
		for _, c := range p.verifyCandidates(&tool) {
			out = append(out, c["account_number"].(string)+" / "+c["service_address"].(string))
		}
		return out
	}

	// Heard again after a failed round: 8H41039257 now, 8841039257 before; the address read again.
	p := newPolicy(m)
	a := val(acct, "8H41039257")
	a.alts = []fieldValue{val(acct, "HH41039257"), val(acct, "8841039257")}
	d := val(addr, "1418 Alter Ct Unit 3D")
	d.alts = []fieldValue{val(addr, "1418 Alder Ct Unit 3B")}
	p.values["account_number"], p.values["service_address"] = a, d
	p.earlier["account_number"] = val(acct, "8841039257")
	p.earlier["service_address"] = val(addr, "1418 All Purports Unit 3D Eugene")
	got := candidates(p)
	want := []string{"8841039257 / 1418 Alter Ct Unit 3D", "8H41039257 / 1418 Alder Ct Unit 3B", "8841039257 / 1418 Alder Ct Unit 3B"}
	if len(got) < 3 || !slices.Equal(slices.Sorted(slices.Values(got[:3])), slices.Sorted(slices.Values(want))) || got[2] != want[2] {
		t.Errorf("candidates %q, want %q first (the two changed together third)", got, want)
	}

	// The account number affirmed: the address's readings come first.
	p = newPolicy(m)
	p.values["account_number"], p.values["service_address"] = a, d
	p.state("account_number").affirmed = `"8H41039257"`
	got = candidates(p)
	if len(got) == 0 || got[0] != "8H41039257 / 1418 Alder Ct Unit 3B" {
		t.Errorf("candidates %q, want the affirmed account number with the address read again first", got)
	}
}

// The street words of the address heard the round before (its value and its other readings) are
// what the address the caller says again is read with besides its own.
func TestStreetBeforeIsTheEarlierRoundsStreet(t *testing.T) {
	for addr, want := range map[string][]string{
		"1418 Older Ct Unit 3B U Eugene":  {"older"},
		"5521 N Kenmore Ave Unit 3W":      {"kenmore"},
		"88 Saint Marys Way":              {"saint", "marys"},
		"Unit 3B":                         nil,
		"fourteen eighteen without digit": nil,
	} {
		if got := streetWords(addr); !slices.Equal(got, want) {
			t.Errorf("streetWords(%q) = %q, want %q", addr, got, want)
		}
	}
	tool := parseTool("verify_account", "Verify the caller with account number and service address.", json.RawMessage(
		`{"type":"object","properties":{"account_number":{"type":"string"},"service_address":{"type":"string"}},"required":["account_number","service_address"]}`))
	m := newModel("You are the billing desk. Verify the caller.", []toolInfo{tool})
	addr := &tool.Params[1]
	p := newPolicy(m)
	if got := p.streetBefore("service_address"); got != nil {
		t.Errorf("streetBefore with nothing heard before = %q, want none", got)
	}
	e := fieldValue{field: addr, value: "1418 Older Ct Unit 3B U Eugene"}
	e.alts = []fieldValue{{field: addr, value: "1418 Alder Ct Unit 3B"}, {field: addr, value: "1418 Alder Ct Unit 3B OH Eugene"}}
	p.earlier["service_address"] = e
	if got := p.streetBefore("service_address"); !slices.Equal(got, []string{"older", "alder"}) {
		t.Errorf("streetBefore = %q, want older, alder", got)
	}
}
