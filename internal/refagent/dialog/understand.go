package dialog

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/voicebench/humanaudit/internal/asr"
	"github.com/voicebench/humanaudit/internal/canon"
)

// expectKind is what the agent's last question asked for.
type expectKind int

const (
	expectOpen         expectKind = iota // the caller's opening
	expectField                          // a field's value
	expectApproval                       // yes or no to an approval question
	expectAnythingElse                   // "is there anything else?"
	expectConfirm                        // yes or no to a read-back of a value ("That's P, A, two, …?")
)

// expectation is what the agent asked last; the caller's next turn is read against it.
type expectation struct {
	kind  expectKind
	field *field      // the field asked for, or the one read back (expectConfirm)
	value *fieldValue // the value read back (expectConfirm)
	spell bool        // the caller was asked to spell the value
	last2 bool        // the agent said it is about to act on an approval (a last chance to object)
	last  *field      // the field recorded last, which an unplaced correction is taken to be about
	// open and filled are the form's fields when the question was asked: an answer may belong to
	// any open field (given early or late) or correct a filled one; values are the filled ones'.
	open, filled []*field
	values       map[string]any
	// codes are the references the lookups so far returned ("CHK-4471", "ACH-0925-7781"): a code
	// the caller reads from the same papers is one of them.
	codes []string
}

// intent is what a caller turn does.
type intent int

const (
	intentNone        intent = iota // nothing recognized
	intentAnswer                    // gives the asked field's value
	intentUnknown                   // "I don't have that"
	intentCorrection                // changes a value given before
	intentVolunteer                 // offers a value unasked
	intentYes                       // agrees (approval, "that's right")
	intentNo                        // declines, or says there is nothing else
	intentClose                     // says goodbye
	intentRepeat                    // asks the agent to repeat or slow down
	intentOther                     // said something the agent does not understand
	intentAcknowledge               // only "okay": the caller did not take the question as one
	intentUnplaced                  // a correction of something the agent cannot place
)

func (i intent) String() string {
	return [...]string{"none", "answer", "unknown", "correction", "volunteer", "yes", "no", "close", "repeat", "other",
		"acknowledge", "unplaced"}[i]
}

// fieldValue is a value the caller gave for a field.
type fieldValue struct {
	field  *field
	value  any    // JSON value to record
	spoken string // how the agent reads it back
	// alts are other values the recognizer's n-best readings gave (tried when verification
	// fails), best first.
	alts []fieldValue
	// unsure says the recognizer's readings of the turn disagree (the grammar's and the open
	// vocabulary's): the value is read back for a yes or no.
	unsure bool
	// spelled are the parts of a name the caller spelled.
	spelled []string
	// yearless says a date was said without its year (the listener supplied one): a correction
	// of a date keeps the year of the value it corrects.
	yearless bool
	// directory says the value was read with the names directory (Utterance.Names): the reading
	// a name the caller refused is looked up in.
	directory bool
}

// heard is the agent's understanding of one caller turn.
type heard struct {
	transcript string // what the recognizer heard (sent as the caller's transcript)
	intent     intent
	values     []fieldValue
	// why says how the turn was read (the slot chosen and its score, or why none was): for logs.
	why string
	// spoken says the turn was audio (a typed turn needs no read-back).
	spoken bool
}

// Marker phrases, matched on word boundaries in the open-vocabulary transcript.
var (
	unknownMarkers    = []string{"don't have", "do not have", "don't know", "do not know", "not sure", "no idea", "can't remember", "don't remember"}
	correctionMarkers = []string{"correction", "to correct", "correct something", "correct that", "actually", "mistake", "wrong", "misread",
		"misspoke", "i meant", "oh wait", "wait sorry", "just checked", "double checked", "scratch that", "not what i said", "change",
		"flipped", "changes too", "changed", "need to fix", "let me fix", "have to fix", "fix that", "make it", "cut you off"}
	// selfRepairs mark an answer the caller repaired as they gave it.
	selfRepairs      = []string{"i mean", "sorry", "rather", "no wait"}
	volunteerMarkers = []string{"came up", "by the way", "also", "oh and", "just got", "texted", "forgot to mention", "one more thing", "quick thing",
		"just sent", "buzzed"}
	closeMarkers = []string{"bye", "goodbye", "that's everything", "that is everything", "that's all", "nothing else", "that's it",
		"have a good day", "have a nice day", "have a great day", "take care"}
	repeatMarkers = []string{"slow down", "repeat", "say that again", "say it again", "pardon", "come again",
		"didn't hear", "didn't catch", "what was the question", "you cut out", "you broke up"}
	// cutMarkers end the preamble of a correction ("… is actually <value>").
	cutMarkers = map[string]bool{"actually": true, "is": true, "it's": true, "now": true, "was": true, "be": true, "to": true}
)

// correcting reports a turn that corrects something: it holds a correction marker, other than an
// "actually" that ends it ("Twin Cities Rooter. Nice guy, actually." answers the question asked).
func correcting(text string) bool {
	return containsPhrase(strings.TrimSuffix(strings.TrimSpace(text), " actually"), correctionMarkers)
}

func containsPhrase(text string, phrases []string) bool {
	t := " " + text + " "
	for _, p := range phrases {
		if strings.Contains(t, " "+p+" ") || strings.Contains(t, " "+p+"s ") || strings.Contains(t, " "+p+"ed ") || strings.Contains(t, " "+p+"ing ") {
			return true
		}
	}
	return false
}

// Withdrawals of an approval: a "don't" with the action's verb, and the phrases callers put off
// a decision with ("hold off", "run it by my partner").
var (
	withdrawPhrases = [][]string{{"hold", "off"}, {"not", "yet"}, {"never", "mind"}, {"take", "it", "back"},
		{"check", "with"}, {"run", "it", "by"}, {"talk", "to", "my"}, {"for", "now"}, {"after", "all"}, {"let's", "not"}}
	withdrawVerbs = map[string]bool{"do": true, "set": true, "cancel": true, "move": true, "change": true, "send": true,
		"go": true, "schedule": true, "extend": true, "submit": true, "file": true, "book": true, "process": true,
		"charge": true, "make": true, "put": true, "it": true, "that": true}
	yesPhrases = [][]string{{"yes"}, {"yeah"}, {"yep"}, {"sure"}, {"okay"}, {"fine"}, {"go", "ahead"}, {"do", "it"},
		{"set", "it", "up"}, {"please", "do"}}
)

// withdraws reports a turn whose last word on the approval takes it back: a withdrawal said
// after any yes ("yes, set it up … actually, hold off"), not one a yes follows.
func withdraws(words []string) bool {
	at := func(i int, p []string) bool {
		return i+len(p) <= len(words) && slices.Equal(words[i:i+len(p)], p)
	}
	lastYes, lastNo := -1, -1
	for i := range words {
		negated := i > 0 && (words[i-1] == "don't" || words[i-1] == "not") || i > 1 && words[i-2] == "don't"
		for _, p := range yesPhrases {
			if at(i, p) && !negated {
				lastYes = i
			}
		}
		for _, p := range withdrawPhrases {
			if at(i, p) {
				lastNo = i
			}
		}
		if (words[i] == "don't" || at(i, []string{"do", "not"})) && i+1 < len(words) {
			next := words[i+1]
			if next == "not" && i+2 < len(words) {
				next = words[i+2]
			}
			if withdrawVerbs[next] {
				lastNo = i
			}
		}
	}
	return lastNo > lastYes
}

// newsOpeners begin a turn that brings news of something else. Said while a name was asked ("just
// so you know, the thermostat says fifty-seven degrees inside"), it is no name: the name reader
// took "Know" from it.
var newsOpeners = []string{"just so you know", "so you know", "by the way", "oh and", "one more thing", "quick thing", "heads up", "fyi"}

// opensWith reports a text that begins with one of phrases, or does after the fillers callers
// start with ("um, by the way").
func opensWith(text string, phrases []string) bool {
	ws := strings.Fields(strings.ToLower(text))
	for {
		t := strings.Join(ws, " ") + " "
		for _, p := range phrases {
			if strings.HasPrefix(t, p+" ") {
				return true
			}
		}
		if len(ws) == 0 || !leadFillers[ws[0]] {
			return false
		}
		ws = ws[1:]
	}
}

// affirmWords say yes.
var affirmWords = map[string]bool{"yes": true, "yeah": true, "yep": true, "yup": true, "correct": true, "right": true}

// closeTail is how many words may follow a goodbye in the same turn ("that's everything, thanks
// for the help, bye"); more, and the marker was a word of something else: the recognizer's "bye"
// in a misheard spelled name, with the caller's request still to come.
const closeTail = 6

// saysGoodbye reports a turn that ends the call: a close marker followed by at most closeTail
// words ("that's it" after a yes confirms instead).
func saysGoodbye(text string) bool {
	ws := strings.Fields(text)
	for _, p := range closeMarkers {
		pw := strings.Fields(p)
		for i := 0; i+len(pw) <= len(ws); i++ {
			last := ws[i+len(pw)-1]
			if !slices.Equal(ws[i:i+len(pw)-1], pw[:len(pw)-1]) {
				continue
			}
			stem := pw[len(pw)-1]
			if last != stem && last != stem+"s" && last != stem+"ed" && last != stem+"ing" {
				continue
			}
			if (p == "that's it" || p == "that's all") && i > 0 && affirmWords[ws[i-1]] {
				continue // "yes, that's it": a read-back confirmed
			}
			if p == "bye" && i > 0 && isLetter(ws[i-1]) {
				continue // "… d i c k bye": the last letter of a spelling (I), misheard
			}
			if len(ws)-(i+len(pw)) <= closeTail {
				return true
			}
		}
	}
	return false
}

// listener reads what the agent understood from a recognized caller turn, with the agent's model.
type listener struct {
	vocab      func(string) bool     // the recognizer's vocabulary; nil knows every word
	homophones func(string) []string // Config.Homophones; nil knows none
	now        func() time.Time
}

// known reports whether a word can be used in a grammar.
func (l *listener) known(w string) bool { return l.vocab == nil || l.vocab(w) }

