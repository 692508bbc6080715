package flow

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

func TestReadBackComparesEachValueTheGradersWay(t *testing.T) {
	tk := loadTask(t, "it-vpn-incident")
	known := map[string]int{"caller_name": 1, "employee_id": 1, "email": 1, "error_code": 1}
	cases := []struct {
		name, text string
		want       map[string]bool // fact → matches
	}{
		{"all right, spoken forms", "To confirm, I have your employee ID as E M P zero zero four one seven, and your email as priya dot v at northwind dot example. Is that correct?",
			map[string]bool{"employee_id": true, "email": true}},
		{"one digit wrong", "Let me confirm: employee ID EMP-00471; name Priya Venkataraman. Is that right?",
			map[string]bool{"employee_id": false, "caller_name": true}},
		{"a wrong name", "So I have your name as Priya Smithson. Is that correct?", map[string]bool{"caller_name": false}},
		{"no value after the name", "Is your employee ID on file? Is that correct?", map[string]bool{}},
		{"words between the name and the value", "I have the employee ID on file as E M P zero zero four one seven.", map[string]bool{"employee_id": true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]bool{}
			for _, rv := range ReadBack(tk, known, c.text) {
				if rv.Judged {
					got[rv.Fact] = rv.Match
				}
			}
			for f, m := range c.want {
				if g, ok := got[f]; !ok || g != m {
					t.Errorf("%s: read %v (found %v), want match %v; all %+v", f, g, ok, m, ReadBack(tk, known, c.text))
				}
			}
			for f := range got {
				if _, ok := c.want[f]; !ok {
					t.Errorf("read a value for %s that the text does not state: %+v", f, ReadBack(tk, known, c.text))
				}
			}
		})
	}
}

// The caller corrects a value read back wrong before it affirms or approves, and affirms once the
// agent reads everything back right.
// TestReadBackAfterWordsThatStillNameTheFact: "last four digits of the card 7 3 0 6" reads back the
// card's last four as 7306, not as an identifier "THECARD7306" the caller would call wrong.
func TestReadBackAfterWordsThatStillNameTheFact(t *testing.T) {
	for _, c := range []struct{ task, right, wrong string }{
		{"card-dispute-charge", "7 3 0 6", "7 3 0 9"},
		// A value that begins with the digit the fact is named by ("last 4"): the digits are the
		// value, not more of its name (they were trimmed to "1 9", and a right read-back refused).
		{"card-lost-freeze-replace", "4 4 1 9", "4 4 1 8"},
	} {
		tk, err := task.LoadFile(filepath.Join("..", "..", "tasks", c.task+".json"))
		if err != nil {
			t.Fatal(err)
		}
		text := "Here's what I have: dispute reason cancelled recurring; last four digits of the card " + c.right + "; merchant Zenfit Studio."
		for _, r := range []struct {
			text, said string
			match      bool
		}{{text, c.right, true}, {strings.Replace(text, c.right, c.wrong, 1), c.wrong, false}} {
			var found bool
			for _, rv := range ReadBack(tk, map[string]int{"card_last4": 1}, r.text) {
				if rv.Fact == "card_last4" {
					found = true
					if !rv.Judged || rv.Match != r.match || rv.Said != r.said {
						t.Errorf("%s %q: read %q, judged %v match %v; want %q, match %v", c.task, r.text, rv.Said, rv.Judged, rv.Match, r.said, r.match)
					}
				}
			}
			if !found {
				t.Errorf("%s %q: the card's last four were not read", c.task, r.text)
			}
		}
	}
}

func TestWrongReadBackIsCorrectedBeforeAffirming(t *testing.T) {
	tk := loadTask(t, "it-vpn-incident")
	e := New(tk)
	e.Observe(trace.Event{T: 0, Type: trace.CallerAudioStart})
	if p := e.NextPlan(); p.ID != "open" {
		t.Fatalf("first plan %s", p.ID)
	}
	agentSays := func(text string) {
		e.Observe(trace.Event{T: 1000, Type: trace.AgentTranscript, Text: text})
		for _, a := range Classify(tk, text) {
			e.Observe(trace.Event{T: 1000, Type: trace.AgentAct, Act: a.String()})
		}
	}
	agentSays("To confirm, I have your employee ID as EMP-00471. Is that correct?")
	p := e.NextPlan()
	if p.ID != "fix_readback:employee_id" || p.Kind != trace.PlanCorrect || len(p.Facts) != 1 || p.Facts[0] != (trace.FactRef{Fact: "employee_id", Version: 1}) {
		t.Fatalf("plan after a wrong read-back: %+v, want fix_readback:employee_id", p)
	}
	agentSays("Sorry. To confirm, I have your employee ID as EMP-00417. Is that correct?")
	if p := e.NextPlan(); p.ID != "affirm" {
		t.Fatalf("plan after the right read-back: %+v, want affirm", p)
	}
}

