package dialog

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/voicebench/humanaudit/internal/asr"
	"github.com/voicebench/humanaudit/internal/canon"
)

// Names (of people and businesses), e-mail addresses and other short free-text values are read
// from the caller's words as a telephone agent would write them down: the carrier phrase ("my
// manager is", "I'd like to use") and what follows the name ("same as mine", "they fixed the
// line the same day") are left out, and what the caller spells letter by letter ("that's C I L L
// I A N") is preferred over what the open vocabulary made of the spoken word, which for a name it
// does not know is a guess.

// piece is a word of the answer or a run of spelled letters.
type piece struct {
	text  string // a word, or the letters of a run (upper case)
	run   bool
	pause bool // a pause (a comma or full stop in text) comes before it
}

// pieces groups a turn's words into words and spelled runs (two or more single letters in a row;
// "double l" was expanded by the spelling grammar's parser).
func pieces(ws []asr.Word) []piece {
	var out []piece
	for i := 0; i < len(ws); i++ {
		w := strings.TrimSuffix(ws[i].Text, ".")
		pause := i > 0 && ws[i].Start-ws[i-1].End >= 300*time.Millisecond
		if isLetter(w) {
			j := i
			var b strings.Builder
			for j < len(ws) && isLetter(strings.TrimSuffix(ws[j].Text, ".")) && (j == i || ws[j].Start-ws[j-1].End < 300*time.Millisecond) {
				b.WriteString(strings.ToUpper(strings.TrimSuffix(ws[j].Text, ".")))
				j++
			}
			if j-i >= 2 {
				out = append(out, piece{text: b.String(), run: true, pause: pause})
				i = j - 1
				continue
			}
		}
		out = append(out, piece{text: w, pause: pause})
	}
	return out
}

func isLetter(w string) bool { return len(w) == 1 && w[0] >= 'a' && w[0] <= 'z' }

// nameLeadIns are words a caller says before a name ("it's", "my name is", "this is", "I report
// to", "I'd like to use"); they are dropped from the start of the answer.
var nameLeadIns = map[string]bool{"it's": true, "it": true, "is": true, "my": true, "name": true, "names": true, "name's": true,
	"this": true, "i'm": true, "i": true, "am": true, "that's": true, "his": true, "her": true, "their": true, "our": true,
	"under": true, "sure": true, "um": true, "uh": true, "yeah": true, "yes": true, "so": true, "well": true, "oh": true,
	"okay": true, "report": true, "to": true, "i'd": true, "like": true, "use": true, "we": true, "at": true, "was": true,
	"called": true, "the": true, "full": true, "hi": true, "hello": true, "speaking": true, "mm": true, "hmm": true,
	"company": true, "business": true, "with": true, "from": true, "please": true, "go": true, "prefer": true, "want": true}

// nameStops end a name: pronouns, verbs and the other words no name is made of.
var nameStops = map[string]bool{"that's": true, "is": true, "was": true, "it's": true, "i": true, "i'm": true, "i've": true,
	"i'd": true, "they": true, "they're": true, "she": true, "he": true, "he's": true, "she's": true, "we": true, "you": true,
	"me": true, "my": true, "mine": true, "same": true, "as": true, "came": true, "come": true, "out": true, "fixed": true,
	"did": true, "been": true, "there": true, "before": true, "right": true, "now": true, "people": true, "always": true,
	"usually": true, "get": true, "got": true, "wrong": true, "spell": true, "spelled": true, "calls": true, "but": true,
	"because": true, "so": true, "it": true, "nice": true, "guy": true, "actually": true, "where": true, "which": true,
	"who": true, "through": true, "a": true, "an": true, "place": true, "on": true, "in": true, "for": true, "at": true,
	"please": true, "thanks": true, "thank": true, "all": true, "one": true, "word": true, "hyphenated": true, "like": true,
	"just": true, "initials": true, "great": true, "were": true, "are": true, "be": true, "have": true, "has": true,
	"had": true, "everybody": true, "lease": true, "years": true, "few": true, "data": true, "startup": true, "still": true,
	"kind": true, "yoga": true, "with": true, "no": true, "not": true, "if": true, "when": true, "need": true, "then": true,
	"should": true}

// nameJoiners may sit inside a name ("Harbor and Pine", "Blue Shield of Illinois").
var nameJoiners = map[string]bool{"and": true, "of": true, "the": true, "de": true, "van": true, "von": true, "del": true, "la": true}

// selfCorrections restart the name ("Marisol Quintanilla, sorry, Quintanilla-Berg").
var selfCorrections = map[string]bool{"sorry": true, "mean": true, "meant": true, "actually": true}

// nameFillers are dropped wherever they are.
var nameFillers = map[string]bool{"um": true, "uh": true, "hmm": true, "mm": true, "er": true, "oh": true}

// part is one word of the name being written down.
type part struct {
	text    string
	spelled bool
}

// nameValue reads a person's or a business's name from a turn: the open transcript, or the
// spelling grammar's reading of it when the caller spelled (its letters are surer than the open
// vocabulary's words for them).
func (l *listener) nameValue(f *field, ws []asr.Word, u Utterance) (fieldValue, bool) {
	v, ok := l.heardName(f, ws, u)
	if ok && u.Names != nil {
		v = l.withDirectory(f, v, ws, u.Names, 0, u, u)
	}
	return v, ok
}