// understand interprets a recognized turn. Text-only turns (conversation items with input_text)
// come here too, with the text as the open-vocabulary result and readings parsed from it.
func (l *listener) understand(ctx context.Context, m *model, exp expectation, u Utterance) heard {
	if u.Spoken {
		u.Open = emailForAMale(fourForFor(zeroForOr(u.Open)))
	}
	lm := u.Open
	text := strings.ToLower(strings.TrimSpace(lm.Text))
	h := heard{transcript: lm.Text, spoken: u.Spoken}
	cands, why := l.candidates(m, exp, u)
	h.why = why
	if text == "" && len(cands) == 0 {
		return h
	}
	words := strings.Fields(text)
	correction := correcting(text)
	volunteer := containsPhrase(text, volunteerMarkers)
	cands = preferNamed(cands, m.mentioned(words, m.allFields()))

	if exp.kind == expectConfirm && exp.field != nil && goesOn(words) && !correction {
		// "And the pharmacy number. Nine five two …" after the prescription number was read
		// back: the caller goes on to the next detail, which the code grammar forced into a
		// code ("FRC9525550163"); that is no repair of the read-back, which stands.
		if _, said := asr.Polarity(text); !said {
			cands = slices.DeleteFunc(cands, func(c candidate) bool {
				return c.f == exp.field && exp.value != nil && string(jsonValue(c.v.value)) != string(jsonValue(exp.value.value))
			})
		}
	}
	if exp.kind == expectConfirm && exp.field != nil {
		if done, ok := l.confirmation(exp, text, cands, &h); ok {
			return done
		}
	}
	if exp.kind == expectApproval && withdraws(words) {
		// "Yeah, fine, go ahead. Actually, wait, hold off": the approval taken back in the turn
		// that gave it is none. Read as a correction, "partner first" set the count to one.
		h.intent = intentNo
		h.why = withNote(h.why, "approval withdrawn in the same turn")
		return h
	}
	if correction {
		if v, ok := l.countCorrection(m, exp, text); ok && !(exp.kind == expectField && v.field == exp.field) {
			h.values, h.intent = []fieldValue{v}, intentCorrection
			h.why = withNote(h.why, "a count of things said")
			return h
		}
	}
	if v, ok := listAddition(m, exp, lm.Words); ok {
		h.values, h.intent = []fieldValue{v}, intentCorrection
		h.why = withNote(h.why, "an item added to "+v.field.Name)
		return h
	}
	// Days of the week found by their sound come before the open vocabulary's words for them.
	if f := exp.field; exp.kind == expectField && weekdayList(f) && !correction {
		if r := u.reading(asr.KindChoiceInContext); r != nil && r.Answer.OK && r.Slot.Several {
			days := daysIn(strings.Split(r.Answer.Value.Text, ", "))
			// The open vocabulary's days, when it heard as many ("tuesday or thursday works"
			// where the grammar found only Thursday).
			if open := daysIn(asr.MatchChoices(words, r.Slot.Choices)); len(open) >= len(days) {
				days = open
			}
			if len(days) > 0 {
				h.values, h.intent = []fieldValue{{field: f, value: days, spoken: strings.Join(days, ", ")}}, intentAnswer
				h.why = "days in context: " + r.Answer.Text
				return h
			}
		}
	}
	// An enumeration or yes/no question is answered in the caller's words ("No, I don't need
	// one, English is fine"): read them first, before a grammar of a few words forces the reply
	// into one of them.
	if f := exp.field; exp.kind == expectField && f != nil && (f.Kind == kindChoice || f.Kind == kindYesNo) && !correction {
		// The choice found by its sound among the caller's words comes first: the open
		// vocabulary mishears the choice itself ("i will" for aisle, "those" for both). The
		// grammar holds one choice, though: when the caller repaired their answer ("read, sorry,
		// I mean read and write"), the open transcript's reading of the whole is preferred.
		var spotted *fieldValue
		inContext := u.reading(asr.KindChoiceInContext)
		if inContext != nil && inContext.Answer.OK && f.Kind == kindChoice {
			if v, ok := l.fieldValue(f, inContext.Answer.Value); ok {
				spotted = &v
			}
		}
		if spotted != nil && !containsPhrase(text, selfRepairs) {
			h.values, h.intent = []fieldValue{*spotted}, intentAnswer
			h.why = "choice in context: " + inContext.Answer.Text
			return h
		}
		if v, ok := l.freeValue(f, lm.Words, text, u); ok {
			h.values, h.intent = []fieldValue{v}, intentAnswer
			return h
		}
		if spotted != nil {
			h.values, h.intent = []fieldValue{*spotted}, intentAnswer
			return h
		}
		if f.Kind == kindChoice && !exp.spell {
			if c, ok := partialChoice(words, f.Enum); ok {
				// "The plumber said the supply line under the upstairs toilet burst": of the
				// choices, only plumbing leak shares a word with the answer. Read back, as a guess.
				h.values, h.intent = []fieldValue{{field: f, value: c, spoken: strings.Join(nameWords(c), " "), unsure: true}}, intentAnswer
				h.why = "choice by a word it shares with the answer"
				return h
			}
		}
		var rest []candidate
		for _, c := range cands {
			if c.f != f {
				rest = append(rest, c)
			}
		}
		cands = rest
	}
	// A turn that names another field and gives its value ("the referral number is R F …") is
	// news about that field.
	if !correction && !volunteer && namesOther(m, exp, text) {
		volunteer = true
	}

	// A value of the type of some other field than the one asked, given early or late, or a
	// correction of one given before: the slot grammars chose it by score.
	if len(cands) > 0 {
		c := cands[0]
		asked := exp.kind == expectField && c.f == exp.field
		switch {
		case asked && !correction:
			h.values, h.intent = []fieldValue{c.v}, intentAnswer
			return h
		case asked || containsField(exp.filled, c.f):
			h.values, h.intent = []fieldValue{c.v}, intentCorrection
			if asked {
				h.intent = intentAnswer
			}
			return h
		case exp.kind != expectApproval:
			h.values, h.intent = []fieldValue{c.v}, intentVolunteer
			if correction {
				h.intent = intentCorrection
			}
			return h
		}
	}

	// A correction or unsolicited news about another field than the one asked, read after its
	// preamble.
	if correction || volunteer {
		named := m.mentioned(words, m.allFields())
		targets := l.targets(m, named, exp.last, exp.filled, correction, lm)
		for _, target := range targets {
			if exp.kind == expectField && target == exp.field && !correction {
				continue
			}
			v, ok := l.valueAfterPreamble(ctx, target, u)
			if ok && correction && target != exp.field && exp.values != nil && exp.values[target.Name] != nil &&
				string(jsonValue(exp.values[target.Name])) == string(jsonValue(v.value)) && !slices.Contains(named, target) {
				// A correction of a field the caller did not name that changes nothing is none:
				// "yeah, Twin Cities Rooter, nice guy, actually" to the plumber's name is no yes for
				// the water shut-off (recorded last) again. One that names its field is told the
				// value is on record (TestRestatedValueDoesNotReopen).
				continue
			}
			if ok {
				h.values = append(h.values, v)
				h.intent = intentVolunteer
				if correction {
					h.intent = intentCorrection
				}
				return h
			}
		}
	}
	if containsPhrase(text, repeatMarkers) {
		h.intent = intentRepeat
		return h
	}
	if correction && !(exp.kind == expectField && containsPhraseAny(words, exp.field)) &&
		(exp.kind == expectField || exp.kind == expectAnythingElse || exp.kind == expectConfirm) {
		switch {
		case exp.kind == expectConfirm && exp.field != nil:
			// "Um, actually, that's wrong. It should be …" to a read-back, with no value the agent
			// could read in it: it refuses the read-back, whose field is asked again. Taken as
			// unplaced, the agent went on to the next question and the wrong value stood.
			h.intent = intentNo
			if v, ok := l.repairedCode(exp.field, exp.value, text); ok {
				h.values, h.intent = []fieldValue{v}, intentCorrection
				h.why = withNote(h.why, "code from the open transcript of the refusal")
			}
			return h
		case exp.kind == expectField && len(exp.filled) == 0 && exp.field != nil && exp.field.slot(l.known) == nil:
			// Nothing has been given yet that it could correct: the marker is a word of an answer
			// read from the caller's words ("it's a wrong call facilities group" for Okonkwo).
		default:
			// A correction the agent cannot place is not an answer to the question asked.
			h.intent = intentUnplaced
			return h
		}
	}
	switch exp.kind {
	case expectField, expectConfirm:
		f := exp.field
		if containsPhrase(text, unknownMarkers) {
			h.intent = intentUnknown
			return h
		}
		if onlyAcknowledges(words) || fillerOnly(u) || fillerText(text) {
			h.intent = intentAcknowledge
			return h
		}
		if exp.kind == expectConfirm {
			h.intent = intentOther
			return h
		}
		if f.slot(l.known) == nil || f.Kind == kindChoice || f.Kind == kindYesNo {
			// Free text (and enumerations, which a grammar of a few words would force any reply
			// into) is read from the open transcript.
			if v, ok := l.freeValue(f, lm.Words, text, u); ok {
				h.values = []fieldValue{v}
				h.intent = intentAnswer
				return h
			}
		}
		h.intent = intentOther
	case expectApproval, expectAnythingElse:
		if saysGoodbye(text) {
			h.intent = intentClose
			return h
		}
		yes, ok := asr.Polarity(text)
		if ok && yes && refuses(text) {
			// "No, sorry, that's not right. My e-mail is … good on …": a value said again after
			// the refusal may hold a yes word of the recognizer's, which the last word of the
			// turn would otherwise make the approval.
			yes = false
		}
		if !ok {
			if r := u.reading(asr.KindYesNo); r != nil && r.Answer.OK {
				yes, ok = r.Answer.Value.Text == "yes", true
			}
		}
		switch {
		case ok && yes:
			h.intent = intentYes
		case ok:
			h.intent = intentNo
		default:
			h.intent = intentOther
		}
	default:
		h.intent = intentOther
		if saysGoodbye(text) {
			h.intent = intentClose
		}
		h.values = l.openingValues(m, exp, lm.Words, text)
		if len(h.values) > 0 {
			h.intent = intentVolunteer
		}
	}
	return h
}

// confirmation reads the caller's reply to a read-back: yes; no (the agent asks again); no with the
// right value ("no, it's P A two zero …"), which is a repair; or the value said again, which
// agrees or repairs. Anything else (news of another field) is not a reply to the read-back.
func (l *listener) confirmation(exp expectation, text string, cands []candidate, h *heard) (heard, bool) {
	f := exp.field
	var mine *candidate
	for i := range cands {
		if cands[i].f == f {
			mine = &cands[i]
			break
		}
	}
	if saysGoodbye(text) && len(cands) == 0 {
		// "No, that's everything, bye": the caller is done, and did not object to the read-back.
		h.intent = intentClose
		return *h, true
	}
	pol, said := asr.Polarity(text)
	if said && pol && refuses(text) {
		// "Um, actually, that's wrong. It should be Vasquez-Albrecht …": the value said again
		// after the refusal may hold a yes word of the recognizer's ("just as old correct" for
		// Vasquez) that the last word of the turn would otherwise make an agreement.
		pol, said = false, true
	}
	same := func(v fieldValue) bool {
		return exp.value != nil && string(jsonValue(v.value)) == string(jsonValue(exp.value.value))
	}
	switch {
	case mine != nil && (len(cands) == 1 || cands[0].f == f) && !same(mine.v):
		h.values, h.intent = []fieldValue{mine.v}, intentCorrection
		return *h, true
	case mine != nil && same(mine.v) && (!said || pol):
		h.intent = intentYes
		return *h, true
	case said && !pol && len(cands) == 0:
		h.intent = intentNo
		if v, ok := l.repairedCode(f, exp.value, text); ok {
			// "No, sorry, my employee ID is W X, five eight two one three": the no carries the
			// code again, which the open vocabulary heard whole though the code grammar, forced
			// through the carrier, did not; it is read back in turn, as any repair is.
			h.values, h.intent = []fieldValue{v}, intentCorrection
			h.why = withNote(h.why, "code from the open transcript of the no")
		}
		return *h, true
	case said && len(cands) == 0:
		h.intent = intentYes
		return *h, true
	}
	return *h, false
}

// goesOn reports a turn that opens with "and": the caller adds to what they said, rather than
// answering what was read back to them.
func goesOn(words []string) bool {
	for len(words) > 0 && (words[0] == "um" || words[0] == "uh" || words[0] == "oh") {
		words = words[1:]
	}
	return len(words) > 1 && words[0] == "and"
}

// refuses reports a reply that refuses what was read back, whatever follows: a refusal phrase
// ("that's wrong"), or "no, sorry" (or "sorry, no") opening the turn, whose "that's not right"
// the recognizer may not hear ("no sorry that's not ride my name is emily is ok for …", whose
// last yes word "ok" would make it an agreement).
func refuses(text string) bool {
	if containsPhrase(text, readBackRefusals) {
		return true
	}
	words := strings.Fields(strings.NewReplacer(",", " ", ".", " ").Replace(strings.ToLower(text)))
	for len(words) > 0 && (words[0] == "um" || words[0] == "uh" || words[0] == "oh") {
		words = words[1:]
	}
	if len(words) < 2 {
		return false
	}
	no := func(w string) bool { return w == "no" || w == "nope" }
	return no(words[0]) && words[1] == "sorry" || words[0] == "sorry" && no(words[1])
}

// readBackRefusals say a read-back was wrong, whatever follows them.
var readBackRefusals = []string{"that's wrong", "that is wrong", "that's not right", "that is not right", "that's not it",
	"that's not correct", "not correct", "incorrect"}

// repairedCode reads the code a caller said again with the "no" to its read-back from the open
// transcript. Only a reading with more of the code's digits, or as whole as the one read back (its
// digits all kept, at most one symbol fewer), is a repair: the open vocabulary drops letters more
// than it invents them ("cheeky are two nine three one" is 2931 for CTR20931), where the code
// grammar forced carrier words into letters ("R M S H P R J L four one three").
func (l *listener) repairedCode(f *field, was *fieldValue, text string) (fieldValue, bool) {
	if was == nil || f.Kind != kindIdentifier {
		return fieldValue{}, false
	}
	s := f.slot(l.known)
	if s == nil {
		return fieldValue{}, false
	}
	v, ok := l.openCode(f, s, text)
	if !ok {
		return fieldValue{}, false
	}
	got, old := fmt.Sprint(v.value), fmt.Sprint(was.value)
	moreDigits := digitCount(got) > digitCount(old) && symbols(got) >= 5
	asWhole := digitCount(got) == digitCount(old) && symbols(got) >= symbols(old)-1
	if got == old || !moreDigits && !asWhole {
		return fieldValue{}, false
	}
	v.unsure = true
	return v, true
}

// candidate is a value of one field that one of the turn's grammar readings means.
type candidate struct {
	f     *field
	v     fieldValue
	score int
	r     *Reading
}

