package dialog

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
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
)

// expectation is what the agent asked last; the caller's next turn is read against it.
type expectation struct {
	kind  expectKind
	field *field
	last  *field // the field recorded last, which an unplaced correction is taken to be about
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
}

// heard is the agent's understanding of one caller turn.
type heard struct {
	transcript string // what the recognizer heard (sent as the caller's transcript)
	intent     intent
	values     []fieldValue
}

// Marker phrases, matched on word boundaries in the open-vocabulary transcript.
var (
	unknownMarkers    = []string{"don't have", "do not have", "don't know", "do not know", "not sure", "no idea", "can't remember", "don't remember"}
	correctionMarkers = []string{"correction", "to correct", "correct something", "correct that", "actually", "mistake", "wrong", "misread",
		"misspoke", "i meant", "oh wait", "wait sorry", "just checked", "double checked", "scratch that", "not what i said"}
	volunteerMarkers = []string{"came up", "by the way", "also", "oh and", "just got", "texted", "forgot to mention", "one more thing"}
	closeMarkers     = []string{"bye", "goodbye", "that's everything", "that is everything", "that's all", "nothing else", "that's it"}
	repeatMarkers    = []string{"slow down", "repeat", "say that again", "pardon", "come again"}
	// cutMarkers end the preamble of a correction ("… is actually <value>").
	cutMarkers = map[string]bool{"actually": true, "is": true, "it's": true, "now": true, "was": true, "be": true, "to": true}
)

func containsPhrase(text string, phrases []string) bool {
	t := " " + text + " "
	for _, p := range phrases {
		if strings.Contains(t, " "+p+" ") || strings.Contains(t, " "+p+"s ") || strings.Contains(t, " "+p+"ed ") || strings.Contains(t, " "+p+"ing ") {
			return true
		}
	}
	return false
}

// listener reads what the agent understood from a recognized caller turn, with the agent's model.
type listener struct {
	vocab func(string) bool // the recognizer's vocabulary; nil knows every word
	now   func() time.Time
}

// known reports whether a word can be used in a grammar.
func (l *listener) known(w string) bool { return l.vocab == nil || l.vocab(w) }

