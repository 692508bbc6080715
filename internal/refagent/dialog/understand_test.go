package dialog

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/asr"
)

// words builds recognized words from text; "|" marks a 300 ms pause before the next word.
func words(text string) []asr.Word {
	var out []asr.Word
	t := time.Duration(0)
	for _, w := range strings.Fields(text) {
		if w == "|" {
			t += 300 * time.Millisecond
			continue
		}
		out = append(out, asr.Word{Text: w, Start: t, End: t + 250*time.Millisecond})
		t += 260 * time.Millisecond
	}
	return out
}

func TestSplitItems(t *testing.T) {
	for _, c := range []struct {
		text string
		want []string
	}{
		{"the upstairs bathroom floor the kitchen ceiling right below it and the kitchen cabinets",
			[]string{"upstairs bathroom floor", "kitchen ceiling right below it", "kitchen cabinets"}},
		{"v p n | outlook | sharepoint | and now teams too", []string{"VPN", "outlook", "sharepoint", "teams"}},
		{"restarted the laptop then reinstalled the v p n client then switched to my phone hotspot",
			[]string{"restarted the laptop", "reinstalled the VPN client", "switched to my phone hotspot"}},
		{"email and text message", []string{"email", "text message"}},
		// "Uh, the kitchen ceiling underneath, and, um, the kitchen cabinets": the "um" heard as a
		// word between the "and" and the next item is no item.
		{"the upstairs bathroom floor for sure | but the kitchen ceiling underneath and bomb | the kitchen cabinets",
			[]string{"upstairs bathroom floor for sure", "but the kitchen ceiling underneath", "kitchen cabinets"}},
		// A one-word item said after "and" is one ("the VPN and Outlook, the SharePoint site" aside).
		{"the vpn and outlook | sharepoint", []string{"vpn", "outlook", "sharepoint"}},
	} {
		if got := splitItems(words(c.text)); !slices.Equal(got, c.want) {
			t.Errorf("splitItems(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

// A list answer's items are the things named: not the answer's frame ("she needs"), a quantifier
// ("both"), or the hedge after an item; weekdays are recorded as the day's name.
func TestListItemsAreTheThingsNamed(t *testing.T) {
	list := &field{Name: "systems", Kind: kindList, Subject: "systems"}
	l := &listener{}
	for _, c := range []struct {
		text string
		want []string
	}{
		{"she needs the finance shared drive and workday reporting", []string{"finance shared drive", "workday reporting"}},
		// The frame as heard ("the" as "to"), and a "but" left over from the next clause.
		{"she needs to finance shared drive | workday reporting", []string{"finance shared drive", "workday reporting"}},
		{"upstairs bathroom floor for sure but | kitchen ceiling", []string{"upstairs bathroom floor", "kitchen ceiling"}},
		{"both | email and text message", []string{"email", "text message"}},
		{"both the email and text message", []string{"email", "text message"}},
		{"only tuesdays or thursdays | i'm afraid", []string{"Tuesday", "Thursday"}},
		{"the upstairs bathroom floor for sure | uh the kitchen ceiling underneath and um the kitchen cabinets",
			[]string{"upstairs bathroom floor", "kitchen ceiling", "kitchen cabinets"}},
		// A thing whose name holds a carrier word stays whole.
		{"the shared drive they use and outlook", []string{"shared drive they use", "outlook"}},
		{"sunday school and the monday meeting", []string{"sunday school", "monday meeting"}},
		// How many there are is no item; a spelling is the item it spells, written as spelled.
		{"two kids | meera | m e e r a and kavi | k a v i", []string{"Meera", "Kavi"}},
		{"two kids | mira | m e e r a and kavi", []string{"Meera", "kavi"}},
	} {
		v, ok := l.freeValue(list, words(c.text), c.text, Utterance{})
		got, _ := v.value.([]string)
		if !ok || !slices.Equal(got, c.want) {
			t.Errorf("list from %q = %q, %v; want %q", c.text, got, ok, c.want)
		}
	}
}

// The recognizer writes a count of four as "for": read as four where no preposition can stand.
func TestFourForFor(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"wait sorry hold on i need for payments that's too much of months", "wait sorry hold on i need four payments that's too much of months"},
		{"i'm actually that's wrong i said for", "i'm actually that's wrong i said four"},
		{"let's do for", "let's do four"},
		{"i'm actually that's wrong i said floor", "i'm actually that's wrong i said four"},
		{"i said floor five", "i said floor five"},
		{"hang on hang on | for payments not what i said before", "hang on hang on four payments not what i said before"},
		{"thanks | for everything", "thanks for everything"},
		{"sorry to cut you off but make it for payments i can't swing that much each month", "sorry to cut you off but make it four payments i can't swing that much each month"},
		{"i need it for work", "i need it for work"},
		{"what is that for", "what is that for"},
		{"i need for payments to be smaller", "i need for payments to be smaller"},
		{"thanks for calling", "thanks for calling"},
	} {
		got := fourForFor(asr.Result{Text: strings.ReplaceAll(c.in, "| ", ""), Words: words(c.in)})
		if got.Text != c.want {
			t.Errorf("fourForFor(%q) = %q, want %q", c.in, got.Text, c.want)
		}
	}
}

// The recognizer writes "email" as "a male" where it ends a phrase; the list it is in reads as
// said ("both", heard "those", is no item).
func TestEmailForAMale(t *testing.T) {
	f := &field{Name: "contact_methods", Kind: kindList, Subject: "contact methods"}
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"text message and a male those", []string{"text message", "email"}},
		{"a male and text message", []string{"email", "text message"}},
		{"both e mail | and text", []string{"email", "text"}},
		{"a male nurse and a doctor", []string{"male nurse", "doctor"}},
	} {
		r := emailForAMale(asr.Result{Text: strings.ReplaceAll(c.in, "| ", ""), Words: words(c.in)})
		v, ok := (&listener{}).freeValue(f, r.Words, r.Text, Utterance{})
		if got, _ := v.value.([]string); !ok || !slices.Equal(got, c.want) {
			t.Errorf("%q: read %q (%v), want %q", c.in, v.value, ok, c.want)
		}
	}
}

// The recognizer writes a spoken zero ("oh") as "or" in numbers; "or" between choices stays.
func TestZeroForOr(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"six or eight one", "six oh eight one"},
		{"fifteen or two magnolia boulevard in burbank unit nine nine one five or six", "fifteen oh two magnolia boulevard in burbank unit nine nine one five oh six"},
		{"two or three payments", "two or three payments"},
		{"email or text", "email or text"},
		{"twenty or thirty minutes", "twenty or thirty minutes"},
		{"or six", "or six"},
	} {
		got := zeroForOr(asr.Result{Text: c.in, Words: words(c.in)})
		if got.Text != c.want || len(got.Words) != len(strings.Fields(c.want)) {
			t.Errorf("zeroForOr(%q) = %q, want %q", c.in, got.Text, c.want)
		}
	}
	// The caller's address as the recognizer heard it reads as the address said.
	f := &field{Name: "new_address", Kind: kindAddress, Subject: "new address"}
	text := zeroForOr(asr.Result{Text: "fifteen or two magnolia boulevard in burbank", Words: words("fifteen or two magnolia boulevard in burbank")})
	v, ok := (&listener{}).freeValue(f, text.Words, text.Text, Utterance{})
	if s, _ := v.value.(string); !ok || !strings.HasPrefix(s, "1502 Magnolia") {
		t.Errorf("address from %q = %q, %v; want 1502 Magnolia …", text.Text, v.value, ok)
	}
}

