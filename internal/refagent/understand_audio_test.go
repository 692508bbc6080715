package refagent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/asr"
	"github.com/voicebench/humanaudit/internal/refagent/dialog"
)

// claimTools is a claims line: the caller is verified by policy number and date of birth, and the
// claim has a callback number, an estimate and a shop.
var claimTools = []dialog.Tool{
	{Name: "verify_caller", Description: "Check the caller's identity against the policy record.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"policy_number":{"type":"string"},"date_of_birth":{"type":"string","description":"Date of birth, YYYY-MM-DD"}},"required":["policy_number","date_of_birth"]}`)},
	{Name: "update_claim", Description: "Record one or more fields of the claim.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"policy_number":{"type":"string"},"callback_phone":{"type":"string"},` +
			`"estimate_amount":{"type":["number","string"],"description":"Shop estimate in dollars"},"preferred_shop":{"type":"string"}}}`)},
	{Name: "mark_ready", Description: "Mark the claim complete and ready for review.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
}

const claimInstructions = "You are the claims line of Cascadia Mutual. Verify the caller with their policy number and date of birth. Record every detail with update_claim and mark the claim ready."

// audioCall is a dialogue driven turn by turn with recorded caller audio: each turn is Flite
// speech passed through Opus, recognized and understood as the responder does.
type audioCall struct {
	t     *testing.T
	d     *dialog.Dialog
	rec   *asr.Recognizer
	env   func(name string, args map[string]any) string
	calls []string
	said  []string
}

func newAudioCall(t *testing.T, env func(string, map[string]any) string) *audioCall {
	return newAudioCallAt(t, claimInstructions, claimTools, env)
}

// newAudioCallAt is an audioCall with another desk's instructions and tools.
func newAudioCallAt(t *testing.T, instructions string, tools []dialog.Tool, env func(string, map[string]any) string) *audioCall {
	needTools(t)
	rec := sharedRecognizer(t)
	d := dialog.New(dialog.Config{Now: func() time.Time { return time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) }, Known: rec.Known, Homophones: rec.Homophones})
	d.Configure(instructions, tools)
	c := &audioCall{t: t, d: d, rec: rec, env: env}
	c.respond()
	return c
}

// respond lets the agent act until it speaks, answering its tool calls with env.
func (c *audioCall) respond() string {
	for range 12 {
		act := c.d.Next()
		if len(act.Calls) == 0 {
			c.said = append(c.said, act.Say)
			return act.Say
		}
		for _, cl := range act.Calls {
			var args map[string]any
			json.Unmarshal(cl.Args, &args)
			c.calls = append(c.calls, cl.Name+" "+string(cl.Args))
			out := `{"ok":true}`
			if c.env != nil {
				out = c.env(cl.Name, args)
			}
			c.d.ToolResult(cl.Name, out)
		}
	}
	c.t.Fatal("the agent kept calling tools")
	return ""
}

// typed is a caller turn given as text (to move the dialogue to the state a test needs).
func (c *audioCall) typed(text string) string {
	c.d.Heard(c.d.Question().UnderstandText(context.Background(), text))
	return c.respond()
}

// spoken is a caller turn said in voice and heard through Opus; it returns what the agent
// understood and what it says next.
func (c *audioCall) spoken(voice, text string) (dialog.Heard, string) {
	c.t.Helper()
	start := time.Now()
	h := hear(context.Background(), c.rec, c.d.Question(), spoken(c.t, voice, text), nil)
	c.t.Logf("%s %q heard %q: %s %v (%s) in %v", voice, text, h.Transcript(), h.Intent(), h.Fields(), h.Why(), time.Since(start).Round(time.Millisecond))
	c.d.Heard(h)
	return h, c.respond()
}

func expectIn(t *testing.T, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("agent said %q, want it to contain %q", got, w)
		}
	}
}

