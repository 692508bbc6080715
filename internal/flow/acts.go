package flow

import (
	"sort"
	"strings"

	"github.com/voicebench/humanaudit/internal/task"
)

// Act is a semantic act recognised in agent speech.
type Act struct {
	Kind string // greet, ask, confirm, request_approval, summarise, close
	Fact string // for ask: the fact asked for
	pos  int
}

// String renders the act as it appears in traces and triggers: "ask:dob", "summarise".
func (a Act) String() string {
	if a.Fact != "" {
		return a.Kind + ":" + a.Fact
	}
	return a.Kind
}

var actPhrases = map[string][]string{
	"greet":            {"how can i help", "how may i help", "what can i do for you", "how can i assist", "how may i assist"},
	"confirm":          {"is that correct", "is that right", "did i get that right", "to confirm", "let me confirm", "can you confirm that"},
	"summarise":        {"to summarize", "to summarise", "let me read", "here's what i have", "here is what i have", "to recap", "let me recap", "so far i have", "in summary"},
	"request_approval": {"do i have your approval", "do you approve", "may i submit", "shall i submit", "should i submit", "can i go ahead", "shall i go ahead", "should i go ahead", "may i go ahead", "okay to proceed", "ok to proceed", "do you authorize", "do you authorise", "would you like me to submit", "would you like me to go ahead", "may i proceed", "shall i proceed", "can i proceed", "your permission", "your authorization", "your authorisation"},
	"close":            {"goodbye", "good bye", "bye now", "have a great day", "have a good day", "have a nice day", "take care", "have a good one", "anything else i can help", "anything else i can do", "is there anything else"},
}

// requestCues make a phrase about a fact into a question even without a question mark (ASR output
// has no punctuation).
var requestCues = []string{"what", "which", "when", "where", "could you", "can you", "would you", "may i have", "may i get", "can i have", "can i get", "please", "tell me", "need your", "need the", "give me", "provide", "spell", "what's", "whats", "do you have", "is there", "how"}

// Classify maps agent speech to semantic acts by deterministic phrase matching: the task's asked_as
// phrases for each fact and fixed phrase lists for the other acts. Acts come in the order spoken.
func Classify(t *task.Task, text string) []Act {
	norm := " " + normalise(text) + " "
	var acts []Act
	for kind, phrases := range actPhrases {
		if kind == "request_approval" {
			phrases = append(append([]string(nil), phrases...), lower(t.Agent.ApprovalPhrases)...)
		}
		if p := firstIndex(norm, phrases); p >= 0 {
			acts = append(acts, Act{Kind: kind, pos: p})
		}
	}
	question := strings.Contains(text, "?") || firstIndex(norm, requestCues) >= 0
	if question {
		for _, f := range t.User.Facts {
			if p := firstIndex(norm, askPhrases(f)); p >= 0 {
				acts = append(acts, Act{Kind: "ask", Fact: f.ID, pos: p})
			}
		}
	}
	sort.SliceStable(acts, func(i, j int) bool {
		if acts[i].pos != acts[j].pos {
			return acts[i].pos < acts[j].pos
		}
		return acts[i].String() < acts[j].String()
	})
	return acts
}

var speechPunctuation = strings.NewReplacer("’", "'", ",", " ", ".", " ", "!", " ", ";", " ", ":", " ", "?", " ")

// askPhrases are the phrases that ask for a fact: its asked_as phrases, and the name of the field
// it answers ("employee_id" is asked as "employee id"), which is how agents reading the tool
// schema tend to ask.
func askPhrases(f task.Fact) []string {
	out := lower(f.AskedAs)
	if name := normalise(strings.ReplaceAll(f.Field, "_", " ")); len(name) >= 4 {
		out = append(out, name)
	}
	return out
}

func normalise(s string) string {
	s = strings.ToLower(speechPunctuation.Replace(s))
	return strings.Join(strings.Fields(s), " ")
}

func lower(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = normalise(x)
	}
	return out
}

// firstIndex returns the earliest position of any phrase matched on word boundaries, or -1.
func firstIndex(norm string, phrases []string) int {
	best := -1
	for _, p := range phrases {
		if p == "" {
			continue
		}
		if i := strings.Index(norm, " "+p+" "); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	return best
}
