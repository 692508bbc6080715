package flow

import (
	"regexp"
	"sort"
	"strings"

	"github.com/voicebench/humanaudit/internal/canon"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// ReadValue is one value the agent read back: the fact it named, what it said, and whether that
// matches the caller's current version of the fact under the grader's canonicalisation.
type ReadValue struct {
	Fact    string
	Version int // the caller's current version
	Said    string
	// Judged says the value could be read the fact's way and compared; Match is then whether it
	// matches. An unjudged value (a paraphrase, a code) is neither corrected nor asked about.
	Judged bool
	Match  bool
	pos    int
}

// readBackEnd ends the value read after a fact's name: a sentence end, a semicolon, ", and", or a
// question.
var readBackEnd = regexp.MustCompile(`(?i)([.?!;](\s|$)|,\s+and\s|\s+and\s+(your|the|my)\s|\s+is\s+that\s)`)

// valueEnd is where the value read at the start of rest ends (readBackEnd), past the stops of
// abbreviated titles: "Dr. Lleuw" is one value, not "Dr".
func valueEnd(rest string) int {
	for from := 0; from < len(rest); {
		m := readBackEnd.FindStringIndex(rest[from:])
		if m == nil {
			break
		}
		at := from + m[0]
		if rest[at] == '.' {
			ws := strings.Fields(rest[:at])
			if len(ws) > 0 && nameTitles[strings.ToLower(ws[len(ws)-1])] && !strings.HasSuffix(rest[:at], " ") {
				from = at + 1
				continue
			}
		}
		return at
	}
	return len(rest)
}

// readBackLead is what agents put between a fact's name and its value.
var readBackLead = regexp.MustCompile(`(?i)^\s*(:|as|is|was|of|at|to be|=|-)?\s*(as|is)?\s*`)

// ReadBack finds the values of facts the caller knows (known: fact → current version) that an
// agent's read-back states, in the order spoken. A value is found after a phrase that names the
// fact (its asked_as phrases, its label, its field name, the synonyms of its field type) and
// compared with the fact's current version through the grader's canonicalisers. Only values that
// can be read the fact's way count: an identifier, date, number, phone or e-mail must parse as one;
// free text counts when it is no longer than the value plus two words.
func ReadBack(t *task.Task, known map[string]int, text string) []ReadValue {
	lower := strings.ToLower(strings.ReplaceAll(text, "’", "'"))
	var out []ReadValue
	for i := range t.User.Facts {
		f := &t.User.Facts[i]
		v := known[f.ID]
		if v == 0 || f.Field == "" || v > len(f.Versions) {
			continue
		}
		at, end := -1, 0
		phrases := mentionPhrases(t, f)
		for _, p := range phrases {
			if i := wordIndex(lower, p); i >= 0 && (at < 0 || i < at) {
				at, end = i, i+len(p)
			}
		}
		if at < 0 {
			continue
		}
		rest := text[end:]
		rest = rest[:valueEnd(rest)]
		said := strings.TrimSpace(strings.TrimRight(readBackLead.ReplaceAllString(rest, ""), " ,"))
		said = trimNaming(phrases, f.Label, said, strings.ContainsAny(f.Versions[v-1].Value, "0123456789"))
		if said == "" {
			continue
		}
		match, readable := sameValue(t, f, f.Versions[v-1], said)
		out = append(out, ReadValue{Fact: f.ID, Version: v, Said: said, Judged: readable, Match: match || !readable, pos: at})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].pos < out[j].pos })
	return out
}

// unnamedLead is what an agent says before a value it reads back without naming it ("That's six,
// eight, five, two, three. Is that right?").
var unnamedLead = regexp.MustCompile(`(?i)\b(?:so\s+)?(?:that's|that is|i have|i've got|i got|i heard|you said)\s+`)