// preferNamed puts first, among the candidates that read the same value from the same grammar as
// the best one, those of a field the caller named: "I need to change the start date … January
// eighteenth" is the start date, though the end date's grammar read the same words as well.
func preferNamed(cands []candidate, named []*field) []candidate {
	if len(cands) < 2 || len(named) == 0 {
		return cands
	}
	top := cands[0].r
	for _, f := range named {
		for i, c := range cands {
			if c.r != top || c.f != f {
				continue
			}
			if i == 0 {
				return cands
			}
			out := append([]candidate{c}, cands[:i]...)
			return append(out, cands[i+1:]...)
		}
	}
	return cands
}

// Priors of the slot choice, in decoder score units (about a tenth of a nat each): the field
// asked for is likelier than the others, a field already filled is unlikely unless the caller
// corrects it, and a reading's words that the open transcript does not bear out cost it.
const (
	priorAsked   = 2500
	priorFilled  = -1500
	costOutside  = 1000
	fillerMargin = 500
)

// candidates lists the values the turn's grammar readings mean for the fields the question left
// open (and the filled ones, for corrections), best first: each reading's decoder score (the
// readings decode the same audio, so their scores compare) plus the priors. A reading that the
// open-vocabulary transcript does not bear out (no word of its type was heard, or most of what
// was heard is outside its grammar), that covers too little of the speech, or that the filler
// grammar beats, is out of grammar: it yields nothing, so noise is not forced into a slot.
func (l *listener) candidates(m *model, exp expectation, u Utterance) ([]candidate, string) {
	text := strings.ToLower(u.Open.Text)
	words := strings.Fields(text)
	correction := correcting(text)
	var out []candidate
	var notes []string
	var forcedOnly []*Reading // readings replaced by the open transcript: for the asked field only
	best := math.MinInt
	// A reading that is no value of the field asked (a date of birth after today, which the date
	// grammar forced out of "nineteen ninety-one") is no evidence that the caller gave another
	// field of its kind, unless they named it: the date went to the transaction date instead.
	refused := map[asr.Kind]bool{}
	named := m.mentioned(words, m.allFields())
	if exp.kind == expectField && exp.field != nil {
		for i := range u.Readings {
			r := &u.Readings[i]
			if r.Answer.OK && slices.Contains(m.fieldsFor(r.Slot, exp, l.known), exp.field) {
				if _, ok := l.fieldValue(exp.field, dateBorneOut(&r.Slot, r.Answer.Value, text)); !ok {
					refused[r.Slot.Kind] = true
					notes = append(notes, string(r.Slot.Kind)+": no value of "+exp.field.Name)
				}
			}
		}
	}
	for i := range u.Readings {
		r := &u.Readings[i]
		if r.Slot.Kind == asr.KindFiller || r.Slot.Kind == asr.KindSpelling || r.Slot.Kind == asr.KindChoiceInContext {
			continue
		}
		kind := kindOfSlot(r.Slot.Kind)
		outside := outsideGrammar(&r.Slot, words)
		if !r.Answer.OK {
			// The grammar found no sentence of its own in the turn ("starting January fourth,
			// that's when the lease starts" is no date sentence): the asked field's value is read
			// from the open transcript, when a date or a number can be read there at all.
			v, ok := openValue(&r.Slot, exp, l, text)
			if !ok {
				continue
			}
			fr := *r
			fr.Answer.OK, fr.Answer.Value, fr.Answer.Alternatives, fr.Answer.Words = true, v, nil, u.Open.Words
			r = &fr
			outside = 0
			forcedOnly = append(forcedOnly, r)
		}
		// A code the caller was asked to spell is believed as the grammar heard it: the open
		// vocabulary makes little of "P as in papa".
		spelledAnswer := exp.spell && exp.field != nil && sameGrammar(exp.field.slot(l.known), &r.Slot)
		switch {
		case spelledAnswer:
		case !plausible(kind, words):
			notes = append(notes, string(r.Slot.Kind)+": no word of its type heard")
			continue
		case r.Slot.Kind != asr.KindIdentifier && r.Slot.Kind != asr.KindYesNo &&
			forcedBy(outsideWords(&r.Slot, words, exp.field != nil && sameGrammar(exp.field.slot(l.known), &r.Slot)), words):
			// The reply had words the grammar does not know ("you can reach me at … that's my
			// cell"), so the grammar forced it into its nearest sentence: the value is read from
			// the open transcript instead, for the field asked only.
			v, ok := r.Slot.Parse(text)
			if !ok || !(exp.kind == expectField || exp.kind == expectConfirm) || exp.field == nil {
				notes = append(notes, string(r.Slot.Kind)+": forced")
				continue
			}
			fr := *r
			fr.Answer.Value, fr.Answer.Alternatives = v, nil
			fr.Answer.Words = u.Open.Words
			r = &fr
			outside = 0
			forcedOnly = append(forcedOnly, r)
		case u.Spoken && coverage(r.Answer.Words, u.Open.Words) < 0.5:
			notes = append(notes, string(r.Slot.Kind)+": covers too little of the speech")
			continue
		}
		for _, f := range m.fieldsFor(r.Slot, exp, l.known) {
			if f != exp.field && refused[r.Slot.Kind] && !slices.Contains(named, f) {
				continue
			}
			if !sane(f, r.Answer.Value) {
				continue
			}
			asked := (exp.kind == expectField || exp.kind == expectConfirm) && f == exp.field
			if !asked && (slices.Contains(forcedOnly, r) || !unaskedPlausible(kind, r.Answer.Value, outside, len(words))) &&
				!(freeTextAsked(exp, l) && !containsField(exp.filled, f) && codeAfterPreamble(&r.Slot, words)) {
				continue
			}
			if !asked && moneyField(f) && !slices.Contains(named, f) && !saysMoney(words) {
				continue // "C A four eighteen" (a flight) is no meal voucher of 18 dollars
			}
			if !asked && !containsField(exp.filled, f) && repeatsFilled(m, exp, f, r.Answer.Value, l) {
				continue // the caller said a value given before again
			}
			v, ok := l.fieldValue(f, dateBorneOut(&r.Slot, r.Answer.Value, text))
			if !ok {
				continue
			}
			for _, a := range r.Answer.Alternatives {
				if av, ok := l.fieldValue(f, a); ok {
					v.alts = append(v.alts, av)
				}
			}
			if u.Spoken && r.Slot.Kind == asr.KindIdentifier {
				v = carrierAsLetters(l, f, &r.Slot, v, text)
			}
			v.unsure = v.unsure || u.Spoken && !agrees(&r.Slot, r.Answer.Value, text)
			if v.unsure {
				// The open vocabulary heard another value ("it ends in four four one nine"
				// where the digits grammar read 8541): the recognizer's other hypothesis, first
				// among the readings a failed verification retries.
				if ov, ok := r.Slot.Parse(text); ok {
					if av, ok := l.fieldValue(f, ov); ok && r.Slot.Kind == asr.KindIdentifier && lettersHeardWhole(&r.Slot, words, av, v) {
						// "g r p five five zero one nine": the open vocabulary heard the code whole,
						// in words of the code grammar alone and its letters as letters, where the
						// grammar, which favours digits, made G R P into 0 T 8. The open reading
						// goes first; the grammar's is the first alternative.
						prev := v
						prev.alts, prev.unsure = nil, true
						av.alts, av.unsure = append([]fieldValue{prev}, v.alts...), true
						v = av
					}
					// Only a value that kept the digits: an open transcript that lost some ("it's a
					// tear is there for four seven one eight": A4718 for PA2044718) is no reading,
					// one that lost letters the grammar made of carrier words ("share its w x five
					// eight two one three": WX58213 for RAWX58013) is.
					if av, ok := l.fieldValue(f, ov); ok && fmt.Sprint(av.value) != fmt.Sprint(v.value) && !hasAlt(v.alts, av) &&
						digitCount(fmt.Sprint(av.value)) >= digitCount(fmt.Sprint(v.value)) && symbols(fmt.Sprint(av.value)) >= 4 {
						v.alts = append([]fieldValue{av}, v.alts...)
					}
				}
			}
			score := r.Answer.Score - costOutside*outside
			switch {
			case exp.kind == expectField && f == exp.field:
				score += priorAsked
			case exp.kind == expectConfirm && f == exp.field && exp.value != nil && resembles(exp.value.value, v.value):
				// After a read-back, a value like it is the caller's repair; one of another
				// shape ("five oh three …" after "four one seven") is an answer to something else.
				score += priorAsked
			case containsField(exp.filled, f) && !correction:
				score += priorFilled
			}
			out = append(out, candidate{f: f, v: v, score: score, r: r})
			best = max(best, score)
		}
	}
	if fr := u.reading(asr.KindFiller); fr != nil && fr.Answer.OK && len(out) > 0 && u.Spoken &&
		fr.Answer.Score-costOutside*outsideGrammar(&fr.Slot, words) > best+fillerMargin {
		return nil, fmt.Sprintf("filler %q outscores every slot", fr.Answer.Text)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].score > out[j].score })
	if len(out) > 0 {
		notes = append([]string{fmt.Sprintf("%s=%v (%s, score %d)", out[0].f.Name, out[0].v.value, out[0].r.Slot.Kind, out[0].score)}, notes...)
	}
	return out, strings.Join(notes, "; ")
}

// dateBorneOut is the date a date grammar read, as the open transcript bears it out: the open
// transcript's date when it names another month and a day (the grammar forced "it would start
// Monday, January eleventh" into March twenty-eighth, twenty twenty-nine: a month's name is a word
// the open vocabulary rarely mishears), then without a year it does not bear out (yearBorneOut).
func dateBorneOut(s *asr.Slot, v asr.Value, text string) asr.Value {
	if s.Kind == asr.KindDateRange && len(v.Dates) == 2 && (v.Dates[0].Year != 0 || v.Dates[1].Year != 0) && !numberAfterDay(text) {
		// A range whose years the open transcript does not bear out ("December seventh through
		// December eleventh" read as 2026-12-07 to 2070-12-07): the open transcript's days, when
		// it reads as a range of its own.
		if ov, ok := s.Parse(text); ok && len(ov.Dates) == 2 && ov.Dates[0].Year == 0 && ov.Dates[1].Year == 0 &&
			ov.Dates[0].Month != 0 && ov.Dates[1].Month != 0 {
			return ov
		}
	}
	if s.Kind == asr.KindDate && len(v.Dates) == 1 {
		if ov, ok := s.Parse(text); ok && len(ov.Dates) == 1 && ov.Dates[0].Month != 0 && ov.Dates[0].Day != 0 &&
			ov.Dates[0].Month != v.Dates[0].Month && monthRE.MatchString(" "+text+" ") {
			return ov
		}
	}
	return yearBorneOut(s, v, text)
}

// yearBorneOut drops the year a date grammar read when the open transcript has the same day
// without one: the grammar made a year of what followed the date ("December second, so
// yesterday" read as December second, twenty thirty-eight; "October thirty-first, he came just
// after midnight" as nineteen seventeen). The day then resolves as a day said without a year does.
// When the open transcript has another day of the same month, with no number after it, the
// grammar made its year of the day itself ("Tuesday, February ninth" read as February first,
// nineteen thirty): the open transcript's day is the one said.
func yearBorneOut(s *asr.Slot, v asr.Value, text string) asr.Value {
	if s.Kind != asr.KindDate || len(v.Dates) != 1 || v.Dates[0].Year == 0 {
		return v
	}
	ov, ok := s.Parse(text)
	if !ok || len(ov.Dates) != 1 {
		return v
	}
	if d := ov.Dates[0]; d.Year == 0 && d.Month == v.Dates[0].Month && !numberAfterDay(text) {
		return ov
	}
	return v
}

// birthDate reports a field that holds a date of birth.
func birthDate(f *field) bool {
	n := strings.ToLower(f.Name)
	return strings.Contains(n, "dob") || strings.Contains(n, "birth")
}

// numberAfterDay reports a number word after the day's ordinal: a year the open vocabulary heard
// but could not read ("January seventeenth, ninety ninety one"), which the grammar may have right.
func numberAfterDay(text string) bool {
	ws := strings.Fields(text)
	last := -1
	for i, w := range ws {
		if dayOrdinals[w] {
			last = i
		}
	}
	if last < 0 {
		return true // no day said as an ordinal: nothing to compare
	}
	for _, w := range ws[last+1:] {
		if canon.IsNumberWord(w) || canon.IsDigits(w) {
			return true
		}
	}
	return false
}

