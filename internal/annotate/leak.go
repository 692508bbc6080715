package annotate

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/voicebench/humanaudit/internal/canon"
	"github.com/voicebench/humanaudit/internal/task"
)

// Hidden is one piece of task content no annotator may see, with where it comes from.
type Hidden struct {
	Text   string // as written in the task
	Source string // "gold-only value of field policy_number", "agent instructions", …
}

// GraderKeys are the grader side's JSON keys; none may appear in anything an annotator receives.
var GraderKeys = []string{`"gold"`, `"grader"`, `"target_state"`, `"required_actions"`, `"forbidden_actions"`,
	`"committed_actions"`, `"protected_values"`, `"violations"`}

// HiddenValues lists what an annotator must never see of task t: gold values that no caller fact
// (or the caller's persona, goals and constraints) holds, the agent's instructions and knowledge
// documents, and the grader's reasons for required and forbidden actions. Enum-like single words
// (gold "standard", "team") are left out because a caller may say them for other reasons, and so
// are values shorter than three characters. The agent's system of record is not listed: it holds
// the caller's own name, address and belongings under other wordings, so it cannot be told apart
// from what the caller knows.
func HiddenValues(t *task.Task) []Hidden {
	var callerValues []string
	for _, f := range t.User.Facts {
		for _, v := range f.Versions {
			callerValues = append(callerValues, canon.Fold(v.Value), canon.Fold(v.Say()))
		}
	}
	u := t.User
	callerValues = append(callerValues, canon.Fold(u.Persona.Name), canon.Fold(u.Persona.Role), canon.Fold(u.Persona.Speaking))
	for _, s := range append(append([]string(nil), u.Goals...), u.Constraints...) {
		callerValues = append(callerValues, canon.Fold(s))
	}
	callerKnows := func(s string) bool {
		fs := canon.Fold(s)
		for _, cv := range callerValues {
			if strings.Contains(cv, fs) {
				return true
			}
		}
		return false
	}
	seen := map[string]bool{}
	var out []Hidden
	add := func(text, source string) {
		text = strings.TrimSpace(text)
		if len(text) < 3 || seen[canon.Fold(text)] || callerKnows(text) || enumLike(text) {
			return
		}
		seen[canon.Fold(text)] = true
		out = append(out, Hidden{Text: text, Source: source})
	}
	for _, gf := range t.Grader.Fields {
		for _, g := range task.GoldStrings(gf.Gold) {
			add(g, "gold-only value of field "+gf.Field)
		}
	}
	for _, v := range t.Grader.ProtectedValues {
		add(v, "protected value")
	}
	add(head(t.Agent.Instructions, 60), "agent instructions")
	for _, d := range t.Agent.Knowledge {
		add(head(d.Text, 60), "knowledge document "+d.ID)
	}
	for _, a := range append(append([]task.ActionSpec(nil), t.Grader.RequiredActions...), t.Grader.ForbiddenActions...) {
		if len(a.Reason) >= 12 {
			add(a.Reason, "grader reason for "+a.Tool)
		}
	}
	return out
}

// head is the first n bytes of s, cut at a word boundary.
func head(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	if i := strings.LastIndexByte(s[:n], ' '); i > 20 {
		return s[:i]
	}
	return s[:n]
}

// enumLike is true for a single short word without digits.
func enumLike(s string) bool {
	if strings.ContainsAny(s, " -/@.") || len(s) >= 12 {
		return false
	}
	for _, r := range s {
		if unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// Leaks returns a line for every hidden value of t, every grader key and every identifier of the
// agent side found in the payload an annotator would receive (the audio path excluded: it is never
// sent).
func Leaks(t *task.Task, p Payload) []string {
	p.Audio = ""
	b, _ := json.Marshal(p)
	return append(Scan(string(b), HiddenValues(t)), ScanIdentifiers(string(b), AgentIdentifiers(t))...)
}

// AgentIdentifiers are the agent side's names no annotator payload may carry: its tool names and
// the actions its tools request approval for or commit. Only names that read as identifiers (with
// an underscore, "set_up_arrangement") are listed: a plain word ("search") may stand in a caller's
// sentence for other reasons.
func AgentIdentifiers(t *task.Task) []string {
	seen := map[string]bool{}
	var out []string
	add := func(id string) {
		if strings.Contains(id, "_") && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, tl := range t.Agent.Tools {
		add(tl.Name)
		add(tl.Action)
	}
	add(t.Agent.Artifact.CommitAction)
	for _, e := range t.Events {
		add(e.Action)
	}
	return out
}

// ScanIdentifiers returns a line for every identifier found in text as a whole word.
func ScanIdentifiers(text string, ids []string) []string {
	var out []string
	for _, id := range ids {
		for from := 0; ; {
			i := strings.Index(text[from:], id)
			if i < 0 {
				break
			}
			i += from
			if identBoundary(text, i-1) && identBoundary(text, i+len(id)) {
				out = append(out, fmt.Sprintf("agent-side identifier %q", id))
				break
			}
			from = i + 1
		}
	}
	return out
}

func identBoundary(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return true
	}
	c := s[i]
	return !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9')
}

// Scan returns a line for every hidden value and grader key found in text (a payload a browser
// received). Values are compared case- and punctuation-folded; short alphanumeric values must
// stand as a whole word.
func Scan(text string, hidden []Hidden) []string {
	var out []string
	for _, k := range GraderKeys {
		if strings.Contains(text, k) {
			out = append(out, "grader key "+k)
		}
	}
	folded := canon.Fold(text)
	for _, h := range hidden {
		if containsFolded(folded, canon.Fold(h.Text)) {
			out = append(out, fmt.Sprintf("%s %q", h.Source, h.Text))
		}
	}
	return out
}

func containsFolded(hay, needle string) bool {
	if needle == "" {
		return false
	}
	for from := 0; ; {
		i := strings.Index(hay[from:], needle)
		if i < 0 {
			return false
		}
		i += from
		if len(needle) >= 6 || (boundary(hay, i-1) && boundary(hay, i+len(needle))) {
			return true
		}
		from = i + 1
	}
}

func boundary(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return true
	}
	c := s[i]
	return !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9')
}