// TestSlotChoiceOnRecordedAudio: each spoken turn is decoded with the grammar of every field still
// open, and the value lands in the field whose grammar fits it best, whatever was asked; a turn
// that holds no value is not forced into one.
func TestSlotChoiceOnRecordedAudio(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes recorded speech")
	}
	c := newAudioCall(t, func(name string, args map[string]any) string {
		if name == "verify_caller" {
			return `{"ok":true,"verified":true}`
		}
		return `{"ok":true}`
	})
	expectIn(t, c.typed("Hi, I'd like to report a cracked windshield."), "What is your policy number?")

	// Asked for the policy number, the caller gives the date of birth: it is the date of birth.
	h, next := c.spoken("slt", "March fourteenth, nineteen seventy-nine.")
	if got := h.Fields()["date_of_birth"]; got != "1979-03-14" {
		t.Errorf("a date said when the policy number was asked: fields %v, want date_of_birth 1979-03-14", h.Fields())
	}
	if _, ok := h.Fields()["policy_number"]; ok {
		t.Errorf("the date landed in the policy number: %v", h.Fields())
	}
	expectIn(t, next, "policy number")

	// A bare acknowledgement holds no value for the question.
	h, _ = c.spoken("rms", "Okay, sure.")
	if len(h.Fields()) != 0 {
		t.Errorf("an acknowledgement was forced into a slot: %v", h.Fields())
	}

	// Asked for the policy number again, the caller gives the phone number: it is the callback
	// phone (ten digits, a phone's grammar), not a policy number.
	h, _ = c.spoken("slt", "You can reach me at five oh three, five five five, oh one four seven.")
	if got := h.Fields()["callback_phone"]; got != "503-555-0147" {
		t.Errorf("a phone number said when the policy number was asked: fields %v, want callback_phone 503-555-0147", h.Fields())
	}

	// Talk about the shop holds no date, number or code.
	h, _ = c.spoken("awb", "I'd like to use Clearview Auto Glass, I've been there before.")
	for _, f := range []string{"policy_number", "estimate_amount", "callback_phone", "date_of_birth"} {
		if v, ok := h.Fields()[f]; ok {
			t.Errorf("talk of a shop was forced into %s = %v", f, v)
		}
	}
}

// TestReadBackAndRepairOnRecordedAudio: a spoken code is read back character by character for a
// yes or no; on "no" the agent asks for that item alone, on a second "no" it asks for it spelled,
// and a "yes" moves the call on.
func TestReadBackAndRepairOnRecordedAudio(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes recorded speech")
	}
	c := newAudioCall(t, nil)
	c.typed("Hi, I'd like to report a cracked windshield.")
	_, next := c.spoken("slt", "Sure, it's P A, two zero, four four seven one eight.")
	expectIn(t, next, "That's ", ", ", "Is that right?")
	_, next = c.spoken("slt", "No.")
	expectIn(t, next, "Sorry about that.", "What is your policy number?")
	_, next = c.spoken("slt", "P A, two zero, four four seven one eight.")
	expectIn(t, next, "That's ", "Is that right?")
	_, next = c.spoken("slt", "No, that's not right.")
	expectIn(t, next, "policy number", "one letter or digit at a time")
	h, next := c.spoken("slt", "P as in papa, A as in alpha, two, zero, four, four, seven, one, eight.")
	if got := h.Fields()["policy_number"]; got == nil {
		t.Errorf("the spelled code gave no policy number: %v", h.Fields())
	} else {
		t.Logf("spelled with the spelling alphabet: %v", got)
	}
	expectIn(t, next, "That's ", "Is that right?")
	h, next = c.spoken("rms", "Yes, that's right.")
	if h.Intent() != "yes" {
		t.Errorf("yes heard as %s", h.Intent())
	}
	expectIn(t, next, "What is your date of birth?")
	// Every reading was recorded as heard (the tool calls are real), and no call verified a
	// caller without a date of birth.
	n := 0
	for _, cl := range c.calls {
		if strings.HasPrefix(cl, "update_claim") && strings.Contains(cl, "policy_number") {
			n++
		}
		if strings.HasPrefix(cl, "verify_caller") {
			t.Errorf("verified before the date of birth: %s", cl)
		}
	}
	if n == 0 {
		t.Errorf("the policy number was never recorded: %v", c.calls)
	}
}