// withDirectory gives a name the names directory's reading of it (names, from its word from on)
// as its first other reading: the one put to the caller once they refused the name as heard
// (policy.notRefused). The directory makes rare words of what follows a name, spelled letters
// above all ("ach tiara biagi"), so only its words said before the caller's spelling (found in
// turn) and by the time the name as heard (in the words heard) ended count. Its n-best readings
// are not offered: they are mostly homophones of the best ("ferrier", "farrier"), which a caller
// cannot tell apart when they are read back.
func (l *listener) withDirectory(f *field, v fieldValue, heard []asr.Word, names *asr.Result, from int, u, turn Utterance) fieldValue {
	ws := names.Words
	if from > len(ws) {
		return v
	}
	hi := len(ws)
	cut := func(at time.Duration) {
		for hi > from && ws[hi-1].Start >= at {
			hi--
		}
	}
	if at, ok := spellingStart(turn); ok {
		cut(at)
	}
	if end, ok := nameEnd(v, heard); ok {
		cut(end + nameEndSlack)
	}
	d, ok := l.writeName(f, ws[from:hi], u)
	if !ok || strings.EqualFold(fmt.Sprint(d.value), fmt.Sprint(v.value)) {
		return v
	}
	d.directory, d.unsure = true, true
	v.alts = append([]fieldValue{d}, v.alts...)
	return v
}

// heardName is the name as the open vocabulary and the spelling grammar heard it.
func (l *listener) heardName(f *field, ws []asr.Word, u Utterance) (fieldValue, bool) {
	if r := u.reading(asr.KindSpelling); r != nil && r.Answer.OK && u.Spoken && len(pieces(r.Answer.Words)) > 0 {
		if hasRun(pieces(r.Answer.Words)) {
			// The open vocabulary's reading of the name is the other candidate a failed
			// verification tries (its letters are the recognizer's weakest words).
			v, ok := l.writeName(f, r.Answer.Words, u)
			// The alternative is the words alone: the open vocabulary's letters are worse still.
			var words []asr.Word
			for _, w := range ws {
				if !isLetter(strings.TrimSuffix(w.Text, ".")) {
					words = append(words, w)
				}
			}
			if open, ook := l.writeName(f, words, u); ok && ook && open.value != v.value {
				v.alts = append(v.alts, open)
			}
			return v, ok
		}
	}
	return l.writeName(f, ws, u)
}

// writeName writes the name down from the turn's words (see nameValue).
func (l *listener) writeName(f *field, ws []asr.Word, u Utterance) (fieldValue, bool) {
	subject := map[string]bool{}
	for _, w := range strings.Fields(strings.ToLower(f.Subject + " " + strings.Join(nameWords(f.Name), " "))) {
		subject[w] = true
	}
	ps := pieces(ws)
	var parts []part
	var spelled []string
	group := -1 // index in parts where the words said since the last pause or run begin
	stopped := false
	joinNext := false
	joiner := "" // "and", "of": kept when a name word follows
	for i := 0; i < len(ps); i++ {
		p := ps[i]
		w := strings.ToLower(p.text)
		if !p.run && nameFillers[w] {
			continue
		}
		if p.run {
			// Letters the recognizer blurred ("A M G E R S" for "A N D E R S") spell the word
			// the open vocabulary heard, when that word is a sound-alike spelling of them.
			if w := confusableWith(p.text, append(slices.Clone(parts), heardWords(u)...)); w != "" {
				p.text = w
			}
			spelled = append(spelled, p.text)
			// Runs said in pieces ("A C H T E R, B E R G") are one word when together they match
			// better.
			if i+1 < len(ps) && ps[i+1].run {
				merged := p.text + ps[i+1].text
				if bestSim(merged, parts) > max(bestSim(p.text, parts), bestSim(ps[i+1].text, parts)) {
					p.text = merged
					i++
				}
			}
			// "Lumenwise, L U M E N wise": the run and the word after it spell a word said.
			if i+1 < len(ps) && !ps[i+1].run && containsPart(parts, p.text+ps[i+1].text) {
				i++
				continue
			}
			var applied bool
			if parts, applied = applyRun(parts, p.text, group, explains(ps, i) || stopped); !applied {
				// A fragment of a spelling misheard: the words after it are the rest of the
				// spelling misheard ("… be a rescue you easy" for V A S Q U E Z), not the name.
				spelled = spelled[:len(spelled)-1]
				stopped = len(parts) > 0
			}
			group = len(parts)
			continue
		}
		if (w == "hyphenated" || w == "hyphen" && stopped) && len(parts) >= 2 && !strings.Contains(parts[len(parts)-1].text, "-") {
			// "Vasquez Albrecht, hyphenated", "Salazar Whitfield, with a hyphen": the last two
			// words are one.
			n := len(parts)
			parts = append(parts[:n-2], part{text: parts[n-2].text + "-" + parts[n-1].text, spelled: parts[n-2].spelled || parts[n-1].spelled})
			continue
		}
		if stopped {
			continue // only spelled explanations still count
		}
		if len(parts) == 0 && (nameLeadIns[w] || subject[w]) {
			continue
		}
		if w == "hyphen" || w == "dash" {
			joinNext = len(parts) > 0
			continue
		}
		if w == "doctor" || w == "dr" {
			if len(parts) == 0 {
				parts = append(parts, part{text: "Dr."})
				group = len(parts)
			}
			continue
		}
		if selfCorrections[w] {
			group = len(parts)
			continue
		}
		if w == "first" && i+1 < len(ps) && strings.ToLower(ps[i+1].text) == "name" {
			// "First name Oluwaseun": the name said next goes first.
			i++
			if i+1 < len(ps) && !ps[i+1].run {
				i++
				fn := part{text: ps[i].text}
				if !containsPart(parts, fn.text) {
					at := 0
					if len(parts) > 0 && parts[0].text == "Dr." {
						at = 1
					}
					parts = append(parts[:at], append([]part{fn}, parts[at:]...)...)
				}
			}
			continue
		}
		if w == "and" && i+1 < len(ps) && strings.ToLower(ps[i+1].text) == "then" {
			i++
			group = len(parts)
			continue
		}
		if (w == "is" || w == "that's" || w == "spelled") && i+1 < len(ps) && ps[i+1].run {
			continue // "Cillian is C I L L I A N": the spelling follows
		}
		if p.pause && len(parts) > 0 && (w == "the" || w == "a" || w == "an") {
			stopped = true // "ZenFit Studio, the yoga place"
			continue
		}
		if nameStops[w] {
			if len(parts) > 0 {
				stopped = true
			}
			continue
		}
		if nameJoiners[w] {
			if len(parts) > 0 && i+1 < len(ps) && !ps[i+1].run && !nameStops[strings.ToLower(ps[i+1].text)] {
				joiner = w
			}
			continue
		}
		if p.pause || group < 0 {
			group = len(parts)
		}
		if joinNext && len(parts) > 0 {
			last := &parts[len(parts)-1]
			if !strings.HasSuffix(strings.ToLower(last.text), "-"+w) {
				last.text += "-" + titleWord(w)
			}
			joinNext = false
			continue
		}
		if len(parts) > 0 && strings.EqualFold(parts[len(parts)-1].text, w) || spelledPart(parts, w) || (p.pause && containsPart(parts, w)) {
			joiner = ""
			continue // said again ("Gwendolyn, uh, Gwendolyn Pryce-Adeyemi"), or spelled already
		}
		if joiner != "" {
			parts = append(parts, part{text: joiner})
			joiner = ""
		}
		// A later word that extends an earlier one replaces it ("Quintanilla, sorry,
		// Quintanilla-Berg").
		replaced := false
		for k := range parts {
			if strings.HasPrefix(w, strings.ToLower(parts[k].text)+"-") {
				parts[k].text, replaced = titleWord(w), true
			}
		}
		if !replaced {
			parts = append(parts, part{text: titleWord(w)})
		}
	}
	var out []string
	for _, p := range parts {
		out = append(out, p.text)
	}
	s := strings.Join(out, " ")
	if s == "" || s == "Dr." || !nameLike(parts) {
		return fieldValue{}, false
	}
	return fieldValue{field: f, value: s, spoken: s, spelled: spelled, unsure: u.Spoken && len(spelled) == 0}, true
}

