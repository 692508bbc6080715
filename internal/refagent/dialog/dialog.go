// Package dialog is the reference agent's side of a call as text in, text out: the form it
// derives from the session's instructions and tool definitions alone (which tool records,
// verifies, looks up, marks ready, asks for approval or commits; which fields exist and how to ask
// for them), the understanding of a recognized caller turn against the question asked, and the
// deterministic slot-filling policy that decides each response (speak, or call tools). It hears
// no audio: the audio responder in internal/refagent recognizes speech, passes the transcripts
// in and speaks what comes out.
package dialog

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/voicebench/humanaudit/internal/asr"
	"github.com/voicebench/humanaudit/internal/canon"
)

// Tool is a function the session offers the agent, as the protocol defines it.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // a JSON schema; its property order is the order fields are asked in
}

// Config configures a Dialog.
type Config struct {
	// Now is the wall clock: dates said without a year are resolved against it. Default time.Now.
	Now func() time.Time
	// Known reports whether the recognizer can put a word in a grammar (a question's grammar only
	// uses words it knows); nil knows every word.
	Known func(word string) bool
	// Homophones are the recognizer's other spellings of a word's pronunciation ("vazquez" for
	// "vasquez"): an e-mail address heard with one is read back with the others once the caller
	// refused it. Nil knows none.
	Homophones func(word string) []string
}

// Dialog is the agent's state in one call. It is not safe for concurrent use; the Question it
// hands out is, so that turns can be understood while the dialog moves on.
type Dialog struct {
	l listener
	m *model
	p *policy
}

// New starts a call with an empty session (no instructions, no tools).
func New(cfg Config) *Dialog {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	d := &Dialog{l: listener{vocab: cfg.Known, homophones: cfg.Homophones, now: cfg.Now}}
	d.Configure("", nil)
	return d
}

// Configure takes the session's instructions and tools (a session update mid-call); what the
// agent has learned stays.
func (d *Dialog) Configure(instructions string, tools []Tool) {
	infos := make([]toolInfo, len(tools))
	for i, t := range tools {
		infos[i] = parseTool(t.Name, t.Description, t.Parameters)
	}
	d.m = newModel(instructions, infos)
	if d.p == nil {
		d.p = newPolicy(d.m)
		d.p.now = d.l.now
	} else {
		d.p.setModel(d.m)
	}
}

// Question is what the agent asked last, with the form of the moment: a caller turn that begins
// now is read against it, however the dialog moves on meanwhile.
func (d *Dialog) Question() Question {
	q := Question{l: &d.l, m: d.m, exp: d.p.exp, names: d.p.wantsNames(), address: d.p.wantsAddress()}
	if q.address {
		q.streetBefore = d.p.streetBefore(q.exp.field.Name)
	}
	return q
}

// Heard applies one understood caller turn.
func (d *Dialog) Heard(h Heard) { d.p.heard(h.h) }

// ToolResult takes the output of one of the agent's calls.
func (d *Dialog) ToolResult(name, output string) { d.p.toolResult(name, output) }

// Truncated notes that the caller cut the agent's last utterance short.
func (d *Dialog) Truncated() { d.p.truncated() }

// Next decides the agent's next response.
func (d *Dialog) Next() Action {
	a := d.p.next()
	out := Action{Say: a.say}
	for _, c := range a.calls {
		out.Calls = append(out.Calls, Call{Name: c.name, Args: c.args})
	}
	return out
}

// Action is what the agent does in one response: speak, or call tools (never both: the client
// asks for a follow-up response once the tool outputs are in).
type Action struct {
	Say   string
	Calls []Call
}

// Call is a function call the agent makes; Args is a JSON object.
type Call struct {
	Name string
	Args json.RawMessage
}

// Utterance is one recognized caller turn.
type Utterance struct {
	// Open is the open-vocabulary transcript with word timings.
	Open asr.Result
	// Readings are the turn decoded with each grammar of Question.Grammars, whole.
	Readings []Reading
	// Spoken says the turn was audio (its readings' scores compare; a typed turn's do not).
	Spoken bool
	// Reread decodes the turn's speech from the given time on with another grammar (to read a
	// value after a preamble: "my callback number is actually …"); false when too little speech
	// follows. Nil for a turn that was not spoken.
	Reread func(ctx context.Context, from time.Duration, slot asr.Slot) (asr.Answer, bool)
	// Names is the turn read with the names directory (asr.RecognizeNames), when WantsNames;
	// nil otherwise.
	Names *asr.Result
	// Mail is the turn read with the e-mail directory (asr.RecognizeMail), when WantsMail; nil
	// otherwise.
	Mail *asr.Result
}

