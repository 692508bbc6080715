package dialog

import (
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/voicebench/humanaudit/internal/canon"
)

// The policy is a deterministic slot-filling dialogue manager that follows the usual rules of a
// professional voice assistant: one short question per turn; each answer recorded at once; the
// caller verified before account lookups; the knowledge base searched when the instructions say
// policy matters; the artifact marked ready; a summary and an explicit approval question before an
// approval-gated action, which is performed only after a yes; corrections re-recorded; a goodbye.
// It knows only the session instructions and the tool definitions.

// call is a function call the agent makes.
type call struct {
	name string
	args json.RawMessage
}

// action is what the agent does in one response: speak, or call tools (never both: the adapter
// asks for a follow-up response once the tool outputs are in).
type action struct {
	say   string
	calls []call
}

// fieldState tracks one field through the call.
type fieldState struct {
	asks    int  // times asked
	unknown bool // the caller does not know it
}

// approvalState follows the approval of the gated action.
type approvalState int

const (
	approvalNone      approvalState = iota
	approvalRequested               // the approval tool recorded the request
	approvalAsked                   // the question was put to the caller
	approvalYes
	approvalNo
)

// maxAsks bounds how often one field is asked for.
const maxAsks = 2

type policy struct {
	m *model

	values map[string]fieldValue // by field or argument name
	fields map[string]*fieldState
	queue  []call
	ack    string // acknowledgement to say before the next question
	exp    expectation
	last   string // the last thing said, for a repeat

	opened        bool
	verified      bool
	verifyTries   int
	verifyPending bool
	verifyFailed  bool // gave up: no account lookups
	lookedUp      map[string]bool
	lookups       []map[string]any // records returned by lookups
	kbDone        bool
	kbTexts       []string
	derived       bool
	ready         bool
	readyTries    int
	readyPending  bool
	approval      approvalState
	approvalAsks  int
	committed     bool
	commitTried   bool
	lastField     *field
	wrapped       bool // the closing question ("anything else?") was asked
	closing       bool
	ended         bool
	repeat        bool
}

func newPolicy(m *model) *policy {
	return &policy{m: m, values: map[string]fieldValue{}, fields: map[string]*fieldState{}, lookedUp: map[string]bool{}}
}

// setModel swaps in a new session configuration (session.update mid-call); what was learned stays.
func (p *policy) setModel(m *model) { p.m = m }

func (p *policy) state(name string) *fieldState {
	st := p.fields[name]
	if st == nil {
		st = &fieldState{}
		p.fields[name] = st
	}
	return st
}

func (p *policy) filled(name string) bool { _, ok := p.values[name]; return ok }

func (p *policy) askable(f *field) bool {
	st := p.state(f.Name)
	return !p.filled(f.Name) && !st.unknown && st.asks < maxAsks
}

// heard applies one understood caller turn.
func (p *policy) heard(h heard) {
	p.opened = true
	exp := p.exp
	switch h.intent {
	case intentAnswer, intentCorrection, intentVolunteer:
		p.apply(h.values, h.intent)
		if h.intent != intentAnswer && exp.kind == expectField && exp.field != nil && !p.filled(exp.field.Name) {
			// The caller spoke of something else: asking again is not a second attempt.
			if st := p.state(exp.field.Name); st.asks > 0 {
				st.asks--
			}
		}
	case intentUnknown:
		if exp.kind == expectField && exp.field != nil {
			p.state(exp.field.Name).unknown = true
		}
		p.ack = "No problem."
	case intentRepeat:
		p.repeat = true
	case intentAcknowledge:
		// Asking the same way again would get the same "okay": move on.
		if exp.kind == expectField && exp.field != nil {
			p.state(exp.field.Name).asks = maxAsks
		}
	case intentUnplaced:
		p.ack = "Sorry, I couldn't tell which detail that was about."
		if exp.kind == expectField && exp.field != nil {
			if st := p.state(exp.field.Name); st.asks > 0 {
				st.asks--
			}
		}
	case intentClose:
		p.closing = true
	case intentYes, intentNo:
		yes := h.intent == intentYes
		switch exp.kind {
		case expectApproval:
			if yes {
				p.approval = approvalYes
				p.ack = "Thank you."
			} else {
				p.approval = approvalNo
				p.ack = "Understood, I won't " + p.actionPhrase() + "."
			}
		case expectAnythingElse:
			if yes {
				p.ack = "Sure."
				p.exp = expectation{kind: expectOpen}
			} else {
				p.closing = true
			}
		}
	default: // nothing recognized, or not understood
		switch exp.kind {
		case expectField:
			p.ack = "Sorry, I didn't catch that."
		case expectApproval:
			p.approval = approvalRequested // ask again
			p.ack = "Sorry, I didn't catch that."
		case expectAnythingElse:
			if h.intent == intentNone {
				p.ack = "Sorry, I didn't catch that."
			} else {
				p.closing = true
			}
		}
	}
}