// dayOrdinals are the ordinal words a day of the month is said with.
var dayOrdinals = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields("first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth thirtieth") {
		m[w] = true
	}
	return m
}()

// openValue reads the asked field's value from the open transcript with the field's own grammar's
// parser, for the kinds whose parser needs the whole value said (a date, a number, a run of digits
// of the field's length, a phone number): a code the open vocabulary spelled is no reading.
func openValue(s *asr.Slot, exp expectation, l *listener, text string) (asr.Value, bool) {
	if exp.kind != expectField || exp.field == nil || !sameGrammar(exp.field.slot(l.known), s) {
		return asr.Value{}, false
	}
	switch s.Kind {
	case asr.KindDate, asr.KindDateRange, asr.KindNumber, asr.KindPhone:
	case asr.KindDigits:
		if s.Digits == 0 {
			return asr.Value{}, false
		}
	default:
		return asr.Value{}, false
	}
	return s.Parse(text)
}

// repeatsFilled reports a value that equals what a filled field of the same kind holds: the caller
// repeating an answer (after a read-back that named it, say) is not an answer for another field.
func repeatsFilled(m *model, exp expectation, f *field, v asr.Value, l *listener) bool {
	fv, ok := l.fieldValue(f, v)
	if !ok {
		return false
	}
	for _, g := range exp.filled {
		if g != f && g.Kind == f.Kind && exp.values != nil {
			if cur, ok := exp.values[g.Name]; ok && canon.Identifier(fmt.Sprint(cur)) == canon.Identifier(fmt.Sprint(fv.value)) {
				return true
			}
		}
	}
	return false
}

// unaskedPlausible holds a reading for a field that was not asked to a stricter standard: nearly
// every word heard is of the grammar, and a code has digits (letters alone are a spelled name).
// moneyField reports a number field that holds a sum of money (a fee, a voucher, an amount).
func moneyField(f *field) bool {
	if f.Kind != kindNumber {
		return false
	}
	if strings.Contains(strings.ToLower(f.Description), "dollar") {
		return true
	}
	for _, w := range nameWords(f.Name) {
		switch w {
		case "voucher", "fee", "amount", "price", "cost", "total", "balance", "deductible", "copay", "refund", "credit", "charge", "estimate":
			return true
		}
	}
	return false
}

// saysMoney reports a turn that says a sum of money as one.
func saysMoney(words []string) bool {
	for _, w := range words {
		switch strings.Trim(w, ".,") {
		case "dollar", "dollars", "bucks", "cents", "cent":
			return true
		}
		if strings.HasPrefix(w, "$") {
			return true
		}
	}
	return false
}

func unaskedPlausible(k valueKind, v asr.Value, outside, words int) bool {
	if outside > 1 || (outside == 1 && words < 6) {
		return false
	}
	if k == kindIdentifier {
		return strings.IndexFunc(v.Text, unicode.IsDigit) >= 0
	}
	return true
}

// listAddition reads "Add Teams to that" (or "also add …", "… too"), said after a list was
// given, as the list with the item added: it is a correction of the list, not an answer to the
// question asked (the scope question's in-context reader took it for "team"). The list is the
// one the caller names, or else the filled list whose items are as long as the one added (a
// system, not a step tried), the last recorded first.
func listAddition(m *model, exp expectation, ws []asr.Word) (fieldValue, bool) {
	i := 0
	for i < len(ws) && (leadFillers[ws[i].Text] || ws[i].Text == "also" || ws[i].Text == "please" || ws[i].Text == "can" || ws[i].Text == "you") {
		i++
	}
	if i >= len(ws) || ws[i].Text != "add" || i > 3 {
		return fieldValue{}, false
	}
	var item []asr.Word
	for j := i + 1; j < len(ws); j++ {
		w := ws[j].Text
		toList := w == "to" && j+1 < len(ws) && listReferents[ws[j+1].Text] // "to that", not "switched to my hotspot"
		if len(item) > 0 && (toList || w == "too" || w == "as" || w == "please" || ws[j].Start-ws[j-1].End >= 300*time.Millisecond) {
			break
		}
		if len(item) == 0 && (w == "the" || w == "a" || w == "an") {
			continue
		}
		item = append(item, ws[j])
	}
	if len(item) == 0 || len(item) > 4 {
		return fieldValue{}, false
	}
	added := joinWords(item)
	var lists []*field
	for _, f := range exp.filled {
		if _, ok := exp.values[f.Name].([]string); ok && f.Kind == kindList {
			lists = append(lists, f)
		}
	}
	if len(lists) == 0 {
		return fieldValue{}, false
	}
	target := lists[len(lists)-1]
	if named := m.mentioned(strings.Fields(joinWords(ws)), lists); len(named) > 0 {
		target = named[0]
	} else {
		best := math.Inf(1)
		for k := len(lists) - 1; k >= 0; k-- {
			items := exp.values[lists[k].Name].([]string)
			n := 0
			for _, it := range items {
				n += len(strings.Fields(it))
			}
			if d := math.Abs(float64(n)/float64(max(1, len(items))) - float64(len(item))); d < best {
				best, target = d, lists[k]
			}
		}
	}
	items := slices.Clone(exp.values[target.Name].([]string))
	if slices.Contains(items, added) {
		return fieldValue{}, false
	}
	items = append(items, added)
	return fieldValue{field: target, value: items, spoken: strings.Join(items, ", ")}, true
}

// listReferents are what a list is referred to by after "add … to".
var listReferents = map[string]bool{"that": true, "it": true, "those": true, "them": true, "this": true, "the": true, "list": true}

// freeTextAsked reports a question whose answer has no grammar (a pharmacy's name, a description).
func freeTextAsked(exp expectation, l *listener) bool {
	return exp.kind == expectField && exp.field != nil && exp.field.slot(l.known) == nil
}

// codeAfterPreamble reports a turn that ends in a code of at least minPreambleCodeDigits digits
// after a few words of its own ("got the bottle, number's six oh two three, one one four eight",
// said when the pharmacy transferred from was asked): the code is news for an open code field,
// not the free-text answer, which is asked again.
func codeAfterPreamble(s *asr.Slot, words []string) bool {
	if s.Kind != asr.KindIdentifier {
		return false
	}
	last := -1
	for i, w := range words {
		if outsideWords(s, []string{w}, false) > 0 {
			last = i
		}
	}
	if last < 0 || last >= maxCodePreamble {
		return false
	}
	v, ok := s.Parse(strings.Join(words[last+1:], " "))
	return ok && digitCount(v.Text) >= minPreambleCodeDigits
}

const (
	// maxCodePreamble is how many words may come before a volunteered code.
	maxCodePreamble = 5
	// minPreambleCodeDigits is how long a volunteered code must be: shorter digit runs in a free
	// answer are house numbers, counts and times.
	minPreambleCodeDigits = 6
)

// fieldsFor lists the fields whose grammar is s, in the order the question weighs them: the asked
// field, the open ones, then the filled ones. Enumerations and yes/no fields only count when
// asked: a bare "yes" or "morning" belongs to the question.
func (m *model) fieldsFor(s asr.Slot, exp expectation, known func(string) bool) []*field {
	key := s.Grammar().JSGF
	var out []*field
	add := func(f *field, asked bool) {
		if f == nil || slices.Contains(out, f) {
			return
		}
		if !asked && (f.Kind == kindYesNo || f.Kind == kindChoice) {
			return
		}
		if fs := f.slot(known); fs != nil {
			if !asked {
				unasked(fs)
			}
			if fs.Grammar().JSGF == key {
				out = append(out, f)
			}
		}
	}
	if exp.kind == expectField || exp.kind == expectConfirm {
		add(exp.field, true)
	}
	for _, f := range exp.open {
		add(f, false)
	}
	for _, f := range exp.filled {
		add(f, false)
	}
	return out
}

func containsField(fs []*field, f *field) bool { return slices.Contains(fs, f) }

// resembles reports a repair-like value: of about the same length as the one read back, or
// sharing most of its characters.
func resembles(a, b any) bool {
	x, y := fmt.Sprint(a), fmt.Sprint(b)
	if d := len(x) - len(y); d >= -2 && d <= 2 {
		return true
	}
	return similarity(x, y) >= 0.5
}

// sameGrammar reports two slots with one grammar.
func sameGrammar(a, b *asr.Slot) bool {
	return a != nil && b != nil && a.Grammar().JSGF == b.Grammar().JSGF
}

// kindOfSlot is the field kind a grammar reads.
func kindOfSlot(k asr.Kind) valueKind {
	switch k {
	case asr.KindDigits:
		return kindDigits
	case asr.KindPhone:
		return kindPhone
	case asr.KindDate:
		return kindDate
	case asr.KindDateRange:
		return kindDateRange
	case asr.KindIdentifier:
		return kindIdentifier
	case asr.KindNumber:
		return kindNumber
	case asr.KindYesNo:
		return kindYesNo
	case asr.KindChoice:
		return kindChoice
	}
	return kindText
}

// outsideGrammar counts the open transcript's words that the grammar has no use for (fillers and
// the sound-alikes of digits aside).
func outsideGrammar(s *asr.Slot, words []string) int { return outsideWords(s, words, false) }

// outsideWords is outsideGrammar; with lettersAsDigits, single letters do not count against a
// grammar of digits alone (the open vocabulary writes dictated digits as letters, "six o h one"
// for six oh eight one; "i" and "a" are words). Only the asked field's reading is judged so: for
// the other fields' grammars, which are decoded only when the transcript may hold their value,
// a spelled name's letters must still count, or every turn with letters costs a decode of each.
func outsideWords(s *asr.Slot, words []string, lettersAsDigits bool) int {
	vocab := map[string]bool{}
	for _, w := range s.Grammar().Vocabulary() {
		vocab[w] = true
	}
	digitsOnly := lettersAsDigits && (s.Kind == asr.KindDigits || s.Kind == asr.KindPhone)
	out := 0
	for _, w := range words {
		if !vocab[w] && !fillerWords[w] && !soundAlikes[w] && !numberWords[w] && !(digitsOnly && isLetter(w) && w != "i" && w != "a") {
			out++
		}
	}
	return out
}

// coverage is the share of the turn's speech (from the open transcript's first word to its last)
// that the reading's words span: a grammar that explains most of the audio as silence or noise
// did not hear its sentence.
func coverage(reading, open []asr.Word) float64 {
	if len(open) == 0 || len(reading) == 0 {
		return 1
	}
	speech := open[len(open)-1].End - open[0].Start
	if speech <= 0 {
		return 1
	}
	var got time.Duration
	for _, w := range reading {
		got += w.End - w.Start
	}
	return min(1, float64(got)/float64(speech))
}

// agrees reports whether the open transcript, read with the same grammar's parser, holds the
// grammar's value: two recognizers agreeing is the agent's confidence.
func agrees(s *asr.Slot, v asr.Value, text string) bool {
	ov, ok := s.Parse(text)
	if !ok {
		return false
	}
	if s.Kind == asr.KindIdentifier {
		return canon.Identifier(ov.Text) == canon.Identifier(v.Text)
	}
	return ov.Text == v.Text
}

// fillerPhrasesText answer nothing ("mm-hm, take your time"): a turn that is one of them, with at most
// one word the recognizer made of a hesitation ("age and take your time"), is no answer.
var fillerPhrasesText = []string{"take your time", "no rush", "no problem", "of course", "go ahead", "hold on", "one moment",
	"one second", "just a moment", "let me check", "let me see", "no worries", "sounds good", "mm hmm", "uh huh", "mm-hm", "uh-huh"}

// fillerText reports a turn that holds a filler phrase and nothing else but hesitations and at
// most one stray word.
func fillerText(text string) bool {
	t := " " + strings.Join(strings.Fields(text), " ") + " "
	found := false
	for _, p := range fillerPhrasesText {
		if strings.Contains(t, " "+p+" ") {
			t = strings.ReplaceAll(t, " "+p+" ", " ")
			found = true
		}
	}
	if !found {
		return false
	}
	rest := 0
	for _, w := range strings.Fields(t) {
		if !fillerWords[w] && !ackWords[w] && w != "and" && w != "so" {
			rest++
		}
	}
	return rest <= 1
}

// fillerOnly reports a turn the filler grammar explains at least as well as the open vocabulary
// (a spoken turn only).
func fillerOnly(u Utterance) bool {
	r := u.reading(asr.KindFiller)
	if r == nil || !r.Answer.OK || !u.Spoken {
		return false
	}
	return outsideGrammar(&r.Slot, strings.Fields(strings.ToLower(u.Open.Text))) == 0
}