// TestNBestVerificationOnRecordedAudio: when the verify tool refuses what was heard, the agent
// tries the recognizer's other readings of the code against it (each a real verify call) before
// asking again, and says so.
func TestNBestVerificationOnRecordedAudio(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes recorded speech")
	}
	rec := sharedRecognizer(t)
	needTools(t)
	const said = "It's P A, two zero, four four seven one eight."
	pcm := spoken(t, "slt", said)
	ans, err := rec.RecognizeSlot(context.Background(), pcm, 24000, asr.Slot{Kind: asr.KindIdentifier, Subject: "policy number", Alternatives: 3})
	if err != nil {
		t.Fatal(err)
	}
	var alts []string
	for _, a := range ans.Alternatives {
		alts = append(alts, a.Text)
	}
	t.Logf("best reading %q (%s), alternatives %v", ans.Value.Text, ans.Text, alts)
	if len(alts) == 0 {
		t.Fatalf("the recognizer gave no alternative reading of %q", said)
	}
	// The record on file holds one of the other readings: the best one does not verify.
	onFile := alts[len(alts)-1]
	var verifyArgs []string
	c := newAudioCall(t, func(name string, args map[string]any) string {
		if name == "verify_caller" {
			verifyArgs = append(verifyArgs, fmt.Sprint(args["policy_number"]))
			if args["policy_number"] == onFile && args["date_of_birth"] == "1979-03-14" {
				return `{"ok":true,"verified":true}`
			}
			return `{"ok":true,"verified":false,"message":"the details do not match our records"}`
		}
		return `{"ok":true}`
	})
	c.typed("Hi, I'd like to report a cracked windshield.")
	_, next := c.spoken("slt", said)
	expectIn(t, next, "Is that right?")
	_, next = c.spoken("rms", "Yes, that's right.")
	expectIn(t, next, "date of birth")
	_, next = c.spoken("slt", "March fourteenth, nineteen seventy-nine.")
	if len(verifyArgs) < 2 || verifyArgs[0] != ans.Value.Text || verifyArgs[len(verifyArgs)-1] != onFile {
		t.Fatalf("verify calls with %v, want the best reading %s first and the alternative %s last", verifyArgs, ans.Value.Text, onFile)
	}
	expectIn(t, next, "you're verified", "another reading")
	recorded := false
	for _, cl := range c.calls {
		recorded = recorded || (strings.HasPrefix(cl, "update_claim") && strings.Contains(cl, `"policy_number":"`+onFile+`"`))
	}
	if !recorded {
		t.Errorf("the reading that verified was not recorded: %v", c.calls)
	}
	t.Logf("tool calls: %v", c.calls)
}

// seatTools record a rebooking's seat preference, an enumeration.
var seatTools = []dialog.Tool{
	{Name: "record_rebooking", Description: "Record the rebooking.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"seat_preference":{"type":"string","enum":["aisle","window","no_preference"]}},"required":["seat_preference"]}`)},
	{Name: "mark_ready", Description: "Mark the rebooking ready for review.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
}

// TestChoiceInTheCallersWordsOnRecordedAudio: asked for a choice, the caller names it among words
// of their own, which the open vocabulary mishears ("aisle if you've got it" as "i will if you've
// got it"): the choice is read by its sound among them, in every voice; a reply that names no
// choice is no answer.
func TestChoiceInTheCallersWordsOnRecordedAudio(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes recorded speech")
	}
	needTools(t)
	rec := sharedRecognizer(t)
	for _, voice := range []string{"slt", "rms", "awb", "kal16"} {
		for said, want := range map[string]string{"Aisle if you've got it.": "aisle", "Window, please.": "window", "Of course, take your time.": "",
			// A repaired answer: the grammar holds one choice, the open transcript the repair.
			"Aisle, sorry, I mean window.": "window"} {
			d := dialog.New(dialog.Config{Now: func() time.Time { return time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) }, Known: rec.Known, Homophones: rec.Homophones})
			d.Configure("You are the rebooking line. Record the seat preference with record_rebooking and mark the rebooking ready.", seatTools)
			c := &audioCall{t: t, d: d, rec: rec}
			c.respond()
			expectIn(t, c.typed("Hi, my flight was cancelled and I need a new one."), "seat preference")
			h, _ := c.spoken(voice, said)
			got, _ := h.Fields()["seat_preference"].(string)
			if got != want {
				t.Errorf("%s voice, %q: seat_preference %q (fields %v, %s), want %q", voice, said, got, h.Fields(), h.Why(), want)
			}
		}
	}
}