// nameLike reports words that can be a name: a sentence about something else ("just so you know,
// the thermostat says fifty-seven degrees inside", said while the name was asked) is none, by
// its count of unspelled words, or its numbers.
func nameLike(parts []part) bool {
	words, numbers := 0, 0 // numbers counts runs of number words: "PPO fifteen hundred" is one
	inNumber := false
	for _, p := range parts {
		if p.spelled {
			continue
		}
		words++
		isNum := canon.IsNumberWord(strings.ToLower(p.text))
		if isNum && !inNumber {
			numbers++
		}
		inNumber = isNum
	}
	return words <= 6 && numbers < 2
}

func hasRun(ps []piece) bool {
	for _, p := range ps {
		if p.run {
			return true
		}
	}
	return false
}

// explains reports a run that the caller introduced as a spelling ("that's", "is", "spelled").
func explains(ps []piece, i int) bool {
	for j := i - 1; j >= 0 && j >= i-2; j-- {
		switch strings.ToLower(ps[j].text) {
		case "that's", "is", "spelled", "it's":
			return true
		}
	}
	return false
}

// applyRun writes a spelled word into the name: it replaces the word it spells (the most similar
// one, or, when none is, the words said just before it, which the open vocabulary misheard), or
// is added; false when the run is a fragment of a spelling misheard, and left out.
func applyRun(parts []part, run string, group int, explained bool) ([]part, bool) {
	word := titleWord(strings.ToLower(run))
	// A run that starts a later, longer run was a false start ("A N D, sorry, A N D E R S").
	for k := range parts {
		if parts[k].spelled && strings.HasPrefix(strings.ToUpper(run), strings.ToUpper(parts[k].text)) {
			parts[k].text = word
			return parts, true
		}
	}
	// "Gwendolyn, G W E N": the letters spell the start of a word said, which stands.
	for k := range parts {
		for _, comp := range strings.Split(parts[k].text, "-") {
			if len(run) >= 3 && len(comp) > len(run) && strings.HasPrefix(strings.ToUpper(comp), strings.ToUpper(run)) {
				parts[k].spelled = true
				return parts, true
			}
		}
	}
	best, at := 0.0, -1
	for k := range parts {
		for _, comp := range strings.Split(parts[k].text, "-") {
			if s := similarity(run, comp); s > best {
				best, at = s, k
			}
		}
	}
	if at >= 0 && best >= 0.5 {
		p := &parts[at]
		comps := strings.Split(p.text, "-")
		if len(comps) > 1 {
			for c := range comps {
				if similarity(run, comps[c]) == best {
					comps[c] = word
				}
			}
			p.text = strings.Join(comps, "-")
		} else {
			p.text = word
		}
		p.spelled = true
		return parts, true
	}
	if group >= 0 && group < len(parts) && !explained {
		// "Priya, P R I Y A" heard as "premium pr": the words before the run are its guess. Not
		// when the run is much the shorter: "Vasquez-Albrecht, hyphenated, [V A S Q U E Z …]"
		// heard as "be a rescue you easy … c h d" is no spelling of the name as "Chd".
		guess := 0
		for _, p := range parts[group:] {
			guess += len(strings.ReplaceAll(p.text, "-", ""))
		}
		if 2*len(run) < guess {
			return parts, false
		}
		return append(parts[:group], part{text: word, spelled: true}), true
	}
	words := 0
	for _, p := range parts {
		words += len(strings.Split(p.text, "-"))
	}
	if len(parts) > 0 && (len(run) < 3 || explained && words >= 2) {
		// Two letters that spell nothing said, or letters after the name was said whole that
		// spell none of its words: a spelling misheard.
		return parts, false
	}
	return append(parts, part{text: word, spelled: true}), true
}