// openingValues reads what the caller's opening volunteers: enumeration values named outright
// ("I need medical leave", "my flight got cancelled") and dates, each for the first open field of
// its kind.
func (l *listener) openingValues(m *model, exp expectation, ws []asr.Word, text string) []fieldValue {
	var out []fieldValue
	taken := map[valueKind]bool{}
	for _, f := range m.fields {
		switch f.Kind {
		case kindChoice:
			if v, ok := l.choiceMention(f, text); ok {
				out = append(out, v)
			}
		case kindDate:
			if taken[kindDate] {
				continue
			}
			if ds := canon.FindDates(text); len(ds) == 1 {
				d := ds[0].Resolve(l.now())
				out = append(out, fieldValue{field: f, value: d.String(), spoken: spokenDate(d)})
				taken[kindDate] = true
			}
		}
	}
	return out
}

// kinWords are what callers say for the relationships forms enumerate.
var kinWords = map[string]string{
	"son": "child", "daughter": "child", "kid": "child", "baby": "child", "stepson": "child", "stepdaughter": "child",
	"newborn": "child", "wife": "spouse", "husband": "spouse",
}

// withKinWords appends, for each kinship word of text, the word a form uses for it.
func withKinWords(text string) string {
	var add []string
	for _, w := range strings.Fields(text) {
		if k, ok := kinWords[strings.Trim(w, ",.?!")]; ok {
			add = append(add, k)
		}
	}
	if len(add) == 0 {
		return text
	}
	return text + " " + strings.Join(add, " ")
}

// choiceMention finds the one enumeration value of f whose words the caller said (stems compared,
// at least half of a value's words).
func (l *listener) choiceMention(f *field, text string) (fieldValue, bool) {
	have := map[string]bool{}
	ws := strings.Fields(text)
	for i, w := range ws {
		have[stem(w)] = true
		if i+1 < len(ws) {
			have[stem(w+ws[i+1])] = true // "pick up" names pickup
		}
	}
	// A long word only one value has ("it says delivered but I never got it" for
	// delivered_not_received) names that value even when its other words go unsaid.
	owners := map[string]int{}
	for _, e := range f.Enum {
		for _, w := range nameWords(e) {
			owners[stem(w)]++
		}
	}
	bestE, bestScore, tie, bestDistinct, matched := "", 0.0, false, false, 0
	for _, e := range f.Enum {
		ew := nameWords(e)
		n, distinct := 0, false
		for _, w := range ew {
			if have[stem(w)] && !genericWords[w] && len(w) > 2 {
				n++
				distinct = distinct || len(w) >= 6 && owners[stem(w)] == 1
			}
		}
		if n == 0 {
			continue
		}
		matched++
		sc := float64(n) / float64(len(ew))
		switch {
		case sc > bestScore:
			bestE, bestScore, tie, bestDistinct = e, sc, false, distinct
		case sc == bestScore:
			tie = true
		}
	}
	if bestE == "" || tie || bestScore < 0.5 && !(bestDistinct && matched == 1) {
		return fieldValue{}, false
	}
	return fieldValue{field: f, value: bestE, spoken: strings.Join(nameWords(bestE), " ")}, true
}

// targets lists the fields a correction or piece of news may be about, likeliest first: the ones
// the caller names; for a correction, the field recorded last (a correction that names nothing is
// most likely about the last answer); then the only field whose type fits the value said (a date
// when a month is named, an amount when dollars are said, a phone number for a long run of
// digits). The caller's value must then read as that field's type.
func (l *listener) targets(m *model, mentions []*field, last *field, filled []*field, correction bool, lm asr.Result) []*field {
	text := " " + strings.ToLower(lm.Text) + " "
	var want valueKind = -1
	switch {
	case monthRE.MatchString(text):
		want = kindDate
	case streetRE.MatchString(text):
		want = kindAddress
	case strings.Contains(text, " dollar") || strings.Contains(text, " cents ") || strings.Contains(text, " degrees "):
		want = kindNumber
	case len(canon.Digits(text)) >= 7:
		want = kindPhone
	}
	var out []*field
	add := func(f *field) {
		if f != nil && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	c := countOf.FindStringSubmatch(text)
	if c == nil {
		// "Um, actually, that's wrong. I said four." to a summary: a bare count, which no noun
		// ties to a field, ends the turn.
		c = countEnd.FindStringSubmatch(text)
	}
	if c != nil && want < 0 && correction {
		for _, f := range countsOf(m, filled, c[2]) {
			add(f)
		}
	}
	if want >= 0 {
		// A value of a type was said: the fields of that type come first, the ones named before
		// the others, in form order.
		// A correction is about something recorded: a named field of the record, the last
		// answer, then the record's filled fields of that type (later in the form first, as the
		// form is asked in order), before a named field that only identified the caller ("his
		// date of birth is October thirty-first" corrects the newborn's, not the employee's date
		// the lookup used).
		for _, f := range mentions {
			if f.Kind == want && (!correction || m.fieldByName[f.Name] != nil) {
				add(f)
			}
		}
		if correction && last != nil && last.Kind == want {
			add(last)
		}
		if correction {
			for i := len(filled) - 1; i >= 0; i-- {
				if f := filled[i]; f.Kind == want && m.fieldByName[f.Name] != nil {
					add(f)
				}
			}
		}
		for _, f := range mentions {
			if f.Kind == want {
				add(f)
			}
		}
		for _, f := range m.allFields() {
			if f.Kind == want {
				add(f)
			}
		}
	}
	for _, f := range mentions {
		add(f)
	}
	if correction {
		add(last)
	}
	return out
}

// countsOf are the record's count fields a count of things said ("I need four payments")
// corrects: the count of them, or its one count ("installment_count", "number_of_guests") when
// the things go by another name. A count said alone (noun "") corrects the one count.
func countsOf(m *model, filled []*field, noun string) []*field {
	noun = stem(noun)
	var named, counts []*field
	for i := len(filled) - 1; i >= 0; i-- {
		f := filled[i]
		if f.Kind != kindNumber || m.fieldByName[f.Name] == nil {
			continue
		}
		ws := nameWords(f.Name)
		if noun != "" && slices.ContainsFunc(ws, func(w string) bool { return stem(w) == noun }) {
			named = append(named, f)
		} else if slices.Contains(ws, "count") || slices.Contains(ws, "number") {
			counts = append(counts, f)
		}
	}
	if len(named) == 0 && len(counts) == 1 {
		return counts
	}
	return named
}

// countCorrection reads a correction that says a count of things ("Sorry to cut you off, but
// make it four payments"): the count is the value of the record's count of them, whatever a
// number grammar made of the rest of the turn ("to cut you off" read as two).
func (l *listener) countCorrection(m *model, exp expectation, text string) (fieldValue, bool) {
	c := countOf.FindStringSubmatch(" " + text + " ")
	if c == nil {
		// "Hang on, hang on. Four payments, not what I said before." is heard "hang on hang on
		// for payments …", with no pause before "for" to tell it from the preposition: in a
		// correction, "for" and the things the record counts are a count of them.
		if c = forCountOf.FindStringSubmatch(" " + text + " "); c != nil {
			c[1] = "four"
		}
	}
	if c == nil || durations[c[2]] && !slices.ContainsFunc(exp.filled, func(f *field) bool { return containsKeyword(f, c[2]) }) {
		// "For eight months" (the recognizer's "four payments") is a duration, no count of the
		// record's things, unless a field is named by it.
		return fieldValue{}, false
	}
	fs := countsOf(m, exp.filled, c[2])
	if len(fs) != 1 {
		return fieldValue{}, false
	}
	n, ok := (asr.Slot{Kind: asr.KindNumber}).Parse(c[1])
	if !ok {
		return fieldValue{}, false
	}
	return l.fieldValue(fs[0], n)
}

var durations = map[string]bool{"years": true, "months": true, "weeks": true, "days": true, "hours": true, "minutes": true, "nights": true}

var forCountOf = regexp.MustCompile(` (for) ([a-z]+s) `)

var streetRE = regexp.MustCompile(` (street|avenue|road|boulevard|lane|court|drive|place|way|terrace|parkway|highway) `)

// countOf is a small count of things said in words ("four payments", "two more nights").
var countOf = regexp.MustCompile(` (two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)(?: more)? ([a-z]+s) `)

// countEnd is a small count in words that ends a turn, with nothing counted after it.
var countEnd = regexp.MustCompile(` (two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)() $`)

var monthRE = regexp.MustCompile(` (january|february|march|april|may|june|july|august|september|october|november|december) `)

// valueAfterPreamble reads the value of f from a turn that first says what it is about ("sorry, I
// need to correct something, my callback number is actually …"): the speech after the last
// preamble word is decoded with f's grammar (when the turn was spoken); free text is taken from
// the words after it. The audio is cut at the preamble word's time, which is no offset into the
// audio (see asr.Word): after a pause the cut falls early, in the preamble, and in a streamed
// turn after the call's first it falls later by the speech of the turns before, mostly past the
// turn's end, where no decode is made (the words after the cut are parsed instead).
func (l *listener) valueAfterPreamble(ctx context.Context, f *field, u Utterance) (fieldValue, bool) {
	lm := u.Open
	cuts := []int{-1} // -1: the whole turn
	for i, w := range lm.Words {
		if (cutMarkers[w.Text] || containsKeyword(f, w.Text)) && i < len(lm.Words)-1 {
			cuts = append(cuts, i)
		}
	}
	cut := cuts[len(cuts)-1]
	rest := lm.Words[cut+1:]
	restText := joinWords(rest)
	if v, ok := l.countNamedByField(f, lm.Words); ok {
		return v, true
	}
	if slot := f.slot(l.known); slot != nil {
		// The value follows the last preamble word, unless the caller went on after it ("it's
		// September thirtieth now, they extended her"): then the last cut with a value of the
		// field's type after it. Only that one is decoded again from the audio.
		reread := u.Reread != nil
		for j := len(cuts) - 1; j >= 0; j-- {
			cut := cuts[j]
			rest := joinWords(lm.Words[cut+1:])
			if f.Kind != kindChoice && f.Kind != kindYesNo && !plausible(f.Kind, strings.Fields(rest)) {
				continue // nothing of the field's type was said after this cut
			}
			if cut >= 0 && reread {
				reread = false
				if ans, ok := u.Reread(ctx, lm.Words[cut].End, *slot); ok && ans.OK && !centsUnsaid(slot, ans.Value, rest) {
					if v, ok := l.fieldValue(f, dateBorneOut(slot, ans.Value, rest)); ok {
						return v, true
					}
				}
			}
			if v, ok := slot.Parse(rest); ok {
				if fv, ok := l.fieldValue(f, v); ok {
					return fv, true
				}
			}
			if f.Kind == kindChoice {
				break // an enumeration is read from the free text after the last cut, below
			}
		}
		if f.Kind != kindChoice {
			return fieldValue{}, false
		}
	}
	if f.Kind == kindAddress {
		// An address finds its own start (the house number) in the whole turn, where "the unit
		// is nineteen" before it still reads as the unit.
		if v, ok := l.freeValue(f, lm.Words, lm.Text, Utterance{}); ok {
			return v, true
		}
	}
	v, ok := l.freeValue(f, rest, restText, Utterance{})
	if ok && f.Kind == kindName && u.Names != nil {
		// The directory's reading of the name, after its own last preamble word.
		nw := u.Names.Words
		c := -1
		for i, w := range nw {
			if (cutMarkers[w.Text] || containsKeyword(f, w.Text)) && i < len(nw)-1 {
				c = i
			}
		}
		v = l.withDirectory(f, v, rest, u.Names, c+1, Utterance{}, u)
	}
	return v, ok
}

// quantityUnits are the units a quantity is counted in, said between the number and the field it
// is ("thirty-eight cases received"). Not listMemberNouns: "two kids" names no field.
var quantityUnits = map[string]bool{"cases": true, "case": true, "units": true, "items": true, "boxes": true, "pieces": true,
	"packs": true, "pallets": true, "cartons": true, "bags": true}

// countNamedByField reads a number field's value where the caller named it by the count and the
// field together: "it's thirty-eight cases received, my receiving clerk just found the other two"
// is 38 received, though the number said last is two.
func (l *listener) countNamedByField(f *field, ws []asr.Word) (fieldValue, bool) {
	if f.Kind != kindNumber {
		return fieldValue{}, false
	}
	slot := f.slot(l.known)
	if slot == nil {
		return fieldValue{}, false
	}
	for i := 2; i < len(ws); i++ {
		if !containsKeyword(f, ws[i].Text) || !quantityUnits[ws[i-1].Text] {
			continue
		}
		k := i - 1
		for k > 0 && (canon.IsNumberWord(ws[k-1].Text) || canon.IsDigits(ws[k-1].Text)) {
			k--
		}
		if k == i-1 {
			continue
		}
		if v, ok := slot.Parse(joinWords(ws[k : i-1])); ok {
			if fv, ok := l.fieldValue(f, v); ok {
				return fv, true
			}
		}
	}
	return fieldValue{}, false
}

func containsKeyword(f *field, w string) bool {
	s := stem(strings.ToLower(w))
	for _, k := range f.keywords {
		if k == s {
			return true
		}
	}
	return false
}

// joinWords is the recognized words as one text.
func joinWords(ws []asr.Word) string { return strings.Join(wordTexts(ws), " ") }

// wordTexts is each recognized word's text.
func wordTexts(ws []asr.Word) []string {
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = w.Text
	}
	return s
}