// UnnamedReadBack reads a read-back that names no fact as one of fact, the one value the caller
// gave in its last turn: a person who has just said a ZIP code hears "that's six, eight, five, two,
// three?" as the ZIP read back, and says no when it is wrong. Only facts whose values have a shape
// (a code, a date, a number, a phone number, an e-mail) and said values that read that way are
// judged, and names (see sameName).
func UnnamedReadBack(t *task.Task, known map[string]int, fact, text string) []ReadValue {
	f, ok := t.Fact(fact)
	v := known[fact]
	if !ok || v == 0 || v > len(f.Versions) {
		return nil
	}
	// Only a value with a shape of its own, or a name: without the fact's name, words
	// ("everything I need") are no read-back of a description.
	value := f.Versions[v-1].Value
	name := isProperName(value)
	switch vt := valueType(t, f, value); {
	case vt == "identifier", vt == "date", vt == "number", vt == "phone", strings.Contains(value, "@"), name:
	default:
		return nil
	}
	m := unnamedLead.FindStringIndex(text)
	if m == nil {
		return nil
	}
	rest := text[m[1]:]
	rest = rest[:valueEnd(rest)]
	said := strings.TrimSpace(strings.TrimRight(rest, " ,"))
	if said == "" {
		return nil
	}
	if name {
		match, readable := sameName(value, said)
		if !readable {
			return nil
		}
		return []ReadValue{{Fact: fact, Version: v, Said: said, Judged: true, Match: match, pos: m[0]}}
	}
	match, readable := sameValue(t, f, f.Versions[v-1], said)
	if !readable {
		return nil
	}
	return []ReadValue{{Fact: fact, Version: v, Said: said, Judged: true, Match: match, pos: m[0]}}
}

// isProperName reports a value that is a name: one to five words, each capitalised ("Anders
// Nakamura-Obi", "Harbor and Pine Restaurant Group", "Dr. Oluwaseun Adeyemi"), joiners aside.
func isProperName(value string) bool {
	ws := strings.Fields(value)
	if len(ws) == 0 || len(ws) > 5 {
		return false
	}
	caps := 0
	for _, w := range ws {
		switch {
		case nameJoiners[strings.ToLower(w)]:
		case w[0] >= 'A' && w[0] <= 'Z' && !strings.ContainsAny(w, "0123456789@"):
			caps++
		default:
			return false
		}
	}
	return caps > 0
}

// nameJoiners may sit inside a name uncapitalised.
var nameJoiners = map[string]bool{"and": true, "of": true, "the": true, "de": true, "van": true, "von": true, "del": true, "la": true}

// sameName judges a name read back right after the caller said it, as the caller hears it: right
// when every word of it is a word of the name (a first name alone, "Mr. Nakamura-Obi", the name
// with its spelling), wrong when it has a word the name does not ("Amgers Nakamura", "Charter"
// for Harbor and Pine). Spelled letters, titles and joiners are not judged; a read-back with no
// word left, or with a word not capitalised as a name is, is no read-back of the name.
func sameName(value, said string) (match, readable bool) {
	own := map[string]bool{}
	for _, t := range nameTokens(strings.ToLower(value)) {
		own[t.word] = true
	}
	words, wrong, prevName := 0, false, false
	for _, t := range nameTokens(said) {
		w, lw := t.word, strings.ToLower(t.word)
		// A read-back word is the agent's own after a pause ("Anders Nakamura-Obi, correct?",
		// "Great, Anders") but part of the name when said straight after a word of it ("Anders
		// Nakamura Okay" for Nakamura-Obi).
		aside := readBackWords[lw] && (t.afterPause || !prevName)
		if len(w) == 1 || nameTitles[lw] || nameJoiners[lw] || aside {
			prevName = false
			continue
		}
		if w[0] < 'A' || w[0] > 'Z' {
			return false, false // "that's everything I need": words, not a name
		}
		words++
		prevName = true
		wrong = wrong || !own[lw]
	}
	return !wrong, words > 0
}

// nameToken is a word of a name as read back, and whether a pause (a comma, a stop) or the start
// came before it.
type nameToken struct {
	word       string
	afterPause bool
}

// nameTokens splits a name read back into words: spaces, hyphens, apostrophes and quotes join the
// words of a name; commas and stops are pauses.
func nameTokens(s string) []nameToken {
	var out []nameToken
	pause, start := true, -1
	for i, r := range s + " " {
		soft := r == ' ' || r == '-' || r == '\'' || r == '"'
		hard := r == ',' || r == '.' || r == '?' || r == '!' || r == ';' || r == ':'
		if !soft && !hard {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, nameToken{word: s[start:i], afterPause: pause})
			start, pause = -1, false
		}
		pause = pause || hard
	}
	return out
}