func TestFreeValues(t *testing.T) {
	l := &listener{now: func() time.Time { return time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) }}
	email := &field{Name: "email", Kind: kindEmail, Subject: "email address"}
	name := &field{Name: "plumber_name", Kind: kindName, Subject: "name of the plumber"}
	choice := &field{Name: "scope", Kind: kindChoice, Enum: []string{"single_user", "team", "site"}, Subject: "scope"}
	yes := &field{Name: "water_shut_off", Kind: kindYesNo, Enum: []string{"yes", "no"}, Subject: "water shut off"}
	medication := &field{Name: "medication", Kind: kindText, Subject: "medication"}
	for _, c := range []struct {
		f    *field
		text string
		want any
		ok   bool
	}{
		{email, "it's priya dot v at northwind dot example", "priya.v@northwind.example", true},
		{email, "it's pre about the yep north without example", nil, false},
		{name, "it's twin cities rooter", "Twin Cities Rooter", true},
		// "It should be …" heard without its "it" (as the names directory hears it).
		{name, "should peto mash wierzbicki", "Peto Mash Wierzbicki", true},
		// News of something else, said while the name was asked, is no name.
		{name, "just so you know the thermostat set fifty seven degrees inside", nil, false},
		{name, "just so you know the thermostat says fifty seven degrees inside", nil, false},
		{name, "um by the way the plumber left at noon", nil, false},
		{choice, "my whole team has the same problem", "team", true},
		{choice, "just me", nil, false},
		{yes, "yes i shut off the main valve right away", "yes", true},
		{yes, "no i didn't", "no", true},
		// A medicine's strength is part of it, written as the pharmacy writes it.
		{medication, "lisinopril twenty milligrams", "lisinopril 20 mg", true},
		{medication, "it's metformin five hundred mg", "metformin 500 mg", true},
		{medication, "lisinopril", "lisinopril", true},
	} {
		v, ok := l.freeValue(c.f, words(c.text), c.text, Utterance{})
		if ok != c.ok || (ok && v.value != c.want) {
			t.Errorf("%s from %q = %v, %v; want %v, %v", c.f.Name, c.text, v.value, ok, c.want, c.ok)
		}
	}
}

// A reply with words the grammar does not know is read from the open transcript; a grammar
// reading of a spelled code is believed only when the open transcript is mostly symbols; news of
// another field's type lands in that field.
func TestForcedGrammarReadings(t *testing.T) {
	tools := make([]toolInfo, len(clinicTools))
	for i, tl := range clinicTools {
		tools[i] = parseTool(tl.Name, tl.Description, tl.Parameters)
	}
	m := newModel(clinicInstructions, tools)
	l := &listener{now: func() time.Time { return time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) }}
	visit, member, phone := m.fieldByName["visit_date"], m.fieldByName["member_id"], m.fieldByName["callback_phone"]
	for _, c := range []struct {
		f       *field
		heard   string // open transcript
		grammar string // what the slot grammar returned
		field   string // where the value lands ("" none)
		want    any
	}{
		{visit, "sure i was hoping for march fourteenth if that works", "sure wednesday march ninth nineteen nineteen thank you", "visit_date", "2027-03-14"},
		{visit, "march fourteenth", "march fourteenth", "visit_date", "2027-03-14"},
		{member, "it's four four one seven", "it's four four one seven", "member_id", "4417"},
		{visit, "it's december fifth", "it's december fifth", "visit_date", "2026-12-05"},
		{phone, "so the number i gave you before is five oh three five five five oh one four seven i think", "yes three two eight five oh three five five five one please", "callback_phone", "503-555-0147"},
		{phone, "it's five of three five five five the line for seven", "it's five oh three five five five oh one four seven", "callback_phone", "503-555-0147"},
		{phone, "share it's kind of three five five five the line for seven", "it's five oh three five five five oh one four seven", "callback_phone", "503-555-0147"},
		{m.fieldByName["copay"], "their estimate was six hundred twelve dollars and forty cents", "yes ten and six cents thank you", "copay", 612.4},
		// Asked for the member ID, the caller gives an amount: it is the copay, not a code.
		{member, "quick thing the shop sent me a quote it's six hundred twelve dollars", "five n k two a i s h r p j", "copay", 612.0},
	} {
		slot := c.f.slot(func(string) bool { return true })
		ans := asr.Answer{Result: asr.Result{Text: c.grammar}}
		ans.Value, ans.OK = slot.Parse(c.grammar)
		lm := asr.Result{Text: c.heard, Words: words(c.heard)}
		exp := expectation{kind: expectField, field: c.f, open: m.allFields()}
		h := l.understand(t.Context(), m, exp, Utterance{Open: lm, Readings: []Reading{{Slot: *slot, Answer: ans}}, Spoken: true})
		var field string
		var got any
		if len(h.values) == 1 {
			field, got = h.values[0].field.Name, h.values[0].value
		}
		if field != c.field || got != c.want {
			t.Errorf("%s heard %q, grammar %q: %s = %v, want %s = %v (%s)", c.f.Name, c.heard, c.grammar, field, got, c.field, c.want, h.why)
		}
	}
}

// A turn is read against the question asked: an answer, "I don't have that", a bare "okay", a
// correction of another field (with its value re-read after the preamble), news about another
// field, and a correction the agent cannot place.
func TestUnderstandText(t *testing.T) {
	tools := make([]toolInfo, len(clinicTools))
	for i, tl := range clinicTools {
		tools[i] = parseTool(tl.Name, tl.Description, tl.Parameters)
	}
	m := newModel(clinicInstructions, tools)
	l := &listener{now: func() time.Time { return time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) }}
	visit := m.fieldByName["visit_date"]
	for _, c := range []struct {
		text   string
		intent intent
		field  string
		value  any
	}{
		{"it's december fifth", intentAnswer, "visit_date", "2026-12-05"},
		{"sorry i don't have that", intentUnknown, "", nil},
		{"okay", intentAcknowledge, "", nil},
		{"sorry i need to correct something my callback number is actually five oh three five five five oh one seven four", intentCorrection, "callback_phone", "503-555-0174"},
		{"oh and something came up the copay is forty dollars", intentVolunteer, "copay", 40.0},
		{"sorry i need to correct something about the thing actually blue", intentUnplaced, "", nil},
		// A caller who missed the question asks for it again (as heard, barging in).
		{"sorry to cut in and i didn't hear that over the kid you say it again", intentRepeat, "", nil},
		{"wait sorry you cut out of bed what was the question", intentRepeat, "", nil},
	} {
		ws := words(c.text)
		lm := asr.Result{Text: c.text, Words: ws}
		slot := visit.slot(func(string) bool { return true })
		ans := asr.Answer{Result: lm}
		ans.Value, ans.OK = slot.Parse(c.text)
		h := l.understand(t.Context(), m, expectation{kind: expectField, field: visit}, Utterance{Open: lm, Readings: []Reading{{Slot: *slot, Answer: ans}}})
		if h.intent != c.intent {
			t.Errorf("%q: intent %d, want %d", c.text, h.intent, c.intent)
			continue
		}
		if c.field != "" && (len(h.values) != 1 || h.values[0].field.Name != c.field || h.values[0].value != c.value) {
			t.Errorf("%q: values %+v, want %s=%v", c.text, h.values, c.field, c.value)
		}
	}
}

// TestOpenTranscriptIsAnAlternative: when the grammar read one code and the open vocabulary heard
// another ("it ends in four four one seven" against the grammar's 8417), the open transcript's
// value is the first reading a failed verification retries.
func TestOpenTranscriptIsAnAlternative(t *testing.T) {
	tools := make([]toolInfo, len(clinicTools))
	for i, tl := range clinicTools {
		tools[i] = parseTool(tl.Name, tl.Description, tl.Parameters)
	}
	m := newModel(clinicInstructions, tools)
	l := &listener{now: func() time.Time { return time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) }}
	member := m.fieldByName["member_id"]
	slot := member.slot(func(string) bool { return true })
	const heard, grammar = "it ends in four four one seven", "it's eight four one seven"
	ans := asr.Answer{Result: asr.Result{Text: grammar}}
	ans.Value, ans.OK = slot.Parse(grammar)
	lm := asr.Result{Text: heard, Words: words(heard)}
	h := l.understand(t.Context(), m, expectation{kind: expectField, field: member, open: m.allFields()},
		Utterance{Open: lm, Readings: []Reading{{Slot: *slot, Answer: ans}}, Spoken: true})
	if len(h.values) != 1 || h.values[0].field != member {
		t.Fatalf("values %+v (%s)", h.values, h.why)
	}
	v := h.values[0]
	if v.value != "8417" || len(v.alts) == 0 || v.alts[0].value != "4417" {
		var alts []any
		for _, a := range v.alts {
			alts = append(alts, a.value)
		}
		t.Errorf("member_id %v with alternatives %v, want 8417 with 4417 first", v.value, alts)
	}
}