// fieldValue turns a parsed slot value into the value recorded for f.
func (l *listener) fieldValue(f *field, v asr.Value) (fieldValue, bool) {
	now := l.now()
	switch f.Kind {
	case kindDate:
		if len(v.Dates) == 0 {
			return fieldValue{}, false
		}
		d := v.Dates[0].Resolve(now)
		if birthDate(f) {
			born := func() time.Time { return time.Date(d.Year, time.Month(d.Month), d.Day, 0, 0, 0, 0, time.UTC) }
			if v.Dates[0].Year == 0 {
				// A birthday said without its year has passed: "October thirty-first" for a newborn.
				for d.Year > 1 && born().After(now) {
					d.Year--
				}
			} else if born().After(now) {
				// No one was born after today: the date grammar forced "January seventeenth.
				// Nineteen ninety-one" into "january thirty first twenty twenty seven".
				return fieldValue{}, false
			}
		}
		return fieldValue{field: f, value: d.String(), spoken: spokenDate(d), yearless: v.Dates[0].Year == 0}, true
	case kindDateRange:
		if len(v.Dates) < 2 {
			return fieldValue{}, false
		}
		a, b := canon.ResolveRange(v.Dates[0], v.Dates[1], now)
		return fieldValue{field: f, value: a.String() + " to " + b.String(), spoken: "from " + spokenDate(a) + " to " + spokenDate(b)}, true
	case kindNumber:
		var val any = v.Text
		if slices.Contains(f.JSONTypes, "number") || (slices.Contains(f.JSONTypes, "integer") && v.Number == float64(int64(v.Number))) {
			val = v.Number
		}
		return fieldValue{field: f, value: val, spoken: spokenNumber(f, v.Number)}, true
	case kindChoice, kindYesNo:
		for _, e := range f.Enum {
			phrase := strings.Join(nameWords(e), " ")
			if phrase == v.Text || strings.EqualFold(e, v.Text) ||
				(f.Kind == kindYesNo && (strings.EqualFold(e, v.Text) || (v.Text == "yes" && strings.EqualFold(e, "true")) || (v.Text == "no" && strings.EqualFold(e, "false")))) {
				return fieldValue{field: f, value: e, spoken: phrase}, true
			}
		}
		return fieldValue{}, false
	case kindPhone:
		return fieldValue{field: f, value: v.Text, spoken: spacedDigits(v.Text)}, true
	case kindIdentifier, kindDigits:
		return fieldValue{field: f, value: v.Text, spoken: spacedDigits(v.Text)}, true
	}
	return fieldValue{field: f, value: v.Text, spoken: v.Text}, v.Text != ""
}

// Words a caller wraps an answer in.
var leadFillers = map[string]bool{"it's": true, "it": true, "is": true, "um": true, "uh": true, "so": true, "well": true,
	"yes": true, "yeah": true, "sure": true, "okay": true, "oh": true, "my": true, "the": true, "our": true, "that's": true,
	"that": true, "actually": true, "and": true, "a": true, "an": true, "about": true, "now": true, "was": true, "i": true,
	"think": true, "we": true, "they": true, "just": true, "hmm": true, "let": true, "me": true, "see": true}

var (
	listSeparators = map[string]bool{"and": true, "or": true, "then": true, "also": true, "plus": true}
	determiners    = map[string]bool{"the": true, "my": true, "our": true, "their": true}
)

// functionWords are prepositions that bind the next noun phrase to the one before.
var functionWords = map[string]bool{"to": true, "of": true, "in": true, "on": true, "at": true, "for": true, "with": true,
	"from": true, "into": true, "under": true, "below": true, "above": true, "by": true}

// contentWords counts an item's words besides fillers and prepositions.
func contentWords(ws []asr.Word) int {
	n := 0
	for _, w := range ws {
		if !leadFillers[w.Text] && !listSeparators[w.Text] && !functionWords[w.Text] {
			n++
		}
	}
	return n
}

// freeValue reads a free-text (or choice) answer from recognized words.
func (l *listener) freeValue(f *field, ws []asr.Word, text string, u Utterance) (fieldValue, bool) {
	switch f.Kind {
	case kindName:
		if opensWith(text, newsOpeners) {
			return fieldValue{}, false
		}
		return l.nameValue(f, ws, u)
	case kindEmail:
		return l.emailValue(f, ws, u)
	}
	subject := map[string]bool{}
	for _, w := range strings.Fields(strings.ToLower(f.Subject)) {
		subject[w] = true
	}
	// Drop the carrier: leading fillers and the field's own name ("my email address is …").
	i := 0
	for i < len(ws) && (leadFillers[ws[i].Text] || subject[ws[i].Text]) {
		i++
	}
	ws = ws[i:]
	if len(ws) == 0 {
		return fieldValue{}, false
	}
	switch f.Kind {
	case kindChoice, kindYesNo:
		var alts []string
		for _, e := range f.Enum {
			alts = append(alts, strings.Join(nameWords(e), " "))
		}
		s := asr.Slot{Kind: asr.KindChoice, Choices: alts}
		if f.Kind == kindYesNo {
			// "Okay" or "fine" alone is no answer to a yes/no question.
			if yes, ok := firstPolarity(text); ok {
				return l.fieldValue(f, asr.Value{Kind: asr.KindYesNo, Text: map[bool]string{true: "yes", false: "no"}[yes]})
			}
			return fieldValue{}, false
		}
		v, ok := s.Parse(text)
		if !ok {
			// The caller named the value in their own words ("he's my son" for child).
			return l.choiceMention(f, withKinWords(text))
		}
		return l.fieldValue(f, v)
	case kindList:
		items := restated(splitItems(ws))
		if len(items) == 0 || weekdayList(f) && !namesDays(items) {
			return fieldValue{}, false
		}
		return fieldValue{field: f, value: items, spoken: strings.Join(items, ", ")}, true
	case kindDateList:
		var dates []string
		for _, item := range splitItems(ws) {
			if v, ok := (asr.Slot{Kind: asr.KindDate}).Parse(item); ok {
				dates = append(dates, v.Dates[0].Resolve(l.now()).String())
			}
		}
		if len(dates) == 0 {
			return fieldValue{}, false
		}
		return fieldValue{field: f, value: dates, spoken: strings.Join(dates, ", ")}, true
	case kindAddress:
		s := addressText(ws)
		if s == "" && !strings.Contains(f.Name, "address") {
			// A location without a house number ("the Lifetime Fitness on Lake Street"): the
			// short phrase that names it.
			s = shortText(ws, subject)
		}
		return fieldValue{field: f, value: s, spoken: s}, s != ""
	case kindText:
		if shortField(f) {
			s := shortText(ws, subject)
			if said, written := strength(ws); s != "" && written != "" {
				s = strings.Join(strings.Fields(strings.Replace(s, said, "", 1)), " ") + " " + written
			}
			return fieldValue{field: f, value: s, spoken: s}, s != ""
		}
	}
	s := phrase(ws)
	return fieldValue{field: f, value: s, spoken: s}, s != ""
}

// strength is the strength of a medicine said with its name, as said and as a pharmacy writes it
// ("Lisinopril. Twenty milligrams." is lisinopril 20 mg); "" when none was said. The name alone
// is another medicine for the pharmacist.
func strength(ws []asr.Word) (said, written string) {
	for i, w := range ws {
		unit, ok := strengthUnits[w.Text]
		if !ok || i == 0 {
			continue
		}
		j := i
		for j > 0 && (canon.IsNumberWord(ws[j-1].Text) || canon.IsDigits(ws[j-1].Text) || ws[j-1].Text == "point") {
			j--
		}
		if j == i {
			continue
		}
		if n, ok := canon.FindNumber(joinWords(ws[j:i])); ok {
			return joinWords(ws[j : i+1]), strconv.FormatFloat(n, 'f', -1, 64) + " " + unit
		}
	}
	return "", ""
}

// strengthUnits are the units a medicine's strength is said in, and how they are written.
var strengthUnits = map[string]string{"milligrams": "mg", "milligram": "mg", "mg": "mg", "micrograms": "mcg", "microgram": "mcg",
	"mcg": "mcg", "milliliters": "ml", "milliliter": "ml", "ml": "ml"}

// shortField reports a free-text field whose value is a short phrase (a location, a medication,
// a pharmacy), not a description.
func shortField(f *field) bool {
	n := " " + strings.Join(nameWords(f.Name), " ") + " "
	for _, w := range []string{" description ", " summary ", " reason ", " justification ", " issue ", " details ", " notes "} {
		if strings.Contains(n, w) {
			return false
		}
	}
	return true
}

// namesOther reports a turn that says "<another field> is …" ("the referral number is R F …").
func namesOther(m *model, exp expectation, text string) bool {
	t := " " + text + " "
	for _, f := range m.allFields() {
		if f == exp.field {
			continue
		}
		phrase := strings.ToLower(strings.Join(nameWords(f.Name), " "))
		if len(strings.Fields(phrase)) < 2 {
			continue
		}
		if strings.Contains(t, " "+phrase+" is ") || strings.Contains(t, " "+phrase+" was ") ||
			strings.Contains(t, " "+strings.ToLower(f.Subject)+" is ") {
			return true
		}
	}
	return false
}

// firstPolarity reads an answer to a yes/no question from its first word that says yes or no:
// "Yes, I emailed them twice and they never answered" is yes, "No, English is fine" is no (an
// approval, where the caller may take a yes back, is read by its last word instead). A negation
// inside a condition ("you can go in if I'm not home") says nothing of the answer; "you can …",
// "go ahead" and "that's fine" say yes ("okay" or "fine" alone do not: see freeValue).
func firstPolarity(text string) (yes, ok bool) {
	ws := strings.Fields(text)
	condition := 0 // words of a condition still to pass
	for i, w := range ws {
		if condition > 0 {
			condition--
		}
		switch w {
		case "if", "when", "while", "whether", "unless", "even":
			condition = 4
			continue
		}
		switch w {
		case "yes", "yeah", "yep", "yup", "sure", "correct", "definitely", "absolutely":
			return true, true
		case "no", "nope", "not", "don't", "didn't", "haven't", "never", "nothing", "can't", "cannot", "won't", "wouldn't", "shouldn't":
			if condition == 0 {
				return false, true
			}
		case "can", "go":
			if condition == 0 && i+1 < len(ws) && (w == "can" && i > 0 && ws[i-1] == "you" && ws[i+1] != "not" || w == "go" && ws[i+1] == "ahead") {
				return true, true
			}
		case "fine":
			if condition == 0 && i > 0 && (ws[i-1] == "that's" || ws[i-1] == "is") && len(ws) > 2 {
				return true, true
			}
		}
	}
	return false, false
}

// splitItems splits a spoken list at its separators ("and", "then") and at pauses of 150 ms or
// more, which is where a speaker's commas are.
func splitItems(ws []asr.Word) []string {
	var items []string
	var cur []asr.Word
	flush := func() {
		for len(cur) > 0 && (leadFillers[cur[0].Text] || listSeparators[cur[0].Text]) {
			cur = cur[1:]
		}
		for len(cur) > 0 && (cur[len(cur)-1].Text == "too" || cur[len(cur)-1].Text == "to" || listSeparators[cur[len(cur)-1].Text]) {
			cur = cur[:len(cur)-1]
		}
		if spelled, ok := spellsLast(cur, items); ok {
			// "Meera, M E E R A, and Kavi": the letters spell the item before them.
			items[len(items)-1] = spelled
			cur = nil
			return
		}
		if len(cur) > 0 {
			items = append(items, phrase(cur))
		}
		cur = nil
	}
	for i, w := range ws {
		if listSeparators[w.Text] {
			flush()
			continue
		}
		switch {
		case i > 0 && len(cur) > 0 && w.Start-ws[i-1].End >= 120*time.Millisecond:
			if hesitation(ws, i, cur) {
				cur = nil // the word heard for the "um"; the determiner opens the next item
			} else {
				flush()
			}
		case determiners[w.Text] && contentWords(cur) >= 2 && !functionWords[ws[i-1].Text]:
			flush() // "… bathroom floor the kitchen ceiling": a determiner starts the next noun phrase
		}
		cur = append(cur, w)
	}
	flush()
	return items
}

