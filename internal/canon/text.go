package canon

import (
	"regexp"
	"strings"
)

// Email reads an e-mail address as written or dictated: "Priya.V@Northwind.example" and "priya
// dot v at northwind dot example" are both priya.v@northwind.example; letters spelled one by one
// join ("anders dot n o at fjordmail dot example"). Text that is no address is returned folded.
func Email(s string) string {
	f := Fold(s)
	if strings.IndexByte(f, '@') >= 0 {
		return strings.ReplaceAll(f, " ", "")
	}
	toks := tokens(f)
	at := -1
	for i, w := range toks {
		if w == "at" {
			at = i
		}
	}
	if at <= 0 || at == len(toks)-1 {
		return f
	}
	var b strings.Builder
	for i, w := range toks {
		switch w {
		case "dot", "period", "point":
			b.WriteByte('.')
		case "at":
			if i == at {
				b.WriteByte('@')
			} else {
				b.WriteString(w)
			}
		case "underscore":
			b.WriteByte('_')
		case "dash", "hyphen", "minus":
			b.WriteByte('-')
		case "plus":
			b.WriteByte('+')
		case ",":
		default:
			b.WriteString(w)
		}
	}
	return b.String()
}

var (
	writtenEmail = regexp.MustCompile(`[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}`)
	spokenEmail  = regexp.MustCompile(`\b([a-z0-9]+(?: (?:dot|underscore|dash) [a-z0-9]+)*) at ([a-z0-9]+(?: dot [a-z0-9]+)+)\b`)
	emailSpacing = strings.NewReplacer("’", "'", ",", " ", ".", " ", "!", " ", ";", " ", ":", " ", "?", " ", "—", " ", "–", " ", "\"", " ", "(", " ", ")", " ")
)

// FindEmails returns the e-mail addresses written or dictated in a free text, lower case.
func FindEmails(s string) []string {
	f := lower(s)
	out := writtenEmail.FindAllString(f, -1)
	for _, m := range spokenEmail.FindAllString(joinSpelled(f), -1) {
		out = append(out, Email(m))
	}
	return out
}

// joinSpelled joins letters spelled one by one ("p r i y a dot v") into a word ("priya dot v"); a
// word spelled right after it is said ("dev, D E V") is kept once.
func joinSpelled(s string) string {
	toks := strings.Fields(emailSpacing.Replace(s))
	out := make([]string, 0, len(toks))
	run := ""
	flush := func() {
		if run != "" && (len(out) == 0 || out[len(out)-1] != run) {
			out = append(out, run)
		}
		run = ""
	}
	for i, w := range toks {
		single := len(w) == 1 && w[0] >= 'a' && w[0] <= 'z'
		next := i+1 < len(toks) && len(toks[i+1]) == 1
		if single && (run != "" || next) {
			run += w
			continue
		}
		flush()
		out = append(out, w)
	}
	flush()
	return strings.Join(out, " ")
}

// Items splits a list value said or written as text into its items. Items separated by ";" are
// split only there, so an item may contain "and" ("Harbor and Pine; kitchen"); otherwise commas,
// "and", "then" and "&" separate them ("VPN, Outlook and SharePoint").
func Items(s string) []string {
	var parts []string
	if strings.IndexByte(s, ';') >= 0 {
		parts = strings.Split(s, ";")
	} else {
		parts = strings.Split(listSeparators.Replace(s), ",")
	}
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

var listSeparators = strings.NewReplacer(" and then ", ",", " then ", ",", " and ", ",", " And ", ",", " AND ", ",", "&", ",")

// Mentions are the specific values a free text states, read the way the grader reads values:
// what the bank's quality control looks for in a caller's utterance.
type Mentions struct {
	// Dates in order; a date said without a year has Year 0.
	Dates []Date
	// Digits are the digit sequences said, dictation groups joined across separators and
	// hesitations ("five oh three, uh, five five five" is 503555); the days and years of dates are
	// not among them.
	Digits []string
	// Emails are the e-mail addresses, written or dictated.
	Emails []string
	// Codes are the written codes that mix letters and digits, as identifier keys.
	Codes []string
	// Spelled is the whole text read as a spelled identifier (fillers dropped).
	Spelled string
}

var (
	sentenceEnd = regexp.MustCompile(`[.?!;]+(\s|$)`)
	codeToken   = regexp.MustCompile(`[A-Za-z0-9]+(?:[-_/.][A-Za-z0-9]+)*`)
)

var numeralMarks = strings.NewReplacer(",", "", ".", "")

// hesitations are sounds a caller makes mid-dictation.
var hesitations = map[string]bool{"uh": true, "um": true, "er": true, "ah": true, "erm": true, "hmm": true}

// Extract finds the values a free text states.
func Extract(text string) Mentions {
	var m Mentions
	// A dictated number never runs across the end of a sentence.
	toks := digitize(tokens(sentenceEnd.ReplaceAllString(text, " | ")), nil)
	spans := scanDates(toks, false)
	used := make([]bool, len(toks))
	for _, sp := range spans {
		m.Dates = append(m.Dates, sp.d)
		for k := sp.start; k < sp.end; k++ {
			used[k] = true
		}
	}
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			m.Digits = append(m.Digits, cur.String())
			cur.Reset()
		}
	}
	for i := 0; i < len(toks); i++ {
		w := toks[i]
		if used[i] {
			flush()
			continue
		}
		if isNumeral(w) {
			cur.WriteString(numeralMarks.Replace(w))
			continue
		}
		if cur.Len() > 0 && isJoiner(w) {
			// Separators and hesitations inside a dictated number keep it going when more digits
			// follow.
			j := i
			for j < len(toks) && isJoiner(toks[j]) && !used[j] {
				j++
			}
			if j < len(toks) && isNumeral(toks[j]) && !used[j] {
				i = j - 1
				continue
			}
		}
		flush()
	}
	flush()
	m.Emails = FindEmails(text)
	for _, c := range codeToken.FindAllString(text, -1) {
		if hasLetter(c) && hasDigit(c) && !ordinalOrUnit(c) {
			m.Codes = append(m.Codes, Identifier(c))
		}
	}
	m.Spelled = Identifier(text)
	return m
}

func isJoiner(w string) bool {
	return w == "," || w == "-" || w == "." || w == "/" || hesitations[w]
}

func hasLetter(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c >= 'a' && c <= 'z' {
			return true
		}
	}
	return false
}

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			return true
		}
	}
	return false
}

// ordinalOrUnit is true for tokens such as "5th", "2nd", "10am", "3pm" that mix letters and
// digits without being codes.
func ordinalOrUnit(s string) bool {
	l := strings.ToLower(s)
	for _, suf := range []string{"st", "nd", "rd", "th", "am", "pm", "s"} {
		if strings.HasSuffix(l, suf) && IsDigits(l[:len(l)-len(suf)]) {
			return true
		}
	}
	return false
}
