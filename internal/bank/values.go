package bank

import (
	"strconv"
	"strings"

	"github.com/voicebench/humanaudit/internal/canon"
	"github.com/voicebench/humanaudit/internal/task"
)

// utterance is a caller variant analysed once: its words and the specific values it states
// (dates, digit sequences, e-mail addresses, codes), found by canon.Extract, the reader the
// grader uses.
type utterance struct {
	raw    string
	norm   string   // " "-padded lower-case words, for phrase matching on word boundaries
	words  []string // canonical words: spoken numbers as digits, address words abbreviated
	dates  []canon.Date
	seqs   []string // digit sequences, dictation groups joined ("five oh three, five five five" = 503555)
	emails []string
	codes  []string // written codes that mix letters and digits, canonical identifiers
	ident  string   // the whole text as an identifier (spelled letters joined, fillers dropped)
}

func analyse(text string) *utterance {
	m := canon.Extract(text)
	return &utterance{raw: text, norm: " " + normalise(text) + " ", words: canonWords(text),
		dates: m.Dates, seqs: m.Digits, emails: m.Emails, codes: m.Codes, ident: m.Spelled}
}

// canonWords are the text's words as the grader's address canonicalisation sees them (spoken
// numbers as digits, street and unit words abbreviated), with letters spelled one by one joined
// into a word, so "Marquette, M A R Q U E T T E, Avenue" reads as one street name.
func canonWords(text string) []string {
	var out []string
	for _, w := range strings.Fields(canon.Address(joinLetters(text))) {
		if w = strings.Trim(w, ".,;:!?\"'()"); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// joinLetters joins runs of single letters ("E E", "M A R Q U E T T E,") into one lower-case word,
// dropping a run that repeats the word just before it, and keeps all punctuation, so dictated
// numbers stay grouped as they were said.
func joinLetters(text string) string {
	toks := strings.Fields(text)
	var out []string
	for i := 0; i < len(toks); {
		if !isLetterToken(toks[i]) || i+1 >= len(toks) || !isLetterToken(toks[i+1]) || strings.IndexFunc(toks[i], isPunct) >= 0 {
			out = append(out, toks[i])
			i++
			continue
		}
		var b strings.Builder
		j := i
		for ; j < len(toks) && isLetterToken(toks[j]); j++ {
			b.WriteString(strings.ToLower(strings.TrimFunc(toks[j], isPunct)))
			if strings.IndexFunc(toks[j], isPunct) >= 0 {
				j++
				break // punctuation ends the spelling
			}
		}
		word := b.String()
		last := toks[j-1]
		trail := last[len(strings.TrimRightFunc(last, isPunct)):]
		if len(out) > 0 && strings.EqualFold(strings.TrimFunc(out[len(out)-1], isPunct), word) {
			out[len(out)-1] += trail
		} else {
			out = append(out, word+trail)
		}
		i = j
	}
	return strings.Join(out, " ")
}

func isPunct(r rune) bool { return strings.ContainsRune(".,;:!?\"'()", r) }

// isLetterToken is a token that is one letter, possibly followed by punctuation ("E,").
func isLetterToken(tok string) bool {
	core := strings.TrimRightFunc(tok, isPunct)
	if len(core) != 1 {
		return false
	}
	c := core[0] | 0x20
	return c >= 'a' && c <= 'z'
}

func hasLetter(s string) bool {
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return true
		}
	}
	return false
}

func hasDigit(s string) bool {
	for _, r := range s {
		if r >= '0' && r <= '9' {
			return true
		}
	}
	return false
}

var punctuation = strings.NewReplacer("’", "'", ",", " ", ".", " ", "!", " ", ";", " ", ":", " ", "?", " ", "—", " ", "–", " ", "\"", " ", "(", " ", ")", " ")

func normalise(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(punctuation.Replace(s))), " ")
}

// has reports whether any phrase occurs in the utterance on word boundaries.
func (u *utterance) has(phrases ...string) bool {
	for _, p := range phrases {
		if strings.Contains(u.norm, " "+p+" ") {
			return true
		}
	}
	return false
}

// valueKind is how a fact or gold value is recognised in speech.
type valueKind int

const (
	kindText valueKind = iota
	kindDate
	kindInterval
	kindPhone
	kindNumber
	kindAddress
	kindIdentifier
	kindEmail
	kindList
)

// kindOf decides how a value of the given artifact field type (or column comparison) is spoken.
func kindOf(typ, value string) valueKind {
	if strings.Contains(value, "@") {
		return kindEmail
	}
	if (typ == "string" || typ == "text" || typ == "") && !strings.Contains(value, " ") && hasLetter(value) && hasDigit(value) {
		return kindIdentifier // a code kept as text, such as an error code
	}
	switch typ {
	case "date":
		return kindDate
	case "interval":
		return kindInterval
	case "phone":
		return kindPhone
	case "number":
		return kindNumber
	case "address":
		return kindAddress
	case "identifier":
		return kindIdentifier
	case "list", "set":
		return kindList
	}
	return kindText
}

