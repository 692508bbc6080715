package bank

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/voicebench/humanaudit/internal/canon"
	"github.com/voicebench/humanaudit/internal/flow"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// Problem is one bank variant (or plan) that fails quality control.
type Problem struct {
	Task    string
	Plan    string
	Variant int // 1-based; 0 when the problem is about the plan as a whole
	Reason  string
}

// String renders the problem as "TASK: PLAN: VARIANT: reason" ("-" for a plan-level problem).
func (p Problem) String() string {
	v := "-"
	if p.Variant > 0 {
		v = strconv.Itoa(p.Variant)
	}
	return fmt.Sprintf("%s: %s: %s: %s", p.Task, p.Plan, v, p.Reason)
}

// Check runs the bank's quality control on every task and returns the problems found, in task,
// plan and variant order. It is deterministic: it reads the text through the grader's own
// canonicalisation, never a model.
func Check(tasks []*task.Task) []Problem {
	var out []Problem
	for _, t := range tasks {
		out = append(out, CheckTask(t)...)
	}
	return out
}

// CheckTask checks one task's bank: every reachable plan has 2 to 5 distinct variants, no key names
// a plan the task cannot reach, and every variant passes CheckVariant.
func CheckTask(t *task.Task) []Problem {
	c := newChecker(t)
	var out []Problem
	reach := map[string]trace.Plan{}
	for _, p := range flow.ReachablePlans(t) {
		reach[p.ID] = p
		vs := t.Bank[p.ID]
		if len(vs) < MinVariants || len(vs) > MaxVariants {
			out = append(out, Problem{Task: t.ID, Plan: p.ID, Reason: fmt.Sprintf("has %d variants, needs %d to %d", len(vs), MinVariants, MaxVariants)})
		}
		seen := map[string]int{}
		for i, text := range vs {
			if j, dup := seen[canon.Fold(text)]; dup {
				out = append(out, Problem{Task: t.ID, Plan: p.ID, Variant: i + 1, Reason: fmt.Sprintf("duplicate of variant %d", j)})
				continue
			}
			seen[canon.Fold(text)] = i + 1
			for _, r := range c.variant(p, text) {
				out = append(out, Problem{Task: t.ID, Plan: p.ID, Variant: i + 1, Reason: r})
			}
		}
	}
	for _, v := range Variants(t) {
		if _, ok := reach[v.Plan]; !ok && v.Variant == 1 {
			out = append(out, Problem{Task: t.ID, Plan: v.Plan, Reason: "not a plan this task can reach (see flow.ReachablePlans)"})
		}
	}
	return out
}

// CheckVariant returns the reasons one utterance is not acceptable for plan p of task t (none
// when it is).
func CheckVariant(t *task.Task, p trace.Plan, text string) []string {
	return newChecker(t).variant(p, text)
}

type goldValue struct {
	field, value string
	kind         valueKind
}

type checker struct {
	t         *task.Task
	kinds     map[string]valueKind
	goldOnly  []goldValue
	protected []goldValue
	visible   *utterance // the caller's initial visible state: persona, goals, constraints
}

func newChecker(t *task.Task) *checker {
	c := &checker{t: t, kinds: map[string]valueKind{}}
	for i := range t.User.Facts {
		f := &t.User.Facts[i]
		c.kinds[f.ID] = factKind(t, f)
	}
	callerKnows := t.KnownToCaller()
	for _, gf := range t.Grader.Fields {
		kind := goldKind(t, gf)
		switch gf.Params.Item {
		case "date":
			kind = kindDate
		case "phone":
			kind = kindPhone
		case "identifier":
			kind = kindIdentifier
		case "address":
			kind = kindAddress
		}
		if kind == kindInterval {
			kind = kindDate
		}
		for _, g := range task.GoldStrings(gf.Gold) {
			if len(g) < 3 && kind != kindNumber || callerKnows(g) || commonWord(g) {
				continue
			}
			c.goldOnly = append(c.goldOnly, goldValue{field: gf.Field, value: g, kind: kind})
		}
	}
	for _, pv := range t.Grader.ProtectedValues {
		c.protected = append(c.protected, goldValue{value: pv, kind: guessKind(pv)})
	}
	u := t.User
	c.visible = analyse(strings.Join(append(append([]string{t.Title, u.Persona.Role}, u.Goals...), u.Constraints...), ". "))
	return c
}

// commonWord is true for enumeration-like values ("glass", "team") that ordinary speech contains.
func commonWord(s string) bool {
	return !hasDigit(s) && !strings.ContainsAny(s, " -/@") && len(s) < 12
}

func guessKind(v string) valueKind {
	if strings.Contains(v, "@") {
		return kindEmail
	}
	if _, ok := canon.ParseDate(v); ok {
		return kindDate
	}
	if _, ok := canon.Number(v); ok {
		return kindNumber
	}
	if hasDigit(v) {
		return kindIdentifier
	}
	return kindText
}