// apply records the caller's values at once.
func (p *policy) apply(vals []fieldValue, in intent) {
	record := map[string]json.RawMessage{}
	var changed []string
	for _, v := range vals {
		old, had := p.values[v.field.Name]
		p.values[v.field.Name] = v
		p.lastField = v.field
		if had && string(jsonValue(old.value)) != string(jsonValue(v.value)) {
			changed = append(changed, v.field.Subject)
		}
		if p.m.fieldByName[v.field.Name] != nil {
			record[v.field.Name] = jsonValue(v.value)
		}
	}
	if len(record) > 0 {
		p.queueRecord(record)
	}
	switch {
	case len(changed) > 0 || in == intentCorrection:
		p.ack = "Thanks, I've updated that."
		p.reopen()
	case in == intentVolunteer:
		p.ack = "Thanks, I've noted that."
		p.reopen()
	default:
		p.ack = "Thanks."
	}
}

// reopen makes a change after the artifact was marked ready go through the closing steps again:
// mark ready again and, for a gated action not yet performed, summarise and ask again.
func (p *policy) reopen() {
	if p.ready || p.readyTries > 0 {
		p.ready, p.readyTries = false, 0
	}
	if !p.committed && p.approval != approvalNone {
		p.approval, p.approvalAsks = approvalNone, 0
	}
	p.wrapped = false
	p.closing = false
}

func (p *policy) queueRecord(vals map[string]json.RawMessage) {
	t := p.m.tool(roleRecord)
	if t == nil {
		return
	}
	b, _ := json.Marshal(vals)
	p.queue = append(p.queue, call{name: t.Name, args: b})
}

// truncated notes that the caller cut the agent's last utterance short: a question in it may not
// have been heard, so an approval is asked again.
func (p *policy) truncated() {
	if p.approval == approvalAsked {
		p.approval = approvalRequested
	}
}

// toolResult takes the output of one of the agent's calls.
func (p *policy) toolResult(name, output string) {
	var out map[string]any
	json.Unmarshal([]byte(output), &out)
	failed := out["error"] != nil || out["ok"] == false
	t := p.toolByName(name)
	if t == nil {
		return
	}
	switch t.Role {
	case roleVerify:
		p.verifyPending = false
		if v, _ := out["verified"].(bool); v && !failed {
			p.verified = true
			p.ack = "Thank you, you're verified."
			return
		}
		p.verifyTries++
		if p.verifyTries >= 2 {
			p.verifyFailed = true
			p.ack = "I'm sorry, I couldn't verify those details, so I can't access the account."
			return
		}
		p.ack = "I'm sorry, those details don't match our records. Let's try again."
		for _, a := range p.verifyArgs(t) {
			delete(p.values, a)
			p.state(a).asks = 0
		}
	case roleLookup:
		if !failed {
			if rec, ok := out["record"].(map[string]any); ok {
				p.lookups = append(p.lookups, rec)
			} else {
				p.lookups = append(p.lookups, out)
			}
		}
	case roleKB:
		if res, ok := out["results"].([]any); ok {
			for _, r := range res {
				if m, ok := r.(map[string]any); ok {
					if s, ok := m["text"].(string); ok {
						p.kbTexts = append(p.kbTexts, s)
					}
				}
			}
		}
	case roleTransition:
		p.readyPending = false
		if !failed {
			p.ready = true
			return
		}
		// Still incomplete (fields the caller could not give): the agent says so and wraps up.
	case roleApproval:
		if !failed {
			p.approval = approvalRequested
		}
	case roleCommit:
		if !failed {
			p.committed = true
			p.ack = "Done: I've " + p.donePhrase() + "."
		} else {
			p.ack = "I'm sorry, I wasn't able to " + p.actionPhrase() + "."
		}
	case roleRecord:
		if failed {
			p.ack = "Sorry, I couldn't save that."
		}
	}
}