// factKind returns the kind of a caller fact: from the artifact field it answers, else the verify or
// lookup column it is matched against, else its grader.
func factKind(t *task.Task, f *task.Fact) valueKind {
	v := f.Versions[0].Value
	if spec, ok := t.Field(f.Field); ok {
		return kindOf(spec.Type, v)
	}
	for _, tl := range t.Agent.Tools {
		for arg, c := range tl.Match {
			if arg == f.Field {
				return kindOf(compareType(c.Compare), v)
			}
		}
		for arg, c := range tl.Key {
			if arg == f.Field {
				return kindOf(compareType(c.Compare), v)
			}
		}
	}
	if _, ok := canon.ParseDate(v); ok {
		return kindDate
	}
	return kindOf("", v)
}

func compareType(c string) string {
	switch c {
	case "date", "phone", "address", "identifier", "number":
		return c
	}
	return "string"
}

// goldKind returns the kind of a grader field's gold value.
func goldKind(t *task.Task, g task.GoldField) valueKind {
	switch g.Grader {
	case "date":
		return kindDate
	case "phone":
		return kindPhone
	case "numeric":
		return kindNumber
	case "address":
		return kindAddress
	case "identifier":
		return kindIdentifier
	case "interval":
		return kindInterval
	}
	if spec, ok := t.Field(g.Field); ok {
		return kindOf(spec.Type, "")
	}
	return kindText
}

// stopWords do not count as content when deciding whether a text value was said.
var stopWords = map[string]bool{
	"the": true, "a": true, "an": true, "and": true, "or": true, "of": true, "to": true, "in": true,
	"on": true, "at": true, "for": true, "my": true, "is": true, "it": true, "it's": true, "was": true,
	"i": true, "i'm": true, "me": true, "with": true, "from": true, "by": true, "that": true, "this": true,
	"then": true, "about": true, "just": true, "so": true, "but": true, "too": true, "now": true, "dot": true,
}

func contentWords(s string) []string {
	var out []string
	for _, w := range canonWords(s) {
		if !stopWords[w] {
			out = append(out, w)
		}
	}
	return out
}

// wordShare is the share of a value's content words that the utterance contains.
func (u *utterance) wordShare(value string) float64 {
	cw := contentWords(value)
	if len(cw) == 0 {
		return 0
	}
	have := map[string]bool{}
	for _, w := range u.words {
		have[w] = true
	}
	n := 0
	for _, w := range cw {
		if have[w] {
			n++
		}
	}
	return float64(n) / float64(len(cw))
}

// states reports whether the utterance says a value of the given kind, in any of its written or
// spoken forms. short allows one- and two-digit numbers to count (they collide with everyday
// words, so only a plan's own facts are checked that closely); strict asks for the whole value
// rather than most of its words (used when looking for values a variant must not say).
func (u *utterance) states(kind valueKind, forms []string, short, strict bool) bool {
	for _, v := range forms {
		if v == "" {
			continue
		}
		if fv := canon.Fold(v); len(fv) >= 3 && strings.Contains(" "+canon.Fold(u.raw)+" ", fv) {
			if kind == kindText || kind == kindList || kind == kindEmail || len(fv) >= 5 {
				return true
			}
		}
		switch kind {
		case kindDate:
			if d, ok := canon.ParseDate(v); ok && u.hasDate(d) {
				return true
			}
		case kindInterval:
			if ds := canon.FindDates(v); len(ds) == 2 && u.hasDate(ds[0]) && u.hasDate(ds[1]) {
				return true
			}
		case kindPhone:
			if p := canon.Phone(v); len(p) >= 7 && u.hasSeq(p, false) {
				return true
			}
		case kindNumber:
			if u.hasNumber(v, short) {
				return true
			}
		case kindAddress:
			// Every word of the street line and the unit, in any order: a caller may spell the
			// street name or give the unit first.
			if street, unit := addressParts(v); street != "" && u.hasAddress(street, unitNumber(unit)) {
				return true
			}
		case kindIdentifier:
			id := canon.Identifier(v)
			bare := strings.TrimPrefix(id, canon.Identifier(canon.TypePrefix(v)))
			if len(bare) >= 3 && (strings.Contains(u.ident, bare) || containsCode(u.codes, id)) {
				return true
			}
			if len(bare) < 3 && containsCode(u.codes, id) {
				return true
			}
		case kindEmail:
			e := strings.ToLower(strings.TrimSpace(v))
			for _, x := range u.emails {
				if x == e {
					return true
				}
			}
		case kindList:
			items := strings.Split(v, ";")
			all := len(items) > 0
			for _, it := range items {
				if it = strings.TrimSpace(it); it != "" && !u.statesText(it, strict) {
					all = false
				}
			}
			if all {
				return true
			}
		default:
			if u.statesText(v, strict) {
				return true
			}
		}
	}
	return false
}