// readBackWords are what agents say around a name they read back ("Anders Nakamura-Obi,
// Correct?", "Great, Anders"): never a word of the name read.
var readBackWords = map[string]bool{"correct": true, "right": true, "yes": true, "okay": true, "ok": true, "thanks": true,
	"thank": true, "you": true, "please": true, "sir": true, "madam": true, "ma'am": true, "great": true, "perfect": true,
	"got": true, "it": true, "so": true, "and": true, "is": true}

// nameTitles are what agents put before a name.
var nameTitles = map[string]bool{"mr": true, "mrs": true, "ms": true, "miss": true, "dr": true, "doctor": true, "mx": true}

// namingFiller are the words agents put between a fact's name and its value besides the fact's
// own words ("last four digits of the card 7 3 0 6", "the policy number on file is …").
var namingFiller = map[string]bool{"the": true, "your": true, "my": true, "of": true, "on": true, "for": true,
	"a": true, "an": true, "is": true, "are": true, "was": true, "as": true, "file": true, "that": true, "number": true}

// trimNaming drops the words before a value that still name the fact (its mention phrases and
// its label) or join name and value, so that the value alone is compared. A value with digits
// stops it at the first digit.
func trimNaming(phrases []string, label, said string, digits bool) string {
	own := map[string]bool{}
	for _, p := range append(phrases, strings.ToLower(label)) {
		for _, w := range strings.Fields(strings.NewReplacer("_", " ", "'s", "").Replace(p)) {
			own[w] = true
		}
	}
	ws := strings.Fields(said)
	k := 0
	for k < len(ws)-1 {
		w := strings.ToLower(strings.Trim(ws[k], ",:;"))
		// A digit is the value's even when the fact is named by one ("last 4": "… of the card 4 4
		// 1 9" is 4419, not "1 9").
		if !namingFiller[w] && !own[w] || digits && strings.ContainsAny(w, "0123456789") {
			break
		}
		k++
	}
	return strings.Join(ws[k:], " ")
}

// mentionPhrases are the phrases that name a fact in agent speech, longest first.
func mentionPhrases(t *task.Task, f *task.Fact) []string {
	ps := askPhrases(t, f)
	if l := normalise(f.Label); l != "" {
		for _, pre := range []string{"your ", "the ", "my "} {
			l = strings.TrimPrefix(l, pre)
		}
		if len(l) >= 4 {
			ps = append(ps, l)
		}
	}
	sort.SliceStable(ps, func(i, j int) bool { return len(ps[i]) > len(ps[j]) })
	return ps
}

// wordIndex is the index of phrase p in s on word boundaries, or -1.
func wordIndex(s, p string) int {
	if p == "" {
		return -1
	}
	for from := 0; from < len(s); {
		i := strings.Index(s[from:], p)
		if i < 0 {
			return -1
		}
		i += from
		before := i == 0 || !isWordByte(s[i-1])
		after := i+len(p) >= len(s) || !isWordByte(s[i+len(p)])
		if before && after {
			return i
		}
		from = i + 1
	}
	return -1
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80
}

// fieldType is the artifact type of the field a fact answers ("" when not an artifact field).
func fieldType(t *task.Task, f *task.Fact) string {
	if fs, ok := t.Field(f.Field); ok {
		return fs.Type
	}
	return ""
}