// A goodbye ends the turn: "bye" heard inside a misheard spelled name, with the request still to
// come, does not end the call.
func TestGoodbyeEndsTheTurn(t *testing.T) {
	for text, want := range map[string]bool{
		"no that's everything thanks for the help by": true,
		"no that's everything thanks a lot bye":       true,
		"that's all thank you have a good one":        true,
		// The courtesies after "that's all" outrun closeTail; the farewell itself ends the call
		// (hr-leave-request: "Sure. Is there anything else I can help you with?", for its "good").
		"that's all thanks for your help have a good day":               true,
		"okay perfect thank you so much for all of your help take care": true,
		"goodbye": true,
		"hi this is still measures bitch t w i p r g b i g k bye into nuanced i've got a contractor starting and i need to get her access shut up": false,
		"that's it i also need to update my phone number and my email address please":                                                              false,
		"my policy number is p a two zero": false,
		"yes that's it":                    false, // a read-back confirmed
		"yes that's it thank you bye":      true,
		"i'm actually that's wrong it should be chill mash we're stupid as t w i t r g d i c k bye": false,
	} {
		if got := saysGoodbye(text); got != want {
			t.Errorf("saysGoodbye(%q) = %v, want %v", text, got, want)
		}
	}
}

// bankTools verify a bank customer and record an address change.
var bankTools = []Tool{
	{Name: "verify_customer", Description: "Verify the caller's identity.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"debit_last4":{"type":"string"},"zip_on_file":{"type":"string"},"date_of_birth":{"type":"string","description":"YYYY-MM-DD"}},"required":["debit_last4","zip_on_file","date_of_birth"]}`)},
	{Name: "record_change", Description: "Record the change.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"effective_date":{"type":"string","description":"YYYY-MM-DD"},"plan_name":{"type":"string"}}}`)},
}

// bankModel is the bank tools' form and a listener on 2026-11-30.
func bankModel() (*model, *listener) {
	tools := make([]toolInfo, len(bankTools))
	for i, tl := range bankTools {
		tools[i] = parseTool(tl.Name, tl.Description, tl.Parameters)
	}
	return newModel("Verify the customer, then record the change.", tools),
		&listener{now: func() time.Time { return time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) }}
}

// When the slot grammar's reading cannot be believed or found no sentence of its own, the asked
// field's value is read from the open transcript: digits the open vocabulary wrote as letters
// ("six o h one"), the run of digits that has the field's length ("my old one is six eight five oh
// six"), a date inside a longer sentence, a date without the year the grammar made up.
func TestOpenTranscriptBacksTheGrammar(t *testing.T) {
	m, l := bankModel()
	for _, c := range []struct {
		field   string
		heard   string // open transcript
		grammar string // what the slot grammar returned
		want    any
	}{
		{"debit_last4", "six o h one", "six oh eight one", "6081"},
		{"zip_on_file", "sorry know the zip code we have on file my old one is six eight five oh six not bad", "six eight five five six", "68506"},
		{"effective_date", "starting january fourth that's when the lease charts", "sure june twenty oh three thanks", "2027-01-04"},
		// A year the open transcript does not bear out is the grammar's invention.
		{"effective_date", "december second so yesterday", "december second twenty thirty eight", "2026-12-02"},
		// … but a year the open vocabulary heard and could not read may be the grammar's right.
		{"date_of_birth", "january seventeenth ninety ninety one", "january seventeenth nineteen ninety one", "1991-01-17"},
		// A birthday without its year has passed.
		{"date_of_birth", "it's october thirty first", "it's october thirty first", "2026-10-31"},
	} {
		var f *field
		for _, af := range m.allFields() {
			if af.Name == c.field {
				f = af
			}
		}
		if f == nil {
			t.Fatalf("no field %s", c.field)
		}
		slot := f.slot(func(string) bool { return true })
		ans := asr.Answer{Result: asr.Result{Text: c.grammar, Words: words(c.grammar)}}
		ans.Value, ans.OK = slot.Parse(c.grammar)
		lm := asr.Result{Text: c.heard, Words: words(c.heard)}
		exp := expectation{kind: expectField, field: f, open: m.allFields()}
		h := l.understand(t.Context(), m, exp, Utterance{Open: lm, Readings: []Reading{{Slot: *slot, Answer: ans}}, Spoken: true})
		var got any
		if len(h.values) == 1 && h.values[0].field == f {
			got = h.values[0].value
		}
		if got != c.want {
			t.Errorf("%s heard %q, grammar %q: got %v (%v), want %v (%s)", c.field, c.heard, c.grammar, got, h.values, c.want, h.why)
		}
	}
}

// TestFillerIsNoAnswer: "mm-hm, take your time" to a question of free text is no value, even with a
// stray word the recognizer made of the hesitation ("age and take your time").
func TestFillerIsNoAnswer(t *testing.T) {
	m, l := bankModel()
	f := m.fieldByName["plan_name"]
	if f == nil {
		t.Fatal("no plan_name field")
	}
	for text, answer := range map[string]bool{
		"age and take your time":        false,
		"okay take your time":           false,
		"evergreen ppo fifteen hundred": true,
	} {
		exp := expectation{kind: expectField, field: f, open: m.allFields()}
		h := l.understand(t.Context(), m, exp, Utterance{Open: asr.Result{Text: text, Words: words(text)}, Spoken: true})
		if got := len(h.values) > 0; got != answer {
			t.Errorf("%q: values %v (%s), want an answer: %v", text, h.values, h.intent, answer)
		}
	}
}

// TestCorrectionGoesToTheNamedField: with two dates recorded, a correction's date goes to the one
// the caller names, also when the recognizer ran its name together ("stargate" for "start date"),
// not to the date recorded last.
func TestCorrectionGoesToTheNamedField(t *testing.T) {
	tools := []toolInfo{parseTool("record_leave", "Record the leave request.", json.RawMessage(
		`{"type":"object","properties":{"leave_start":{"type":"string","description":"YYYY-MM-DD"},"leave_end":{"type":"string","description":"YYYY-MM-DD"},"manager_name":{"type":"string"}}}`))}
	m := newModel("Record the leave request.", tools)
	l := &listener{now: func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }}
	start, end, manager := m.fieldByName["leave_start"], m.fieldByName["leave_end"], m.fieldByName["manager_name"]
	known := func(string) bool { return true }
	slot := *start.slot(known)
	unasked(&slot)
	for _, c := range []struct {
		heard, grammar string
		want           *field
		value          string
	}{
		{"actually i need to change the stargate they pushed the surgery back so it's monday january eighteenth now", "actually monday january eighteenth", start, "2027-01-18"},
		{"actually i need to change the start date it's monday january eighteenth now", "actually monday january eighteenth", start, "2027-01-18"},
		{"and since it's still four weeks the end they changes to sorry it should be friday february twelfth", "sorry friday february twelfth", end, "2027-02-12"},
	} {
		ans := asr.Answer{Result: asr.Result{Text: c.grammar, Words: words(c.grammar)}}
		ans.Value, ans.OK = slot.Parse(c.grammar)
		exp := expectation{kind: expectConfirm, field: manager, last: manager, filled: []*field{start, end, manager},
			values: map[string]any{"leave_start": "2027-01-11", "leave_end": "2027-02-05", "manager_name": "Based"}}
		lm := asr.Result{Text: c.heard, Words: words(c.heard)}
		h := l.understand(t.Context(), m, exp, Utterance{Open: lm, Readings: []Reading{{Slot: slot, Answer: ans}}, Spoken: true})
		if len(h.values) != 1 || h.values[0].field != c.want || h.values[0].value != c.value {
			t.Errorf("%q: %v (%s), want %s=%s", c.heard, h.values, h.why, c.want.Name, c.value)
		}
	}
	// Two fields read the same value from one grammar: the named one is chosen.
	r := &Reading{Slot: slot}
	cands := []candidate{{f: start, r: r}, {f: end, r: r}, {f: manager, r: &Reading{}}}
	if got := preferNamed(cands, m.mentioned(strings.Fields("the end they changes to friday february twelfth"), m.allFields())); got[0].f != end {
		t.Errorf("preferNamed: %s first, want leave_end", got[0].f.Name)
	}
	if got := preferNamed(cands, []*field{manager}); got[0].f != start {
		t.Errorf("preferNamed: %s first, want leave_start (the manager's candidate read another grammar)", got[0].f.Name)
	}
	if !misheardName(start, []string{"stargate"}) || misheardName(end, []string{"stargate"}) || misheardName(start, []string{"started"}) {
		t.Error("misheardName: stargate names the start date only")
	}
}