// electionTools record an FSA election.
var electionTools = []dialog.Tool{
	{Name: "record_election", Description: "Record the election.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"employee_id":{"type":"string"},"health_fsa_amount":{"type":["number","string"]}}}`)},
	{Name: "mark_ready", Description: "Mark the election ready for review.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
}

// TestRepairInTheNoOnRecordedAudio: a "no" to a misheard code's read-back that says the code again
// ("Nope, sorry, my employee ID is W X, five eight two one three") is a repair, read back in turn,
// not a plain no that asks for the code again.
func TestRepairInTheNoOnRecordedAudio(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes recorded speech")
	}
	needTools(t)
	rec := sharedRecognizer(t)
	d := dialog.New(dialog.Config{Now: func() time.Time { return time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) }, Known: rec.Known, Homophones: rec.Homophones})
	d.Configure("You are the benefits line. Record the election with record_election and mark it ready.", electionTools)
	c := &audioCall{t: t, d: d, rec: rec}
	c.respond()
	c.typed("Hi, I need to set up my FSA elections.")
	h, next := c.spoken("rms", "W as in whiskey, X, then five eight two one three.")
	first := fmt.Sprint(h.Fields()["employee_id"])
	expectIn(t, next, "Is that right?")
	if first == "WX58213" {
		t.Fatalf("the first reading was right (%s): the recognizer changed, and this test needs a misheard code", first)
	}
	h, next = c.spoken("rms", "No, sorry, my employee ID is W X, five eight two one three.")
	if h.Intent() != "correction" || h.Fields()["employee_id"] != "WX58213" {
		t.Fatalf("a no that says the code again heard as %s %v (%s), want a correction to WX58213", h.Intent(), h.Fields(), h.Why())
	}
	expectIn(t, next, "That's W, X, five, eight, two, one, three. Is that right?")
}

// TestWeekdaysInTheCallersWordsOnRecordedAudio: asked for the days that suit them, the caller's
// days are found by their sound among their own words, every one said, where the open vocabulary
// misheard them ("only Tuesdays or Thursdays, I'm afraid" in slt was "i'll meet his bizarre
// thursday's"); a turn that names no day gives none.
func TestWeekdaysInTheCallersWordsOnRecordedAudio(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes recorded speech")
	}
	tools := []dialog.Tool{
		{Name: "record_intake", Description: "Record fields of the intake.", Parameters: json.RawMessage(
			`{"type":"object","properties":{"preferred_days":{"type":"array","items":{"type":"string"}},"callback_phone":{"type":"string"}}}`)},
		{Name: "mark_ready", Description: "Mark the intake ready for review.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	}
	const instructions = "You are the clinic intake line. Record the preferred days and a callback number with record_intake and mark the intake ready."
	for _, c := range []struct {
		voice, said string
		want        []string
	}{
		{"slt", "Only Tuesdays or Thursdays, I'm afraid.", []string{"Tuesday", "Thursday"}},
		{"slt", "Tuesday or Thursday works.", []string{"Tuesday", "Thursday"}},
		{"rms", "Mondays and Fridays are best for me.", []string{"Monday", "Friday"}},
		{"awb", "Only Tuesdays or Thursdays, I'm afraid.", []string{"Tuesday", "Thursday"}},
	} {
		call := newAudioCallAt(t, instructions, tools, nil)
		expectIn(t, call.typed("Hi, I need to set up an appointment."), "preferred days")
		h, _ := call.spoken(c.voice, c.said)
		got, _ := h.Fields()["preferred_days"].([]string)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %q: preferred_days %v (%s), want %v", c.voice, c.said, h.Fields()["preferred_days"], h.Why(), c.want)
		}
	}
	call := newAudioCallAt(t, instructions, tools, nil)
	call.typed("Hi, I need to set up an appointment.")
	if h, _ := call.spoken("slt", "Hmm, let me check my calendar first."); h.Fields()["preferred_days"] != nil {
		t.Errorf("a turn naming no day gave preferred_days %v", h.Fields()["preferred_days"])
	}
}

