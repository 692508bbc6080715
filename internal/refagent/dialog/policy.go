package dialog

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

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
	asks      int    // times asked
	unknown   bool   // the caller does not know it
	repairs   int    // times the caller said a read-back of it was wrong
	confirmed bool   // the caller agreed to a read-back of its value
	resumed   bool   // its read-back was put again after the caller broke into it
	due       bool   // its value was to be read back
	refused   string // the value (as JSON) the caller last said was wrong
	checked   bool   // put to the caller once more before the artifact was marked ready
	affirmed  string // the value (as JSON) the caller said yes to when it was read back
	// refusals are every value (as JSON) the caller said was wrong: none is recorded again while
	// the recognizer had another reading of the turn.
	refusals map[string]bool
}

// refuse notes a value the caller said was wrong.
func (st *fieldState) refuse(v any) {
	st.refused = string(jsonValue(v))
	if st.refusals == nil {
		st.refusals = map[string]bool{}
	}
	st.refusals[st.refused] = true
}

// notRefused is v, or, when the caller already said v was wrong, the recognizer's best other
// reading of the turn that the caller has not refused, to be read back: the same misreading
// (the same words said the same way are heard the same way) is not put on record again. v
// stands when every reading was refused. Once the caller refused any reading of a name, the
// names directory's reading (when it differs) is put to them first: the open vocabulary has
// shown it does not know the name.
func (st *fieldState) notRefused(v fieldValue) fieldValue {
	refused := st.refusals[string(jsonValue(v.value))]
	if !refused && len(st.refusals) == 0 {
		return v
	}
	for i, a := range v.alts {
		// Once a name as heard was refused, the names directory's reading of it goes first.
		if st.refusals[string(jsonValue(a.value))] || !refused && !a.directory {
			continue
		}
		for _, rest := range v.alts[i+1:] {
			if !st.refusals[string(jsonValue(rest.value))] {
				a.alts = append(a.alts, rest)
			}
		}
		a.unsure = true
		return a
	}
	return v
}

// wantsNames reports a turn whose names-directory reading can be used (notRefused, readingsIn),
// the only turns worth its decode, which takes a second or two of a long turn and is waited for
// before the agent answers: the answer to a name read back (the caller may refuse it and say it
// again), a name asked again after the caller refused a reading of it, and a name a verify or
// lookup tool takes (its other readings are tried against the tool). A name asked the first time
// is recorded as heard whatever the directory reads.
func (p *policy) wantsNames() bool {
	e := p.exp
	if e.field == nil || e.field.Kind != kindName {
		return false
	}
	switch e.kind {
	case expectConfirm:
		return true
	case expectField:
		return len(p.state(e.field.Name).refusals) > 0 || p.findsRecord(e.field.Name)
	}
	return false
}

// findsRecord reports a field a verify or lookup tool takes: when the tool finds no record, the
// recognizer's other readings of it are tried.
func (p *policy) findsRecord(name string) bool {
	for _, r := range []role{roleVerify, roleLookup} {
		for _, t := range p.m.byRole[r] {
			if slices.Contains(p.verifyArgs(t), name) {
				return true
			}
		}
	}
	return false
}

// wantsAddress reports a turn that answers an address a verify or lookup tool takes: its reading
// with the address grammar (Question.AddressReread) is another reading the tool is tried with.
func (p *policy) wantsAddress() bool {
	e := p.exp
	return e.kind == expectField && e.field != nil && e.field.Kind == kindAddress && p.findsRecord(e.field.Name)
}

// maxRepairs bounds the read-back and repair loop of one field: asked again, then spelled.
const maxRepairs = 2

// maxVerifyRetries bounds the other readings of the caller's details tried against the verify
// tool after it refused the first.
const maxVerifyRetries = 3

// approvalState follows the approval of the gated action.
type approvalState int

const (
	approvalNone      approvalState = iota
	approvalRequested               // the approval tool recorded the request
	approvalAsked                   // the question was put to the caller
	approvalYes                     // the caller said yes: one last turn in case they take it back
	approvalLast                    // the agent said it is about to act
	approvalGo                      // no objection: act
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
	computed      map[string]bool // fields computed by a rule of the knowledge base
	lookupRetries map[string]*readingRetry
	now           func() time.Time
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
	kbContext     bool // the search about what the call is about was made

	confirm     *fieldValue // a value to read back before anything else
	repair      *field      // a field to ask again after a read-back was refused
	resume      *fieldValue // a read-back the caller broke into with news of another field
	kbAsked     map[string]bool
	verifyRetry *readingRetry   // the other readings of the verify arguments being tried
	tried       map[string]bool // verify arguments already tried, as JSON
	// earlier are the verify arguments heard before the caller was asked for them again (after
	// "those details don't match"): another reading of what the caller says again.
	earlier         map[string]fieldValue
	lastHeardSpoken bool
}