// Reading is a caller turn decoded with one grammar.
type Reading struct {
	Slot   asr.Slot
	Answer asr.Answer
}

// reading returns the turn's reading with a grammar of kind k, or nil.
func (u Utterance) reading(k asr.Kind) *Reading {
	for i := range u.Readings {
		if u.Readings[i].Slot.Kind == k {
			return &u.Readings[i]
		}
	}
	return nil
}

// Question is a snapshot of what the agent asked (see Dialog.Question).
type Question struct {
	l       *listener
	m       *model
	exp     expectation
	names   bool // WantsNames
	address bool // policy.wantsAddress
	// streetBefore are the street words of the address's readings in the round before (the
	// caller asked again after the verify tool refused them).
	streetBefore []string
}

// Slot is the grammar of the question's own answer, or nil when the answer is free text.
func (q Question) Slot() *asr.Slot {
	switch {
	case (q.exp.kind == expectField || q.exp.kind == expectConfirm) && q.exp.field != nil:
		return q.exp.field.slot(q.l.known)
	case q.exp.kind == expectApproval || q.exp.kind == expectAnythingElse:
		return &asr.Slot{Kind: asr.KindYesNo}
	}
	return nil
}

// WantsNames reports a turn whose reading with the names directory may be used
// (policy.wantsNames).
func (q Question) WantsNames() bool { return q.names }

// WantsMail reports a turn that answers an e-mail address asked or read back, which is read with
// the e-mail directory: the open vocabulary never hears "dot" and "at" among names ("t dot
// marchetti at outlook dot example" is "to dock market t about looked off example").
func (q Question) WantsMail() bool {
	return q.exp.field != nil && q.exp.field.Kind == kindEmail && (q.exp.kind == expectField || q.exp.kind == expectConfirm)
}

// NamesAhead reports a turn expected to be a name (the name asked), whose directory reading is
// best decoded alongside the grammars. Any other turn that WantsNames (a name's read-back
// answered, mostly "yes") is read with the directory only once it is understood to give the
// name (NeedsNames): the directory's decode of a long turn takes seconds, which the caller waits.
func (q Question) NamesAhead() bool { return q.names && q.exp.kind == expectField }

// NeedsNames reports an understood turn that gives the name the question is about a value, which
// its reading with the names directory can change.
func (q Question) NeedsNames(h Heard) bool {
	return q.names && slices.ContainsFunc(h.h.values, func(v fieldValue) bool { return v.field == q.exp.field })
}

// AddressReread is how to read the address an understood turn gives the field asked again, when
// a verify or lookup tool takes it: the address grammar of the words heard from its house number
// on and of the street words heard for it the round before (asr.KindAddress: a caller saying an
// address again says the same street, however it was heard), decoded over the whole turn. Not
// from a word's time on: word times are not offsets into the audio (see asr.Word), and a cut at
// one fell inside "fourteen" in real-time calls. False for any other turn.
func (q Question) AddressReread(h Heard, open asr.Result) (asr.Slot, bool) {
	if !q.address || !h.h.spoken || !slices.ContainsFunc(h.h.values, func(v fieldValue) bool { return v.field == q.exp.field }) {
		return asr.Slot{}, false
	}
	ws := zeroForOr(open).Words
	start := addressStart(ws)
	if start < 0 {
		return asr.Slot{}, false
	}
	return asr.Slot{Kind: asr.KindAddress, Words: wordTexts(ws[start:]), Street: q.streetBefore}, true
}