// TestNoCarriesTheRepairedCode: "No, sorry, my employee ID is W X, five eight two one three" to a
// read-back of WX5AQ13 is a repair with the code said again, read from the open transcript when
// the code grammar, forced through the carrier, covered too little of it; a reading that lost
// digits ("cheeky are two nine three one" for CTR20931) or that repeats the read-back is a plain no.
func TestNoCarriesTheRepairedCode(t *testing.T) {
	tools := []Tool{{Name: "record_leave", Description: "Record the leave request.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"employee_id":{"type":"string"},"account_number":{"type":"string"}}}`)}}
	parsed := []toolInfo{parseTool(tools[0].Name, tools[0].Description, tools[0].Parameters)}
	m := newModel("Record the request.", parsed)
	l := &listener{now: func() time.Time { return time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) }}
	for _, c := range []struct {
		field, readBack, heard string
		want                   any // nil: a plain no
	}{
		{"employee_id", "WX5AQ13", "nope sorry that's not ride my employee it is w x five eight two one three", "WX58213"},
		// "of" and "to" among digits are the open vocabulary's oh and two.
		{"account_number", "8H41039257", "nope sorry that's not to ride my account number is eight eight four one of three nine to five seven", "8841039257"},
		{"employee_id", "CTR2O931", "sorry no that's not good it's cheeky are two nine three one", nil},
		{"employee_id", "GTRQO931", "sorry no that's not good it's cheeky are two nine three one", nil},
		// Letters the grammar made of the carrier are no part of the code.
		{"account_number", "RMSHPRJL413", "nope sorry that's not ride my customer account number is h p r g zero four one three", "HPRG0413"},
		{"employee_id", "WX58213", "no sorry it's w x five eight two one three", nil},
		{"employee_id", "WX58213", "no that's not right", nil},
	} {
		f := m.fieldByName[c.field]
		was := fieldValue{field: f, value: c.readBack}
		exp := expectation{kind: expectConfirm, field: f, last: f, value: &was, filled: []*field{f}, open: m.allFields()}
		slot := f.slot(func(string) bool { return true })
		// The grammar's own reading of the turn, rejected as covering too little of it.
		ans := asr.Answer{Result: asr.Result{Text: "w x five", Words: words("w x five")}}
		ans.Value, ans.OK = slot.Parse("w x five")
		h := l.understand(t.Context(), m, exp, Utterance{Open: asr.Result{Text: c.heard, Words: words(c.heard)},
			Readings: []Reading{{Slot: *slot, Answer: ans}}, Spoken: true})
		switch {
		case c.want == nil && (h.intent != intentNo || len(h.values) != 0):
			t.Errorf("%q after %s: intent %d values %+v, want a plain no (%s)", c.heard, c.readBack, h.intent, h.values, h.why)
		case c.want != nil && (h.intent != intentCorrection || len(h.values) != 1 || h.values[0].value != c.want || !h.values[0].unsure):
			t.Errorf("%q after %s: intent %d values %+v, want a repair to %v read back (%s)", c.heard, c.readBack, h.intent, h.values, c.want, h.why)
		}
	}
}

// TestCarrierReadAsLetters: a code the grammar read with letters made of the words before it
// ("nope sorry my employee id is …" as R8YMAAGS…) is the code the open vocabulary heard after those
// words; a code's own leading letters, which the open vocabulary dropped, stay.
func TestCarrierReadAsLetters(t *testing.T) {
	tools := []Tool{{Name: "record_leave", Description: "Record the leave request.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"employee_id":{"type":"string"}}}`)}}
	m := newModel("Record the request.", []toolInfo{parseTool(tools[0].Name, tools[0].Description, tools[0].Parameters)})
	l := &listener{now: func() time.Time { return time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) }}
	f := m.fieldByName["employee_id"]
	slot := f.slot(func(string) bool { return true })
	for _, c := range []struct{ heard, grammar, want string }{
		{"nope sorry my employee id is w x five eight two one three", "r eight y m a a g s w x five eight two one three", "WX58213"},
		{"pa two zero four four seven one eight", "p a two zero four four seven one eight", "PA2044718"},
	} {
		ans := asr.Answer{Result: asr.Result{Text: c.grammar, Words: words(c.grammar)}}
		ans.Value, ans.OK = slot.Parse(c.grammar)
		h := l.understand(t.Context(), m, expectation{kind: expectField, field: f, open: m.allFields()},
			Utterance{Open: asr.Result{Text: c.heard, Words: words(c.heard)}, Readings: []Reading{{Slot: *slot, Answer: ans}}, Spoken: true})
		if len(h.values) != 1 || h.values[0].value != c.want {
			t.Errorf("heard %q, grammar %q: %+v (%s), want %s", c.heard, c.grammar, h.values, h.why, c.want)
		}
	}
}

// TestChoiceByASharedWord: an answer in the caller's own words names the one choice it shares a
// word with ("the plumber said the supply line … burst" is plumbing_leak), and none when it shares
// words with two or with none.
func TestChoiceByASharedWord(t *testing.T) {
	causes := []string{"plumbing_leak", "appliance_failure", "frozen_pipe", "storm", "sewer_backup"}
	for text, want := range map[string]string{
		"i'm the plumber said the supply line under the upstairs toilet hours it's his prey to tolls and it just gave that": "plumbing_leak",
		"the pipes froze over the weekend": "frozen_pipe",
		"the storm took out a pipe":        "",
		// By a cue: the toilet's supply line is plumbing; a pipe that burst and froze is two.
		"so the the supply line under the upstairs toilet hours like a little posting that goes into the wall": "plumbing_leak",
		"the pipe froze and burst":           "",
		"water came in through the basement": "",
	} {
		got, _ := partialChoice(strings.Fields(text), causes)
		if got != want {
			t.Errorf("%q: %q, want %q", text, got, want)
		}
	}
	categories := []string{"heating", "plumbing", "electrical", "appliance", "other"}
	for text, want := range map[string]string{
		"the radiators are killed since last night and the boiler room door is locked": "heating",
		"the water heater is making a banging noise":                                   "",
		"half the outlets in the kitchen stopped working":                              "electrical",
	} {
		if got, _ := partialChoice(strings.Fields(text), categories); got != want {
			t.Errorf("%q: %q, want %q", text, got, want)
		}
	}
	m, l := bankModel()
	f := &field{Name: "loss_cause", Kind: kindChoice, Enum: causes, Subject: "loss cause"}
	m.fields = append(m.fields, f)
	text := "the plumber said the supply line burst"
	h := l.understand(t.Context(), m, expectation{kind: expectField, field: f, open: []*field{f}}, Utterance{Open: asr.Result{Text: text, Words: words(text)}, Spoken: true})
	if len(h.values) != 1 || h.values[0].value != "plumbing_leak" || !h.values[0].unsure {
		t.Errorf("%q to the loss cause: %+v (%s), want plumbing_leak read back", text, h.values, h.why)
	}
}

// TestCentsUnsaid: cents the number grammar made of words after the amount ("two hundred nineteen
// dollars, not what I said" read 219.05) are not the caller's; cents said are.
func TestCentsUnsaid(t *testing.T) {
	s := &asr.Slot{Kind: asr.KindNumber}
	for _, c := range []struct {
		grammar float64
		text    string
		want    bool
	}{
		{219.05, "two hundred nineteen dollars not what i said", true},
		{219.05, "two hundred nineteen dollars and five cents", false},
		{219, "two hundred nineteen dollars not what i said", false},
		{219.5, "two hundred nineteen point five", false},
	} {
		if got := centsUnsaid(s, asr.Value{Kind: asr.KindNumber, Number: c.grammar}, c.text); got != c.want {
			t.Errorf("%v from %q: cents unsaid %v, want %v", c.grammar, c.text, got, c.want)
		}
	}
}

// TestFixIsACorrection: "Wait, I need to fix the count. It's thirty-eight cases received", said
// while the item description was asked, corrects the count; it is not the item's description.
func TestFixIsACorrection(t *testing.T) {
	tools := []toolInfo{parseTool("record_dispute", "Record the invoice dispute.", json.RawMessage(
		`{"type":"object","properties":{"item_description":{"type":"string"},"units_billed":{"type":"integer"},"units_received":{"type":"integer"}}}`))}
	m := newModel("Record the dispute.", tools)
	l := &listener{now: func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }}
	item, received := m.fieldByName["item_description"], m.fieldByName["units_received"]
	slot := *received.slot(func(string) bool { return true })
	unasked(&slot)
	for _, heard := range []string{
		"wait i need to fix the town it's thirty eight cases received my receiving clerk just found the other two",
		"hold on let me fix that it's thirty eight cases received",
	} {
		grammar := "it's thirty eight cases"
		ans := asr.Answer{Result: asr.Result{Text: grammar, Words: words(grammar)}}
		ans.Value, ans.OK = slot.Parse(grammar)
		exp := expectation{kind: expectField, field: item, open: []*field{item, m.fieldByName["units_billed"], received}}
		h := l.understand(t.Context(), m, exp, Utterance{Open: asr.Result{Text: heard, Words: words(heard)},
			Readings: []Reading{{Slot: slot, Answer: ans}}, Spoken: true})
		if len(h.values) != 1 || h.values[0].field != received || h.values[0].value != 38.0 {
			t.Errorf("%q: %v (intent %d, %s), want units_received=38", heard, h.values, h.intent, h.why)
		}
	}
}

// disputeModel is a card dispute's form: the member's card and date of birth, the merchant.
func disputeModel() *model {
	tools := []toolInfo{
		parseTool("verify_member", "Verify the member: card last four and date of birth.", json.RawMessage(
			`{"type":"object","properties":{"card_last4":{"type":"string"},"date_of_birth":{"type":"string","description":"YYYY-MM-DD"}},"required":["card_last4","date_of_birth"]}`)),
		parseTool("record_dispute", "Record fields of the dispute.", json.RawMessage(
			`{"type":"object","properties":{"card_last4":{"type":"string"},"date_of_birth":{"type":"string","description":"YYYY-MM-DD"},"customer_name":{"type":"string"},"merchant":{"type":"string"},"transaction_date":{"type":"string","description":"YYYY-MM-DD"}}}`)),
	}
	return newModel("Verify the member before you record the dispute.", tools)
}

// TestRefusedReadBack: "Um, actually, that's wrong. I said …" to a read-back, in which the agent
// reads no value, refuses the read-back (its field is asked again). It was a correction the agent
// could not place, and the call went on with the wrong value (card-dispute-charge, kal16 voice,
// real-time suite; utility-start-service, slt).
func TestRefusedReadBack(t *testing.T) {
	m := disputeModel()
	l := &listener{now: func() time.Time { return time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC) }}
	for _, c := range []struct{ field, readBack, heard string }{
		{"card_last4", "4736", "i'm actually that's wrong i said seven three euros six"},
		{"customer_name", "Mr Marhng Locker", "and actually that surround it should be easy and aren't allowed clients sire and made our age"},
		{"merchant", "Sunset Studio the Oboe Players", "i'm actually that's wrong i said sen fick studio the older players"},
		// A yes word in the value said again after the refusal ("correct" for Vasquez) is no yes.
		{"customer_name", "Ba Albrecht", "i'm actually that's wrong it should be just as old correct be a rescue you easy owl beyond easy hp"},
		// "No, sorry" opens a refusal though its "that's not right" was misheard and the name
		// said again holds a yes word ("ok" for Okafor; travel-hotel-extend, slt, turn suite).
		{"customer_name", "Elisa Prefer", "no sorry that's not ride my name is emily is ok for a n n e l i s c"},
		{"customer_name", "Elisa Prefer", "sorry no my name is and elisa ok for a n n e l i e s e not that"},
	} {
		f := m.fieldByName[c.field]
		was := fieldValue{field: f, value: c.readBack}
		exp := expectation{kind: expectConfirm, field: f, last: f, value: &was, filled: []*field{f}, open: m.allFields()}
		u := Utterance{Open: asr.Result{Text: c.heard, Words: words(c.heard)}, Spoken: true}
		if s := f.slot(func(string) bool { return true }); s != nil {
			// The code grammar found no reading of the whole turn.
			u.Readings = []Reading{{Slot: *s}}
		}
		if h := l.understand(t.Context(), m, exp, u); h.intent != intentNo || len(h.values) != 0 {
			t.Errorf("%q after %s: intent %d values %+v, want a refusal of the read-back (%s)", c.heard, c.readBack, h.intent, h.values, h.why)
		}
	}
}