// TestNamesDirectoryAfterRefusalOnRecordedAudio: a name the open vocabulary does not know is
// heard as common words ("Desmond Back To the Orbit" for Desmond Achterberg, rms through Opus);
// once the caller says that is wrong, the agent puts the names directory's reading of their
// repeat to them, and records it when they agree.
func TestNamesDirectoryAfterRefusalOnRecordedAudio(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes recorded speech")
	}
	tools := []dialog.Tool{
		{Name: "record_claim", Description: "Record fields of the claim.", Parameters: json.RawMessage(
			`{"type":"object","properties":{"insured_name":{"type":"string"},"loss_date":{"type":"string","description":"YYYY-MM-DD"}}}`)},
		{Name: "mark_ready", Description: "Mark the claim ready for review.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	}
	c := newAudioCallAt(t, "You are the property claims line. Record the claim and mark it ready.", tools, nil)
	c.typed("Hi, I need to report some water damage.")
	const said = "Desmond Achterberg. Uh, A C H T E R B E R G."
	_, next := c.spoken("rms", said)
	expectIn(t, next, "That's ", "Is that right?")
	if strings.Contains(next, "Achterberg") {
		t.Logf("the open vocabulary heard the name already: %q", next)
	}
	_, next = c.spoken("rms", "No, that's not right.")
	expectIn(t, next, "Sorry about that.", "insured name")
	_, next = c.spoken("rms", said)
	expectIn(t, next, "That's Desmond Achterberg.", "Is that right?")
	_, next = c.spoken("slt", "Yes, that's right.")
	recorded := ""
	for _, cl := range c.calls {
		if strings.HasPrefix(cl, "record_claim") && strings.Contains(cl, "insured_name") {
			recorded = cl
		}
	}
	if !strings.Contains(recorded, `"insured_name":"Desmond Achterberg"`) {
		t.Errorf("last record of the name %q, want Desmond Achterberg (calls %v)", recorded, c.calls)
	}
	t.Logf("agent: %q", next)
}

// billingTools verify a customer by account number and service address, as a utility's billing
// desk does.
var billingTools = []dialog.Tool{
	{Name: "verify_account", Description: "Verify the caller with account number and service address.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"account_number":{"type":"string"},"service_address":{"type":"string"}},"required":["account_number","service_address"]}`)},
	{Name: "record_arrangement", Description: "Record fields of the payment arrangement.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"account_number":{"type":"string"},"installment_count":{"type":["integer","string"]}},"additionalProperties":false}`)},
	{Name: "mark_ready", Description: "Mark the arrangement ready for review.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
}

const billingInstructions = "You are the billing desk. Verify the caller with the account number and service address. Record fields with record_arrangement and mark it ready."

// TestAddressReadingForVerificationOnRecordedAudio: the open vocabulary hears "Fourteen eighteen
// Alder Court. Unit three B." as "fourteen eighteen alter court unit three d", which matches no
// record. The address read again with its own grammar (the street words heard and the words that
// sound like them, the unit letter among the letters) is "Alder Court, unit three B", and the
// verify tool is tried with it, a real call, before the caller is asked again; the account number
// the caller said yes to when it was read back is varied only after that. When no reading matches,
// only the address is asked for again.
func TestAddressReadingForVerificationOnRecordedAudio(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes recorded speech")
	}
	for _, onFile := range []string{"1418 alder ct unit 3b", "99 elm st"} {
		t.Run(onFile, func(t *testing.T) {
			var verified []string
			account := "" // the account number as read back and affirmed: the record's, for this test
			c := newAudioCallAt(t, billingInstructions, billingTools, func(name string, args map[string]any) string {
				if name != "verify_account" {
					return `{"ok":true}`
				}
				addr := strings.ToLower(fmt.Sprint(args["service_address"]))
				if account == "" {
					account = fmt.Sprint(args["account_number"])
				}
				verified = append(verified, fmt.Sprint(args["account_number"])+" / "+addr)
				if args["account_number"] == account && addr == onFile {
					return `{"ok":true,"verified":true}`
				}
				return `{"ok":true,"verified":false,"message":"the details do not match our records"}`
			})
			c.typed("Hi, I need to set up a payment plan.")
			_, next := c.spoken("rms", "Eight eight four one, oh three nine two, five seven.")
			expectIn(t, next, "Is that right?")
			_, next = c.spoken("rms", "Yes, that's right.")
			expectIn(t, next, "service address")
			h, next := c.spoken("rms", "Fourteen eighteen Alder Court. Unit three B.")
			if got := fmt.Sprint(h.Fields()); !strings.Contains(got, "1418") {
				t.Fatalf("heard %v, want the address", got)
			}
			t.Logf("verify calls: %q", verified)
			varied := false
			for _, v := range verified {
				if !strings.HasPrefix(v, account+" / ") {
					varied = true
				} else if varied {
					t.Errorf("verify calls %q: the account number the caller said yes to (%s) is varied before the address's readings are tried with it", verified, account)
				}
			}
			if !slices.Contains(verified, account+" / 1418 alder ct unit 3b") {
				t.Errorf("verify calls %q, want one with the address read again (1418 Alder Ct Unit 3B)", verified)
			}
			if onFile != "99 elm st" {
				expectIn(t, next, "you're verified", "another reading", "1418 Alder Ct Unit 3B")
				return
			}
			expectIn(t, next, "don't match", "service address")
			if strings.Contains(next, "account number") {
				t.Errorf("agent said %q: the account number the caller said yes to is asked again", next)
			}
		})
	}
}

// TestEmailReadBackOnRecordedAudio: an e-mail address dictated among a name, its spelling and
// "dot"s is read with the e-mail directory and read back; when the caller refuses the reading and
// says it again, the address with the recognizer's other spelling of a word's sound ("vasquez"
// for "vazquez") is read back next, and the address the caller agrees to is recorded.
func TestEmailReadBackOnRecordedAudio(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes recorded speech")
	}
	tools := []dialog.Tool{
		{Name: "record_rebooking", Description: "Record fields of the rebooking.", Parameters: json.RawMessage(
			`{"type":"object","properties":{"contact_email":{"type":"string"}}}`)},
		{Name: "mark_ready", Description: "Mark the rebooking ready.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	}
	const said, want = "D dot Vasquez, V A S Q U E Z, at albrecht dot example.", "d.vasquez@albrecht.example"
	for _, voice := range []string{"rms", "awb"} {
		c := newAudioCallAt(t, "You are the rebooking desk. Record the contact email with record_rebooking and mark it ready.", tools, nil)
		expectIn(t, c.typed("Hi, my flight got cancelled."), "email")
		_, next := c.spoken(voice, said)
		readBacks := 0
		for strings.Contains(next, "Is that right?") && readBacks < 4 {
			readBacks++
			if strings.Contains(next, "That's d dot vasquez at albrecht dot example.") {
				c.spoken(voice, "Yes, that's right.")
				break
			}
			_, next = c.spoken(voice, "No, that's not right.")
			if !strings.Contains(next, "Is that right?") {
				_, next = c.spoken(voice, said)
			}
		}
		if readBacks == 0 {
			t.Errorf("%s: the address was not read back (agent: %q)", voice, c.said)
		}
		recorded := ""
		for _, cl := range c.calls {
			if strings.HasPrefix(cl, "record_rebooking") {
				recorded = cl
			}
		}
		if !strings.Contains(recorded, `"contact_email":"`+want+`"`) {
			t.Errorf("%s: last record %q after %d read-backs, want contact_email %s (agent: %q)", voice, recorded, readBacks, want, c.said)
		}
	}
}