func bestSim(s string, parts []part) float64 {
	best := 0.0
	for _, p := range parts {
		for _, comp := range strings.Split(p.text, "-") {
			best = max(best, similarity(s, comp))
		}
	}
	return best
}

// spelledPart reports a word the caller spelled already.
func spelledPart(parts []part, w string) bool {
	for _, p := range parts {
		if p.spelled && strings.EqualFold(p.text, w) {
			return true
		}
	}
	return false
}

func containsPart(parts []part, w string) bool {
	for _, p := range parts {
		for _, comp := range strings.Split(strings.ToLower(p.text), "-") {
			if comp == strings.ToLower(w) {
				return true
			}
		}
		if strings.EqualFold(p.text, w) {
			return true
		}
	}
	return false
}

// nameEndSlack is how far past the end of the name as heard a directory word may start (the
// two readings place word boundaries a little differently).
const nameEndSlack = 150 * time.Millisecond

// nameEnd is when the last word of the name v, as the words heard hold it, ends; false when the
// name is not made of them (it was spelled, or written from other words).
func nameEnd(v fieldValue, heard []asr.Word) (time.Duration, bool) {
	parts := strings.Fields(strings.ToLower(strings.ReplaceAll(fmt.Sprint(v.value), "-", " ")))
	if len(parts) == 0 {
		return 0, false
	}
	last := parts[len(parts)-1]
	for i := len(heard) - 1; i >= 0; i-- {
		if strings.ToLower(strings.TrimSuffix(heard[i].Text, ".")) == last {
			return heard[i].End, true
		}
	}
	return 0, false
}

// spellingStart is when the turn's first run of spelled letters begins, in the open transcript
// or the spelling grammar's reading, whichever has one sooner.
func spellingStart(u Utterance) (time.Duration, bool) {
	var at time.Duration
	found := false
	runs := func(ws []asr.Word) {
		for i := 0; i+1 < len(ws); i++ {
			a, b := strings.TrimSuffix(ws[i].Text, "."), strings.TrimSuffix(ws[i+1].Text, ".")
			if isLetter(a) && isLetter(b) && ws[i+1].Start-ws[i].End < 300*time.Millisecond {
				if !found || ws[i].Start < at {
					at, found = ws[i].Start, true
				}
				return
			}
		}
	}
	runs(u.Open.Words)
	if r := u.reading(asr.KindSpelling); r != nil && r.Answer.OK {
		runs(r.Answer.Words)
	}
	return at, found
}

// heardWords are the open transcript's words (letters aside) as name parts: what a spelled run may
// be the recognizer's garbled letters of, when the spelling grammar's reading lost the word.
func heardWords(u Utterance) []part {
	var out []part
	for _, w := range u.Open.Words {
		if t := strings.TrimSuffix(w.Text, "."); !isLetter(t) && len(t) >= 3 {
			out = append(out, part{text: titleWord(t)})
		}
	}
	return out
}

// letterClass groups the letters whose names a recognizer confuses: the E-set (bee, cee, dee, …),
// the A-set (ay, aitch, jay, kay), ef/es/ex, em/en and cue/you.
var letterClass = func() map[byte]int {
	m := map[byte]int{}
	for i, set := range []string{"bcdegptvz", "ahjk", "fsx", "mn", "qu"} {
		for j := range len(set) {
			m[set[j]] = i + 1
		}
	}
	return m
}()

// confusableWith returns, upper case, the name word already written down (heard by the open
// vocabulary, not spelled) that the spelled run may be a misheard spelling of (see confusable),
// or "" when there is none.
func confusableWith(run string, parts []part) string {
	for _, p := range parts {
		if p.spelled {
			continue
		}
		for _, comp := range strings.Split(p.text, "-") {
			if w := strings.ToUpper(comp); len(w) >= 3 && (confusable(run, w) || garbled(run, w)) {
				return w
			}
		}
	}
	return ""
}

// confusable reports whether the spelled letters heard may be word's letters misheard: as many
// letters, the differing ones of one confusion class, at least half heard exactly. A letter more
// or fewer is a spelling of its own ("Mathew, M A T H E W"), never a mishearing.
func confusable(heard, word string) bool {
	a, b := strings.ToLower(heard), strings.ToLower(word)
	if len(a) != len(b) || a == b {
		return false
	}
	exact := 0
	for i := range len(a) {
		switch {
		case a[i] == b[i]:
			exact++
		case letterClass[a[i]] == 0 || letterClass[a[i]] != letterClass[b[i]]:
			return false
		}
	}
	return 2*exact >= len(a)
}