// sameValue compares a read value with the fact's value the grader's way; readable is false when
// what was said cannot be this kind of value (then it is no read-back of it).
func sameValue(t *task.Task, f *task.Fact, ver task.FactVersion, said string) (match, readable bool) {
	value := ver.Value
	switch valueType(t, f, value) {
	case "identifier":
		if canon.Identifier(said) == "" || !hasDigitOrUpper(said) && !spokenSymbols(said) {
			return false, false
		}
		// A code is right as written or as the caller says it: MRN-0048177 said "zero zero four
		// eight one seven seven" is that when read back, or the caller would correct a right
		// read-back with the same digits; INV-77310 said "I N V, seven seven three one oh" is not
		// "seven seven three one zero", which lacks letters the caller said.
		return canon.Same("identifier", said, value) || canon.Same("identifier", said, ver.Say()), true
	case "date":
		d, ok := canon.ParseDate(said)
		if !ok {
			ds := canon.FindDates(said)
			if len(ds) == 0 {
				return false, false
			}
			d = ds[0]
		}
		w, ok := canon.ParseDate(value)
		if !ok {
			return false, false
		}
		return d.Month == w.Month && d.Day == w.Day && (d.Year == 0 || w.Year == 0 || d.Year == w.Year), true
	case "number":
		n, ok := canon.FindNumber(said)
		w, ok2 := canon.Number(value)
		if !ok || !ok2 {
			return false, false
		}
		return n == w, true
	case "phone":
		p := canon.Phone(said)
		if len(p) < 7 {
			return false, false
		}
		return p == canon.Phone(value), true
	}
	if strings.Contains(value, "@") || strings.Contains(said, "@") {
		es := canon.FindEmails(said)
		if len(es) == 0 {
			return false, false
		}
		return canon.Email(es[0]) == canon.Email(value), true
	}
	fs, fv := canon.Fold(said), canon.Fold(value)
	switch valueType(t, f, value) {
	case "enum", "text", "set", "list", "interval", "ordered_list":
		// A code or a paraphrase is no evidence of a wrong value; only a replaced version is.
		if fs == "" || strings.Contains(fs, fv) {
			return false, false
		}
		for _, old := range f.Versions {
			if o := canon.Fold(old.Value); o != fv && o != "" && strings.Contains(fs, o) {
				return false, true
			}
		}
		return false, false
	}
	if fs == "" || len(strings.Fields(fs)) > len(strings.Fields(fv))+2 {
		return false, false
	}
	if fieldType(t, f) == "address" {
		return strings.Contains(canon.Address(said), canon.Address(value)) || strings.Contains(canon.Address(value), canon.Address(said)), true
	}
	return strings.Contains(fs, fv) || strings.Contains(fv, fs) && len(fs) >= len(fv)*2/3, true
}

// valueType is the type a fact's value is compared as: its artifact field's, or for a fact that
// fills no artifact field (a verification key such as a date of birth or the last four digits) or
// a plain string field the shape of the value itself.
func valueType(t *task.Task, f *task.Fact, value string) string {
	ft := fieldType(t, f)
	if ft != "" && ft != "string" {
		return ft
	}
	if _, ok := canon.ParseDate(value); ok && strings.Count(value, "-") == 2 && ft == "" {
		return "date"
	}
	// A code in a plain string field (an error code, 0x80072EE7) is read back symbol by symbol
	// and heard as one: the caller compares what was read with the code they have.
	if !strings.ContainsAny(value, " @") && canon.Identifier(value) != "" && strings.ContainsAny(value, "0123456789") {
		return "identifier"
	}
	return ft
}

// spokenSymbols reports a value read out symbol by symbol ("six, eight, five, oh six", "P A two"):
// number words, digits, single letters and separators only.
func spokenSymbols(said string) bool {
	n := 0
	for _, w := range strings.FieldsFunc(strings.ToLower(said), func(r rune) bool { return r == ' ' || r == ',' || r == '-' || r == '.' }) {
		switch {
		case canon.IsNumberWord(w), canon.IsDigits(w), len(w) == 1 && w[0] >= 'a' && w[0] <= 'z', w == "double", w == "triple", w == "dash":
			n++
		default:
			return false
		}
	}
	return n > 0
}

func hasDigitOrUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' || s[i] >= 'A' && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

// readBackFix is the correction of the first value the agent read back wrong in its last turn,
// when it read any back (a confirm or summarise act, or an approval request).
func (e *Engine) readBackFix() (trace.Plan, bool) {
	for _, rv := range e.turnRead {
		if rv.Judged && !rv.Match {
			return trace.Plan{ID: planID("fix_readback", rv.Fact, rv.Version), Kind: trace.PlanCorrect,
				Facts: []trace.FactRef{{Fact: rv.Fact, Version: rv.Version}}}, true
		}
	}
	return trace.Plan{}, false
}