// hesitation reports a one-word run between a separator and a pause, after which a determiner
// opens the next item: "and, um, the kitchen cabinets", where the recognizer wrote a word ("and
// bomb the kitchen cabinets") for the "um".
func hesitation(ws []asr.Word, i int, cur []asr.Word) bool {
	before := i - len(cur) - 1
	return len(cur) == 1 && before >= 0 && listSeparators[ws[before].Text] && determiners[ws[i].Text]
}

// spellsLast reports a run of three or more spelled letters that spells the last item (letters a
// recognizer confuses aside, see classEdits), and the item written as spelled.
func spellsLast(run []asr.Word, items []string) (string, bool) {
	if len(run) < 3 || len(items) == 0 {
		return "", false
	}
	var b strings.Builder
	for _, w := range run {
		if !isLetter(w.Text) {
			return "", false
		}
		b.WriteString(w.Text)
	}
	spelled, last := b.String(), strings.ToLower(items[len(items)-1])
	if strings.Contains(last, " ") || classEdits(spelled, last) > len(spelled)/2 {
		return "", false
	}
	return titleWord(spelled), true
}

// digitCount is how many digits s holds.
func digitCount(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsDigit(r) {
			n++
		}
	}
	return n
}

// symbols counts the letters and digits of a value.
func symbols(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			n++
		}
	}
	return n
}

// lettersHeardWhole reports an open-vocabulary reading of a code (open) that is as long as the
// grammar's (read) and has more letters, from a transcript with no word outside the code grammar.
func lettersHeardWhole(s *asr.Slot, words []string, open, read fieldValue) bool {
	o, g := fmt.Sprint(open.value), fmt.Sprint(read.value)
	return outsideGrammar(s, words) == 0 && symbols(o) == symbols(g) && symbols(o) >= 4 &&
		symbols(o)-digitCount(o) > symbols(g)-digitCount(g)
}

func hasAlt(alts []fieldValue, v fieldValue) bool {
	for _, a := range alts {
		if fmt.Sprint(a.value) == fmt.Sprint(v.value) {
			return true
		}
	}
	return false
}

// listHedges are words that open a list item without being part of it ("mostly Go").
var listHedges = map[string]bool{"mostly": true, "mainly": true, "primarily": true, "but": true, "also": true, "plus": true}

// trailingHedges are what a caller says after a list item that is not part of it ("the upstairs
// bathroom floor for sure", "Tuesdays or Thursdays, I'm afraid"), longest first.
var trailingHedges = [][]string{{"i'm", "afraid"}, {"for", "sure"}, {"i", "think"}, {"i", "guess"}, {"i", "believe"},
	{"as", "well"}, {"i'm", "sure"}, {"both"}, {"too"}, {"also"}, {"underneath"}, {"below"}, {"but"}, {"and"}, {"so"},
	{"those"}} // "those": the open vocabulary's "both" ("text message and email, both")

// carrierWords make up an item that names no thing: the frame of the answer ("she needs …"),
// or a quantifier over the items that follow ("both: email and text").
var carrierWords = map[string]bool{"i": true, "she": true, "he": true, "we": true, "they": true, "you": true,
	"need": true, "needs": true, "want": true, "wants": true, "would": true, "like": true, "uses": true, "use": true,
	"both": true, "all": true, "either": true, "of": true, "them": true, "those": true, "these": true, "i'd": true, "she'd": true,
	"he'd": true, "we'd": true}

// framePronouns and frameVerbs open the frame of a list answer ("she needs …").
var (
	framePronouns = map[string]bool{"i": true, "she": true, "he": true, "we": true, "they": true}
	frameVerbs    = map[string]bool{"need": true, "needs": true, "want": true, "wants": true, "use": true, "uses": true,
		"have": true, "has": true, "tried": true}
)

// quantifiers over the items that follow, said before the first.
var quantifiers = map[string]bool{"both": true, "either": true, "all": true}

var weekdays = []string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}

// listItem cleans one list item: hedges before and after it dropped, a weekday written as the
// day's name ("tuesdays" → Tuesday); false when nothing that names a thing is left.
func listItem(it string) (string, bool) {
	ws := strings.Fields(it)
	// Hedges and a quantifier before the first item ("both the email …").
	for len(ws) > 1 && (listHedges[strings.ToLower(ws[0])] || strings.EqualFold(ws[0], "only") ||
		quantifiers[strings.ToLower(ws[0])] || strings.EqualFold(ws[0], "the")) {
		ws = ws[1:]
	}
	for len(ws) > 0 && (listHedges[strings.ToLower(ws[0])] || strings.EqualFold(ws[0], "only")) {
		ws = ws[1:]
	}
	// The frame of the answer before the first item ("she needs to finance shared drive", "we use
	// access to workday"): the item is what follows it.
	if len(ws) >= 3 && framePronouns[strings.ToLower(ws[0])] && frameVerbs[strings.ToLower(ws[1])] {
		ws = ws[2:]
		for len(ws) > 1 && (strings.EqualFold(ws[0], "to") || strings.EqualFold(ws[0], "access") || strings.EqualFold(ws[0], "the")) {
			ws = ws[1:]
		}
	}
	for trimmed := true; trimmed && len(ws) > 0; {
		trimmed = false
		for _, h := range trailingHedges {
			if len(ws) >= len(h) && slices.EqualFunc(ws[len(ws)-len(h):], h, strings.EqualFold) {
				ws, trimmed = ws[:len(ws)-len(h)], true
				break
			}
		}
	}
	carrier := true
	for _, w := range ws {
		carrier = carrier && carrierWords[strings.ToLower(w)]
	}
	if len(ws) == 0 || carrier {
		return "", false
	}
	// "Two kids. Meera and Kavi": how many there are is not one of them.
	if len(ws) == 2 && canon.IsNumberWord(strings.ToLower(ws[0])) && listMemberNouns[strings.ToLower(ws[1])] {
		return "", false
	}
	if len(ws) == 1 {
		w := strings.ToLower(ws[0])
		for _, d := range weekdays {
			if w == d || w == d+"s" {
				return strings.ToUpper(d[:1]) + d[1:], true
			}
		}
	}
	return strings.Join(ws, " "), true
}

// daysIn writes the weekdays among phrases as the days' names, each once.
func daysIn(phrases []string) []string {
	var days []string
	for _, d := range phrases {
		if day, ok := listItem(d); ok && slices.Contains(weekdays, strings.ToLower(day)) && !slices.Contains(days, day) {
			days = append(days, day)
		}
	}
	return days
}

// namesDays reports list items that answer which days: a weekday, or days named together
// ("weekdays", "any day"). "Hmm, let me check my calendar first" names none.
func namesDays(items []string) bool {
	if len(daysIn(items)) > 0 {
		return true
	}
	for _, it := range items {
		for _, w := range strings.Fields(strings.ToLower(it)) {
			switch strings.TrimSuffix(w, "s") {
			case "weekday", "weekend", "any", "every", "daily", "day":
				return true
			}
		}
	}
	return false
}

// listMemberNouns are what a caller counts the members of a list as ("two kids", "three systems").
var listMemberNouns = map[string]bool{"kids": true, "children": true, "people": true, "things": true, "items": true,
	"systems": true, "apps": true, "ones": true, "dependents": true, "daughters": true, "sons": true, "boys": true, "girls": true}

// restated cleans a list the caller may have said twice ("mostly Go and Python and SQL, I did
// some Java way back, but mostly Go and Python and SQL"): hedges dropped, and when two or more
// items were said again, the list is the items said again (what the caller stressed), each once.
func restated(items []string) []string {
	var clean []string
	count := map[string]int{}
	for _, it := range items {
		s, ok := listItem(it)
		if !ok {
			continue
		}
		clean = append(clean, s)
		count[strings.ToLower(s)]++
	}
	repeated := 0
	for _, n := range count {
		if n > 1 {
			repeated++
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, s := range clean {
		k := strings.ToLower(s)
		if seen[k] || (repeated >= 2 && count[k] < 2) {
			continue
		}
		seen[k] = true
		out = append(out, s)
	}
	return out
}

// phrase joins words, writing runs of spelled letters as one upper-case acronym ("v p n" → VPN).
func phrase(ws []asr.Word) string {
	var out []string
	var acro strings.Builder
	flush := func() {
		if acro.Len() > 0 {
			out = append(out, acro.String())
			acro.Reset()
		}
	}
	for _, w := range ws {
		t := strings.TrimSuffix(w.Text, ".")
		if len(t) == 1 && t[0] >= 'a' && t[0] <= 'z' && t != "a" && t != "i" {
			acro.WriteString(strings.ToUpper(t))
			continue
		}
		flush()
		out = append(out, t)
	}
	flush()
	return strings.Join(out, " ")
}

var monthNames = []string{"", "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}

func spokenDate(d canon.Date) string {
	s := monthNames[d.Month] + " " + ordinal(d.Day)
	if d.Year != 0 {
		s += ", " + strconv.Itoa(d.Year)
	}
	return s
}

func ordinal(n int) string {
	suf := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suf = "st"
	case n%10 == 2:
		suf = "nd"
	case n%10 == 3:
		suf = "rd"
	}
	return strconv.Itoa(n) + suf
}

func spokenNumber(f *field, n float64) string {
	s := strconv.FormatFloat(n, 'f', -1, 64)
	if strings.Contains(strings.ToLower(f.Description), "dollar") || strings.Contains(f.Name, "amount") || strings.Contains(f.Name, "deductible") {
		if n != float64(int64(n)) {
			s = strconv.FormatFloat(n, 'f', 2, 64)
		}
		return s + " dollars"
	}
	return s
}

// spacedDigits reads a code character by character: "PA2044718" → "P A 2 0 4 4 7 1 8".
func spacedDigits(s string) string {
	var out []string
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			out = append(out, strings.ToUpper(string(r)))
		}
	}
	return strings.Join(out, " ")
}