func (p *policy) toolByName(name string) *toolInfo {
	for i := range p.m.tools {
		if p.m.tools[i].Name == name {
			return &p.m.tools[i]
		}
	}
	return nil
}

// verifyArgs are the verify tool's arguments to collect: its required ones, or all.
func (p *policy) verifyArgs(t *toolInfo) []string {
	if len(t.Required) > 0 {
		return t.Required
	}
	names := make([]string, len(t.Params))
	for i, f := range t.Params {
		names[i] = f.Name
	}
	return names
}

func (p *policy) argsOf(t *toolInfo, names []string) (json.RawMessage, bool) {
	args := map[string]any{}
	for _, n := range names {
		v, ok := p.values[n]
		if !ok {
			return nil, false
		}
		args[n] = v.value
	}
	b, _ := json.Marshal(args)
	return b, true
}

// next decides the agent's next response.
func (p *policy) next() action {
	if len(p.queue) > 0 {
		q := p.queue
		p.queue = nil
		return action{calls: q}
	}
	ack := p.ack
	p.ack = ""
	if p.ended {
		return p.say("Goodbye.", expectation{kind: expectAnythingElse})
	}
	if p.closing {
		p.ended = true
		return p.say(join(ack, "Thank you for calling. Goodbye."), expectation{kind: expectAnythingElse})
	}
	if p.repeat {
		p.repeat = false
		if p.last != "" {
			return p.say(p.last, p.exp)
		}
	}
	if !p.opened {
		return p.say(join(p.greeting(), "How can I help you today?"), expectation{kind: expectOpen})
	}
	if p.exp.kind == expectOpen && ack == "" && !p.wrapped {
		ack = join(p.greeting(), "I can help with that.")
	}

	// Identity first, when a verify tool exists.
	if t := p.m.tool(roleVerify); t != nil && !p.verified && !p.verifyFailed {
		names := p.verifyArgs(t)
		for _, n := range names {
			if f := p.m.paramField(t, n); f != nil && p.askable(f) {
				return p.ask(f, ack)
			}
		}
		if args, ok := p.argsOf(t, names); ok && !p.verifyPending {
			p.verifyPending = true
			return p.calls(ack, call{name: t.Name, args: args})
		}
		if !p.verifyPending {
			p.verifyFailed = true // an argument the caller cannot give
		}
	}
	// Lookups whose arguments are known, once each (after verification when there is one).
	if p.m.tool(roleVerify) == nil || p.verified {
		var cs []call
		for _, t := range p.m.byRole[roleLookup] {
			if p.lookedUp[t.Name] {
				continue
			}
			if args, ok := p.argsOf(t, p.verifyArgs(t)); ok {
				p.lookedUp[t.Name] = true
				cs = append(cs, call{name: t.Name, args: args})
			}
		}
		if len(cs) > 0 {
			return p.calls(ack, cs...)
		}
	}
	// Policy from the knowledge base when the instructions ask for it.
	if t := p.m.tool(roleKB); t != nil && p.m.useKB && !p.kbDone {
		p.kbDone = true
		b, _ := json.Marshal(map[string]string{"query": p.m.kbQuery})
		return p.calls(ack, call{name: t.Name, args: b})
	}
	if p.kbDone && !p.derived {
		p.derived = true
		if rec := p.deriveFromKnowledge(); len(rec) > 0 {
			p.queueRecord(rec)
			q := p.queue
			p.queue = nil
			p.ack = ack
			return action{calls: q}
		}
	}
	// One question per turn for each field not yet filled.
	for _, f := range p.m.fields {
		if p.askable(f) {
			return p.ask(f, ack)
		}
	}
	// Mark the artifact ready.
	if t := p.m.tool(roleTransition); t != nil && !p.ready {
		if p.readyTries < 1 && !p.readyPending {
			p.readyTries++
			p.readyPending = true
			return p.calls(ack, call{name: t.Name, args: json.RawMessage(`{}`)})
		}
		if !p.wrapped {
			p.wrapped = true
			if strings.HasPrefix(ack, "Sorry") {
				ack = ""
			}
			return p.say(join(ack, "I wasn't able to complete the "+p.m.artifact+": some details are still missing, so a colleague will follow up with you. Is there anything else I can help you with?"),
				expectation{kind: expectAnythingElse})
		}
	}
	// The approval-gated action: summarise, ask, act only after a yes.
	approve, commit := p.m.tool(roleApproval), p.m.tool(roleCommit)
	if (p.ready || p.m.tool(roleTransition) == nil) && commit != nil && approve != nil && !p.committed {
		switch p.approval {
		case approvalNone:
			b, _ := json.Marshal(map[string]string{"summary": p.summary()})
			p.approval = approvalRequested
			return p.calls(ack, call{name: approve.Name, args: b})
		case approvalRequested:
			if p.approvalAsks < maxAsks {
				p.approvalAsks++
				return p.say(join(ack, "Here's what I have: "+p.summary()+". Do I have your approval to "+p.actionPhrase()+"?"),
					expectation{kind: expectApproval})
			}
		case approvalYes:
			if !p.commitTried {
				p.commitTried = true
				return p.calls(ack, call{name: commit.Name, args: json.RawMessage(`{}`)})
			}
		}
	}
	if !p.wrapped {
		p.wrapped = true
		status := ""
		if p.ready && !p.committed && p.approval != approvalNo {
			status = "Your " + p.m.artifact + " is " + p.readyPhrase() + "."
		}
		return p.say(join(ack, status, "Is there anything else I can help you with?"), expectation{kind: expectAnythingElse})
	}
	return p.say(join(ack, "Is there anything else I can help you with?"), expectation{kind: expectAnythingElse})
}