// specificForms drops the forms of a value that everyday speech contains anyway.
func specificForms(fs []string) []string {
	var out []string
	for _, f := range fs {
		if !commonWord(f) {
			out = append(out, f)
		}
	}
	return out
}

func forms(v task.FactVersion) []string {
	if v.Spoken != "" && v.Spoken != v.Value {
		return []string{v.Value, v.Spoken}
	}
	return []string{v.Value}
}

// Phrase lists for the acts a plan asks the caller to perform, matched on word boundaries.
var (
	yesWords = []string{"yes", "yeah", "yep", "yup", "sure", "okay", "ok", "go ahead", "please do", "do it",
		"that's fine", "sounds good", "approve", "approved", "i approve", "correct", "right", "absolutely",
		"definitely", "fine", "alright", "all right", "of course", "uh-huh", "mm-hm", "that's it", "exactly", "perfect", "go for it"}
	withdrawWords = []string{"don't", "do not", "hold off", "cancel", "withdraw", "take back", "taking back", "take that back",
		"scratch that", "stop", "not yet", "changed my mind", "change my mind", "never mind", "rather not",
		"don't go ahead", "no", "nope", "won't", "can't", "not"}
	// refuseWords, in an approval, take it back ("yes… actually no, don't"). Action words such as
	// "cancel" are not among them: approving a cancellation says "cancel it".
	refuseWords = []string{"don't", "do not", "hold off", "not yet", "never mind", "changed my mind", "change my mind",
		"scratch that", "withdraw", "take back", "take that back", "no", "nope", "rather not"}
	correctionWords = []string{"actually", "sorry", "correction", "correct that", "wrong", "mistake", "i meant", "meant",
		"instead", "scratch that", "wait", "hang on", "hold on", "misspoke", "misread", "not", "change", "changed",
		"update", "oops", "my bad", "no", "also", "add", "as well", "too", "another", "plus"}
	unknownWords = []string{"don't know", "do not know", "not sure", "don't have", "do not have", "no idea", "can't remember",
		"cannot remember", "couldn't tell you", "not in front of me", "don't remember", "haven't got", "no clue", "not offhand"}
	closeWords = []string{"bye", "goodbye", "good bye", "thanks", "thank you", "that's all", "that's everything",
		"that's it", "cheers", "appreciate it", "take care"}
	interruptWords = []string{"sorry", "wait", "hang on", "hold on", "excuse me", "one sec", "cut in", "cut you off",
		"interrupt", "slow down", "repeat", "stop", "sorry to"}
)

// planActs lists, per plan kind with an act, the words of which an utterance must say one to
// express it, and what the utterance is when it says none.
var planActs = map[trace.PlanKind]struct {
	words   []string
	lacking string
}{
	trace.PlanCorrect: {correctionWords, "a correction with no word that corrects (actually, sorry, I meant, …)"},
	trace.PlanApprove: {yesWords, "an approval without a yes"},
	trace.PlanDecline: {[]string{"no", "nope", "don't", "do not", "not", "rather not", "hold off", "won't"}, "a decline that never says no"},
	trace.PlanRevoke:  {withdrawWords, "a revocation that never withdraws"},
	trace.PlanAffirm:  {yesWords, "an affirmation without a yes"},
	trace.PlanUnknown: {unknownWords, "never says the caller does not know"},
	trace.PlanClose:   {closeWords, "a close without thanks or goodbye"},
	trace.PlanBargeIn: {interruptWords, "a barge-in that never interrupts (sorry, wait, hold on, …)"},
}