// jsonValue encodes a recorded value.
func jsonValue(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// allFields lists the record fields and then the other tools' arguments the agent may ask for.
func (m *model) allFields() []*field {
	out := append([]*field(nil), m.fields...)
	seen := map[string]bool{}
	for _, f := range m.fields {
		seen[f.Name] = true
	}
	for _, r := range []role{roleVerify, roleLookup} {
		for _, t := range m.byRole[r] {
			for i := range t.Params {
				if p := &t.Params[i]; !seen[p.Name] {
					seen[p.Name] = true
					out = append(out, p)
				}
			}
		}
	}
	return out
}

var (
	numberWords = map[string]bool{"zero": true, "oh": true, "one": true, "two": true, "three": true, "four": true,
		"five": true, "six": true, "seven": true, "eight": true, "nine": true, "ten": true, "eleven": true, "twelve": true,
		"twenty": true, "thirty": true, "forty": true, "fifty": true, "sixty": true, "seventy": true, "eighty": true,
		"ninety": true, "hundred": true, "thousand": true, "double": true, "for": true, "to": true, "too": true, "won": true}
	ackWords = map[string]bool{"okay": true, "ok": true, "yes": true, "no": true, "sure": true, "sorry": true, "right": true, "thanks": true}
)

// plausible is a cheap out-of-grammar check: a grammar always returns one of its sentences, so a
// typed answer is only believed when the open-vocabulary transcript of the same audio has
// something of that type in it (a number word, a month, a spelled letter, a choice-sized reply).
func plausible(k valueKind, words []string) bool {
	if k == kindIdentifier {
		// A spelled code: at least half of what was heard is digits and letters (the spelling
		// alphabet's "papa", "P as in Paul" included).
		n := 0
		for i, w := range words {
			if numberWords[w] || len(w) == 1 || spellingWords[w] || (w == "in" && i > 0 && words[i-1] == "as") {
				n++
			}
		}
		return len(words) > 0 && 2*n >= len(words)
	}
	for _, w := range words {
		switch {
		case k == kindChoice || k == kindYesNo:
		case numberWords[w] || isOrdinalWord(w):
			return true
		case k == kindDate || k == kindDateRange:
			if monthRE.MatchString(" " + w + " ") {
				return true
			}
		}
	}
	if k == kindYesNo {
		return true
	}
	if k == kindChoice {
		if len(words) == 0 || len(words) > 3 {
			return false
		}
		for _, w := range words {
			if ackWords[w] {
				return false
			}
		}
		return true
	}
	return false
}

// spellingWords are the spelling alphabet and the words of "P as in Paul".
var spellingWords = map[string]bool{"alpha": true, "bravo": true, "charlie": true, "delta": true, "echo": true, "foxtrot": true,
	"golf": true, "hotel": true, "india": true, "juliet": true, "kilo": true, "lima": true, "mike": true, "november": true,
	"oscar": true, "papa": true, "quebec": true, "romeo": true, "sierra": true, "tango": true, "uniform": true, "victor": true,
	"whiskey": true, "x-ray": true, "yankee": true, "zulu": true, "as": true, "dash": true}

func isOrdinalWord(w string) bool {
	return ordinalWords[w] || ordinalDigitsRE.MatchString(w)
}

// ordinalWords are the ordinals a day of the month is said with ("twenty" "first" are two words
// to the recognizer). Not every word in -th: "month", "with" and "both" are none.
var ordinalWords = map[string]bool{"first": true, "second": true, "third": true, "fourth": true, "fifth": true, "sixth": true,
	"seventh": true, "eighth": true, "ninth": true, "tenth": true, "eleventh": true, "twelfth": true, "thirteenth": true,
	"fourteenth": true, "fifteenth": true, "sixteenth": true, "seventeenth": true, "eighteenth": true, "nineteenth": true,
	"twentieth": true, "thirtieth": true}

var ordinalDigitsRE = regexp.MustCompile(`^\d+(st|nd|rd|th)$`)

// onlyAcknowledges reports a reply that is just "okay" or "sure": the caller did not hear a
// question it could answer.
func onlyAcknowledges(words []string) bool {
	if len(words) == 0 || len(words) > 2 {
		return false
	}
	for _, w := range words {
		if w != "okay" && w != "ok" && w != "sure" && w != "alright" && w != "all" && w != "right" && w != "uh" && w != "um" && w != "yes" && w != "yeah" {
			return false
		}
	}
	return true
}

// containsPhraseAny reports whether the words name field f.
func containsPhraseAny(words []string, f *field) bool {
	if f == nil {
		return false
	}
	for _, w := range words {
		if containsKeyword(f, w) {
			return true
		}
	}
	return false
}

// fillerWords never count against a grammar: hesitations and courtesy words.
var fillerWords = map[string]bool{"um": true, "uh": true, "hmm": true, "so": true, "well": true, "yes": true, "okay": true,
	"sure": true, "please": true, "thanks": true, "the": true, "a": true}

// soundAlikes are what the open model often hears for dictated digits and letters ("five of
// three" for "five oh three"): they do not show that a reply left the grammar.
var soundAlikes = map[string]bool{"of": true, "for": true, "to": true, "too": true, "won": true, "ate": true, "line": true,
	"fine": true, "tree": true, "free": true, "though": true, "the": true, "a": true, "and": true, "in": true, "or": true,
	"bye": true, "by": true, "be": true, "see": true, "sea": true, "pee": true, "tea": true, "you": false}

// forced reports whether at least two words, and at least a fifth, of the open transcript
// are neither in the slot grammar's vocabulary nor sound-alikes of its digits: the grammar then
// returned the nearest of its sentences, not what was said. (A word or two the open model misheard
// in a plain answer, "share" for "sure", does not count.)
func forced(s *asr.Slot, words []string) bool { return forcedBy(outsideGrammar(s, words), words) }

func forcedBy(out int, words []string) bool { return out >= 2 && 5*out >= len(words) }

// sane rejects grammar readings no caller gives: codes longer than sixteen characters.
func sane(f *field, v asr.Value) bool {
	if f.Kind == kindIdentifier || f.Kind == kindDigits {
		return len(v.Text) <= 16
	}
	return true
}

var (
	digitWords = map[string]bool{"zero": true, "oh": true, "one": true, "two": true, "three": true, "four": true,
		"five": true, "six": true, "seven": true, "eight": true, "nine": true}
	teensAndTens = map[string]bool{"ten": true, "eleven": true, "twelve": true, "thirteen": true, "fourteen": true,
		"fifteen": true, "sixteen": true, "seventeen": true, "eighteen": true, "nineteen": true, "twenty": true,
		"thirty": true, "forty": true, "fifty": true, "sixty": true, "seventy": true, "eighty": true, "ninety": true}
)

// zeroForOr undoes the recognizer's commonest confusion in numbers: a spoken zero, "oh", written
// "or" ("six or eight one" for 6081, "fifteen or two Magnolia" for 1502). It is zero inside a run
// of three or more digit words, or between a teen or tens word and a digit; "two or three
// payments" stays a choice.
func zeroForOr(r asr.Result) asr.Result {
	ws := r.Words
	changed := false
	for i := 1; i+1 < len(ws); i++ {
		if ws[i].Text != "or" {
			continue
		}
		left, right := 0, 0
		for j := i - 1; j >= 0 && digitWords[ws[j].Text]; j-- {
			left++
		}
		for j := i + 1; j < len(ws) && digitWords[ws[j].Text]; j++ {
			right++
		}
		if left > 0 && right > 0 && left+right >= 3 || teensAndTens[ws[i-1].Text] && digitWords[ws[i+1].Text] && ws[i+1].Text != "oh" {
			if !changed {
				ws = slices.Clone(ws)
				changed = true
			}
			ws[i].Text = "oh"
		}
	}
	return withWords(r, ws, changed)
}

// withWords is r with its words (and text) rewritten to ws, when changed.
func withWords(r asr.Result, ws []asr.Word, changed bool) asr.Result {
	if changed {
		r.Words, r.Text = ws, joinWords(ws)
	}
	return r
}

// emailForAMale undoes the open vocabulary's commonest mishearing of "email": "a male" ("text
// message and a male those"), "e male", "a mail", where it ends a phrase (the turn, a pause, a
// separator or "address" follows), not "a male nurse".
func emailForAMale(r asr.Result) asr.Result {
	ws := r.Words
	var out []asr.Word
	changed := false
	for i := 0; i < len(ws); i++ {
		if i+1 < len(ws) && (ws[i].Text == "a" || ws[i].Text == "e") && (ws[i+1].Text == "male" || ws[i+1].Text == "mail") {
			j := i + 2
			if j == len(ws) || ws[j].Start-ws[i+1].End >= 150*time.Millisecond || listSeparators[ws[j].Text] || quantifiers[ws[j].Text] ||
				ws[j].Text == "those" || ws[j].Text == "address" {
				out = append(out, asr.Word{Text: "email", Start: ws[i].Start, End: ws[i+1].End, Posterior: ws[i+1].Posterior})
				i++
				changed = true
				continue
			}
		}
		out = append(out, ws[i])
	}
	return withWords(r, out, changed)
}

// fourForFor undoes the recognizer's other confusion of a small count: "four" written "for"
// where no preposition stands: at the end of a turn after a verb of saying or wanting ("I said
// for"), and before the things counted after one ("I need for payments") or after a pause
// ("hang on | for payments"); and "I said floor" at the end of a turn. "I need it for work" and
// "what's that for" keep it.
func fourForFor(r asr.Result) asr.Result {
	ws := r.Words
	changed := false
	for i := range ws {
		// "Um, actually, that's wrong. I said four." is heard "… i said floor" too.
		saidFloor := ws[i].Text == "floor" && i == len(ws)-1 && i > 0 && ws[i-1].Text == "said"
		if ws[i].Text != "for" && !saidFloor {
			continue
		}
		counted := i+1 < len(ws) && strings.HasSuffix(ws[i+1].Text, "s") && (i+2 == len(ws) || ws[i+2].Text != "to")
		switch {
		case i > 0 && (countVerbs[ws[i-1].Text] || ws[i-1].Text == "it" && i > 1 && ws[i-2].Text == "make"):
			if i+1 < len(ws) && !counted {
				continue
			}
		case i == 0 || ws[i].Start-ws[i-1].End >= 250*time.Millisecond:
			// "Hang on, hang on. Four payments, not what I said before."
			if !counted {
				continue
			}
		default:
			continue
		}
		if !changed {
			ws = slices.Clone(ws)
			changed = true
		}
		ws[i].Text = "four"
	}
	return withWords(r, ws, changed)
}

// countVerbs are the verbs a count follows straight ("I need four", "let's do four", "I said
// four"); "make it four" too.
var countVerbs = map[string]bool{"need": true, "want": true, "said": true, "do": true, "take": true, "make": true, "like": true, "it's": true}

// carrierAsLetters reads a code the grammar heard with letters made of the words before it as the
// code the open vocabulary heard after those words: "nope sorry my employee id is w x five eight
// two one three" is WX58213, which the grammar, forced through the carrier, read R8YMAAGSWX58213.
// The grammar's reading stays the first alternative.
func carrierAsLetters(l *listener, f *field, s *asr.Slot, v fieldValue, text string) fieldValue {
	av, ok := l.openCode(f, s, text)
	got, open := fmt.Sprint(v.value), fmt.Sprint(av.value)
	// Four symbols or more before it are carrier words; fewer are the code's own letters, which the
	// open vocabulary drops ("pa two zero …" for PA2044718).
	if !ok || symbols(open) < 4 || len(got)-len(open) < 4 || !strings.HasSuffix(got, open) {
		return v
	}
	av.unsure = true
	av.alts = append([]fieldValue{{field: v.field, value: v.value, spoken: v.spoken}}, v.alts...)
	return av
}

// openCode is the field's value as the slot reads it from the open transcript.
func (l *listener) openCode(f *field, s *asr.Slot, text string) (fieldValue, bool) {
	ov, ok := s.Parse(text)
	if !ok {
		return fieldValue{}, false
	}
	return l.fieldValue(f, ov)
}

// withNote adds a note to what a turn's understanding says of itself.
func withNote(why, note string) string { return strings.TrimPrefix(why+"; "+note, "; ") }

// choiceCues are words by which callers describe what a choice's word names without saying it:
// "the supply line under the upstairs toilet burst" is a plumbing leak, "the radiators are cold"
// a heating issue. A cue shared by two choices' words (a "pipe" that burst or froze) names
// neither, so none is listed.
var choiceCues = map[string][]string{
	"plumbing":   {"plumber", "toilet", "sink", "faucet", "drain", "hose", "supply"},
	"leak":       {"leaking", "drip", "dripping", "burst"},
	"heating":    {"heat", "radiator", "radiators", "furnace", "boiler", "thermostat"},
	"electrical": {"outlet", "outlets", "breaker", "wiring", "sparks", "sparking"},
	"appliance":  {"dishwasher", "fridge", "refrigerator", "washer", "dryer", "oven", "stove", "heater"},
	"storm":      {"wind", "hail", "lightning"},
	"sewer":      {"sewage"},
}

// partialChoice is the one choice that shares a word with the answer, by its stem ("plumber" and
// "plumbing leak") or by a cue (choiceCues), when no other choice does.
func partialChoice(words []string, enum []string) (string, bool) {
	var found []string
	for _, c := range enum {
		for _, cw := range nameWords(c) {
			if genericWords[cw] || len(cw) < 4 {
				continue
			}
			named := func(w string) bool {
				return sharesStem(w, cw) || slices.ContainsFunc(choiceCues[cw], func(cue string) bool { return sharesStem(w, cue) })
			}
			if slices.ContainsFunc(words, named) {
				found = append(found, c)
				break
			}
		}
	}
	if len(found) != 1 {
		return "", false
	}
	return found[0], true
}

// sharesStem reports two words with a common start of five letters, or one that starts the other
// whole ("leak", "leaking").
func sharesStem(a, b string) bool {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n >= 5 || n >= 4 && (n == len(a) || n == len(b))
}

// centsUnsaid reports an amount the grammar read with cents where the open transcript has the
// whole amount and no cents: "it's two hundred nineteen dollars, not what I said" is 219, which
// the number grammar, forced through "not what I said", read 219.05.
func centsUnsaid(s *asr.Slot, v asr.Value, text string) bool {
	if s.Kind != asr.KindNumber || v.Number == math.Trunc(v.Number) || strings.Contains(text, "cent") || strings.Contains(text, "point") {
		return false
	}
	ov, ok := s.Parse(text)
	return ok && ov.Number == math.Trunc(v.Number)
}