// WithAddressReading adds the address grammar's reading of the turn (see AddressReread) to the
// address's other readings, first: its street line alone (what the grammar reads best, and what
// an agent keys to find a record), then the whole reading, whose city may hold a stray word of
// the turn ("… Unit 3B You Eugene"). These are what a verify or lookup tool is tried with when it
// finds no record for the address as first heard.
func (q Question) WithAddressReading(h Heard, ans asr.Answer) Heard {
	if !ans.OK {
		return h
	}
	var ws []asr.Word
	for i, w := range strings.Fields(ans.Value.Text) {
		at := time.Duration(i) * 300 * time.Millisecond
		ws = append(ws, asr.Word{Text: w, Start: at, End: at + 250*time.Millisecond})
	}
	read := addressText(ws)
	h.h.values = slices.Clone(h.h.values)
	for i, v := range h.h.values {
		if v.field != q.exp.field {
			continue
		}
		var first []fieldValue
		for _, s := range []string{streetLine(read), read} {
			if a := (fieldValue{field: v.field, value: s, spoken: s}); s != "" && s != v.value && !hasAlt(first, a) && !hasAlt(v.alts, a) {
				first = append(first, a)
			}
		}
		h.h.values[i].alts = append(first, v.alts...)
	}
	return h
}

// Grammars are the grammars a spoken answer to the question is decoded with, whole, besides the
// open vocabulary: the asked field's (with the spelling grammar for a name), those of the other
// fields still open and of those filled (an answer given early or late, a correction), yes/no when
// a read-back or an approval is pending, and the filler grammar. open is the turn's
// open-vocabulary transcript: a grammar whose type of word it does not hold at all (no number
// word for a date or a code) is not worth decoding, since its reading would be refused anyway.
func (q Question) Grammars(open asr.Result) []asr.Slot {
	words := strings.Fields(strings.ToLower(open.Text))
	var out []asr.Slot
	seen := map[string]bool{}
	add := func(s *asr.Slot, always bool) {
		if s == nil {
			return
		}
		if !always && !plausible(kindOfSlot(s.Kind), words) {
			return
		}
		if k := s.Grammar().JSGF; !seen[k] {
			seen[k] = true
			out = append(out, *s)
		}
	}
	e := q.exp
	if (e.kind == expectField || e.kind == expectConfirm) && e.field != nil {
		s := e.field.slot(q.l.known)
		if s != nil {
			s.Alternatives = alternativesFor(s.Kind)
		}
		// Even the asked field's reading is refused when no word of its type was heard ("No."
		// to a read-back), unless the caller was asked to spell it.
		add(s, e.spell)
		if s != nil && s.Kind == asr.KindChoice && e.kind == expectField {
			// The choice said among words of the caller's own ("aisle if you've got it").
			add(&asr.Slot{Kind: asr.KindChoiceInContext, Choices: s.Choices}, true)
		}
		if spellable(e.field) {
			add(&asr.Slot{Kind: asr.KindSpelling, Words: q.l.knownWords(words)}, true)
		}
		if weekdayList(e.field) && e.kind == expectField {
			// The days found by their sound among the caller's words ("only Tuesdays or
			// Thursdays, I'm afraid" was "i'll meet his bizarre thursday's").
			add(&asr.Slot{Kind: asr.KindChoiceInContext, Choices: q.l.weekdayPhrases(), Several: true}, true)
		}
	}
	if e.kind == expectConfirm || e.kind == expectApproval || e.kind == expectAnythingElse {
		add(&asr.Slot{Kind: asr.KindYesNo}, true)
	}
	for _, fs := range [][]*field{e.open, e.filled} {
		for _, f := range fs {
			if f.Kind == kindYesNo || f.Kind == kindChoice {
				continue
			}
			if s := f.slot(q.l.known); s != nil {
				unasked(s)
				if unaskedRefused(s, words) && !(freeTextAsked(e, q.l) && codeAfterPreamble(s, words)) {
					continue
				}
				add(s, false)
			}
		}
	}
	if len(words) <= 4 {
		add(&asr.Slot{Kind: asr.KindFiller}, true)
	}
	return out
}

// unaskedRefused reports a grammar of a field not asked whose reading the understanding would
// refuse whatever the decoder returned, from the open transcript alone (see candidates): the
// grammar would be forced, or the transcript has words outside it. Such a grammar is not worth
// decoding: on a loaded machine every decode is time the caller waits.
func unaskedRefused(s *asr.Slot, words []string) bool {
	if s.Kind != asr.KindIdentifier && s.Kind != asr.KindYesNo && forced(s, words) {
		return true
	}
	o := outsideGrammar(s, words)
	return o > 1 || (o == 1 && len(words) < 6)
}

