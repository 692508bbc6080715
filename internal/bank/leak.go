package bank

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/voicebench/humanaudit/internal/canon"
	"github.com/voicebench/humanaudit/internal/flow"
	"github.com/voicebench/humanaudit/internal/task"
)

// GraderTerms are words of the grader side that no caller- or annotator-visible text may use.
var GraderTerms = []string{"gold", "target_state", "target state", "forbidden", "forbidden_actions", "grader", "graded",
	"required_actions", "committed_actions", "protected_values", "rubric", "answer key", "workflow success",
	"artifact validity", "process validity", "action completion"}

var graderTermRE = regexp.MustCompile(`(?i)\b(` + strings.Join(quoteAll(GraderTerms), "|") + `)\b`)

func quoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = regexp.QuoteMeta(x)
	}
	return out
}

// Known maps a fact ID to the version the caller knows (0 or absent: unknown).
type Known map[string]int

// InitialKnown is what the caller knows before the call: version 1 of every fact that is not
// revealed by an event.
func InitialKnown(t *task.Task) Known {
	k := Known{}
	for _, f := range t.User.Facts {
		if f.Reveal != task.OnEvent {
			k[f.ID] = 1
		}
	}
	return k
}

// KnownOnCard is what a role card shows the caller knows.
func KnownOnCard(t *task.Task, card flow.RoleCard) Known {
	k := Known{}
	for _, cf := range card.Facts {
		f, ok := t.Fact(cf.ID)
		if !ok {
			continue
		}
		for i, v := range f.Versions {
			if v.Value == cf.Value {
				k[f.ID] = i + 1
			}
		}
	}
	return k
}

// Leaks lists what a caller- or annotator-visible text shows that it must not, given what the
// caller knows at that moment and the cues fired so far: a gold-only or protected value, a fact
// version not yet revealed (a future correction, an on_event fact), the cue of an event that has
// not fired, a sentence of the agent's hidden instructions, or a grader term. It reads values
// through the grader's canonicalisation, so "six hundred twelve dollars and forty cents" is 612.40.
func Leaks(t *task.Task, text string, known Known, firedCues map[string]bool) []string {
	c := newChecker(t)
	u := analyse(text)
	var out []string
	for _, g := range c.goldOnly {
		if u.states(g.kind, []string{g.value}, false, true) {
			out = append(out, fmt.Sprintf("gold-only value %q of field %q", g.value, g.field))
		}
	}
	for _, g := range c.protected {
		if u.states(g.kind, []string{g.value}, false, true) {
			out = append(out, fmt.Sprintf("protected value %q", g.value))
		}
	}
	// What the caller knows, one fact at a time: a future value that a known fact also holds (a
	// list that grew, a shared date) is not news.
	var knownU []*utterance
	for i := range t.User.Facts {
		f := &t.User.Facts[i]
		if n := known[f.ID]; n > 0 {
			knownU = append(knownU, analyse(strings.Join(forms(f.Versions[n-1]), ". ")))
		}
	}
	alreadyKnown := func(kind valueKind, fs []string) bool {
		for _, k := range knownU {
			if k.states(kind, fs, false, true) {
				return true
			}
		}
		return false
	}
	for i := range t.User.Facts {
		f := &t.User.Facts[i]
		for n := known[f.ID] + 1; n <= len(f.Versions); n++ {
			fs := specificForms(forms(f.Versions[n-1]))
			if len(fs) == 0 || alreadyKnown(c.kinds[f.ID], fs) {
				continue
			}
			if u.states(c.kinds[f.ID], fs, false, true) {
				what := "a future version"
				if f.Reveal == task.OnEvent && n == 1 {
					what = "an on_event fact"
				}
				out = append(out, fmt.Sprintf("%s: %s (%q)", what, describeFact(f, n), f.Versions[n-1].Value))
			}
		}
	}
	folded := canon.Fold(text)
	for _, e := range t.Events {
		if !firedCues[e.ID] && strings.Contains(folded, canon.Fold(e.Cue)) {
			out = append(out, fmt.Sprintf("the cue of event %q, which has not fired", e.ID))
		}
	}
	for _, s := range sentences(t.Agent.Instructions) {
		if len(s) >= 25 && strings.Contains(folded, canon.Fold(s)) {
			out = append(out, fmt.Sprintf("the agent's instructions: %q", s))
		}
	}
	for _, m := range graderTermRE.FindAllString(text, -1) {
		out = append(out, fmt.Sprintf("the grader term %q", m))
	}
	return out
}

func sentences(s string) []string {
	var out []string
	for _, p := range regexp.MustCompile(`[.:;!?]\s+`).Split(s, -1) {
		if p = strings.TrimSpace(strings.TrimRight(p, ".")); p != "" {
			out = append(out, p)
		}
	}
	return out
}