// TestCorrectionNeedsSomethingSaid: before anything is given, a correction marker is a word of
// the answer, as the open vocabulary heard it ("it's a wrong call facilities group" for Okonkwo
// Facilities Group), not a correction the agent cannot place.
func TestCorrectionNeedsSomethingSaid(t *testing.T) {
	m := disputeModel()
	l := &listener{now: func() time.Time { return time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC) }}
	f := m.fieldByName["customer_name"]
	heard := "it's a wrong call facilities group"
	exp := expectation{kind: expectField, field: f, open: m.allFields()}
	h := l.understand(t.Context(), m, exp, Utterance{Open: asr.Result{Text: heard, Words: words(heard)}, Spoken: true})
	if h.intent != intentAnswer || len(h.values) != 1 || h.values[0].field != f {
		t.Errorf("%q: intent %d values %+v, want an answer for customer_name (%s)", heard, h.intent, h.values, h.why)
	}
	// Once something was given, the same marker may be about it: the agent says it cannot tell.
	exp.filled = []*field{m.fieldByName["merchant"]}
	if h := l.understand(t.Context(), m, exp, Utterance{Open: asr.Result{Text: heard, Words: words(heard)}, Spoken: true}); h.intent != intentUnplaced {
		t.Errorf("%q with the merchant given: intent %d, want unplaced", heard, h.intent)
	}
}

// TestNoBirthAfterToday: a date of birth after today is no reading of the caller's words (the date
// grammar forced "January seventeenth. Nineteen ninety-one" into "january thirty first twenty
// twenty seven", which went to the verification tool).
func TestNoBirthAfterToday(t *testing.T) {
	m := disputeModel()
	l := &listener{now: func() time.Time { return time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC) }}
	f := m.fieldByName["date_of_birth"]
	slot := f.slot(func(string) bool { return true })
	for _, c := range []struct {
		grammar string
		want    string // "" for no value
	}{
		{"january thirty first twenty twenty seven thank you", ""},
		{"january seventeenth nineteen ninety one", "1991-01-17"},
		{"january seventeenth", "2026-01-17"},
	} {
		v, ok := slot.Parse(c.grammar)
		if !ok {
			t.Fatalf("%q does not parse as a date", c.grammar)
		}
		got, ok := l.fieldValue(f, v)
		switch {
		case c.want == "" && ok:
			t.Errorf("%q: date of birth %v, want none", c.grammar, got.value)
		case c.want != "" && (!ok || got.value != c.want):
			t.Errorf("%q: date of birth %v (%v), want %s", c.grammar, got.value, ok, c.want)
		}
	}
	// Nor is the reading another date field's: asked for the date of birth, the caller gave none
	// (the turn suite put 2027-01-31 in the transaction date).
	grammar, heard := "january thirty first twenty twenty seven thank you", "january sorry yes january seventeenth ninety ninety one"
	ans := asr.Answer{Result: asr.Result{Text: grammar, Words: words(grammar)}}
	ans.Value, ans.OK = slot.Parse(grammar)
	exp := expectation{kind: expectField, field: f, open: m.allFields()}
	other := *m.fieldByName["transaction_date"].slot(func(string) bool { return true })
	unasked(&other) // as the dialogue decodes the open fields
	oans := asr.Answer{Result: ans.Result}
	oans.Value, oans.OK = other.Parse(grammar)
	h := l.understand(t.Context(), m, exp, Utterance{Open: asr.Result{Text: heard, Words: words(heard)},
		Readings: []Reading{{Slot: *slot, Answer: ans}, {Slot: other, Answer: oans}}, Spoken: true})
	if len(h.values) != 0 {
		t.Errorf("%q read %q to the date of birth: %+v (%s), want no value", heard, grammar, h.values, h.why)
	}
}

