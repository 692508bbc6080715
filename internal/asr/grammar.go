package asr

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
)

// Grammar is a JSGF grammar that constrains recognition to its sentences, the way an IVR
// question accepts only answers of the expected form.
type Grammar struct {
	// Name identifies the grammar in results and errors.
	Name string
	// JSGF is the grammar text ("#JSGF V1.0; grammar x; public <utt> = …;").
	JSGF string
	// plain renders the text without the phrases of a repair (see Slot.Grammar), for Vocabulary:
	// only then, since the dialogue builds grammars several times a turn. nil when there are none.
	plain func() string
}

// search is the decoder search name: the grammar's name plus a hash of its text, so that two
// different grammars never share a compiled search.
func (g *Grammar) search() string {
	h := fnv.New64a()
	h.Write([]byte(g.JSGF))
	return fmt.Sprintf("g_%s_%x", sanitize(g.Name), h.Sum64())
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Vocabulary returns the grammar's words, sorted: a reply with words outside it was forced into
// the grammar's nearest sentence. The words of a repair's carrier ("that's not right", "I said")
// are left out: they are common words, and a reply holding them is no likelier the grammar's.
func (g *Grammar) Vocabulary() []string {
	if g.plain != nil {
		return jsgfWords(g.plain())
	}
	return g.words()
}

// words returns the grammar's terminal words (for the dictionary check).
func (g *Grammar) words() []string { return jsgfWords(g.JSGF) }

func jsgfWords(jsgf string) []string {
	seen := map[string]bool{}
	var out []string
	for _, line := range strings.Split(jsgf, ";") {
		line = strings.TrimSpace(line)
		eq := strings.Index(line, "=")
		if eq < 0 {
			continue
		}
		body := line[eq+1:]
		// Drop rule references and weights.
		for _, pair := range [][2]string{{"<", ">"}, {"/", "/"}} {
			for {
				i := strings.Index(body, pair[0])
				if i < 0 {
					break
				}
				j := strings.Index(body[i+1:], pair[1])
				if j < 0 {
					break
				}
				body = body[:i] + " " + body[i+1+j+1:]
			}
		}
		for _, w := range strings.FieldsFunc(body, func(r rune) bool { return strings.ContainsRune(" \t\n|()[]*+", r) }) {
			if !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Kind is the type of value a question expects.
type Kind string

// Kinds of slot grammars.
const (
	KindDigits     Kind = "digits"     // a run of spoken digits ("four one seven")
	KindPhone      Kind = "phone"      // a ten-digit North American number, or seven digits
	KindDate       Kind = "date"       // "March fourteenth, nineteen seventy-nine", "Tuesday, the ninth of February"
	KindDateRange  Kind = "date_range" // "from December eighteenth to January second"
	KindIdentifier Kind = "identifier" // letters and digits ("P A two zero four four seven one eight")
	KindNumber     Kind = "number"     // a quantity or an amount ("six hundred twelve dollars and forty cents")
	KindYesNo      Kind = "yes_no"     // yes, no and the words that qualify them ("go ahead", "don't", "wait")
	KindChoice     Kind = "choice"     // one of a fixed list of phrases (a schema enumeration)
	// KindSpelling is a name or word spelled letter by letter, with the spelling alphabet ("P as
	// in Paul", "papa") and the words a caller says around it ("that's", "hyphen"); Slot.Words
	// adds the words heard in the same turn, so that the unspelled parts of the answer are read
	// as themselves.
	KindSpelling Kind = "spelling"
	// KindFiller is what a caller says that answers nothing: acknowledgements, hesitations,
	// courtesies and requests to wait or repeat. It competes with the slot grammars, so that a
	// turn that holds no value is not forced into one.
	KindFiller Kind = "filler"
	// KindChoiceInContext is one of Choices said among other words ("aisle if you've got it",
	// "the Edgewater office, please"): the grammar lets a loop of common words stand for the
	// rest, and RecognizeSlot takes the choice only when it explains the audio better than the
	// common words alone do (a turn that names no choice is no answer).
	KindChoiceInContext Kind = "choice in context"
	// KindAddress is a postal address read again with Slot.Words, the words the open transcript
	// heard in it, and the words that sound like them (see address.go). Its value's Text is the
	// words of the reading.
	KindAddress Kind = "address"
)

// Slot describes what a question expects; its Grammar accepts answers of that form.
type Slot struct {
	Kind Kind
	// Digits is the exact digit count for KindDigits (0: any length).
	Digits int
	// Choices are the phrases of KindChoice (lower-case dictionary words).
	Choices []string
	// Subject is what was asked, in words ("policy number"): answers may start "my policy number
	// is …". Optional; only dictionary words should be used.
	Subject string
	// Contractions are the subject's words said with "is" run on ("account's", "number's"):
	// answers may start "account's …", "their number's …". Dictionary words only.
	Contractions []string
	// Words are more words the grammar accepts (KindSpelling): dictionary words only. For
	// KindAddress, the words heard in the turn, in order.
	Words []string
	// Street are street words heard for the same address before (KindAddress: the caller says it
	// again), allowed beside this turn's, with their sound-alikes.
	Street []string
	// Alternatives is how many n-best readings RecognizeSlot parses besides the best one (0:
	// none); they are the candidates a failed verification is retried with.
	Alternatives int
	// Single makes RecognizeSlot decode with this grammar only, without an identifier's
	// digits-only second reading (a slot that was not asked for, decoded to see whether the
	// answer belongs to it, need not be read twice).
	Single bool
	// Several makes a KindChoiceInContext slot take every choice said, in order ("only Tuesdays
	// or Thursdays, I'm afraid"): the items of a list drawn from a closed set.
	Several bool
}

// contextWords are common words a caller says around a choice: function words, courtesies,
// hedges. Not a vocabulary of answers: they only have to be acoustically nearer to what the
// caller said around the choice than the choice is.
var contextWords = strings.Fields("i i'm it it's is the a an to of and in on for with that this that's you your my me we if " +
	"you've got please thanks thank be would like prefer want need go ahead one office closest possible just okay sure " +
	"yes no um uh so well maybe think really whatever best fine time take course sorry again say could can do don't know what")

// choicesAmongContext returns the choices and the context words that are not words of a choice
// (a choice word in the loop would let the loop say the choice).
func (s Slot) choicesAmongContext() (alts []string, ctx string) {
	alts = s.choicePhrases()
	inChoice := map[string]bool{}
	for _, c := range alts {
		for _, w := range strings.Fields(c) {
			inChoice[w] = true
		}
	}
	var keep []string
	for _, w := range contextWords {
		if !inChoice[w] {
			keep = append(keep, w)
		}
	}
	return alts, strings.Join(keep, " | ")
}

// choicePhrases are the choices as the grammar says them, lower case; "none" when there are none
// (a JSGF alternative cannot be empty).
func (s Slot) choicePhrases() []string {
	var alts []string
	for _, c := range s.Choices {
		if c = strings.TrimSpace(strings.ToLower(c)); c != "" {
			alts = append(alts, c)
		}
	}
	if len(alts) == 0 {
		alts = []string{"none"}
	}
	return alts
}

// andJoined writes a choice of two items as they are said: "read write" as "read [and] write".
// Function words join nothing ("mailing only", "lost in transit").
func andJoined(choice string) string {
	ws := strings.Fields(choice)
	if len(ws) != 2 || notItems[ws[0]] || notItems[ws[1]] {
		return choice
	}
	return ws[0] + " [and] " + ws[1]
}

var notItems = map[string]bool{"only": true, "not": true, "no": true, "in": true, "of": true, "to": true, "the": true, "a": true}

// contextGrammar is the context words alone: what an in-context choice must explain the audio
// better than.
func (s Slot) contextGrammar() *Grammar {
	_, ctx := s.choicesAmongContext()
	return &Grammar{Name: "context", JSGF: "#JSGF V1.0;\ngrammar context;\npublic <utt> = <c>+;\n<c> = " + ctx + ";\n"}
}

// Grammar builds the slot's JSGF grammar. Every answer may be wrapped in a short carrier phrase
// ("it's …", "sure, …", "my <subject> is …", "… thanks").
func (s Slot) Grammar() *Grammar {
	var body string
	rules := map[string]string{}
	switch s.Kind {
	case KindDigits:
		rules["d"] = digitWords
		if s.Digits > 0 {
			body = strings.TrimSpace(strings.Repeat("<d> ", s.Digits))
		} else {
			body = "<d>+"
		}
	case KindPhone:
		rules["d"] = digitWords
		ten := strings.TrimSpace(strings.Repeat("<d> ", 10))
		seven := strings.TrimSpace(strings.Repeat("<d> ", 7))
		body = "(" + ten + " | " + seven + " | one " + ten + ")"
	case KindDate:
		addDateRules(rules)
		body = "<date>"
	case KindDateRange:
		addDateRules(rules)
		body = "[from] <date> (to | until | through | and) <date>"
	case KindIdentifier:
		// Digits are likelier than letters a priori: a letter must sound clearly like one. A
		// letter may be said with the spelling alphabet ("papa") or by a word ("P as in Paul").
		// Digits may be said in pairs ("R F, twenty twenty-six", "B E, twenty-two ninety-one").
		rules["pair"] = teenWords + " | (" + tensWords + ") [" + unitWords + "]"
		rules["d1"] = digitWords
		rules["l1"] = letterWords
		rules["asin"] = natoWords + " | " + asInWords
		rules["sym"] = weighted(digitWords, 20) + " | " + weighted(letterWords, 1) + " | " + weighted(natoWords, 1) +
			" | double <d1> | <l1> as in <asin> | dash | then | and then | <pair>"
		body = "<sym>+"
	case KindNumber:
		addNumberRules(rules)
		body = "[about | around | roughly | maybe | approximately] <amount>"
	case KindYesNo:
		rules["yn"] = yesNoWords
		body = "<yn>+"
	case KindSpelling:
		// Letters are what a spelling is made of; the words around them are less likely.
		rules["letter"] = letterWords + " | o"
		rules["asin"] = natoWords + " | " + asInWords
		piece := weighted(letterWords+" | o", 20) + " | " + weighted(natoWords, 4) + " | " + weighted(spellingCarriers, 3) +
			" | double <letter> | <letter> as in <asin>"
		if ws := spellingWords(s.Words); ws != "" {
			piece += " | " + weighted(ws, 2)
		}
		rules["piece"] = piece
		body = "<piece>+"
	case KindFiller:
		rules["filler"] = fillerPhrases
		body = "<filler>+"
	case KindChoiceInContext:
		alts, ctx := s.choicesAmongContext()
		rules["c"] = ctx
		said := make([]string, len(alts))
		for i, a := range alts {
			said[i] = andJoined(a)
		}
		body = "<c>* (" + strings.Join(said, " | ") + ") <c>*"
		if s.Several {
			rules["ch"] = strings.Join(said, " | ")
			rules["c"] = ctx + " | or"
			body = "<c>* <ch> (<c>* <ch>)* <c>*"
		}
	case KindChoice:
		body = "(" + strings.Join(s.choicePhrases(), " | ") + ")"
	default:
		body = "<d>+"
		rules["d"] = digitWords
	}
	pre := "it's | it is | sure | okay | yes | um | uh | that's | that is | that would be"
	const fetchedThings = "(card | wallet | account | letter | statement | policy | bill | bottle | label | receipt | email | it)"
	post := "thanks | thank you | please"
	// How callers repair a value read back to them: "No, sorry, that's not right. My policy number
	// is …", "Um, actually, that's wrong. It should be …", "… not that". Without these the code
	// grammar made the repair's words into letters and digits.
	const repairPre, repairPost = " | no sorry | sorry no | sorry | actually | that's not right | that's wrong | that's not it | it should be | i said | what i said was", " | not that"
	if s.Kind == KindIdentifier || s.Kind == KindDigits {
		// A caller reading a code off a card fetches it first: "let me grab my card. Okay, P as in
		// Paul …". Without these the fetching was forced into letters and digits ("eleven a dash d
		// mike r d l k eight p as in paul").
		// And says so when it is in hand: "Got the bottle. Number's six oh two three …" was read
		// "2209R60231148".
		pre += " | let me | hold on | hang on | one second | just a second | " +
			"(grab | get | find | check | pull up | look at) [my | the] " + fetchedThings +
			" | [okay] (got | found | i've got | i have | i found) [[my | the] " + fetchedThings + "] | here it is | okay here" +
			// A code read off what is in hand is "the number", whatever the field is called.
			" | [the | my | our | its | their] (number's | number is)"
	}
	if s.Kind == KindPhone || s.Kind == KindDigits {
		// How callers give a number.
		pre += " | you can reach me at | best number is | my number is | call me at | the number is | my cell is | it's the"
		post += " | that's my cell | that's my cell phone | that's my mobile"
	}
	if subj := strings.TrimSpace(strings.ToLower(s.Subject)); subj != "" {
		pre += " | my " + subj + " is | the " + subj + " is | " + subj + " is"
		// Callers name the subject their own way: "our account is …" for the customer account,
		// "my customer account number is …". Without these, "our account is" was forced into
		// letters before the code (R M S H P R G …).
		pre += " | our " + subj + " is | my " + subj + " number is | the " + subj + " number is"
		if ws := strings.Fields(subj); len(ws) > 1 {
			last := ws[len(ws)-1]
			pre += " | my " + last + " is | our " + last + " is | the " + last + " is"
		}
	}
	for _, c := range s.Contractions {
		pre += " | " + c + " | my " + c + " | our " + c + " | their " + c + " | the " + c
	}
	name := sanitize(string(s.Kind))
	keys := make([]string, 0, len(rules)+2)
	for k := range rules {
		keys = append(keys, k)
	}
	keys = append(keys, "pre", "post")
	sort.Strings(keys)
	// render reads rules without writing them: plain may run later, on another goroutine.
	render := func(pre, post string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "#JSGF V1.0;\ngrammar %s;\npublic <utt> = <pre>* %s [<post>];\n", name, body)
		for _, k := range keys {
			rule := rules[k]
			switch k {
			case "pre":
				rule = pre
			case "post":
				rule = post
			}
			fmt.Fprintf(&b, "<%s> = %s;\n", k, rule)
		}
		return b.String()
	}
	return &Grammar{Name: string(s.Kind), JSGF: render(pre+repairPre, post+repairPost), plain: func() string { return render(pre, post) }}
}

// spellingWords lists a spelling grammar's extra words as alternatives (letters and carriers are
// in it already).
func spellingWords(words []string) string {
	seen := map[string]bool{}
	var out []string
	for _, w := range words {
		w = strings.ToLower(strings.TrimSpace(w))
		if w == "" || len(w) == 1 || seen[w] || strings.ContainsAny(w, "|()[]<>/*+;=") {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	sort.Strings(out)
	return strings.Join(out, " | ")
}

const (
	// natoWords is the spelling alphabet.
	natoWords = "alpha | bravo | charlie | delta | echo | foxtrot | golf | hotel | india | juliet | kilo | lima | mike | november | oscar | papa | quebec | romeo | sierra | tango | uniform | victor | whiskey | x-ray | yankee | zulu"
	// asInWords are the words callers spell by besides the spelling alphabet ("P as in Paul").
	asInWords = "apple | adam | boy | bob | cat | charles | david | dog | edward | easy | frank | fred | george | henry | ida | john | jack | king | kate | larry | lincoln | mary | michael | nancy | nora | ocean | peter | paul | queen | robert | roger | sam | sugar | tom | thomas | uncle | victoria | william | walter | xylophone | yellow | young | zebra"
	// spellingCarriers are what callers say around the letters they spell.
	spellingCarriers = "that's | it's | is | spelled | spell | it | that | as | in | hyphen | dash | space | capital | then | and | with | an | the | first | last | name | my | sorry | uh | um | no | yes | okay | same | one | word | all"
	// fillerPhrases answer nothing.
	fillerPhrases = "okay | ok | sure | alright | all right | right | yes | yeah | yep | no | nope | uh | um | hmm | mm | oh | well | so | thanks | thank you | great | fine | cool | good | perfect | got it | take your time | no rush | no problem | of course | go ahead | please | hold on | one moment | one second | just a moment | let me check | let me see | sorry | what | pardon | excuse me | can you repeat that | say that again | i don't know | i'm not sure | i don't have that | not sure | hurry | can we hurry"
	// countUnits are what callers count ("four years", "ten inches", "two kids").
	countUnits = "year | years | month | months | week | weeks | day | days | hour | hours | minute | minutes | " +
		"people | person | kids | children | times | inches | inch | feet | foot | miles | degrees | boxes | cases | units | items | pounds"
	digitWords = "zero | oh | one | two | three | four | five | six | seven | eight | nine"
	// The letter O is left to "oh", which the parser reads as a letter after a letter.
	letterWords = "a | b | c | d | e | f | g | h | i | j | k | l | m | n | p | q | r | s | t | u | v | w | x | y | z"
	yesNoWords  = "yes | yeah | yep | sure | correct | right | that's | go | ahead | please | do | it | okay | no | nope | not | don't | do | wait | stop | actually | cancel | withdraw | withdrawing | my | approval | hold | on | that | i | i'm | is | fine | sounds | good"
	unitWords   = "one | two | three | four | five | six | seven | eight | nine"
	teenWords   = "ten | eleven | twelve | thirteen | fourteen | fifteen | sixteen | seventeen | eighteen | nineteen"
	tensWords   = "twenty | thirty | forty | fifty | sixty | seventy | eighty | ninety"
	monthWords  = "january | february | march | april | may | june | july | august | september | october | november | december"
	dayWords    = "monday | tuesday | wednesday | thursday | friday | saturday | sunday"
	ordUnits    = "first | second | third | fourth | fifth | sixth | seventh | eighth | ninth"
	ordTeens    = "tenth | eleventh | twelfth | thirteenth | fourteenth | fifteenth | sixteenth | seventeenth | eighteenth | nineteenth"
)

// addCountWords adds the number words both number and date grammars count with.
func addCountWords(rules map[string]string) {
	rules["unit"] = unitWords
	rules["teen"] = teenWords
	rules["tens"] = tensWords
}

func addNumberRules(rules map[string]string) {
	addCountWords(rules)
	rules["under100"] = "<unit> | <teen> | <tens> [<unit>] | zero"
	rules["under1000"] = "<under100> | (<unit> | <teen> | <tens> [<unit>]) hundred [[and] <under100>]"
	rules["cardinal"] = "<under1000> | <under1000> thousand [[and] <under1000>]"
	rules["amount"] = "<cardinal> [point <d0>+] [dollars | dollar | bucks | percent | <unitname>] [and <under100> cents]"
	// What a count is of: without these, "four years" was forced into "forty eight".
	rules["unitname"] = countUnits
	rules["d0"] = digitWords
}

func addDateRules(rules map[string]string) {
	rules["month"] = monthWords
	rules["weekday"] = dayWords
	rules["ord"] = ordUnits + " | " + ordTeens + " | twentieth | thirtieth | twenty " + "(" + ordUnits + ") | thirty first"
	addCountWords(rules)
	rules["yy"] = "<tens> [<unit>] | <teen> | oh <unit> | hundred"
	rules["year"] = "(nineteen | twenty) <yy> | two thousand [and] [<unit> | <teen> | <tens> [<unit>]]"
	rules["day"] = "<month> [the] <ord> | [the] <ord> of <month>"
	rules["date"] = "[<weekday>] [the] <day> [<year>] | <month> <year>"
}

// weighted puts the same JSGF weight on every alternative of a word list (PocketSphinx applies
// weights to words, not to rule references).
func weighted(alts string, w int) string {
	parts := strings.Split(alts, "|")
	for i, p := range parts {
		parts[i] = fmt.Sprintf("/%d/ %s", w, strings.TrimSpace(p))
	}
	return strings.Join(parts, " | ")
}