func newPolicy(m *model) *policy {
	return &policy{m: m, values: map[string]fieldValue{}, fields: map[string]*fieldState{}, lookedUp: map[string]bool{},
		kbAsked: map[string]bool{}, tried: map[string]bool{}, computed: map[string]bool{},
		lookupRetries: map[string]*readingRetry{}, earlier: map[string]fieldValue{}}
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
	p.lastHeardSpoken = h.spoken
	if exp.kind == expectConfirm && exp.field != nil {
		st := p.state(exp.field.Name)
		switch h.intent {
		case intentYes:
			st.confirmed = true
			if exp.value != nil {
				st.affirmed = string(jsonValue(exp.value.value))
			}
			p.ack = "Great."
			return
		case intentNo:
			st.repairs++
			if exp.value != nil {
				st.refuse(exp.value.value)
			}
			if st.repairs <= maxRepairs {
				p.repair = exp.field
				p.ack = "Sorry about that."
			} else {
				st.confirmed = true
				p.ack = "I'll note it as I have it, and a colleague will check it."
			}
			return
		case intentCorrection, intentAnswer:
			if len(h.values) == 1 && h.values[0].field == exp.field {
				st.repairs++
				if exp.value != nil {
					st.refuse(exp.value.value)
				}
			} else if exp.value != nil && !st.resumed && !slices.ContainsFunc(h.values, func(v fieldValue) bool { return v.field == exp.field }) {
				// "Actually, I need to change the start date …" in reply to "That's Based. Is that
				// right?": the read-back is still unanswered, and is put again once the change is in.
				// Once: a caller who breaks in again (or whose repair of it lands elsewhere, turn
				// after turn) is not asked round and round.
				c := *exp.value
				p.resume, st.resumed = &c, true
			}
		case intentVolunteer, intentAcknowledge, intentOther, intentNone:
			// The caller went on without objecting: the read-back stands.
			st.confirmed = true
		}
	}
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
			if yes && exp.last2 {
				p.approval = approvalGo
			} else if yes {
				p.approval = approvalYes
			} else {
				p.approval = approvalNo
				p.ack = "Understood, I will not go ahead with it."
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
		if exp.kind == expectApproval && exp.last2 && h.intent != intentUnplaced {
			p.approval = approvalGo // the caller let the action go ahead
			return
		}
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
	fresh := 0
	vals = slices.Clone(vals)
	for i, v := range vals {
		v = p.state(v.field.Name).notRefused(p.onRecord(v))
		vals[i] = v
		old, had := p.values[v.field.Name]
		if !had {
			fresh++
		}
		if had && v.yearless && string(jsonValue(old.value)) != p.state(v.field.Name).refused {
			// Not the year of a reading the caller refused: "March 28th, 2029" for "Monday,
			// January eleventh" corrected to "I said Monday, January eleventh" was 2029-01-11.
			v = keepYear(v, old)
		}
		p.values[v.field.Name] = v
		p.lastField = v.field
		p.state(v.field.Name).due = false // the caller's own word, unless it is read back below
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
	case len(vals) > 0 && len(changed) == 0 && fresh == 0 && (in == intentCorrection || in == intentVolunteer):
		// What the caller "corrects" is what is on record already: nothing reopens (a caller
		// who took one date for another in the summary is not asked to approve it again and
		// again).
		p.ack = "Thanks, I have that as " + vals[len(vals)-1].spoken + "."
	case len(changed) > 0 || in == intentCorrection:
		p.ack = "Thanks, I've updated that."
		p.reopen()
	case in == intentVolunteer:
		p.ack = "Thanks, I've noted that."
		p.reopen()
	default:
		p.ack = "Thanks."
	}
	// Codes, numbers, names and anything the recognizers disagreed on are read back for a yes or
	// no before the call moves on (one value per turn: the last one heard).
	if len(vals) > 0 {
		v := vals[len(vals)-1]
		if st := p.state(v.field.Name); needsReadBack(v, p.lastHeardSpoken) && st.repairs <= maxRepairs {
			st.confirmed, st.due = false, true
			c := v
			p.confirm = &c
		}
	}
}

// keepYear gives a date said without its year ("it's October thirty-first") the year of the
// value it corrects, where the listener would have guessed the next such date.
func keepYear(v, old fieldValue) fieldValue {
	nd, ok1 := canon.ParseDate(fmt.Sprint(v.value))
	od, ok2 := canon.ParseDate(fmt.Sprint(old.value))
	if !ok1 || !ok2 || od.Year == 0 || nd.Year == od.Year {
		return v
	}
	nd.Year = od.Year
	v.value, v.spoken = nd.String(), spokenDate(nd)
	return v
}

// needsReadBack reports a value to read back: a spoken code or name, a spoken phone number short
// of its area code, or a value whose readings disagreed.
func needsReadBack(v fieldValue, spoken bool) bool {
	if v.unsure {
		return true
	}
	if !spoken {
		return false
	}
	switch v.field.Kind {
	case kindIdentifier, kindDigits, kindName, kindEmail:
		return true
	case kindPhone:
		// A number without its area code ("two oh eight" heard as "to avoid") is most likely
		// misheard: a yes or no settles it.
		return len(canon.Digits(fmt.Sprint(v.value))) < 10
	}
	return false
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
			if r := p.verifyRetry; r != nil && len(r.fixed) > 0 {
				// A retry with another reading matched: say so, and record what was misheard.
				// What was misheard is said without naming the field, so that the next question
				// stays the only one in the turn.
				p.ack = "Thank you, you're verified. I checked another reading of what you said, " + p.takeReadings(r.fixed) + ", and that one matched."
			}
			p.verifyRetry = nil
			return
		}
		// Before asking again, try the other readings the recognizer had of the details, each a
		// real call of the verify tool.
		if p.verifyRetry == nil {
			p.verifyRetry = &readingRetry{cands: p.verifyCandidates(t)}
		}
		if c, ok := p.nextReading(t, p.verifyRetry); ok {
			p.verifyPending = true
			p.queue = append(p.queue, c)
			return
		}
		p.verifyRetry = nil
		p.verifyTries++
		if p.verifyTries >= 2 {
			p.verifyFailed = true
			p.ack = "I'm sorry, I couldn't verify those details, so I can't access the account."
			return
		}
		p.ack = "I'm sorry, those details don't match our records. Let's try again."
		// What the caller said yes to when it was read back stands; the rest is asked again
		// (all of it when every detail was affirmed).
		args := p.verifyArgs(t)
		again := slices.DeleteFunc(slices.Clone(args), p.affirmed)
		if len(again) == 0 {
			again = args
		}
		for _, a := range again {
			if v, ok := p.values[a]; ok {
				p.earlier[a] = v
			}
			delete(p.values, a)
			p.state(a).asks = 0
		}
	case roleLookup:
		if failed {
			p.lookupFailed(t)
			return
		}
		rec, ok := out["record"].(map[string]any)
		if !ok {
			rec = out
		}
		if r := p.lookupRetries[t.Name]; r != nil && len(r.fixed) > 0 {
			// Another reading of the key found the record: it is what the caller said.
			// Said before what the last turn's acknowledgement says of that turn ("Sorry, I didn't
			// catch that."), which leads into the question asked next.
			p.ack = join("I found it under another reading of what you said, "+p.takeReadings(r.fixed)+".", p.ack)
		}
		delete(p.lookupRetries, t.Name)
		p.lookups = append(p.lookups, rec)
		p.fillFromLookup(t, rec)
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

// readingRetry is what a failed verification or lookup has tried: the other readings of its
// arguments still to call it with, how many were called, the readings the pending call differs
// by; for a lookup, whether the caller was asked for the key again.
type readingRetry struct {
	cands []map[string]any
	tried int
	fixed []fieldValue
	asked bool
	fresh bool // the key was heard anew: its readings are still to be listed
}

// nextReading is the call of t with the next other reading, while any is left.
func (p *policy) nextReading(t *toolInfo, r *readingRetry) (call, bool) {
	if len(r.cands) == 0 || r.tried >= maxVerifyRetries {
		r.fixed = nil
		return call{}, false
	}
	args := r.cands[0]
	r.cands = r.cands[1:]
	r.tried++
	b, _ := json.Marshal(args)
	p.tried[string(b)] = true
	r.fixed = p.readingsIn(t, args)
	return call{name: t.Name, args: b}, true
}

// lookupFailed follows a lookup that found nothing: the recognizer's other readings of its key
// first, each a real call of the lookup; then the caller is told and asked for the key again, once.
func (p *policy) lookupFailed(t *toolInfo) {
	r := p.lookupRetries[t.Name]
	if r == nil {
		r = &readingRetry{fresh: true}
		p.lookupRetries[t.Name] = r
	}
	if r.fresh {
		r.cands, r.tried, r.fresh = p.verifyCandidates(t), 0, false
	}
	if c, ok := p.nextReading(t, r); ok {
		p.queue = append(p.queue, c)
		return
	}
	if r.asked {
		return
	}
	r.asked = true
	var subject string
	for _, n := range p.verifyArgs(t) {
		f := p.m.paramField(t, n)
		if f == nil {
			continue
		}
		subject = f.Subject
		delete(p.values, n)
		p.state(n).asks = 0
		p.repair = f
	}
	// The key is asked again, then the lookup is made with what the caller says (and its other
	// readings).
	p.lookedUp[t.Name] = false
	r.fresh = true
	p.ack = "I'm sorry, I couldn't find a record with that " + subject + "."
}

// readingsIn are the readings of the heard values that args (another reading of the tool's
// arguments) holds instead of them.
func (p *policy) readingsIn(t *toolInfo, args map[string]any) []fieldValue {
	var out []fieldValue
	for _, n := range p.verifyArgs(t) {
		if v, ok := p.values[n]; ok && string(jsonValue(v.value)) != string(jsonValue(args[n])) {
			for _, a := range p.readings(n) {
				if string(jsonValue(a.value)) == string(jsonValue(args[n])) {
					out = append(out, a)
					break
				}
			}
		}
	}
	return out
}

// readings are the readings of a verify argument, the heard one first, then the code with its
// type prefix and the recognizer's other readings, and the one heard before the caller was asked
// again (first of the others when it is one of them: heard so twice), then its other readings. Each once.
func (p *policy) readings(name string) []fieldValue {
	v := p.values[name]
	others := append(prefixed(v), v.alts...)
	all := []fieldValue{v}
	e, heardBefore := p.earlier[name]
	if heardBefore && hasAlt(others, e) {
		all = append(all, e) // heard so the first time, and among this turn's readings
	}
	all = append(all, others...)
	if heardBefore {
		all = append(all, e)
		all = append(all, e.alts...)
	}
	var out []fieldValue
	seen := map[string]bool{}
	for _, a := range all {
		if k := string(jsonValue(a.value)); !seen[k] {
			seen[k] = true
			out = append(out, a)
		}
	}
	return out
}

// takeReadings records the readings a tool bore out in place of what was heard, and says them.
func (p *policy) takeReadings(fixed []fieldValue) string {
	var said []string
	rec := map[string]json.RawMessage{}
	for _, fv := range fixed {
		p.values[fv.field.Name] = fv
		said = append(said, fv.spoken)
		if p.m.fieldByName[fv.field.Name] != nil {
			rec[fv.field.Name] = jsonValue(fv.value)
		}
	}
	if len(rec) > 0 {
		p.queueRecord(rec)
	}
	return strings.Join(said, " and ")
}

// verifyCandidates lists other readings of the verify arguments, likeliest first: each argument's
// readings (see readings) combined, those nearest what was heard first (the fewest and likeliest
// changed: one argument's first other reading, then both arguments' first other readings before
// either's second), none tried before. A value the caller said yes to when it was read back is
// changed last: the other arguments' readings are tried with it as affirmed first.
func (p *policy) verifyCandidates(t *toolInfo) []map[string]any {
	names := p.verifyArgs(t)
	opts := make([][]fieldValue, len(names))
	for i, n := range names {
		if _, ok := p.values[n]; !ok {
			return nil
		}
		opts[i] = p.readings(n)
		if len(opts[i]) > maxReadings {
			opts[i] = opts[i][:maxReadings]
		}
	}
	type combo struct {
		ranks              []int
		affirmed, sum, max int
	}
	var combos []combo
	ranks := make([]int, len(names))
	var walk func(i int)
	walk = func(i int) {
		if i == len(names) {
			c := combo{ranks: slices.Clone(ranks)}
			for i, r := range ranks {
				c.sum += r
				c.max = max(c.max, r)
				if r > 0 && p.affirmed(names[i]) {
					c.affirmed++
				}
			}
			if c.sum > 0 {
				combos = append(combos, c)
			}
			return
		}
		for r := range opts[i] {
			ranks[i] = r
			walk(i + 1)
		}
	}
	walk(0)
	slices.SortStableFunc(combos, func(a, b combo) int {
		if a.affirmed != b.affirmed {
			return a.affirmed - b.affirmed
		}
		if a.sum != b.sum {
			return a.sum - b.sum
		}
		return a.max - b.max
	})
	var out []map[string]any
	for _, c := range combos {
		args := map[string]any{}
		for i, n := range names {
			args[n] = opts[i][c.ranks[i]].value
		}
		if b, _ := json.Marshal(args); !p.tried[string(b)] {
			out = append(out, args)
		}
	}
	return out
}

// maxReadings bounds the readings of one argument verifyCandidates combines: the likeliest few
// (only maxVerifyRetries combinations are ever called).
const maxReadings = 6

// streetBefore are the street words of the readings of an address heard the round before (see
// policy.earlier), each once: what the caller said again is read with them too.
func (p *policy) streetBefore(name string) []string {
	e, ok := p.earlier[name]
	if !ok {
		return nil
	}
	var out []string
	for _, v := range append([]fieldValue{e}, e.alts...) {
		s, _ := v.value.(string)
		for _, w := range streetWords(s) {
			if !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	return out
}

// affirmed reports a field whose value the caller said yes to when it was read back.
func (p *policy) affirmed(name string) bool {
	v, ok := p.values[name]
	return ok && p.state(name).affirmed == string(jsonValue(v.value))
}

// prefixed is a code with the acronym its field is named by in front ("MRN" for mrn), when the
// caller said digits only.
func prefixed(v fieldValue) []fieldValue {
	s, ok := v.value.(string)
	if !ok || (v.field.Kind != kindIdentifier && v.field.Kind != kindDigits) || strings.IndexFunc(s, unicode.IsLetter) >= 0 {
		return nil
	}
	for _, w := range nameWords(v.field.Name) {
		if a, ok := acronyms[w]; ok && a != "ID" && a != "PIN" && a != "ZIP" {
			c := v
			c.value, c.spoken, c.alts = a+"-"+s, spacedDigits(a+s), nil
			return []fieldValue{c}
		}
	}
	return nil
}

// fillFromLookup records what a lookup returned for fields the caller has not filled: a returned
// column of the field's name ("nightly_rate"), or the last words of it ("slot_id" for
// new_slot_id, when only one field ends so).
func (p *policy) fillFromLookup(t *toolInfo, rec map[string]any) {
	keys := slices.Sorted(maps.Keys(rec))
	record := map[string]json.RawMessage{}
	argWords := map[string]bool{}
	for _, a := range t.Params {
		for _, w := range nameWords(a.Name) {
			argWords[w] = true
		}
	}
	for _, k := range keys {
		val := rec[k]
		if val == nil {
			continue
		}
		if _, isMap := val.(map[string]any); isMap {
			continue
		}
		if _, isList := val.([]any); isList {
			continue
		}
		var match []*field
		for _, f := range p.m.fields {
			// A column fills a field of its name; "slot_id" also fills new_slot_id, but only from
			// a lookup that searches for the new thing (its arguments say requested, new, …): the
			// record on file holds the old address, not the new one.
			if f.Name == k || (strings.HasSuffix(f.Name, "_"+k) && searchesNew(t)) || recordNames(f, k, t) ||
				// "flight" on the booking looked up by its reference is the booked one:
				// original_flight, not new_flight.
				strings.HasSuffix(f.Name, "_"+k) && !searchesNew(t) && onFileWords[nameWords(f.Name)[0]] ||
				eventDate(f, k) {
				match = append(match, f)
			}
		}
		if len(match) > 1 || k == "name" && len(match) == 1 && match[0].Name != k && !searchesNew(t) {
			// "flight" for new_flight and original_flight: the one that shares a word with the
			// lookup's arguments ("new_travel_date").
			var shared []*field
			for _, f := range match {
				for _, w := range nameWords(f.Name) {
					if argWords[w] && !genericWords[w] && w != k {
						shared = append(shared, f)
						break
					}
				}
			}
			match = shared
		}
		if len(match) != 1 {
			continue
		}
		f := match[0]
		// A name on the record found by the caller's own key is the name, over what the open
		// vocabulary made of it ("Emily's Okay Anneli" for the guest on the reservation).
		if p.filled(f.Name) && !(recordNames(f, k, t) && fmt.Sprint(p.values[f.Name].value) != fmt.Sprint(val)) {
			continue
		}
		fv := fieldValue{field: f, value: val, spoken: fmt.Sprint(val)}
		if s, ok := val.(string); ok && (slices.Contains(f.JSONTypes, "number") || slices.Contains(f.JSONTypes, "integer")) {
			if n, ok := canon.Number(s); ok && slices.Contains(f.JSONTypes, "number") {
				fv.value = n
			}
		}
		p.values[f.Name] = fv
		record[f.Name] = jsonValue(fv.value)
	}
	p.fillTotal(rec, record)
	if len(record) > 0 {
		p.queueRecord(record)
	}
}

// fillTotal fills an open number field named a total ("extension_total") from a lookup that
// returned a price per unit and a count of units ("nightly_rate": 219.00, "nights": 2): the
// caller cannot know a total the agent is told to work out.
func (p *policy) fillTotal(rec map[string]any, record map[string]json.RawMessage) {
	var unit, count float64
	var haveUnit, haveCount bool
	for k, v := range rec {
		n, ok := lookupNumber(v)
		if !ok {
			continue
		}
		for _, w := range nameWords(k) {
			switch w {
			case "rate", "price", "fee", "cost":
				unit, haveUnit = n, true
			case "nights", "days", "count", "quantity", "months", "weeks", "units":
				if n == float64(int64(n)) {
					count, haveCount = n, true
				}
			}
		}
	}
	if !haveUnit || !haveCount {
		return
	}
	for _, f := range p.m.fields {
		if f.Kind != kindNumber || p.filled(f.Name) || !slices.Contains(nameWords(f.Name), "total") {
			continue
		}
		total := math.Round(unit*count*100) / 100
		var val any = total
		if !slices.Contains(f.JSONTypes, "number") {
			val = strconv.FormatFloat(total, 'f', 2, 64)
		}
		p.values[f.Name] = fieldValue{field: f, value: val, spoken: spokenNumber(f, total)}
		record[f.Name] = jsonValue(val)
	}
}

// lookupNumber reads a number a tool returned as a JSON number or a numeric string.
func lookupNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		return canon.Number(x)
	}
	return 0, false
}

// recordNames reports whether a record's column k names what name field f holds: "guest" on a
// reservation is guest_name, "carrier" on a coverage record is insurance_carrier. A real agent
// takes the name on file rather than asking a caller to spell it; a column plainly called "name"
// must share a word with the lookup's key to say whose name it is (fillFromLookup).
func recordNames(f *field, k string, t *toolInfo) bool {
	if f.Kind != kindName || searchesNew(t) && !keyedByOwnID(f, k, t) {
		return false
	}
	return f.Name == k+"_name" || strings.HasSuffix(f.Name, "_"+k)
}

// onRecord is a business's name as the records looked up write it: "studio" heard for the
// merchant, with "2027-01-14 ZENFIT*STUDIO 8821 $219.00; 2027-01-12 TRADER JOE'S …" among the
// card's recent transactions, is the ZenFit Studio charge, as an agent reading the statement on
// screen would take it (and reads it back, for the caller to say yes or no). Only a name that
// shares more words with one entry of the lists on record than with any other; what was heard
// stays an alternative.
func (p *policy) onRecord(v fieldValue) fieldValue {
	heard, ok := v.value.(string)
	if !ok || v.field.Kind != kindName || !businessName(v.field) {
		return v
	}
	words := map[string]bool{}
	for _, w := range strings.Fields(strings.ToLower(heard)) {
		if len(w) >= 4 && !aroundNameWords[w] {
			words[w] = true
		}
	}
	var found []string
	best := 0
	for _, rec := range p.lookups {
		for _, name := range listedNames(rec) {
			shared := 0
			for _, w := range strings.Fields(strings.ToLower(name)) {
				if words[w] {
					shared++
				}
			}
			switch {
			case shared == 0 || shared < best || slices.Contains(found, name):
			case shared > best:
				best, found = shared, []string{name}
			default:
				found = append(found, name)
			}
		}
	}
	if len(found) != 1 || strings.EqualFold(found[0], heard) {
		return v
	}
	as := v
	as.alts = nil
	v.alts = append([]fieldValue{as}, v.alts...)
	v.value, v.spoken = found[0], found[0]
	return v
}

// businessName reports a name field that holds a business's name (the merchant, the shop).
func businessName(f *field) bool {
	return slices.ContainsFunc(nameWords(f.Name), func(w string) bool {
		switch w {
		case "merchant", "shop", "store", "company", "vendor", "payee", "business", "employer":
			return true
		}
		return false
	})
}

// aroundNameWords are words of four letters or more a caller says around a business's name.
var aroundNameWords = map[string]bool{"that": true, "this": true, "they": true, "them": true, "with": true, "from": true,
	"place": true, "said": true, "what": true, "it's": true, "sorry": true, "actually": true, "called": true}

// listedNames are the names in a record's lists of entries (a card's recent transactions, "date
// NAME reference amount; …"): in each entry, the first run of capitalized words without digits,
// written as a name ("ZENFIT*STUDIO" is Zenfit Studio, "TRADER JOE'S #231" Trader Joe's).
func listedNames(rec map[string]any) []string {
	var entries []string
	for _, k := range slices.Sorted(maps.Keys(rec)) {
		switch x := rec[k].(type) {
		case string:
			if strings.Contains(x, ";") {
				entries = append(entries, strings.Split(x, ";")...)
			}
		case []any:
			for _, e := range x {
				if s, ok := e.(string); ok {
					entries = append(entries, s)
				}
			}
		}
	}
	var out []string
	for _, e := range entries {
		var run []string
		for _, tok := range strings.Fields(strings.NewReplacer("*", " ", "_", " ").Replace(e)) {
			r := []rune(tok)
			if unicode.IsUpper(r[0]) && !strings.ContainsFunc(tok, unicode.IsDigit) {
				run = append(run, strings.ToUpper(string(r[0]))+strings.ToLower(string(r[1:])))
				continue
			}
			if len(run) > 0 {
				break
			}
		}
		if len(run) > 0 {
			out = append(out, strings.Join(run, " "))
		}
	}
	return out
}

// keyedByOwnID reports a name field of the one whose record a lookup's key found: new_hire_name
// on the worker found by new_hire_employee_id is the new hire's name, though the key's "new"
// makes the lookup look like a search for something asked for (searchesNew).
func keyedByOwnID(f *field, k string, t *toolInfo) bool {
	whose, ok := strings.CutSuffix(f.Name, "_"+k)
	if !ok || whose == "" {
		return false
	}
	return slices.ContainsFunc(t.Params, func(a field) bool { return strings.HasPrefix(a.Name, whose+"_") })
}

// eventDate reports a date field named for the event a record's column says happened: "delivered"
// on an invoice is its delivery_date.
func eventDate(f *field, k string) bool {
	if f.Kind != kindDate || !strings.HasSuffix(f.Name, "_date") || !strings.HasSuffix(k, "ed") {
		return false
	}
	first := nameWords(f.Name)[0]
	for _, root := range []string{k[:len(k)-2], k[:len(k)-1]} {
		if len(root) >= 4 && strings.HasPrefix(first, root) {
			return true
		}
	}
	return false
}

// onFileWords lead the name of a field that holds what a record on file says.
var onFileWords = map[string]bool{"original": true, "current": true, "old": true, "existing": true, "previous": true, "booked": true}

// searchesNew reports a lookup whose arguments describe something asked for (new_travel_date,
// requested_date): its results are the new thing, not the record on file.
func searchesNew(t *toolInfo) bool {
	for _, a := range t.Params {
		for _, w := range nameWords(a.Name) {
			switch w {
			case "new", "requested", "preferred", "desired", "target":
				return true
			}
		}
	}
	return strings.HasPrefix(t.Name, "find_") || strings.HasPrefix(t.Name, "search_")
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
	if p.exp.kind == expectOpen && !p.wrapped && (ack == "" || strings.HasPrefix(ack, "Thanks")) {
		ack = join(p.greeting(), "I can help with that.")
	}
	// A value just heard is read back for a yes or no; a read-back the caller refused is asked
	// again, the second time spelled.
	if c := p.confirm; c != nil {
		p.confirm = nil
		if v, ok := p.values[c.field.Name]; ok && string(jsonValue(v.value)) == string(jsonValue(c.value)) {
			return p.say(join(ack, readBack(*c)), expectation{kind: expectConfirm, field: c.field, value: c})
		}
	}
	if c := p.resume; c != nil && p.confirm == nil && p.repair == nil {
		p.resume = nil
		if v, ok := p.values[c.field.Name]; ok && string(jsonValue(v.value)) == string(jsonValue(c.value)) && !p.state(c.field.Name).confirmed {
			return p.say(join(ack, "And the "+c.field.Subject+": "+lowerFirst(readBack(*c))), expectation{kind: expectConfirm, field: c.field, value: c})
		}
	}
	if f := p.repair; f != nil {
		p.repair = nil
		st := p.state(f.Name)
		if st.repairs >= maxRepairs {
			return p.say(join(ack, spellQuestion(f)), expectation{kind: expectField, field: f, spell: true})
		}
		return p.say(join(ack, f.Question), expectation{kind: expectField, field: f})
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
	// Policy from the knowledge base when the instructions ask for it: one search for each thing
	// they name.
	if t := p.m.tool(roleKB); t != nil && p.m.useKB && !p.kbDone {
		p.kbDone = true
		var cs []call
		for _, q := range p.m.kbQueries {
			if !p.kbAsked[q] {
				p.kbAsked[q] = true
				b, _ := json.Marshal(map[string]string{"query": q})
				cs = append(cs, call{name: t.Name, args: b})
			}
		}
		if len(cs) > 0 {
			return p.calls(ack, cs...)
		}
	}
	if p.kbDone {
		if a, ok := p.recordDerived(ack); ok {
			return a
		}
	}
	// One question per turn for each field not yet filled.
	for _, f := range p.m.fields {
		if p.askable(f) {
			return p.ask(f, ack)
		}
	}
	if a, ok := p.finalCheck(ack); ok {
		return a
	}
	// Before marking it ready, search the knowledge base once more with what the call is about
	// (the caller's issue, what the lookups returned), then derive what it says.
	if t := p.m.tool(roleKB); t != nil && p.m.useKB && !p.kbContext {
		p.kbContext = true
		if q := p.contextQuery(); q != "" && !p.kbAsked[q] {
			p.kbAsked[q] = true
			b, _ := json.Marshal(map[string]string{"query": q})
			return p.calls(ack, call{name: t.Name, args: b})
		}
	}
	if p.kbContext {
		if a, ok := p.recordDerived(ack); ok {
			return a
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
			// Before acting, one turn in which the caller can still take the yes back (a caller
			// who says "yes, go ahead … actually, wait" is heard before anything is done).
			p.approval = approvalLast
			return p.say(join(ack, "Thank you. Give me a moment to process that."), expectation{kind: expectApproval, last2: true})
		case approvalGo:
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

// finalCheck puts to the caller, once, before the artifact is marked ready, each value on record
// whose read-back was never settled: one the caller refused and never gave again (the repair was
// not understood) is asked for again, one character at a time; one whose read-back the caller broke
// into, twice, is read back. A value the caller said was wrong is not filed as if it were right.
func (p *policy) finalCheck(ack string) (action, bool) {
	if p.ready {
		return action{}, false
	}
	for _, f := range p.m.fields {
		v, ok := p.values[f.Name]
		st := p.state(f.Name)
		if !ok || !st.due || st.confirmed || st.checked || st.repairs > maxRepairs || p.verifiedBy(f) {
			continue
		}
		st.checked = true
		if st.refused == string(jsonValue(v.value)) {
			return p.say(join(ack, "Before I finish, I still need the "+f.Subject+". "+spellQuestion(f)),
				expectation{kind: expectField, field: f, spell: true}), true
		}
		c := v
		return p.say(join(ack, "Before I finish, the "+f.Subject+": "+lowerFirst(readBack(c))),
			expectation{kind: expectConfirm, field: f, value: &c}), true
	}
	return action{}, false
}

// verifiedBy reports a field whose value the verify tool accepted.
func (p *policy) verifiedBy(f *field) bool {
	t := p.m.tool(roleVerify)
	return p.verified && t != nil && slices.Contains(p.verifyArgs(t), f.Name)
}

func (p *policy) say(text string, exp expectation) action {
	exp.last = p.lastField
	exp.values = map[string]any{}
	for _, f := range p.m.allFields() {
		if p.filled(f.Name) {
			exp.filled = append(exp.filled, f)
			exp.values[f.Name] = p.values[f.Name].value
		} else if !p.state(f.Name).unknown {
			exp.open = append(exp.open, f)
		}
	}
	exp.codes = p.codesOnRecord()
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

// readBack reads a value back in a form a yes or no settles: codes character by character
// ("That's P, A, two, zero, …"), names with what the caller spelled, dates and amounts in words.
func readBack(v fieldValue) string {
	var said string
	switch v.field.Kind {
	case kindIdentifier, kindDigits:
		said = spokenCode(fmt.Sprint(v.value))
	case kindPhone:
		said = spokenPhone(fmt.Sprint(v.value))
	case kindName:
		said = v.spoken
		for _, sp := range v.spelled {
			said += ", " + strings.Join(strings.Split(sp, ""), " ")
		}
	default:
		said = v.spoken
	}
	return "That's " + said + ". Is that right?"
}

// lowerFirst lowers a sentence's first letter, to follow a lead-in.
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// digitNames say digits in a read-back.
var digitNames = [...]string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}

// spokenCode says a code one character at a time: "PA2044718" is "P, A, two, zero, four, …".
func spokenCode(s string) string {
	var out []string
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			out = append(out, digitNames[r-'0'])
		case unicode.IsLetter(r):
			out = append(out, strings.ToUpper(string(r)))
		}
	}
	return strings.Join(out, ", ")
}

// spokenPhone says a phone number in its groups: "five oh three, five five five, …".
func spokenPhone(s string) string {
	var groups []string
	for _, g := range strings.FieldsFunc(s, func(r rune) bool { return r == '-' || r == ' ' }) {
		var ds []string
		for _, r := range g {
			if r >= '0' && r <= '9' {
				d := digitNames[r-'0']
				if r == '0' {
					d = "oh"
				}
				ds = append(ds, d)
			}
		}
		groups = append(groups, strings.Join(ds, " "))
	}
	return strings.Join(groups, ", ")
}

// spellQuestion asks for a value again, one character at a time.
func spellQuestion(f *field) string {
	switch f.Kind {
	case kindName, kindEmail:
		return "Could you spell the " + fieldPhrase(f.Name) + " for me, letter by letter?"
	case kindIdentifier:
		return "Could you say the " + fieldPhrase(f.Name) + " again, one letter or digit at a time?"
	}
	return "Could you say the " + fieldPhrase(f.Name) + " again, slowly, digit by digit?"
}

// contextQuery is a knowledge search about what the call is about: the enumeration values the
// caller's answers chose and the short values the lookups returned.
func (p *policy) contextQuery() string {
	var words []string
	seen := map[string]bool{}
	add := func(s string) {
		for _, w := range strings.Fields(strings.ToLower(strings.NewReplacer("_", " ", "-", " ").Replace(s))) {
			if !seen[w] && len(w) > 2 {
				seen[w] = true
				words = append(words, w)
			}
		}
	}
	for _, f := range p.m.fields {
		if v, ok := p.values[f.Name]; ok && f.Kind == kindChoice {
			add(fmt.Sprint(v.value))
		}
	}
	for _, rec := range p.lookups {
		for _, k := range slices.Sorted(maps.Keys(rec)) {
			if s, ok := rec[k].(string); ok && len(strings.Fields(s)) <= 3 && strings.IndexFunc(s, unicode.IsDigit) < 0 {
				add(s)
			}
		}
	}
	if len(words) == 0 {
		return ""
	}
	return strings.Join(words, " ")
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

// recordInstruction reads "record <field words>: <value>" in a knowledge sentence for field f.
func (p *policy) recordInstruction(f *field, low string) (fieldValue, bool) {
	key := "record " + strings.Join(nameWords(f.Name), " ") + ":"
	i := strings.Index(low, key)
	if i < 0 {
		return fieldValue{}, false
	}
	rest := strings.Fields(low[i+len(key):])
	if len(rest) == 0 {
		return fieldValue{}, false
	}
	word := strings.Trim(rest[0], ".,;")
	for _, e := range f.Enum {
		if strings.EqualFold(e, word) || strings.Join(nameWords(e), " ") == word {
			return fieldValue{field: f, value: e, spoken: strings.Join(nameWords(e), " ")}, true
		}
	}
	return fieldValue{}, false
}

// deriveFromKnowledge fills fields the caller cannot know from what the tools returned: an
// enumeration value named in a knowledge sentence about the field ("Claim type for windshield
// damage is glass"), or an amount in a knowledge sentence about the field that also names a value
// a lookup returned ("Preferred tier: … $100 deductible").
var (
	codeLead  = regexp.MustCompile(`^\s*([0-9]+(?:\.[0-9]+)?)\s+(.+)`)
	noCharge  = regexp.MustCompile(`\b(at no charge|no charge|free of charge|no fee|at no cost)\b`)
	rateOrCap = regexp.MustCompile(`\b(every|each|per|up to|at most|maximum|minimum|at least|above|below|over|under|less|minus|plus)\b`)
)

// knowledgeValue reads a field the caller cannot know from one knowledge sentence s (low: lower
// case, padded with spaces; named: it names a value a lookup returned):
//   - a code listed with the meaning of a value already recorded ("13.2 Cancelled recurring
//     transaction: …" when the dispute reason is cancelled_recurring);
//   - a fee of nothing for the case a lookup returned ("Visa Signature cards are replaced … at no
//     charge");
//   - a yes/no that a rule ties to another yes/no already recorded ("If the member has not
//     contacted the merchant, … do not post a provisional credit": a provisional credit is yes
//     when the merchant was contacted).
func (p *policy) knowledgeValue(f *field, s, low string, named bool) (fieldValue, bool) {
	words := nameWords(f.Name)
	switch f.Kind {
	case kindIdentifier, kindDigits:
		if !slices.Contains(words, "code") {
			return fieldValue{}, false
		}
		m := codeLead.FindStringSubmatch(s)
		if m == nil {
			return fieldValue{}, false
		}
		rest := " " + strings.ToLower(m[2]) + " "
		for _, g := range p.m.fields {
			v, ok := p.values[g.Name]
			if !ok || g.Kind != kindChoice {
				continue
			}
			e, _ := v.value.(string)
			if e != "" && strings.Contains(rest, " "+strings.Join(nameWords(e), " ")+" ") {
				return fieldValue{field: f, value: m[1], spoken: m[1]}, true
			}
		}
	case kindNumber:
		feeLike := slices.Contains(words, "fee") || slices.Contains(words, "charge") || slices.Contains(words, "cost")
		title := " " + strings.Join(words, " ") + " "
		// "… carries no change fee": the rule names this very fee as none.
		waived := len(words) > 1 && strings.Contains(low, " no"+title)
		if feeLike && ((named && noCharge.MatchString(low)) || waived) {
			return amountValue(f, "0", 0), true
		}
		if v, ok := p.ratedAmount(f, low); ok {
			return v, true
		}
		// "… issue a hotel voucher of $150 for the night": the sentence names the field in full
		// and gives one amount that is not a rate, a cap or a term of a sum ("the declared value less the $15
		// claims deductible": those need arithmetic on the call).
		if len(words) > 1 && strings.Contains(low, title) {
			if m := dollars.FindAllStringSubmatch(s, -1); len(m) == 1 && !rateOrCap.MatchString(low) {
				if n, ok := canon.Number(m[0][1]); ok {
					return amountValue(f, m[0][1], n), true
				}
			}
		}
	case kindYesNo:
		toks := strings.FieldsFunc(low, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r == '\'') })
		if !strings.Contains(" "+strings.Join(toks, " ")+" ", " "+strings.Join(words, " ")+" ") || !slices.Contains(toks, "not") {
			return fieldValue{}, false
		}
		for _, g := range p.m.fields {
			v, ok := p.values[g.Name]
			if g == f || !ok || g.Kind != kindYesNo {
				continue
			}
			all := true
			for _, w := range nameWords(g.Name) {
				all = all && slices.Contains(toks, w)
			}
			if all && (v.value == "yes" || v.value == "no") {
				return fieldValue{field: f, value: v.value, spoken: fmt.Sprint(v.value)}, true
			}
		}
	}
	return fieldValue{}, false
}

// recordDerived records what the knowledge base says of the fields still open
// (deriveFromKnowledge); ok is false when it derived nothing. It runs before every question, as
// a rule may need a value the caller just gave (an election capped at a limit).
func (p *policy) recordDerived(ack string) (a action, ok bool) {
	rec := p.deriveFromKnowledge()
	if len(rec) == 0 {
		return action{}, false
	}
	p.queueRecord(rec)
	q := p.queue
	p.queue = nil
	p.ack = ack
	return action{calls: q}, true
}

func (p *policy) deriveFromKnowledge() map[string]json.RawMessage {
	var sentences []string
	for _, t := range p.kbTexts {
		sentences = append(sentences, sentenceEnd.Split(t, -1)...)
	}
	var looked []string
	for _, rec := range p.lookups {
		for _, k := range slices.Sorted(maps.Keys(rec)) {
			if s, ok := rec[k].(string); ok && len(s) > 2 {
				looked = append(looked, strings.ToLower(s))
			}
		}
	}
	out := map[string]json.RawMessage{}
	for _, f := range p.m.fields {
		// A computed value follows what it was computed from (a date of birth the caller
		// corrected moves the coverage date with it).
		if p.computed[f.Name] {
			if v, ok := p.computedValue(f, sentences, looked); ok && string(jsonValue(v.value)) != string(jsonValue(p.values[f.Name].value)) {
				p.values[f.Name] = v
				out[f.Name] = jsonValue(v.value)
			}
			continue
		}
		if p.filled(f.Name) {
			continue
		}
		// "… ; record <field>: <value>" reads with the whole sentence before it.
		for _, t := range p.kbTexts {
			for _, s := range strings.Split(t, ". ") {
				low := " " + strings.ToLower(s) + " "
				for _, l := range looked {
					if strings.Contains(low, l) {
						if v, ok := p.recordInstruction(f, low); ok && !p.filled(f.Name) {
							p.values[f.Name] = v
							out[f.Name] = jsonValue(v.value)
						}
					}
				}
			}
		}
		if p.filled(f.Name) {
			continue
		}
		if v, ok := p.computedValue(f, sentences, looked); ok {
			p.values[f.Name] = v
			p.computed[f.Name] = true
			out[f.Name] = jsonValue(v.value)
			continue
		}
		for _, s := range sentences {
			low := " " + strings.ToLower(s) + " "
			if movesTo.MatchString(low) {
				continue // a rule of what a case becomes: computedValue read it, for the case on file only
			}
			words := strings.FieldsFunc(low, func(r rune) bool { return !(r >= 'a' && r <= 'z') })
			about := false
			for _, k := range f.keywords {
				for _, w := range words {
					about = about || stem(w) == k
				}
			}
			named := false
			for _, l := range looked {
				named = named || strings.Contains(low, l)
			}
			// "HMO and POS plans require a referral …; record referral required: yes": the
			// knowledge says what to record for the case a lookup returned.
			if named {
				if v, ok := p.recordInstruction(f, low); ok {
					p.values[f.Name] = v
					out[f.Name] = jsonValue(v.value)
					break
				}
			}
			if v, ok := p.knowledgeValue(f, s, low, named); ok {
				p.values[f.Name] = v
				out[f.Name] = jsonValue(v.value)
				break
			}
			if !about && !(named && f.Kind == kindChoice) {
				continue
			}
			var v *fieldValue
			switch f.Kind {
			case kindChoice:
				if dollars.MatchString(s) {
					break // "Employee only $48.12; …" lists prices of options, it chooses none
				}
				var found []string
				for _, l := range looked {
					// "Employee + Spouse $131.40" names the tier on file, not a relationship.
					low = strings.ReplaceAll(low, l, " ")
				}
				if p.kbNamed(f) {
					// "read-only access" is read, for the access the instructions say the
					// knowledge decides (not the one the caller asks for).
					low = strings.ReplaceAll(low, "-only ", " ")
				}
				for _, e := range f.Enum {
					if strings.Contains(low, " "+strings.Join(nameWords(e), " ")+" ") || strings.Contains(low, " "+strings.Join(nameWords(e), " ")+".") {
						found = append(found, e)
					}
				}
				if len(found) == 1 {
					v = &fieldValue{field: f, value: found[0], spoken: strings.Join(nameWords(found[0]), " ")}
				}
			case kindNumber:
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

var (
	perPeriod = regexp.MustCompile(`\$\s?([0-9][0-9,]*(?:\.[0-9]+)?) for (?:every|each) (full )?([0-9]+) (hour|day)s? between (?:the )?(.+?) and (?:the )?(.+?)(?:,|$)`)
	upTo      = regexp.MustCompile(`up to \$\s?([0-9][0-9,]*(?:\.[0-9]+)?)`)
)

// ratedAmount reads an amount the policy gives as a rate over the time between two moments the
// lookups returned ("Meal vouchers: $12 for every full 4 hours between the original scheduled
// departure and the new departure, up to $48"): whole periods (or started ones without "full")
// times the rate, capped. The moments are the lookup values whose names share the most words with
// each phrase; a phrase nothing matches, or a value that is no time, reads nothing.
func (p *policy) ratedAmount(f *field, low string) (fieldValue, bool) {
	if !strings.Contains(low, " "+strings.Join(nameWords(f.Name), " ")) {
		return fieldValue{}, false
	}
	m := perPeriod.FindStringSubmatch(strings.TrimSpace(strings.TrimRight(strings.TrimSpace(low), ".")))
	if m == nil {
		return fieldValue{}, false
	}
	rate, ok1 := canon.Number(m[1])
	n, err := strconv.Atoi(m[3])
	if !ok1 || err != nil || n <= 0 {
		return fieldValue{}, false
	}
	period := time.Duration(n) * time.Hour
	if m[4] == "day" {
		period *= 24
	}
	from, key := p.lookedUpTime(m[5], "")
	to, _ := p.lookedUpTime(m[6], key)
	if from.IsZero() || to.IsZero() || !to.After(from) {
		return fieldValue{}, false
	}
	periods := float64(to.Sub(from) / period)
	if m[2] == "" && to.Sub(from)%period != 0 {
		periods++
	}
	amount := rate * periods
	if c := upTo.FindStringSubmatch(low); c != nil {
		if limit, ok := canon.Number(c[1]); ok {
			amount = min(amount, limit)
		}
	}
	return amountValue(f, strconv.FormatFloat(amount, 'f', -1, 64), amount), true
}

// amountValue is an amount for field f: the number where the field's schema takes one, else the
// text.
func amountValue(f *field, text string, n float64) fieldValue {
	var val any = text
	if slices.Contains(f.JSONTypes, "number") || slices.Contains(f.JSONTypes, "integer") {
		val = n
	}
	return fieldValue{field: f, value: val, spoken: spokenNumber(f, n)}
}

// lookedUpTime finds the time value a lookup returned under the name closest to phrase ("original
// scheduled departure" → scheduled_departure), other than the key skip.
func (p *policy) lookedUpTime(phrase, skip string) (time.Time, string) {
	var best time.Time
	bestKey, bestScore := "", 0
	for _, rec := range p.lookups {
		for _, k := range slices.Sorted(maps.Keys(rec)) {
			s, ok := rec[k].(string)
			if !ok || k == skip {
				continue
			}
			t, ok := lookedTime(s)
			if !ok {
				continue
			}
			score := 0
			for _, w := range strings.Fields(phrase) {
				for _, kw := range nameWords(k) {
					if a, b := stem(w), stem(kw); len(a) >= 5 && len(b) >= 5 && a[:5] == b[:5] {
						score++
					}
				}
			}
			if score > bestScore {
				best, bestKey, bestScore = t, k, score
			}
		}
	}
	return best, bestKey
}

func lookedTime(s string) (time.Time, bool) {
	for _, layout := range []string{"2006-01-02 15:04", "2006-01-02T15:04", time.RFC3339, "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, strings.TrimSpace(s)); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