// alternativesFor is how many n-best values are kept for a kind: codes and dates, which a failed
// verification retries.
func alternativesFor(k asr.Kind) int {
	switch k {
	case asr.KindIdentifier, asr.KindDigits, asr.KindDate:
		return 3
	}
	return 0
}

// weekdayList reports a list field whose items are days of the week ("preferred_days").
func weekdayList(f *field) bool {
	if f == nil || f.Kind != kindList {
		return false
	}
	ws := nameWords(f.Name)
	return slices.Contains(ws, "days") || slices.Contains(ws, "weekdays")
}

// weekdayPhrases are the days as a grammar says them, one and many ("tuesday", "tuesdays"), the
// plural where the dictionary has it.
func (l *listener) weekdayPhrases() []string {
	var out []string
	for _, d := range weekdays {
		out = append(out, d)
		if l.known(d + "s") {
			out = append(out, d+"s")
		}
	}
	return out
}

// spellable reports a field whose answer callers spell: names and e-mail addresses.
func spellable(f *field) bool { return f.Kind == kindName || f.Kind == kindEmail }

// knownWords are the words of a transcript a grammar can use.
func (l *listener) knownWords(words []string) []string {
	var out []string
	for _, w := range words {
		if len(w) > 1 && l.known(w) {
			out = append(out, w)
		}
	}
	return out
}

// Understand reads a recognized turn against the question.
func (q Question) Understand(ctx context.Context, u Utterance) Heard {
	h := q.l.onRecord(q.exp, q.l.understand(ctx, q.m, q.exp, u), u)
	return Heard{inOrder(q.m, q.exp, h, strings.Fields(strings.ToLower(u.Open.Text)))}
}

// UnderstandText reads a typed turn (a user message with text) against the question: its words
// stand for the open transcript (a comma or full stop as a pause), and each of the question's
// grammars parses them.
func (q Question) UnderstandText(ctx context.Context, text string) Heard {
	var ws []asr.Word
	at := time.Duration(0)
	for _, tok := range strings.Fields(strings.ToLower(text)) {
		w := strings.Trim(tok, ",.?!;:\"")
		// "twenty-one" is said as two words, as a recognizer writes it; "Nakamura-Obi" is one.
		parts := []string{w}
		if ps := strings.Split(w, "-"); len(ps) > 1 && !slices.ContainsFunc(ps, func(p string) bool { return !canon.IsNumberWord(p) }) {
			parts = ps
		}
		for _, w := range parts {
			if w != "" {
				ws = append(ws, asr.Word{Text: w, Start: at, End: at + 250*time.Millisecond})
				at += 260 * time.Millisecond
			}
		}
		if strings.ContainsAny(tok[len(tok)-1:], ",.?!;:") {
			at += 400 * time.Millisecond // punctuation is where a speaker pauses
		}
	}
	u := Utterance{Open: asr.Result{Words: ws}}
	u.Open.Text = joinWords(ws)
	for _, s := range q.Grammars(u.Open) {
		ans := asr.Answer{Result: u.Open}
		ans.Value, ans.OK = s.Parse(u.Open.Text)
		u.Readings = append(u.Readings, Reading{Slot: s, Answer: ans})
	}
	return q.Understand(ctx, u)
}

// Heard is what the agent understood of one caller turn.
type Heard struct{ h heard }

// Transcript is what the recognizer heard: the caller's transcript.
func (h Heard) Transcript() string { return h.h.transcript }

// Intent names what the turn does (answer, correction, yes, …), for logs.
func (h Heard) Intent() string { return h.h.intent.String() }

// Why says how the turn was read: the slot its grammars chose and the score, or why none was.
func (h Heard) Why() string { return h.h.why }

// Fields are the values the turn gave, by field name (for logs and tests).
func (h Heard) Fields() map[string]any {
	out := map[string]any{}
	for _, v := range h.h.values {
		out[v.field.Name] = v.value
	}
	return out
}
