package flow

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/voicebench/humanaudit/internal/task"
)

// Act is a semantic act recognised in agent speech.
type Act struct {
	Kind string // greet, ask, confirm, request_approval, summarise, close
	Fact string // for ask: the fact asked for
	pos  int
	end  int // for ask: where the phrase that named the fact ends
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
		// Facts named by their own words (asked_as phrases, the field's name and schema
		// descriptions) and, only when none is, by synonyms. The first two tiers are read
		// together so that the longer naming wins: "was the merchant contacted" names
		// merchant_contacted by its field name, though "merchant" is an asked_as phrase of merchant.
		for _, tiers := range [][]int{{0, 1}, {2}} {
			found := false
			var asks []Act
			for i := range t.User.Facts {
				f := &t.User.Facts[i]
				at := askTiers(t, f)
				best := Act{pos: -1}
				for _, tier := range tiers {
					if p, end := firstMatch(norm, at[tier]); p >= 0 && (best.pos < 0 || end-p > best.end-best.pos) {
						best = Act{Kind: "ask", Fact: f.ID, pos: p, end: end}
					}
				}
				if best.pos >= 0 {
					asks = append(asks, best)
					found = true
				}
			}
			// A fact named inside a longer phrase naming another ("the merchant" in "merchant
			// contacted") is not asked for.
			for _, a := range asks {
				inside := false
				for _, b := range asks {
					if b.Fact != a.Fact && b.pos <= a.pos && a.end <= b.end && b.end-b.pos > a.end-a.pos {
						inside = true
					}
				}
				if !inside {
					acts = append(acts, a)
				}
			}
			if found {
				break
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

// askPhrases are the phrases that ask for a fact, by meaning rather than wording: its asked_as
// phrases; the name of the field it answers ("employee_id" is asked as "employee id"), which is how
// agents reading the tool schema tend to ask; the field's description in the task's tool schemas
// ("the ZIP or postal code"); and the synonyms of the field's words and type (a date of birth is
// asked as "when were you born", a phone as "best number to reach you").
func askPhrases(t *task.Task, f *task.Fact) []string {
	var out []string
	for _, tier := range askTiers(t, f) {
		out = append(out, tier...)
	}
	return out
}

// askTiers are a fact's ask phrases from the most to the least specific: asked_as; the field's
// name and schema descriptions; synonyms. A question that names a fact by a more specific phrase
// is not also a question for another fact that only a synonym matches.
func askTiers(t *task.Task, f *task.Fact) [3][]string {
	var tiers [3][]string
	seen := map[string]bool{}
	add := func(tier int, p string) {
		if p = normalise(p); len(p) >= 3 && !seen[p] {
			seen[p] = true
			tiers[tier] = append(tiers[tier], p)
		}
	}
	for _, p := range f.AskedAs {
		add(0, p)
	}
	if f.Field == "" {
		return tiers
	}
	name := normalise(strings.ReplaceAll(f.Field, "_", " "))
	for _, form := range nameForms(strings.Fields(name)) {
		add(1, form)
	}
	for _, d := range fieldDescriptions(t, f.Field) {
		add(1, d)
	}
	for _, w := range strings.Fields(name) {
		for _, syn := range wordSynonyms[w] {
			add(2, syn)
		}
	}
	if fs, ok := t.Field(f.Field); ok && uniqueType(t, fs.Type) {
		for _, syn := range typeSynonyms[fs.Type] {
			add(2, syn)
		}
	}
	return tiers
}

// abbreviations are spelled out in field names: "dob" is asked as "date of birth".
var abbreviations = map[string][]string{
	"dob": {"date of birth"}, "mrn": {"medical record number"}, "po": {"p o number", "purchase order"},
	"req": {"requisition"}, "id": {"id", "i d", "number"}, "num": {"number"}, "no": {"number"},
	"qty": {"quantity"}, "addr": {"address"}, "acct": {"account"}, "ref": {"reference"},
}

// nameForms are the ways a field name is said: "patient name", "name of the patient", "patient's
// name", abbreviations spelled out ("dependent date of birth", "dependent's date of birth").
func nameForms(words []string) []string {
	if n := len(words); n >= 3 && units[words[n-1]] {
		// "symptom_duration_months" is asked as "how many months is the symptom duration".
		return append(nameForms(words[:n-1]), strings.Join(words, " "))
	}
	variants := [][]string{words}
	for i, w := range words {
		for _, exp := range abbreviations[w] {
			v := append(append(append([]string(nil), words[:i]...), strings.Fields(exp)...), words[i+1:]...)
			variants = append(variants, v)
		}
	}
	var out []string
	for _, v := range variants {
		out = append(out, strings.Join(v, " "))
		if len(v) >= 2 && len(words) >= 2 {
			head, last := strings.Join(words[:len(words)-1], " "), strings.Join(v[len(v)-len(words[len(words)-1:]):], " ")
			if w := words[len(words)-1]; len(abbreviations[w]) > 0 {
				last = strings.Join(v[len(strings.Fields(head)):], " ")
			}
			out = append(out, last+" of the "+head, last+" of "+head, head+"'s "+last)
		}
	}
	return out
}

// units end field names that hold a quantity in that unit.
var units = map[string]bool{"months": true, "days": true, "years": true, "weeks": true, "hours": true, "minutes": true, "nights": true}

// typeSynonyms ask for a field by its type; they count only when the task has one field of the type.
var typeSynonyms = map[string][]string{
	"phone":   {"phone number", "callback number", "contact number", "best number", "number to reach you", "number we can reach you", "reach you at"},
	"address": {"address", "street address", "mailing address", "where do you live", "where you live"},
	"date":    {"what date", "which date", "the date"},
}

// wordSynonyms ask for a field by a synonym of a word of its name.
var wordSynonyms = map[string][]string{
	"dob":         {"date of birth", "birth date", "birthday", "when were you born", "born"},
	"birth":       {"born", "birthday"},
	"zip":         {"zip code", "postal code", "postcode"},
	"postal":      {"zip code", "postcode"},
	"email":       {"email address", "e-mail", "e mail", "email"},
	"phone":       {"phone number", "callback number", "contact number"},
	"callback":    {"callback number", "number to call you back", "call you back"},
	"name":        {"who am i speaking with", "who i'm speaking with", "who's calling", "spell your name"},
	"amount":      {"how much"},
	"value":       {"how much", "worth"},
	"count":       {"how many"},
	"quantity":    {"how many"},
	"reason":      {"why"},
	"symptoms":    {"what symptoms", "how are you feeling"},
	"description": {"describe"},
	"account":     {"account number"},
	"policy":      {"policy number"},
	"address":     {"where do you live", "street address"},
}

// fieldDescriptions are the descriptions the task's tool schemas give the field's parameter, up to
// their first punctuation and only when they read as a name (at most six words, no format mask).
func fieldDescriptions(t *task.Task, field string) []string {
	var out []string
	for _, tl := range t.Agent.Tools {
		var schema struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		}
		if json.Unmarshal(tl.Parameters, &schema) != nil {
			continue
		}
		for arg, p := range schema.Properties {
			if arg != field && tl.Fields[arg] != field || p.Description == "" {
				continue
			}
			d := p.Description
			if i := strings.IndexAny(d, ".,;:()"); i >= 0 {
				d = d[:i]
			}
			if n := len(strings.Fields(d)); n == 0 || n > 6 || strings.ContainsAny(d, "0123456789") || strings.Contains(d, "YYYY") {
				continue
			}
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}

// uniqueType reports whether the task's artifact has exactly one field of type typ.
func uniqueType(t *task.Task, typ string) bool {
	n := 0
	for _, fs := range t.Agent.Artifact.Fields {
		if fs.Type == typ {
			n++
		}
	}
	return n == 1
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

// firstMatch returns the earliest position of any phrase matched on word boundaries and where
// the longest phrase matched there ends, or -1.
func firstMatch(norm string, phrases []string) (pos, end int) {
	pos, end = -1, -1
	for _, p := range phrases {
		if p == "" {
			continue
		}
		if i := strings.Index(norm, " "+p+" "); i >= 0 && (pos < 0 || i < pos || i == pos && i+len(p)+1 > end) {
			pos, end = i, i+len(p)+1
		}
	}
	return pos, end
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
