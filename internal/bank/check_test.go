package bank

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/flow"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// suiteDir is the shipped task suite.
var suiteDir = filepath.Join("..", "..", "tasks")

func mustTask(tb testing.TB, id string) *task.Task {
	tb.Helper()
	t, err := task.LoadFile(filepath.Join(suiteDir, id+".json"))
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

func mustSuite(tb testing.TB) []*task.Task {
	tb.Helper()
	tasks, probs := task.LoadAll(suiteDir)
	if len(probs) > 0 {
		tb.Fatalf("task suite does not validate:\n%v", probs)
	}
	return tasks
}

func plan(tb testing.TB, t *task.Task, id string) trace.Plan {
	tb.Helper()
	for _, p := range flow.ReachablePlans(t) {
		if p.ID == id {
			return p
		}
	}
	tb.Fatalf("task %s cannot reach plan %s", t.ID, id)
	return trace.Plan{}
}

func TestShippedBankPassesCheck(t *testing.T) {
	tasks := mustSuite(t)
	for _, p := range Check(tasks) {
		t.Error(p)
	}
}

// TestCheckRejects shows every rejection reason firing on a variant that earns it, and the same
// plan passing with a good variant.
func TestCheckRejects(t *testing.T) {
	tk := mustTask(t, "fnol-auto-glass")
	cases := []struct {
		name, plan, text, reason string
	}{
		{"introduces a number", "answer:policy_number",
			"It's P A, two zero, four four seven one eight. My old one ended in nine nine two one.", "introduces the number 9921"},
		{"introduces a date", "answer:damage",
			"A rock hit the windshield on the driver's side on October third and the chip spread into a crack about ten inches long.", "introduces the date 10-03"},
		{"introduces an e-mail address", "answer:preferred_shop",
			"Clearview Auto Glass. Their e-mail is jobs@clearview.example.", "introduces the e-mail address jobs@clearview.example"},
		{"states an on_ask fact in the opening", "open",
			"Hi, my windshield cracked at twenty-one fifty Southwest Borland Road in Tualatin, and my policy number is P A two zero four four seven one eight.", `states fact "policy_number"`},
		{"states a later version before its event", "answer:callback_phone",
			"It's five oh three, five five five, oh one seven four.", `states fact "callback_phone" version 2 ("503-555-0174"), which its reveal rule does not allow yet`},
		{"states an on_event fact before it is revealed", "answer:preferred_shop",
			"Clearview Auto Glass. They said it would be six hundred twelve dollars and forty cents.", `states fact "estimate"`},
		{"contradicts the world with a superseded version", "correct:callback_phone@v2",
			"Actually, it's not five oh three, five five five, oh one four seven. It's five oh three, five five five, oh one seven four.", "contradicts the task world"},
		{"states a gold-only value", "answer:preferred_shop",
			"Clearview Auto Glass. And my deductible is one hundred dollars, right?", `states gold-only value "100" of field "deductible"`},
		{"states a protected value", "acknowledge",
			"Okay. The VIN is 4S4BSANC2K3318820 if you need it.", `states protected account value "4S4BSANC2K3318820"`},
		{"an answer that never says its value", "answer:loss_date",
			"It was on a Tuesday, I think.", `does not express its plan: never says fact "loss_date"`},
		{"a correction that never corrects", "correct:callback_phone@v2",
			"My number is five oh three, five five five, oh one seven four.", "a correction with no word that corrects"},
		{"an approval without a yes", "approve:submit_claim",
			"Let me think about it for a second.", "an approval without a yes"},
		{"an approval that withdraws", "approve:submit_claim",
			"Yes. Actually no, don't.", "an approval that also refuses or withdraws"},
		{"a decline that never says no", "decline:submit_claim",
			"Sounds good to me.", "a decline that never says no"},
		{"an affirmation without a yes", "affirm",
			"Hmm.", "an affirmation without a yes"},
		{"an unknown that claims to know", "unknown",
			"Let me see.", "never says the caller does not know"},
		{"a close without goodbye", "close",
			"Okay.", "a close without thanks or goodbye"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckVariant(tk, plan(t, tk, tc.plan), tc.text)
			if !anyContains(got, tc.reason) {
				t.Errorf("CheckVariant(%s, %q) = %q, want a reason containing %q", tc.plan, tc.text, got, tc.reason)
			}
		})
	}
}

func TestCheckRejectsRevocationThatNeverWithdraws(t *testing.T) {
	tk := mustTask(t, "utility-payment-arrangement")
	p := plan(t, tk, "revoke:set_up_arrangement")
	if got := CheckVariant(tk, p, "Great, thanks."); !anyContains(got, "a revocation that never withdraws") {
		t.Errorf("got %q", got)
	}
	if got := CheckVariant(tk, p, "Actually, wait, hold off on that. I want to talk to my partner first."); len(got) > 0 {
		t.Errorf("a real revocation was rejected: %q", got)
	}
}

func TestCheckAcceptsNaturalVariants(t *testing.T) {
	tk := mustTask(t, "fnol-auto-glass")
	good := map[string]string{
		"answer:policy_number":      "Um, okay, P as in Paul, A, two zero, four four seven one eight.",
		"answer:loss_date":          "That was the twenty-fourth of November.",
		"answer:callback_phone":     "Sure, five oh three, five five five, oh one four seven.",
		"correct:callback_phone@v2": "Oh, sorry, I flipped two digits. It's five oh three, five five five, oh one seven four.",
		"answer:damage":             "A rock hit the windshield on the driver's side and the chip spread into a crack, about ten inches.",
		"volunteer:estimate":        "Oh, the shop just texted. Six hundred twelve dollars and forty cents.",
		"approve:submit_claim":      "Yes, go ahead.",
		"close":                     "That's all, thanks. Bye.",
	}
	for id, text := range good {
		if got := CheckVariant(tk, plan(t, tk, id), text); len(got) > 0 {
			t.Errorf("%s: %q rejected: %q", id, text, got)
		}
	}
}

func TestCheckReportsCoverage(t *testing.T) {
	tk := mustTask(t, "fnol-auto-glass")
	tk.Bank = map[string][]string{
		"affirm":          {"Yes, that's right.", "yes, that's right"},
		"answer:no_such":  {"Something.", "Something else."},
		"acknowledge":     {"Okay.", "Sure.", "Mm-hm.", "Right.", "Got it.", "Alright."},
		"close":           {"Thanks, bye."},
		"revoke:whatever": {"No."},
	}
	var lines []string
	for _, p := range CheckTask(tk) {
		lines = append(lines, p.String())
	}
	for _, want := range []string{
		"fnol-auto-glass: open: -: has 0 variants, needs 2 to 5",
		"fnol-auto-glass: close: -: has 1 variants, needs 2 to 5",
		"fnol-auto-glass: acknowledge: -: has 6 variants, needs 2 to 5",
		"fnol-auto-glass: affirm: 2: duplicate of variant 1",
		"fnol-auto-glass: answer:no_such: -: not a plan this task can reach",
	} {
		if !anyContains(lines, want) {
			t.Errorf("missing problem %q in:\n%s", want, strings.Join(lines, "\n"))
		}
	}
}

func anyContains(xs []string, sub string) bool {
	for _, x := range xs {
		if strings.Contains(x, sub) {
			return true
		}
	}
	return false
}