// A read-back that names nothing ("That's six, eight, five, two, three. Is that right?") right
// after the caller gave one fact is of that fact: the caller corrects it when it is wrong and
// affirms it when right. Values read symbol by symbol and verification keys that fill no artifact
// field (a date of birth, a ZIP on file) are judged by their own shape.
func TestUnnamedReadBackIsOfTheValueJustGiven(t *testing.T) {
	tk, err := task.LoadFile(filepath.Join("..", "..", "tasks", "bank-address-change.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		fact, readBack string
		want           string // the caller's next plan
	}{
		{"old_zip", "Thanks. That's six, eight, five, two, three. Is that right?", "fix_readback:old_zip"},
		{"old_zip", "Thanks. That's six, eight, five, oh, six. Is that right?", "affirm"},
		{"old_zip", "Thanks. That's 68506, is that right?", "affirm"},
		{"dob", "Thanks. That's April 8th, 1999. Is that right?", "fix_readback:dob"},
		{"dob", "Thanks. That's April 19th, 1987. Is that right?", "affirm"},
		{"last4", "Got it. So that's six, zero, eight, seven? Is that correct?", "fix_readback:last4"},
		// A value that cannot be read the fact's way is no evidence either way.
		{"old_zip", "Thanks. That's the one on file. Is that right?", "affirm"},
		// A name: wrong when it has a word the name does not.
		{"holder", "Thanks. That's Amgers Nakamura Okay, A M G E R S. Is that right?", "fix_readback:holder"},
		{"holder", "Thanks. That's Anders Nakamura-Obi, A N D E R S. Is that right?", "affirm"},
		// A word agents say around a name is the name's when said straight after it: "Obi"
		// heard as "okay" (bank turn suite) is a wrong name, not an aside.
		{"holder", "Thanks. That's Anders Nakamura Okay, A N D E R S. Is that right?", "fix_readback:holder"},
		{"holder", "Thanks. That's Anders Nakamura-Obi, okay? Is that right?", "affirm"},
		{"holder", "Thanks. So that's Mr. Nakamura-Obi? Is that right?", "affirm"},
		{"holder", "Thanks. That's Anders Nakamura-Obi, Correct? Is that right?", "affirm"},
		{"holder", "Thanks, that's everything I need for the name. Is that right?", "affirm"},
	} {
		e := New(tk)
		e.Observe(trace.Event{T: 0, Type: trace.CallerAudioStart})
		e.NextPlan() // the opening
		ask := map[string]string{"old_zip": "What is the ZIP code on file?", "dob": "What is your date of birth?", "last4": "What are the last four digits of your debit card?",
			"holder": "What is the name of the account holder?"}[c.fact]
		say := func(text string) {
			e.Observe(trace.Event{T: 1000, Type: trace.AgentTranscript, Text: text})
			for _, a := range Classify(tk, text) {
				e.Observe(trace.Event{T: 1000, Type: trace.AgentAct, Act: a.String()})
			}
		}
		say(ask)
		if p := e.NextPlan(); p.Kind != trace.PlanAnswer || p.Facts[0].Fact != c.fact {
			t.Fatalf("%q: plan %+v, want the answer of %s", ask, p, c.fact)
		}
		say(c.readBack)
		if p := e.NextPlan(); !strings.HasPrefix(p.ID, c.want) {
			t.Errorf("after %s, %q: plan %s, want %s", c.fact, c.readBack, p.ID, c.want)
		}
	}
	// After the caller affirmed, a read-back naming nothing is not taken as the last fact's.
	e := New(tk)
	e.Observe(trace.Event{T: 0, Type: trace.CallerAudioStart})
	e.NextPlan()
	for _, text := range []string{"What is the ZIP code on file?", "Thanks. That's six, eight, five, oh, six. Is that right?"} {
		e.Observe(trace.Event{T: 1000, Type: trace.AgentTranscript, Text: text})
		for _, a := range Classify(tk, text) {
			e.Observe(trace.Event{T: 1000, Type: trace.AgentAct, Act: a.String()})
		}
		e.NextPlan()
	}
	text := "Great. That's six, eight, five, two, three. Is that right?"
	e.Observe(trace.Event{T: 2000, Type: trace.AgentTranscript, Text: text})
	for _, a := range Classify(tk, text) {
		e.Observe(trace.Event{T: 2000, Type: trace.AgentAct, Act: a.String()})
	}
	if p := e.NextPlan(); p.ID != "affirm" {
		t.Errorf("a read-back after the caller affirmed was judged as the ZIP's: plan %s", p.ID)
	}
}

// An identifier read back as the caller says it is right even when its written form has more
// (MRN-0048177, said "zero zero four eight one seven seven"): the caller affirms it rather than
// "correcting" it with the same digits. Letters the caller says (I N V) cannot be left out, and
// another type prefix or another digit is wrong.
func TestIdentifierReadBackWithoutItsPrefix(t *testing.T) {
	for _, c := range []struct {
		task, fact, naming, text string
		match                    bool
	}{
		{"clinic-reschedule-appointment", "mrn", "medical record number", "zero, zero, four, eight, one, seven, seven", true},
		{"clinic-reschedule-appointment", "mrn", "medical record number", "0048177", true},
		{"clinic-reschedule-appointment", "mrn", "medical record number", "M R N 0 0 4 8 1 7 7", true},
		{"clinic-reschedule-appointment", "mrn", "medical record number", "zero, zero, four, eight, one, seven, one", false},
		{"clinic-reschedule-appointment", "mrn", "medical record number", "PT-0048177", false},
		{"invoice-duplicate-payment", "invoice", "invoice number", "I, N, V, seven, seven, three, one, zero", true},
		{"invoice-duplicate-payment", "invoice", "invoice number", "seven, seven, three, one, zero", false},
	} {
		tk, err := task.LoadFile(filepath.Join("..", "..", "tasks", c.task+".json"))
		if err != nil {
			t.Fatal(err)
		}
		known := map[string]int{c.fact: 1}
		unnamed := "Thanks. That's " + c.text + ". Is that right?"
		rvs := UnnamedReadBack(tk, known, c.fact, unnamed)
		if len(rvs) != 1 || !rvs[0].Judged || rvs[0].Match != c.match {
			t.Errorf("%q: read %+v, want one judged value, match %v", unnamed, rvs, c.match)
		}
		named := "Thanks. I have your " + c.naming + " as " + c.text + ". Is that right?"
		rvs = ReadBack(tk, known, named)
		if len(rvs) != 1 || !rvs[0].Judged || rvs[0].Match != c.match {
			t.Errorf("%q: read %+v, want one judged value, match %v", named, rvs, c.match)
		}
	}
}

// A name read back with an abbreviated title is read whole ("Dr. Lleuw" is not "Dr"), and a code
// in a plain string field (an error code) is judged symbol by symbol: both were affirmed wrong
// (bank turn suite, clinic-referral-intake and it-vpn-incident).
func TestReadBackOfATitledNameAndACode(t *testing.T) {
	for _, c := range []struct {
		task, fact, text string
		judged, match    bool
	}{
		{"clinic-referral-intake", "physician", "Thanks. That's Dr. Lleuw, L L E U W. Is that right?", true, false},
		{"clinic-referral-intake", "physician", "Thanks. That's Dr. Oluwaseun Adeyemi. Is that right?", true, true},
		{"clinic-referral-intake", "physician", "Thanks. That's Dr. Adeyemi. Is that right?", true, true},
		{"it-vpn-incident", "error_code", "Thanks. That's zero, six, eight, zero, zero, seven, Q, A, seven. Is that right?", true, false},
		{"it-vpn-incident", "error_code", "Thanks. That's zero, X, eight, zero, zero, seven, two, E, E, seven. Is that right?", true, true},
		{"it-vpn-incident", "error_code", "Thanks. That's 0x80072EE7. Is that right?", true, true},
	} {
		tk, err := task.LoadFile(filepath.Join("..", "..", "tasks", c.task+".json"))
		if err != nil {
			t.Fatal(err)
		}
		rvs := UnnamedReadBack(tk, map[string]int{c.fact: 1}, c.fact, c.text)
		if len(rvs) != 1 || rvs[0].Judged != c.judged || rvs[0].Match != c.match {
			t.Errorf("%s %q: read %+v, want one value judged %v, match %v", c.task, c.text, rvs, c.judged, c.match)
		}
	}
}