// garbled reports a spelled run of five letters or more that is the word heard with two or more
// letters misheard beyond their confusion classes, yet still like it (as long but for two letters,
// similarity 0.5 or more; "L U M E N" of "Lumenwise" is a part of it, not a mishearing): a
// caller's own spelling of a name differs from the dictionary's by a letter ("Cillian" and
// Killian, "Mathew" and Matthew), the recognizer's reading of a long spelling by several
// ("J L D R E G H T" for A L B R E C H T).
func garbled(run, word string) bool {
	if len(run) < 5 || len(word) < 5 || len(run)-len(word) > 2 || len(word)-len(run) > 2 || similarity(run, word) < 0.5 {
		return false
	}
	return classEdits(strings.ToLower(run), strings.ToLower(word)) >= 2
}

// classEdits is the edit distance between a and b with substitutions within a confusion class free.
func classEdits(a, b string) int {
	return editDistance([]rune(a), []rune(b), func(x, y rune) bool {
		return x == y || x < 128 && y < 128 && letterClass[byte(x)] != 0 && letterClass[byte(x)] == letterClass[byte(y)]
	})
}

// sameRune is plain letter equality, for editDistance.
func sameRune(x, y rune) bool { return x == y }

// editDistance is the Levenshtein distance between a and b, a substitution of letters that same
// reports alike being free.
func editDistance(a, b []rune, same func(x, y rune) bool) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := 1
			if same(a[i-1], b[j-1]) {
				sub = 0
			}
			cur[j] = min(prev[j-1]+sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// similarity is 1 minus the letter edit distance over the longer length, case ignored.
func similarity(a, b string) float64 {
	a, b = strings.ToLower(a), strings.ToLower(b)
	if a == "" || b == "" {
		return 0
	}
	ra, rb := []rune(a), []rune(b)
	d := editDistance(ra, rb, sameRune)
	return 1 - float64(d)/float64(max(len(ra), len(rb)))
}

// titleWord capitalises a word and each part of a hyphenated one.
func titleWord(w string) string {
	comps := strings.Split(w, "-")
	for i, c := range comps {
		r := []rune(c)
		if len(r) > 0 {
			r[0] = unicode.ToUpper(r[0])
		}
		comps[i] = string(r)
	}
	return strings.Join(comps, "-")
}

// emailValue reads an e-mail address: spelled letters join into one word, a spelling that repeats
// the word before it is dropped, and the address is read with canon.FindEmails, so that what the
// caller adds after it ("Fjord like the fjords in Norway") stays out.
func (l *listener) emailValue(f *field, ws []asr.Word, u Utterance) (fieldValue, bool) {
	if u.Mail != nil {
		if e, ok := mailAddress(u.Mail.Words); ok {
			v := fieldValue{field: f, value: e, spoken: spokenEmail(e), unsure: u.Spoken}
			for _, alt := range l.homophoneAddresses(u.Mail.Words, e) {
				v.alts = append(v.alts, fieldValue{field: f, value: alt, spoken: spokenEmail(alt), unsure: true})
			}
			return v, true
		}
	}
	if r := u.reading(asr.KindSpelling); r != nil && r.Answer.OK && u.Spoken && hasRun(pieces(r.Answer.Words)) {
		ws = r.Answer.Words
	}
	var out []string
	for _, p := range pieces(ws) {
		w := strings.ToLower(p.text)
		if p.run && len(out) > 0 && out[len(out)-1] == w {
			continue
		}
		out = append(out, w)
	}
	found := canon.FindEmails(strings.Join(out, " "))
	if len(found) == 0 {
		return fieldValue{}, false
	}
	e := found[len(found)-1]
	return fieldValue{field: f, value: e, spoken: spokenEmail(e), unsure: u.Spoken}, true
}

// mailAddress reads an e-mail address from the turn's reading with the e-mail directory
// (asr.RecognizeMail), which hears "dot" and "at" and the letters but runs a domain's words apart
// ("fjord mail"): the local part is the labels joined by "dot" before the last "at" that a domain
// follows, each label a word or a spelled run, a word followed by its spelling read once; the
// domain is the words after "at" run together up to "dot", then the labels after each "dot".
func mailAddress(ws []asr.Word) (string, bool) {
	ps := pieces(ws)
	text := mailWord
	// The last "at" with a "dot" after it; failing one, the last word the directory hears for
	// "at" in one voice or another ("t dot marchetti n outlive dot example").
	at := -1
	for _, said := range []map[string]bool{{"at": true}, atHeardAs} {
		for i := len(ps) - 2; i > 0 && at < 0; i-- {
			if said[text(ps[i])] && slices.ContainsFunc(ps[i+2:], func(p piece) bool { return text(p) == "dot" }) {
				at = i
			}
		}
	}
	if at < 0 {
		return "", false
	}
	// The domain: words up to the first "dot", then one label after each "dot" (fillers the
	// directory hears between them dropped: "dot to example").
	var host, labels []string
	i := at + 1
	for ; i < len(ps) && text(ps[i]) != "dot"; i++ {
		if !mailFillers[text(ps[i])] {
			host = append(host, text(ps[i]))
		}
	}
	if len(host) == 0 {
		return "", false
	}
	labels = append(labels, strings.Join(host, ""))
	for i < len(ps) && text(ps[i]) == "dot" {
		i++
		for i < len(ps) && mailFillers[text(ps[i])] {
			i++
		}
		if i == len(ps) || text(ps[i]) == "dot" {
			break
		}
		labels = append(labels, text(ps[i]))
		i++
	}
	if len(labels) < 2 {
		return "", false
	}
	// The local part: the segments between "dot"s before "at", back to the first that reads as
	// no label.
	var segs [][]piece
	seg := []piece{}
	for _, p := range ps[:at] {
		if text(p) == "dot" {
			segs, seg = append(segs, seg), []piece{}
			continue
		}
		seg = append(seg, p)
	}
	segs = append(segs, seg)
	var local []string
	for k := len(segs) - 1; k >= 0; k-- {
		label := mailLabel(segs[k], k == 0)
		if label == "" {
			break
		}
		local = append([]string{label}, local...)
	}
	if len(local) == 0 {
		return "", false
	}
	return strings.Join(local, ".") + "@" + strings.Join(labels, "."), true
}

// mailLabel reads one label of an address's local part from the pieces said for it: the lead-in
// dropped when the label is the first ("it's", "send it to"), then a word, or a spelled run, or
// a word and its spelling (a run that begins with the word's letter), read as the spelling when
// it has at least the word's letters and as the word otherwise (a spelling heard short lost
// letters). "" when nothing is left.
func mailLabel(ps []piece, first bool) string {
	if first {
		i := len(ps)
		for i > 0 && !mailLeadIns[mailWord(ps[i-1])] {
			i--
		}
		ps = ps[i:]
	}
	for len(ps) > 0 && mailFillers[mailWord(ps[0])] {
		ps = ps[1:]
	}
	if len(ps) == 0 || mailWord(ps[0]) == "" {
		return ""
	}
	w := mailWord(ps[0])
	if len(ps) > 1 && ps[1].run && !ps[0].run && strings.HasPrefix(mailWord(ps[1]), w[:1]) {
		if s := mailWord(ps[1]); len(ps) == 2 && len(s) >= len(w) {
			return s
		}
	}
	return w
}

// mailWord is a piece as an address writes it: lower case, without the apostrophe the
// dictionary gives some names ("amber's").
func mailWord(p piece) string { return strings.ReplaceAll(strings.ToLower(p.text), "'", "") }

// maxHomophoneAddresses bounds the other spellings of an address offered after a refusal: the
// repair loop reads back at most a few.
const maxHomophoneAddresses = 6

// homophoneAddresses are the address read from ws with its words spelled as their homophones
// (the recognizer wrote "vazquez" where the caller said Vasquez: one sound, two spellings, and
// an address has one): each word of three letters or more changed alone first, then every such
// word at once, each address once and none equal to the one read (best).
func (l *listener) homophoneAddresses(ws []asr.Word, best string) []string {
	if l.homophones == nil {
		return nil
	}
	seen := map[string]bool{best: true}
	var out []string
	try := func(alt []asr.Word) {
		if e, ok := mailAddress(alt); ok && !seen[e] && len(out) < maxHomophoneAddresses {
			seen[e] = true
			out = append(out, e)
		}
	}
	all := slices.Clone(ws)
	for i, w := range ws {
		if len(w.Text) < 3 || w.Text == "dot" {
			continue
		}
		hs := l.homophones(w.Text)
		for _, h := range hs {
			alt := slices.Clone(ws)
			alt[i].Text = h
			try(alt)
		}
		if len(hs) > 0 {
			all[i].Text = hs[0]
		}
	}
	try(all)
	return out
}

// mailLeadIns are what a caller says before an address ("it's", "send it to", "my email is").
var mailLeadIns = map[string]bool{"its": true, "is": true, "to": true, "email": true, "address": true, "sure": true, "so": true,
	"um": true, "uh": true, "please": true, "thats": true, "yes": true, "no": true, "okay": true, "the": true, "it": true}

// atHeardAs are words the e-mail directory hears for "at" in one Flite voice or another.
var atHeardAs = map[string]bool{"n": true, "an": true, "and": true, "in": true}

// mailFillers are words the e-mail directory hears between an address's parts.
var mailFillers = map[string]bool{"to": true, "the": true, "uh": true, "um": true}

// spokenEmail reads an address aloud: "priya dot v at northwind dot example".
func spokenEmail(e string) string {
	return strings.NewReplacer(".", " dot ", "@", " at ", "_", " underscore ", "-", " dash ").Replace(e)
}

// shortText reads a short free-text value (a shop, an employer, a location): the answer's first
// phrase after the carrier, up to the first pause.
func shortText(ws []asr.Word, subject map[string]bool) string {
	var out []asr.Word
	for i, w := range ws {
		if len(out) == 0 && (nameLeadIns[w.Text] || subject[w.Text] || leadFillers[w.Text]) {
			continue
		}
		if len(out) > 0 && (i > 0 && w.Start-ws[i-1].End >= 300*time.Millisecond || clauseStarts[w.Text]) {
			break
		}
		out = append(out, w)
	}
	return phrase(out)
}

// clauseStarts begin what a caller adds after a short answer ("one cat, she'll hide under the
// bed"), when the recognizer heard no pause before it.
var clauseStarts = map[string]bool{"he'll": true, "she'll": true, "it'll": true, "they'll": true, "he's": true, "she's": true,
	"they're": true, "he": true, "she": true, "they": true, "i": true, "i'm": true, "i've": true, "we": true, "we're": true}

// addressStops begin what a caller adds after an address ("it's a big building").
var addressStops = map[string]bool{"it's": true, "there's": true, "that's": true, "i": true, "i'm": true, "we": true, "they": true,
	"but": true, "so": true, "thanks": true, "please": true, "which": true, "where": true}

// numberHomophones reads the words the open vocabulary writes for number words said among
// numbers: "twenty to forty" is 2240, "five five for one oh" a ZIP code, and "fourteen and seven"
// (a unit) 1407, the "oh" heard as "and" (which a number after "hundred" keeps as itself).
func numberHomophones(ws []string) []string {
	out := slices.Clone(ws)
	num := func(i int) bool { return i >= 0 && i < len(ws) && (canon.IsNumberWord(ws[i]) || canon.IsDigits(ws[i])) }
	for i, w := range ws {
		switch {
		case (w == "to" || w == "too") && num(i-1) && num(i+1):
			out[i] = "two"
		case w == "for" && num(i-1) && (num(i+1) || i+1 == len(ws)):
			out[i] = "four"
		case w == "and" && i > 0 && teensAndTens[ws[i-1]] && i+1 < len(ws) && digitWords[ws[i+1]] && ws[i+1] != "oh" && ws[i+1] != "zero":
			out[i] = "oh"
		}
	}
	return out
}

// addressText writes down a postal address: from its first number (the house number) to its
// end, the words "in" and "the" around the city dropped, in canonical form (canon.Address), with
// the state that a five-digit ZIP code at the end belongs to when the caller did not say it (as
// address capture does).
func addressText(ws []asr.Word) string {
	start := addressStart(ws)
	if start < 0 {
		return ""
	}
	said := numberHomophones(wordTexts(ws))
	var kept []string
	for i := start; i < len(ws); i++ {
		w := said[i]
		// "Kenmore, that's K E N M O R E": the spelling is not part of the address; nor is "as
		// in west".
		if w == "that's" && i+2 < len(ws) && isLetter(ws[i+1].Text) && isLetter(ws[i+2].Text) {
			for i+1 < len(ws) && isLetter(ws[i+1].Text) {
				i++
			}
			continue
		}
		if w == "as" && i+2 < len(ws) && ws[i+1].Text == "in" {
			i += 2
			continue
		}
		// "Chowen, C H O W E N, Avenue South": a spelling of the word before it is that word,
		// written as spelled (the recognizer hears letters better than a surname).
		if j := letterRunEnd(said, i); j-i >= 3 && len(kept) > 0 && !canon.IsNumberWord(kept[len(kept)-1]) {
			spelled, prev := strings.Join(said[i:j], ""), kept[len(kept)-1]
			if spelled != prev && classEdits(spelled, prev) <= len(spelled)/2 {
				kept[len(kept)-1] = spelled
			}
			i = j - 1
			continue
		}
		if addressStops[w] && i > start {
			break
		}
		if (w == "in" || w == "the" || w == "and") && i > start {
			continue
		}
		kept = append(kept, w)
	}
	a := unitAfterStreet(strings.Fields(canon.Address(strings.Join(splitUnitZIP(kept), " "))))
	if n := len(a); n >= 2 && len(a[n-1]) == 5 && canon.IsDigits(a[n-1]) {
		if st := zipState(a[n-1]); st != "" && a[n-2] != st {
			a = append(a[:n-1], st, a[n-1])
		}
	}
	for i, w := range a {
		switch {
		case len(w) <= 2 && !canon.IsDigits(w) && w != "st" && w != "rd" && w != "dr" && w != "ln" && w != "ct" && w != "pl":
			a[i] = strings.ToUpper(w) // directionals, state codes
		default:
			a[i] = titleWord(w)
		}
	}
	return strings.Join(a, " ")
}

// addressStart is the index of an address's house number in ws, or -1 when none is said.
func addressStart(ws []asr.Word) int {
	for i, w := range ws {
		if !canon.IsNumberWord(w.Text) && !canon.IsDigits(w.Text) {
			continue
		}
		// "The unit is nineteen. Fifteen oh two Magnolia …": a unit number said before the
		// address is not its house number.
		// Without pauses, "unit is nineteen fifteen oh two" reads as the unit's one number word
		// and then the house number.
		if afterUnitWord(ws, i) {
			continue
		}
		// "Oh, wait" is no house number.
		if w.Text == "oh" && (i+1 >= len(ws) || !canon.IsNumberWord(ws[i+1].Text)) {
			continue
		}
		return i
	}
	return -1
}

// letterRunEnd is the end of the run of single letters starting at i (i itself when there is
// none).
func letterRunEnd(words []string, i int) int {
	j := i
	for j < len(words) && isLetter(words[j]) {
		j++
	}
	return j
}

// splitUnitZIP separates a unit's number from a ZIP code said right after it ("unit nine, nine one
// five oh six" would otherwise read as unit 991506): a run of six or more digit words after a
// unit word ends in the five of a ZIP code.
func splitUnitZIP(words []string) []string {
	for i := 0; i < len(words); i++ {
		if streetWordsUnit[words[i]] {
			j := i + 1
			for j < len(words) && digitWords[words[j]] {
				j++
			}
			if j-(i+1) >= 6 {
				out := slices.Clone(words[:j-5])
				out = append(out, ",")
				return append(out, words[j-5:]...)
			}
		}
	}
	return words
}

// streetWordsUnit are the words that introduce a unit's number.
var streetWordsUnit = map[string]bool{"unit": true, "apartment": true, "apt": true, "suite": true}

// streetTypes are the USPS street-type abbreviations canon.Address writes.
var streetTypes = map[string]bool{"st": true, "ave": true, "rd": true, "blvd": true, "dr": true, "ln": true, "ct": true,
	"pl": true, "ter": true, "hwy": true, "pkwy": true, "cir": true, "sq": true, "trl": true, "way": true}

// unitAfterStreet moves a unit said after the city ("Magnolia Blvd Burbank Unit 9") to where an
// address is written, after the street (and its directional): "Magnolia Blvd Unit 9 Burbank".
func unitAfterStreet(a []string) []string {
	st := -1
	for i, w := range a {
		if i > 0 && streetTypes[w] {
			st = i
			break
		}
	}
	if st < 0 {
		return a
	}
	if st+1 < len(a) && directionals[a[st+1]] {
		st++
	}
	for u := st + 2; u+1 < len(a); u++ {
		if a[u] == "unit" {
			unit := []string{a[u], a[u+1]}
			out := slices.Clone(a[:st+1])
			out = append(out, unit...)
			out = append(out, a[st+1:u]...)
			return append(out, a[u+2:]...)
		}
	}
	return a
}

// streetLine is an address (as addressText writes it) up to its street line and unit, without
// the city, state and ZIP: what an agent keys to find a record by address. "" when no street
// type is in it or nothing follows the line.
func streetLine(addr string) string {
	a := strings.Fields(addr)
	end := -1
	for i, w := range a {
		if i > 0 && streetTypes[strings.ToLower(w)] {
			end = i + 1
			break
		}
	}
	if end < 0 {
		return ""
	}
	if end < len(a) && directionals[strings.ToLower(a[end])] {
		end++
	}
	if end+1 < len(a) && strings.EqualFold(a[end], "unit") {
		end += 2
	}
	if end >= len(a) {
		return ""
	}
	return strings.Join(a[:end], " ")
}

// streetWords are the words of a written address's street name, lower-case: those after the
// house number up to the street type ("1418 Older Ct Unit 3B" → older).
func streetWords(addr string) []string {
	a := strings.Fields(addr)
	i := slices.IndexFunc(a, func(w string) bool { return strings.IndexFunc(w, unicode.IsDigit) >= 0 })
	if i < 0 {
		return nil
	}
	var out []string
	for _, w := range a[i+1:] {
		w = strings.ToLower(w)
		if streetTypes[w] || w == "unit" || strings.IndexFunc(w, unicode.IsDigit) >= 0 {
			break
		}
		if !directionals[w] {
			out = append(out, w)
		}
	}
	return out
}

var directionals = map[string]bool{"n": true, "s": true, "e": true, "w": true, "ne": true, "nw": true, "se": true, "sw": true}

// afterUnitWord reports a number that follows "unit", "apartment", "apt" or "suite" (with "is" or
// "number" between).
func afterUnitWord(ws []asr.Word, i int) bool {
	for j := i - 1; j >= 0 && j >= i-3; j-- {
		switch ws[j].Text {
		case "unit", "apartment", "apt", "suite":
			return true
		case "is", "number", "now", "actually":
			continue
		}
		return false
	}
	return false
}

// zipRanges map the first three digits of a US ZIP code to the state (USPS): each entry is the
// last prefix of a range and its state, in order.
var zipRanges = []struct {
	upTo  int
	state string
}{{4, ""}, {9, "pr"}, {27, "ma"}, {29, "ri"}, {38, "nh"}, {49, "me"}, {59, "vt"}, {69, "ct"}, {89, "nj"}, {99, ""},
	{149, "ny"}, {196, "pa"}, {199, "de"}, {205, "dc"}, {219, "md"}, {246, "va"}, {268, "wv"}, {289, "nc"}, {299, "sc"},
	{319, "ga"}, {349, "fl"}, {369, "al"}, {385, "tn"}, {397, "ms"}, {399, "ga"}, {427, "ky"}, {429, ""}, {459, "oh"},
	{479, "in"}, {499, "mi"}, {528, "ia"}, {529, ""}, {549, "wi"}, {567, "mn"}, {569, ""}, {577, "sd"}, {579, ""},
	{588, "nd"}, {589, ""}, {599, "mt"}, {629, "il"}, {658, "mo"}, {659, ""}, {679, "ks"}, {693, "ne"}, {699, ""},
	{714, "la"}, {715, ""}, {729, "ar"}, {749, "ok"}, {799, "tx"}, {816, "co"}, {819, ""}, {831, "wy"}, {838, "id"},
	{839, ""}, {847, "ut"}, {849, ""}, {865, "az"}, {869, ""}, {884, "nm"}, {888, ""}, {898, "nv"}, {899, ""},
	{961, "ca"}, {966, ""}, {968, "hi"}, {969, ""}, {979, "or"}, {994, "wa"}, {999, "ak"}}

// zipState returns the state code of a five-digit ZIP code, or "".
func zipState(zip string) string {
	n := 0
	for _, r := range zip[:3] {
		n = n*10 + int(r-'0')
	}
	for _, z := range zipRanges {
		if n <= z.upTo {
			return z.state
		}
	}
	return ""
}