// understand interprets a recognized turn. Text-only turns (conversation items with input_text)
// come here too, with the text as the open-vocabulary result and no audio.
func (l *listener) understand(ctx context.Context, m *model, exp expectation, u Utterance) heard {
	lm, ans, typed := u.Open, u.Answer, u.Typed
	text := strings.ToLower(strings.TrimSpace(lm.Text))
	h := heard{transcript: lm.Text}
	if text == "" && !(typed && ans.OK) {
		return h
	}
	words := strings.Fields(text)
	correction := containsPhrase(text, correctionMarkers)
	volunteer := containsPhrase(text, volunteerMarkers)
	mentions := m.mentioned(words, m.allFields())

	// A correction or unsolicited news about another field than the one asked.
	if correction || volunteer {
		targets := l.targets(m, mentions, exp.last, correction, lm)
		for _, target := range targets {
			if exp.kind == expectField && target == exp.field && !correction {
				continue
			}
			if v, ok := l.valueAfterPreamble(ctx, target, u); ok {
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
		(exp.kind == expectField || exp.kind == expectAnythingElse) {
		// A correction the agent cannot place is not an answer to the question asked.
		h.intent = intentUnplaced
		return h
	}
	switch exp.kind {
	case expectField:
		f := exp.field
		if containsPhrase(text, unknownMarkers) {
			h.intent = intentUnknown
			return h
		}
		if onlyAcknowledges(words) {
			h.intent = intentAcknowledge
			return h
		}
		if f.Kind == kindChoice || f.Kind == kindYesNo {
			// Enumerations are read from the open transcript first: a grammar of a few words
			// forces any reply into one of them.
			if v, ok := l.freeValue(f, lm.Words, text); ok {
				h.values = []fieldValue{v}
				h.intent = intentAnswer
				return h
			}
		}
		wasForced := false
		if slot := f.slot(l.known); typed && slot != nil && f.Kind != kindIdentifier && forced(slot, words) {
			// The reply had words the grammar does not know ("you can reach me at … that's my
			// cell"), so the grammar forced it into its nearest sentence: read the value from the
			// open transcript, and do not believe the grammar when that holds none (not for spelled
			// codes, which the open model hears poorly).
			wasForced = true
			if v, ok := slot.Parse(text); ok {
				if fv, ok := l.fieldValue(f, v); ok {
					h.values = []fieldValue{fv}
					h.intent = intentAnswer
					return h
				}
			}
		}
		if typed && !wasForced && ans.OK && plausible(f.Kind, words) && sane(f, ans.Value) {
			if v, ok := l.fieldValue(f, ans.Value); ok {
				h.transcript = ans.Text
				h.values = []fieldValue{v}
				h.intent = intentAnswer
				return h
			}
		}
		if slot := f.slot(l.known); typed && slot != nil && f.Kind != kindChoice && f.Kind != kindYesNo && plausible(f.Kind, words) {
			// The grammar could not take the whole reply ("starting January fourth, that's when
			// the lease starts"): read the value from the open transcript instead.
			if v, ok := slot.Parse(text); ok {
				if fv, ok := l.fieldValue(f, v); ok {
					h.values = []fieldValue{fv}
					h.intent = intentAnswer
					return h
				}
			}
		}
		if !typed {
			if v, ok := l.freeValue(f, lm.Words, text); ok {
				h.values = []fieldValue{v}
				h.intent = intentAnswer
				return h
			}
		}
		h.intent = intentOther
	case expectApproval, expectAnythingElse:
		if containsPhrase(text, closeMarkers) {
			h.intent = intentClose
			return h
		}
		yes, ok := asr.Polarity(text)
		if !ok && ans.OK {
			yes, ok = ans.Value.Text == "yes", true
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
		if containsPhrase(text, closeMarkers) {
			h.intent = intentClose
		}
	}
	return h
}

// targets lists the fields a correction or piece of news may be about, likeliest first: the ones
// the caller names; for a correction, the field recorded last (a correction that names nothing is
// most likely about the last answer); then the only field whose type fits the value said (a date
// when a month is named, an amount when dollars are said, a phone number for a long run of
// digits). The caller's value must then read as that field's type.
func (l *listener) targets(m *model, mentions []*field, last *field, correction bool, lm asr.Result) []*field {
	out := append([]*field(nil), mentions...)
	if correction && last != nil && !slices.Contains(out, last) {
		out = append(out, last)
	}
	text := " " + strings.ToLower(lm.Text) + " "
	var want valueKind = -1
	switch {
	case monthRE.MatchString(text):
		want = kindDate
	case strings.Contains(text, " dollar") || strings.Contains(text, " cents "):
		want = kindNumber
	case len(canon.Digits(text)) >= 7:
		want = kindPhone
	}
	var found *field
	for _, f := range m.allFields() {
		if f.Kind == want {
			if found != nil {
				return out // ambiguous
			}
			found = f
		}
	}
	if found != nil && !slices.Contains(out, found) {
		out = append(out, found)
	}
	return out
}

var monthRE = regexp.MustCompile(` (january|february|march|april|may|june|july|august|september|october|november|december) `)

// valueAfterPreamble reads the value of f from a turn that first says what it is about ("sorry, I
// need to correct something, my callback number is actually …"): the speech after the last
// preamble word is decoded with f's grammar (when the turn was spoken); free text is taken from
// the words after it.
func (l *listener) valueAfterPreamble(ctx context.Context, f *field, u Utterance) (fieldValue, bool) {
	lm := u.Open
	cut := -1
	for i, w := range lm.Words {
		if cutMarkers[w.Text] || containsKeyword(f, w.Text) {
			cut = i
		}
	}
	if cut == len(lm.Words)-1 {
		cut = -1 // nothing after it
	}
	rest := lm.Words[cut+1:]
	restText := joinWords(rest)
	if slot := f.slot(l.known); slot != nil {
		if f.Kind != kindChoice && f.Kind != kindYesNo && !plausible(f.Kind, strings.Fields(restText)) {
			return fieldValue{}, false // nothing of the field's type was said after the preamble
		}
		if cut >= 0 && u.Reread != nil {
			if ans, ok := u.Reread(ctx, lm.Words[cut].End, *slot); ok && ans.OK {
				if v, ok := l.fieldValue(f, ans.Value); ok {
					return v, true
				}
			}
		}
		if v, ok := slot.Parse(restText); ok {
			if fv, ok := l.fieldValue(f, v); ok {
				return fv, true
			}
		}
		if f.Kind != kindChoice {
			return fieldValue{}, false
		}
	}
	return l.freeValue(f, rest, restText)
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

func joinWords(ws []asr.Word) string {
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = w.Text
	}
	return strings.Join(s, " ")
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
		return fieldValue{field: f, value: d.String(), spoken: spokenDate(d)}, true
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
	listSeparators = map[string]bool{"and": true, "then": true, "also": true, "plus": true}
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
func (l *listener) freeValue(f *field, ws []asr.Word, text string) (fieldValue, bool) {
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
			s = asr.Slot{Kind: asr.KindYesNo}
		}
		v, ok := s.Parse(text)
		if !ok {
			return fieldValue{}, false
		}
		return l.fieldValue(f, v)
	case kindList:
		items := splitItems(ws)
		if len(items) == 0 {
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
	case kindEmail:
		e := canon.Email(joinWords(ws))
		at := strings.Index(e, "@")
		if at <= 0 || !strings.Contains(e[at:], ".") {
			return fieldValue{}, false // not an address: no "at … dot …" was heard
		}
		return fieldValue{field: f, value: e, spoken: joinWords(ws)}, true
	}
	s := phrase(ws)
	if f.Kind == kindName || f.Kind == kindAddress {
		s = titleCase(s)
	}
	return fieldValue{field: f, value: s, spoken: s}, s != ""
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
			flush()
		case determiners[w.Text] && contentWords(cur) >= 2 && !functionWords[ws[i-1].Text]:
			flush() // "… bathroom floor the kitchen ceiling": a determiner starts the next noun phrase
		}
		cur = append(cur, w)
	}
	flush()
	return items
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

func titleCase(s string) string {
	words := strings.Fields(s)
	for i, w := range words {
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		words[i] = string(r)
	}
	return strings.Join(words, " ")
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
		// A spelled code: at least half of what was heard is digits and letters.
		n := 0
		for _, w := range words {
			if numberWords[w] || len(w) == 1 {
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

func isOrdinalWord(w string) bool {
	return strings.HasSuffix(w, "th") || strings.HasSuffix(w, "first") || strings.HasSuffix(w, "second") || strings.HasSuffix(w, "third")
}

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
func forced(s *asr.Slot, words []string) bool {
	vocab := map[string]bool{}
	for _, w := range s.Grammar().Vocabulary() {
		vocab[w] = true
	}
	out := 0
	for _, w := range words {
		if !vocab[w] && !fillerWords[w] && !soundAlikes[w] && !numberWords[w] {
			out++
		}
	}
	return out >= 2 && 5*out >= len(words)
}

// sane rejects grammar readings no caller gives: codes longer than sixteen characters.
func sane(f *field, v asr.Value) bool {
	if f.Kind == kindIdentifier || f.Kind == kindDigits {
		return len(v.Text) <= 16
	}
	return true
}