func (c *checker) variant(p trace.Plan, text string) []string {
	t := c.t
	u := analyse(text)
	var reasons []string
	add := func(format string, args ...any) { reasons = append(reasons, fmt.Sprintf(format, args...)) }

	inPlan := map[string]int{}
	var planForms []string
	for _, r := range p.Facts {
		inPlan[r.Fact] = r.Version
		if f, ok := t.Fact(r.Fact); ok && r.Version >= 1 && r.Version <= len(f.Versions) {
			planForms = append(planForms, forms(f.Versions[r.Version-1])...)
		}
	}
	planU := analyse(strings.Join(planForms, ". "))

	// The plan's own facts must be said, at the version the plan names; news about a list need
	// only say what changed ("Teams is down too").
	for _, pf := range flow.PlanFacts(t, p) {
		f, _ := t.Fact(pf.Fact)
		want := forms(f.Versions[pf.Version-1])
		if c.kinds[f.ID] == kindList && pf.Version > 1 && p.Kind != trace.PlanAnswer {
			if added := addedItems(f.Versions[pf.Version-2].Value, pf.Value); added != "" {
				want = []string{added}
			}
		}
		if !u.states(c.kinds[f.ID], want, true, false) {
			add("does not express its plan: never says %s (%q)", describeFact(f, pf.Version), pf.Spoken)
		}
	}

	// No other fact, and no other version of a plan fact.
	reported := false
	for i := range t.User.Facts {
		f := &t.User.Facts[i]
		want, named := inPlan[f.ID]
		for n := 1; n <= len(f.Versions); n++ {
			if named && n == want {
				continue
			}
			ver := f.Versions[n-1]
			fs := forms(ver)
			if !named {
				fs = specificForms(fs) // "yes" or "team" is not this fact being said
			}
			if planU.states(c.kinds[f.ID], fs, true, true) {
				continue // the plan's own words hold this value too (a list that grew, a shared date)
			}
			if !u.states(c.kinds[f.ID], fs, named, true) {
				continue
			}
			reported = true
			switch {
			case named && n < want:
				add("contradicts the task world: states %s (%q), which version %d replaced", describeFact(f, n), ver.Value, want)
			case named:
				add("states %s (%q), which its reveal rule does not allow yet: the plan names version %d", describeFact(f, n), ver.Value, want)
			default:
				add("states %s (%q), which its reveal rule does not allow in this plan", describeFact(f, n), ver.Value)
			}
		}
	}

	// Nothing from the grader side: gold-only and protected values.
	for _, g := range c.goldOnly {
		if u.states(g.kind, []string{g.value}, false, true) && !planU.states(g.kind, []string{g.value}, false, true) {
			reported = true
			add("states gold-only value %q of field %q, which the caller cannot know", g.value, g.field)
		}
	}
	for _, g := range c.protected {
		if u.states(g.kind, []string{g.value}, false, true) {
			reported = true
			add("states protected account value %q, which the caller does not say", g.value)
		}
	}

	// No specific value the plan does not name (a made-up date, number, code or address).
	if !reported {
		for _, s := range c.introduced(u, planU) {
			add("introduces %s that its plan does not name", s)
		}
	}

	// The act itself.
	if act, ok := planActs[p.Kind]; ok {
		switch {
		case p.Kind == trace.PlanBargeIn && len(p.Facts) > 0:
			// a barge-in that brings facts need not use an interrupting word
		case !u.has(act.words...):
			add("does not express its plan: %s", act.lacking)
		case p.Kind == trace.PlanApprove && u.has(refuseWords...):
			add("does not express its plan: an approval that also refuses or withdraws")
		}
	}
	return reasons
}

// addedItems lists ("a; b") the items of a list value that its previous version lacked.
func addedItems(prev, cur string) string {
	old := map[string]bool{}
	for _, it := range strings.Split(prev, ";") {
		old[canon.Fold(it)] = true
	}
	var out []string
	for _, it := range strings.Split(cur, ";") {
		if it = strings.TrimSpace(it); it != "" && !old[canon.Fold(it)] {
			out = append(out, it)
		}
	}
	return strings.Join(out, "; ")
}

func describeFact(f *task.Fact, version int) string {
	if len(f.Versions) > 1 {
		return fmt.Sprintf("fact %q version %d", f.ID, version)
	}
	return fmt.Sprintf("fact %q", f.ID)
}

// introduced lists the specific values (dates, numbers of three or more digits, e-mail addresses,
// codes) the utterance says that neither its plan's facts nor the caller's visible briefing hold.
func (c *checker) introduced(u, planU *utterance) []string {
	var out []string
	for _, d := range u.dates {
		if !coveredDate(d, planU.dates) && !coveredDate(d, c.visible.dates) {
			out = append(out, "the date "+dateString(d))
		}
	}
	for _, s := range u.seqs {
		if len(s) < 3 {
			continue
		}
		if !coveredSeq(s, planU) && !coveredSeq(s, c.visible) {
			out = append(out, "the number "+s)
		}
	}
	for _, e := range u.emails {
		if !containsString(planU.emails, e) {
			out = append(out, "the e-mail address "+e)
		}
	}
	for _, code := range u.codes {
		if !containsCode(planU.codes, code) && !strings.Contains(planU.ident, code) && !containsCode(c.visible.codes, code) {
			out = append(out, "the code "+code)
		}
	}
	return out
}

func coveredDate(d canon.Date, in []canon.Date) bool {
	for _, x := range in {
		if x.Month == d.Month && x.Day == d.Day && (x.Year == 0 || d.Year == 0 || x.Year == d.Year) {
			return true
		}
	}
	return false
}

func coveredSeq(s string, in *utterance) bool {
	for _, x := range in.seqs {
		if strings.Contains(x, s) {
			return true
		}
	}
	return strings.Contains(in.ident, s)
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func dateString(d canon.Date) string {
	if d.Year == 0 {
		return fmt.Sprintf("%02d-%02d", d.Month, d.Day)
	}
	return d.String()
}