func (u *utterance) statesText(v string, strict bool) bool {
	if strings.Contains(" "+canon.Fold(u.raw)+" ", canon.Fold(v)) {
		return true
	}
	if strings.Contains(v, "@") {
		return u.states(kindEmail, []string{v}, false, strict)
	}
	if strict {
		return false
	}
	cw := contentWords(v)
	need := 1.0
	switch {
	case len(cw) > 4:
		need = 0.5 // a description is said in the caller's own words
	case len(cw) > 2:
		need = 0.6
	}
	return u.wordShare(v) >= need
}

// addressWindow is how many words around a street line a caller may put the unit ("fourteen B,
// at nine fifteen West Belmont") or spell the street name ("Chowen, C H O W E N, Avenue").
const addressWindow = 12

// hasAddress reports whether the utterance says a street line (canonical words, house number
// first) and unit number: the house number, the street's words after it, and the unit number
// nearby.
func (u *utterance) hasAddress(street, unit string) bool {
	sw := strings.Fields(street)
	if len(sw) == 0 {
		return false
	}
	for i, w := range u.words {
		if w != sw[0] {
			continue
		}
		if !within(u.words, i+1, i+1+addressWindow, sw[1:]) {
			continue
		}
		if unit == "" || within(u.words, i-addressWindow, i+addressWindow, []string{unit}) {
			return true
		}
	}
	return false
}

// within reports whether every word of want occurs in words[lo:hi] (clamped).
func within(words []string, lo, hi int, want []string) bool {
	lo, hi = max(lo, 0), min(hi, len(words))
	for _, x := range want {
		found := false
		for j := lo; j < hi; j++ {
			if words[j] == x {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func containsCode(codes []string, id string) bool {
	for _, c := range codes {
		if c == id {
			return true
		}
	}
	return false
}

func (u *utterance) hasDate(d canon.Date) bool {
	for _, x := range u.dates {
		if x.Month == d.Month && x.Day == d.Day && (x.Year == 0 || x.Year == d.Year) {
			return true
		}
	}
	return false
}

// hasSeq reports whether a digit string occurs in one of the utterance's digit sequences (or is
// one of them, when exact).
func (u *utterance) hasSeq(digits string, exact bool) bool {
	for _, s := range u.seqs {
		if s == digits || !exact && strings.Contains(s, digits) {
			return true
		}
	}
	return false
}

// hasNumber reports whether the utterance says a quantity: its digits as one sequence (cents
// included: "612.40" is said "six hundred twelve dollars and forty cents", sequences 612 and 40),
// or, for a whole number without cents, exactly that number.
func (u *utterance) hasNumber(v string, short bool) bool {
	n, ok := canon.Number(v)
	if !ok {
		return false
	}
	whole := strconv.FormatFloat(n, 'f', -1, 64)
	intPart, frac, _ := strings.Cut(whole, ".")
	if len(intPart) < 3 && frac == "" && !short {
		return false
	}
	if frac == "" {
		return u.hasSeq(intPart, true)
	}
	if len(frac) == 1 {
		frac += "0"
	}
	if u.hasSeq(intPart+frac, true) {
		return true
	}
	for i, s := range u.seqs {
		if s == intPart && i+1 < len(u.seqs) && u.seqs[i+1] == frac {
			return true
		}
	}
	return false
}

// addressParts returns the canonical street line ("2150 sw borland rd") and unit ("unit 3b") of a
// written address: what a caller must say for the address to count as said (city and ZIP are
// often left out when dictating).
func addressParts(v string) (street, unit string) {
	parts := strings.Split(v, ",")
	street = canon.Address(parts[0])
	for _, p := range parts[1:] {
		if a := canon.Address(p); strings.HasPrefix(a, "unit ") {
			unit = a
		}
	}
	if i := strings.Index(street, " unit "); i >= 0 {
		street, unit = street[:i], street[i+1:]
	}
	// The street type is often dropped when dictating ("twenty-two forty Pleasant").
	var keep []string
	for _, w := range strings.Fields(street) {
		if !streetTypes[w] {
			keep = append(keep, w)
		}
	}
	return strings.Join(keep, " "), unit
}

var streetTypes = map[string]bool{"st": true, "ave": true, "rd": true, "blvd": true, "dr": true, "ln": true, "ct": true,
	"pl": true, "ter": true, "hwy": true, "pkwy": true, "cir": true, "sq": true, "trl": true, "way": true}

// unitNumber is the number of a canonical unit ("5f" of "unit 5f"): callers often say just "five F".
func unitNumber(unit string) string {
	return strings.TrimPrefix(unit, "unit ")
}