// TestCorrectionChangingNothing: a correction marker in an answer ("nice guy, actually") whose only
// reading is the value already recorded for the field recorded last changes nothing, and is no
// correction of it (fnol-home-water-leak: "Thanks, I have that as yes. What is the plumber name?");
// nor, ending the turn, is it a correction the agent cannot place ("Sorry, I couldn't tell which
// detail that was about").
func TestCorrectionChangingNothing(t *testing.T) {
	tools := []toolInfo{parseTool("record_claim", "Record fields of the claim.", json.RawMessage(
		`{"type":"object","properties":{"water_shut_off":{"type":"string","enum":["yes","no"]},"plumber_name":{"type":"string"}}}`))}
	m := newModel("Record the claim.", tools)
	l := &listener{now: func() time.Time { return time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC) }}
	shut, plumber := m.fieldByName["water_shut_off"], m.fieldByName["plumber_name"]
	heard := "but yeah twin cities route so nice guy actually"
	exp := expectation{kind: expectField, field: plumber, last: shut, filled: []*field{shut}, open: []*field{plumber},
		values: map[string]any{"water_shut_off": "yes"}}
	h := l.understand(t.Context(), m, exp, Utterance{Open: asr.Result{Text: heard, Words: words(heard)}, Spoken: true})
	for _, v := range h.values {
		if v.field == shut {
			t.Errorf("%q: water_shut_off=%v again (intent %d, %s)", heard, v.value, h.intent, h.why)
		}
	}
	// An "actually" that ends the turn marks no correction: the turn answers the question asked.
	if len(h.values) != 1 || h.values[0].field != plumber || h.intent != intentAnswer {
		t.Errorf("%q: %+v (intent %d, %s), want the plumber name", heard, h.values, h.intent, h.why)
	}
	// A correction that changes the value is one.
	exp.values["water_shut_off"] = "no"
	heard = "actually yeah twin cities route so nice guy"
	h = l.understand(t.Context(), m, exp, Utterance{Open: asr.Result{Text: heard, Words: words(heard)}, Spoken: true})
	if len(h.values) != 1 || h.values[0].field != shut || h.intent != intentCorrection {
		t.Errorf("%q after no: %+v (intent %d), want water_shut_off corrected to yes", heard, h.values, h.intent)
	}
}

// TestCodeHeardWholeByTheOpenVocabulary: when the open vocabulary heard a code whole, in words of
// the code grammar alone, with more of its letters than the grammar read (which favours digits),
// its reading goes first and the grammar's is the alternative (clinic-referral-intake, slt voice:
// "g r p five five zero one nine" heard, 0T855019 read back, and the group number never right).
func TestCodeHeardWholeByTheOpenVocabulary(t *testing.T) {
	tools := []toolInfo{parseTool("record_intake", "Record fields of the intake.", json.RawMessage(
		`{"type":"object","properties":{"group_number":{"type":"string"},"member_id":{"type":"string"}}}`))}
	m := newModel("Record the intake.", tools)
	l := &listener{now: func() time.Time { return time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC) }}
	f := m.fieldByName["group_number"]
	slot := f.slot(func(string) bool { return true })
	if slot == nil || slot.Kind != asr.KindIdentifier {
		t.Fatalf("group_number's slot %+v, want an identifier", slot)
	}
	for _, c := range []struct {
		grammar, open string
		want, alt     string
	}{
		{"zero t eight five five zero one nine", "g r p five five zero one nine", "GRP55019", "0T855019"},
		// The open reading has fewer letters, is shorter, or has words of its own: the grammar's stands.
		{"g r p five five zero one nine", "g r eight five five zero one nine", "GRP55019", ""},
		{"zero t eight five five zero one nine", "g r p five five one nine", "0T855019", ""},
		{"zero t eight five five zero one nine", "g r p five five zero one nine i believe", "0T855019", ""},
	} {
		ans := asr.Answer{Result: asr.Result{Text: c.grammar, Words: words(c.grammar)}}
		ans.Value, ans.OK = slot.Parse(c.grammar)
		exp := expectation{kind: expectField, field: f, open: m.allFields()}
		h := l.understand(t.Context(), m, exp, Utterance{Open: asr.Result{Text: c.open, Words: words(c.open)},
			Readings: []Reading{{Slot: *slot, Answer: ans}}, Spoken: true})
		if len(h.values) != 1 || h.values[0].value != c.want {
			t.Errorf("%q heard, %q read: %+v (%s), want %s", c.open, c.grammar, h.values, h.why, c.want)
			continue
		}
		if c.alt != "" && (len(h.values[0].alts) == 0 || h.values[0].alts[0].value != c.alt || !h.values[0].unsure) {
			t.Errorf("%q heard, %q read: alternatives %+v (unsure %v), want %s first, read back", c.open, c.grammar, h.values[0].alts, h.values[0].unsure, c.alt)
		}
	}
}

// TestCodeAfterPreamble: a code said after a few words of the caller's own, while a free-text
// field was asked, is news for the open code field, and the question is asked again: "Got the
// bottle. Number's six oh two three, one one four eight." to "What is the transfer from?" was
// recorded as transfer_from "got the bottle" (pharmacy-refill-transfer, text suite). A short
// number in a free answer stays the answer's.
func TestCodeAfterPreamble(t *testing.T) {
	tools := []toolInfo{parseTool("record_transfer", "Record fields of the transfer.", json.RawMessage(
		`{"type":"object","properties":{"transfer_from":{"type":"string","description":"Pharmacy the prescription is at now"},"rx_number":{"type":"string","description":"Prescription number on the bottle"},"notes":{"type":"string"}}}`))}
	m := newModel("Record the transfer.", tools)
	l := &listener{now: func() time.Time { return time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC) }}
	from, rx := m.fieldByName["transfer_from"], m.fieldByName["rx_number"]
	if from.slot(l.known) != nil || rx.Kind != kindIdentifier {
		t.Fatalf("transfer_from kind %d, rx_number kind %d: the test needs free text and a code", from.Kind, rx.Kind)
	}
	for _, c := range []struct {
		said  string
		field *field
		want  any
	}{
		{"Got the bottle. Number's six oh two three, one one four eight.", rx, "60231148"},
		{"Maple Grove Drug, store two twenty-seven.", from, "maple grove drug"},
	} {
		q := Question{l: l, m: m, exp: expectation{kind: expectField, field: from, open: m.allFields()}}
		h := q.UnderstandText(t.Context(), c.said).h
		if len(h.values) != 1 || h.values[0].field != c.field || h.values[0].value != c.want {
			t.Errorf("%q: values %+v (%s), want %s = %v", c.said, h.values, h.why, c.field.Name, c.want)
		}
	}
}

// TestListAddition: "Add Teams to that" after the lists were given adds the item to the list it
// fits (or the one named), as a correction; it was read as the answer "team" to the scope
// question asked (it-vpn-incident, text suite).
func TestListAddition(t *testing.T) {
	tools := []toolInfo{parseTool("record_incident", "Record fields of the incident.", json.RawMessage(
		`{"type":"object","properties":{"affected_systems":{"type":"array","items":{"type":"string"}},"steps_tried":{"type":"array","items":{"type":"string"}},"scope":{"type":"string","enum":["single_user","team","site"]}}}`))}
	m := newModel("Record the incident.", tools)
	l := &listener{now: func() time.Time { return time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC) }}
	systems, steps := m.fieldByName["affected_systems"], m.fieldByName["steps_tried"]
	values := map[string]any{"affected_systems": []string{"vpn", "outlook"}, "steps_tried": []string{"restarted the laptop", "reinstalled the vpn client"}}
	for _, c := range []struct {
		said  string
		field *field
		want  []string
	}{
		{"Add Teams to that. It just went down.", systems, []string{"vpn", "outlook", "teams"}},
		{"Oh, and add switched to my hotspot to the steps tried.", steps, []string{"restarted the laptop", "reinstalled the vpn client", "switched to my hotspot"}},
		{"Just me, I'd add.", nil, nil},
	} {
		q := Question{l: l, m: m, exp: expectation{kind: expectField, field: m.fieldByName["scope"], filled: []*field{systems, steps}, values: values, open: []*field{m.fieldByName["scope"]}}}
		h := q.UnderstandText(t.Context(), c.said).h
		if c.field == nil {
			if h.intent == intentCorrection {
				t.Errorf("%q: a correction %+v, want none", c.said, h.values)
			}
			continue
		}
		if h.intent != intentCorrection || len(h.values) != 1 || h.values[0].field != c.field || !slices.Equal(h.values[0].value.([]string), c.want) {
			t.Errorf("%q: intent %d values %+v (%s), want %s = %v", c.said, h.intent, h.values, h.why, c.field.Name, c.want)
		}
	}
}