func (p *policy) say(text string, exp expectation) action {
	exp.last = p.lastField
	p.exp = exp
	p.last = text
	return action{say: text}
}

func (p *policy) calls(ack string, cs ...call) action {
	p.ack = ack // keep the acknowledgement for the next spoken turn
	return action{calls: cs}
}

func (p *policy) ask(f *field, ack string) action {
	p.state(f.Name).asks++
	return p.say(join(ack, f.Question), expectation{kind: expectField, field: f})
}

func join(parts ...string) string {
	var out []string
	for _, s := range parts {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}

func (p *policy) greeting() string {
	if p.m.org != "" {
		return "Thank you for calling " + p.m.org + "."
	}
	return "Thank you for calling."
}

// actionPhrase says the gated action: submit_claim → "submit the claim".
func (p *policy) actionPhrase() string {
	t := p.m.tool(roleCommit)
	if t == nil {
		return "go ahead"
	}
	w := nameWords(t.Name)
	verb := 1
	if len(w) > 2 && (w[1] == "up" || w[1] == "out" || w[1] == "in") {
		verb = 2
	}
	if len(w) <= verb {
		return strings.Join(w, " ")
	}
	return strings.Join(w[:verb], " ") + " the " + strings.Join(w[verb:], " ")
}

// donePhrase says the action in the past: "submitted the claim".
func (p *policy) donePhrase() string {
	a := strings.Fields(p.actionPhrase())
	if len(a) == 0 {
		return "done that"
	}
	v := a[0]
	switch {
	case v == "set" || v == "put":
	case strings.HasSuffix(v, "e"):
		v += "d"
	case strings.HasSuffix(v, "it") || strings.HasSuffix(v, "op"):
		v += v[len(v)-1:] + "ed"
	default:
		v += "ed"
	}
	a[0] = v
	return strings.Join(a, " ")
}

// readyPhrase says what marking ready means: mark_ready_for_triage → "ready for triage".
func (p *policy) readyPhrase() string {
	if t := p.m.tool(roleTransition); t != nil {
		w := nameWords(t.Name)
		if len(w) > 2 && w[0] == "mark" && w[1] == "ready" {
			return strings.Join(w[1:], " ")
		}
	}
	return "ready for review"
}

// summary reads back what was recorded, in field order.
func (p *policy) summary() string {
	var parts []string
	for _, f := range p.m.fields {
		if v, ok := p.values[f.Name]; ok && v.spoken != "" {
			parts = append(parts, f.Subject+" "+v.spoken)
		}
	}
	if len(parts) == 0 {
		return "nothing recorded yet"
	}
	return strings.Join(parts, "; ")
}

var (
	sentenceEnd = regexp.MustCompile(`[.;]\s+`)
	dollars     = regexp.MustCompile(`\$\s?([0-9][0-9,]*(?:\.[0-9]+)?)`)
)

// deriveFromKnowledge fills fields the caller cannot know from what the tools returned: an
// enumeration value named in a knowledge sentence about the field ("Claim type for windshield
// damage is glass"), or an amount in a knowledge sentence about the field that also names a value
// a lookup returned ("Preferred tier: … $100 deductible").
func (p *policy) deriveFromKnowledge() map[string]json.RawMessage {
	var sentences []string
	for _, t := range p.kbTexts {
		sentences = append(sentences, sentenceEnd.Split(t, -1)...)
	}
	var looked []string
	for _, rec := range p.lookups {
		keys := make([]string, 0, len(rec))
		for k := range rec {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if s, ok := rec[k].(string); ok && len(s) > 2 {
				looked = append(looked, strings.ToLower(s))
			}
		}
	}
	out := map[string]json.RawMessage{}
	for _, f := range p.m.fields {
		if p.filled(f.Name) {
			continue
		}
		for _, s := range sentences {
			low := " " + strings.ToLower(s) + " "
			words := strings.FieldsFunc(low, func(r rune) bool { return !(r >= 'a' && r <= 'z') })
			about := false
			for _, k := range f.keywords {
				for _, w := range words {
					about = about || stem(w) == k
				}
			}
			if !about {
				continue
			}
			var v *fieldValue
			switch f.Kind {
			case kindChoice:
				var found []string
				for _, e := range f.Enum {
					if strings.Contains(low, " "+strings.Join(nameWords(e), " ")+" ") || strings.Contains(low, " "+strings.Join(nameWords(e), " ")+".") {
						found = append(found, e)
					}
				}
				if len(found) == 1 {
					v = &fieldValue{field: f, value: found[0], spoken: strings.Join(nameWords(found[0]), " ")}
				}
			case kindNumber:
				named := false
				for _, l := range looked {
					named = named || strings.Contains(low, l)
				}
				if m := dollars.FindStringSubmatch(s); named && m != nil {
					if n, ok := canon.Number(m[1]); ok {
						var val any = m[1]
						if slices.Contains(f.JSONTypes, "number") {
							val = n
						}
						v = &fieldValue{field: f, value: val, spoken: spokenNumber(f, n)}
					}
				}
			}
			if v != nil {
				p.values[f.Name] = *v
				out[f.Name] = jsonValue(v.value)
				break
			}
		}
	}
	return out
}