// TestWithdrawnApproval: the last word on an approval decides it, and a "don't" counts only with
// an action's verb.
func TestWithdrawnApproval(t *testing.T) {
	for text, want := range map[string]bool{
		"yeah fine go ahead actually wait hold off i need to check with my partner first": true,
		"no hang on don't set it up yet i want to talk to my partner":                     true,
		"scratch that cancel it for now i have to run it by my partner":                   true,
		"hold on don't do it i found it":                                                  true,
		"okay yes do it":                                                                  false,
		"yes set it up":                                                                   false,
		"yes go ahead i don't have anything else":                                         false,
		"not yet okay fine go ahead":                                                      false,
	} {
		if got := withdraws(strings.Fields(text)); got != want {
			t.Errorf("withdraws(%q) = %v, want %v", text, got, want)
		}
	}
}

// TestPolarity: a yes/no answer is read from its first word that says yes or no, but not from a
// negation inside a condition ("you can go in if I'm not home" was recorded as no permission).
func TestPolarity(t *testing.T) {
	for said, want := range map[string]string{
		"you have you can go in if i'm not home that's fine": "yes",
		"yeah you can go in if i'm not home":                 "yes",
		"go ahead even if i'm not there":                     "yes",
		"no i don't need one english is fine":                "no",
		"yes i emailed them twice and they never answered":   "yes",
		"you can't go in without me":                         "no",
		"please don't go in when i'm not home":               "no",
		"i'd rather you didn't":                              "no",
		"only if i'm home":                                   "",
		"okay":                                               "",
		"fine":                                               "",
	} {
		yes, ok := firstPolarity(said)
		got := map[bool]string{true: "yes", false: "no"}[yes]
		if !ok {
			got = ""
		}
		if got != want {
			t.Errorf("%q: %q, want %q", said, got, want)
		}
	}
}

// TestYearBorneOut: a date the grammar read is the open transcript's when that names another month
// and a day; a year the date grammar read that the open transcript does not bear out is dropped,
// and when the transcript has another day of that month the grammar made its year of the
// day ("Tuesday, February ninth" was recorded as 1930-02-01, and the correction that followed kept
// 1930); a year the transcript heard stays.
func TestYearBorneOut(t *testing.T) {
	date := asr.Slot{Kind: asr.KindDate}
	for _, c := range []struct{ grammar, open, want string }{
		{"february first nineteen thirty", "that was the tuesday tuesday february ninth", "2-9 year 0"},
		{"december second twenty thirty eight", "december second so yesterday", "12-2 year 0"},
		{"february ninth twenty twenty seven", "february ninth twenty twenty seven", "2-9 year 2027"},
		{"march fourteenth nineteen seventy nine", "march fourteenth nineteen seventy nine", "3-14 year 1979"},
		// A year heard but not read by the open vocabulary: the grammar may have it right.
		{"january seventeenth nineteen ninety one", "january seventeenth ninety ninety one", "1-17 year 1991"},
		// Another month named in the open transcript, with its day: the grammar forced the date.
		{"march twenty eighth twenty twenty nine", "it would start monday january eleventh", "1-11 year 0"},
		{"march twenty eighth twenty twenty nine", "it would start monday january eleventh twenty twenty seven", "1-11 year 2027"},
		// A month without a day is not enough to overrule the grammar.
		{"march twenty eighth", "sometime in january i think", "3-28 year 0"},
	} {
		v, ok := date.Parse(c.grammar)
		if !ok {
			t.Fatalf("%q: no date", c.grammar)
		}
		d := dateBorneOut(&date, v, c.open).Dates[0]
		if got := fmt.Sprintf("%d-%d year %d", d.Month, d.Day, d.Year); got != c.want {
			t.Errorf("grammar %q, open %q: %s, want %s", c.grammar, c.open, got, c.want)
		}
	}
	// A range's years likewise.
	span := asr.Slot{Kind: asr.KindDateRange}
	for _, c := range []struct{ grammar, open, want string }{
		{"december seventh twenty twenty six through december seventh twenty seventy", "but the week of december seventh so december seventh through december eleventh", "12-7 12-11 years 0 0"},
		{"december seventh twenty twenty six through december eleventh twenty twenty six", "december seventh twenty twenty six through december eleventh twenty twenty six", "12-7 12-11 years 2026 2026"},
	} {
		v, ok := span.Parse(c.grammar)
		if !ok {
			t.Fatalf("%q: no range", c.grammar)
		}
		ds := dateBorneOut(&span, v, c.open).Dates
		if got := fmt.Sprintf("%d-%d %d-%d years %d %d", ds[0].Month, ds[0].Day, ds[1].Month, ds[1].Day, ds[0].Year, ds[1].Year); got != c.want {
			t.Errorf("range grammar %q, open %q: %s, want %s", c.grammar, c.open, got, c.want)
		}
	}
}

// TestUnaskedMoneySaysItsUnit: a bare number said while another field was asked is no sum of money
// for a fee or voucher field the caller did not name ("C A four eighteen", a flight, heard "see it
// for eighteen", was recorded as an 18-dollar meal voucher); asked for, it is.
func TestUnaskedMoneySaysItsUnit(t *testing.T) {
	tools := []Tool{
		{Name: "record_rebooking", Description: "Record fields of the rebooking.", Parameters: json.RawMessage(
			`{"type":"object","properties":{"original_flight":{"type":"string"},"meal_voucher":{"type":"number"},"seat_preference":{"type":"string","enum":["aisle","window"]}}}`)},
		{Name: "mark_ready", Description: "Mark the rebooking ready.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	}
	for _, c := range []struct {
		asked string
		want  any
	}{{"original_flight", nil}, {"meal_voucher", 18.0}} {
		d := New(Config{Now: func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) }})
		d.Configure("You are the rebooking desk. Record the rebooking and mark it ready.", tools)
		d.p.opened = true
		d.p.say("What is it?", expectation{kind: expectField, field: d.m.fieldByName[c.asked]})
		h := d.Question().UnderstandText(t.Context(), "see it for eighteen")
		if got := h.Fields()["meal_voucher"]; fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("asked %s: meal_voucher %v (%s %s), want %v", c.asked, got, h.Intent(), h.Why(), c.want)
		}
	}
}

// A turn holds a date only with a month, an ordinal or a number in it: "month", "with" and "both"
// end in -th and are no ordinals (the date grammar read "make it four payments, I can't swing
// that much each month" as March twentieth, a correction of the first payment date).
func TestNoDateInAMonth(t *testing.T) {
	for text, want := range map[string]bool{
		"i can't swing that much each month": false,
		"both with email":                    false,
		"on the fifth":                       true,
		"december":                           true,
		"the 5th":                            true,
		"twenty first":                       true,
	} {
		if got := plausible(kindDate, strings.Fields(text)); got != want {
			t.Errorf("plausible(date, %q) = %v, want %v", text, got, want)
		}
	}
}

// A correction that says a count of things sets the record's count of them to that count,
// whatever the number grammar made of the turn: "sorry to cut you off but make it four payments"
// was read by the number grammar as two ("to cut"), and the installment count became 2. "For"
// heard for four counts too.
func TestCountCorrectionSaysItsCount(t *testing.T) {
	tool := parseTool("record_arrangement", "Record fields of the payment arrangement.", json.RawMessage(
		`{"type":"object","properties":{"installment_count":{"type":["integer","string"]},"first_payment_date":{"type":"string"}}}`))
	m := newModel("You are the billing desk. Record the arrangement with record_arrangement.", []toolInfo{tool})
	l := &listener{now: func() time.Time { return time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) }}
	count := m.fieldByName["installment_count"]
	slot := count.slot(func(string) bool { return true })
	for _, heard := range []string{
		"sorry to cut you off but make it four payments i can't swing that much each month",
		"wait sorry hold on i need for payments that's too much of months",
		"hang on hang on | for payments not what i said before",
		"hang on hang on for payments not what i said before",
	} {
		ans := asr.Answer{Result: asr.Result{Text: "two"}}
		ans.Value, ans.OK = slot.Parse("two")
		exp := expectation{kind: expectApproval, filled: []*field{count, m.fieldByName["first_payment_date"]},
			values: map[string]any{"installment_count": 3, "first_payment_date": "2026-12-05"}}
		h := l.understand(t.Context(), m, exp, Utterance{Open: asr.Result{Text: strings.ReplaceAll(heard, "| ", ""), Words: words(heard)},
			Readings: []Reading{{Slot: *slot, Answer: ans}}, Spoken: true})
		if h.intent != intentCorrection || len(h.values) != 1 || h.values[0].field != count || fmt.Sprint(h.values[0].value) != "4" {
			t.Errorf("heard %q: %s %v, want a correction of installment_count to 4 (%s)", heard, h.intent, h.values, h.why)
		}
	}
	// "Four payments" heard "for eight months" (another voice): a duration is no count of the
	// payments.
	heard := "wait sorry hold on i need for eight months that's too much a month"
	exp := expectation{kind: expectApproval, filled: []*field{count}, values: map[string]any{"installment_count": 3}}
	if v, ok := l.countCorrection(m, exp, heard); ok {
		t.Errorf("heard %q: counted %v", heard, v.value)
	}
}

// TestSubjectContractionsAreCarriers: a field's grammar takes its subject's words with "is" run on
// ("account's eight eight …") when the dictionary has them, and none when the subject is not said
// in known words (the grammar could not be loaded).
func TestSubjectContractionsAreCarriers(t *testing.T) {
	dict := map[string]bool{"account": true, "number": true, "account's": true, "zorgle": false}
	known := func(w string) bool { return dict[w] }
	f := &field{Name: "account_number", Subject: "account number", Kind: kindIdentifier}
	if s := f.slot(known); s == nil || !slices.Equal(s.Contractions, []string{"account's"}) {
		t.Errorf("slot %+v: want the contraction account's (number's is not in the dictionary)", s)
	}
	f.Subject = "zorgle number"
	if s := f.slot(known); s == nil || s.Subject != "" || s.Contractions != nil {
		t.Errorf("slot %+v: a subject with an unknown word is no carrier, nor are its contractions", s)
	}
}

// TestRefusedSummaryIsNoApproval: a caller who says the summary is wrong and says the value again
// has not approved, whatever yes word the recognizer made of the value ("good on" for "d dot");
// this turn was taken as the approval in a turn-suite call, and the rebooking committed with the
// e-mail address the caller had just refused.
func TestRefusedSummaryIsNoApproval(t *testing.T) {
	tool := parseTool("record_rebooking", "Record fields of the rebooking.", json.RawMessage(
		`{"type":"object","properties":{"contact_email":{"type":"string"}}}`))
	m := newModel("You are the rebooking desk. Record the rebooking with record_rebooking.", []toolInfo{tool})
	l := &listener{now: time.Now}
	exp := expectation{kind: expectApproval, filled: []*field{m.fieldByName["contact_email"]},
		values: map[string]any{"contact_email": "d.vazquez@albrecht.example"}}
	for heard, want := range map[string]intent{
		"nope sorry that's not right my email is good on to fester settle bred dog for example": intentNo,
		"um actually that's wrong it should be the doctor fast as gentle bred dog that's good":  intentNo,
		"nope sorry that's not ride my email is the dot that's correct":                         intentNo,
		"yes that's right go ahead": intentYes,
		"yes that's all good":       intentYes,
		"no problem go ahead":       intentYes,
	} {
		h := l.understand(t.Context(), m, exp, Utterance{Open: asr.Result{Text: heard, Words: words(heard)}, Spoken: true})
		if h.intent != want {
			t.Errorf("heard %q at the approval: %s, want %s (%s)", heard, h.intent, want, h.why)
		}
	}
}

// TestMailAddressFromTheDirectory: an address is read from the e-mail directory's words (as it
// heard the bank caller's turns): the domain's words run together, a word's spelling read once
// (as the spelling when it has the word's letters), the lead-in and the fillers between the
// parts dropped; a reading with no "at" before a domain is none.
func TestMailAddressFromTheDirectory(t *testing.T) {
	for heard, want := range map[string]string{
		"t dot marchetti at outlook dot to example":                                    "t.marchetti@outlook.example",
		"it's t dot marchetti m a rca cheeky t i at outlook dot to example":            "t.marchetti@outlook.example",
		"um j s w dot dev d v at proton mail dot to example":                           "jsw.dev@protonmail.example",
		"d dot vazquez v a s q u e z at albrecht dot to example":                       "d.vasquez@albrecht.example",
		"please send it to payables edu concorde dot to example":                       "",
		"it's payables p a y j bialy s at to concorde dot example":                     "payables@concorde.example",
		"send it to uh p at harbour pyne dot example":                                  "p@harbourpyne.example",
		"a p at harbour pyne dot example":                                              "ap@harbourpyne.example",
		"it's anders dot n o at fjord mail dot example fjord like the fjords n norway": "anders.no@fjordmail.example",
		"sure so j s w dot dev net proton mail dot example":                            "",
		"its dot n hoevet at fjord mail dot example":                                   "n@fjordmail.example",
		"it's uh at fjord mail dot example":                                            "",
		"amber's dot n o at fjord mail dot example":                                    "ambers.no@fjordmail.example",
		"t dot marchetti n outlive dot example":                                        "t.marchetti@outlive.example",
		"my email is anders dot m at fjord mail dot to example":                        "anders.m@fjordmail.example",
	} {
		got, ok := mailAddress(words(heard))
		if want == "" {
			if ok {
				t.Errorf("%q: read %q, want no address", heard, got)
			}
			continue
		}
		if got != want {
			t.Errorf("%q: read %q (%v), want %q", heard, got, ok, want)
		}
	}
}

// TestHomophoneAddresses: an address heard with a word that has homophones is offered with each
// of them (one word changed, then all), for the read-back after the caller refused it.
func TestHomophoneAddresses(t *testing.T) {
	same := map[string][]string{"vazquez": {"vasquez"}, "harbour": {"harbor"}, "pyne": {"pine"}, "dee": {"d"}}
	l := &listener{homophones: func(w string) []string { return same[w] }}
	got := l.homophoneAddresses(words("d dot vazquez at albrecht dot example"), "d.vazquez@albrecht.example")
	if !slices.Equal(got, []string{"d.vasquez@albrecht.example"}) {
		t.Errorf("vazquez: offered %q, want d.vasquez@albrecht.example", got)
	}
	got = l.homophoneAddresses(words("a p at harbour pyne dot example"), "ap@harbourpyne.example")
	if want := []string{"ap@harborpyne.example", "ap@harbourpine.example", "ap@harborpine.example"}; !slices.Equal(got, want) {
		t.Errorf("harbour pyne: offered %q, want %q", got, want)
	}
	if got := (&listener{}).homophoneAddresses(words("d dot vazquez at albrecht dot example"), "d.vazquez@albrecht.example"); got != nil {
		t.Errorf("no homophones known: offered %q", got)
	}
}

// TestGoingOnIsNoRepair: "And the pharmacy number. Nine five two …" after the prescription number
// was read back goes on to the next detail; the code grammar forced it into a code, which replaced
// the prescription number the caller had just heard read back right (pharmacy-refill-transfer,
// kal16, turn suite). A reply that repairs the read-back still does.
func TestGoingOnIsNoRepair(t *testing.T) {
	tool := parseTool("record_transfer", "Record the prescription transfer.", json.RawMessage(
		`{"type":"object","properties":{"rx_number":{"type":"string"},"transfer_from_phone":{"type":"string"}}}`))
	m := newModel("You are the pharmacy technician line. Record the transfer with record_transfer.", []toolInfo{tool})
	l := &listener{now: time.Now}
	rx := m.fieldByName["rx_number"]
	slot := *rx.slot(func(string) bool { return true })
	was := fieldValue{field: rx, value: "60231148"}
	exp := expectation{kind: expectConfirm, field: rx, last: rx, value: &was, filled: []*field{rx}, open: m.allFields(),
		values: map[string]any{"rx_number": "60231148"}}
	for _, c := range []struct {
		heard, grammar string
		repair         bool
	}{
		{"and the pharmacy number nine five two five five five one six three", "that's f r lima c november nine five two five five five o one six three", false},
		{"no it's six oh two three one one four nine", "no it's six oh two three one one four nine", true},
		{"and actually it's six oh two three one one four nine", "actually it's six oh two three one one four nine", true},
	} {
		ans := asr.Answer{Result: asr.Result{Text: c.grammar, Words: words(c.grammar)}}
		ans.Value, ans.OK = slot.Parse(c.grammar)
		lm := asr.Result{Text: c.heard, Words: words(c.heard)}
		h := l.understand(t.Context(), m, exp, Utterance{Open: lm, Readings: []Reading{{Slot: slot, Answer: ans}}, Spoken: true})
		repaired := slices.ContainsFunc(h.values, func(v fieldValue) bool { return v.field == rx })
		if repaired != c.repair {
			t.Errorf("%q after 60231148 was read back: %s %v (%s), want a repair of the prescription number: %v", c.heard, h.intent, h.values, h.why, c.repair)
		}
	}
}
