package dialog

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/voicebench/humanaudit/internal/canon"
)

var (
	movesTo   = regexp.MustCompile(`\b(?:moves? (?:it |them )?to|changes? (?:it |them )?to|becomes)\b`)
	dividedBy = regexp.MustCompile(`^(.+?) is (?:the )?(.+?) divided by (?:the )?(.+?)(?:[:;,]|$)`)
	upToLimit = regexp.MustCompile(`\bup to \$\s?([0-9][0-9,]*(?:\.[0-9]+)?)`)
	byTheOf   = regexp.MustCompile(`\bby the ([a-z]+) of the ([a-z ]+?)(?:[:,;.]|$)`)
	onTheDate = regexp.MustCompile(`\beffective (?:on|from|as of) (?:the )?(.+?)(?:[,;]|$)`)
	monthly   = regexp.MustCompile(`^(.+?) (?:are|is|falls?) due on the same day of (?:each|every) month as the (.+?)(?:[,;:]|$)`)
)

// computedValue reads a field the caller cannot know as a rule of the knowledge base applied to
// what the call holds (sentences are the knowledge split at "." and ";", looked the values the
// lookups returned, lower case):
//   - an amount capped by a limit ("Health care FSA: an employee may elect up to $3,300"): the
//     same account's requested amount, at most the limit;
//   - a quotient ("the per-paycheck deduction is the annual election divided by the number of
//     paychecks in the plan year"): a value of the same account over a number a lookup returned,
//     to the cent;
//   - what the case on file becomes ("adding a child to Employee + Spouse coverage moves it to
//     Family"), once the call's own values match the rule's case;
//   - an amount the rule spells out as arithmetic on what the call holds ("the credit is the number
//     of missing cases times the sum of the unit price and the freight surcharge per case";
//     "insured parcels are reimbursed at the declared value less the $15 claims deductible");
//   - the class a matrix puts the call in ("Emergency (…): no heat when the indoor temperature is
//     below 60°F between October 1 and April 30; … Urgent (…): no heat above 60°F; …");
//   - a list that a table gives item by item for a list the call recorded ("Finance shared drive:
//     approved by the data owner, the Finance Controller. Workday reporting: approved by the HRIS
//     Lead." for the approvers of the systems asked for);
//   - a price listed for the cases on file ("Evergreen PPO 1500: … Family $188.26");
//   - a date that is another date of the call ("coverage for a newborn is effective on the date of
//     birth");
//   - a choice that is another value's ("a duplicate payment is refunded by the method of the
//     duplicate payment": the refund method of ACH-0925-7781 is ach);
//   - the due dates of a count of payments ("installments are due on the same day of each month
//     as the first payment": 4 installments from 2026-12-05 are due 12-05, 01-05, 02-05, 03-05).
func (p *policy) computedValue(f *field, sentences, looked []string) (fieldValue, bool) {
	switch f.Kind {
	case kindNumber:
		if v, ok := p.quotient(f, sentences); ok {
			return v, true
		}
		if v, ok := p.cappedAmount(f, sentences); ok {
			return v, true
		}
		if v, ok := p.formula(f, sentences); ok {
			return v, true
		}
		return p.listedPrice(f, looked)
	case kindChoice:
		if v, ok := p.becomes(f, sentences, looked); ok {
			return v, true
		}
		if v, ok := p.sameAs(f, sentences); ok {
			return v, true
		}
		return p.classified(f)
	case kindDate:
		return p.sameDate(f, sentences)
	case kindDateList:
		return p.monthlyDates(f, sentences)
	case kindList:
		return p.perItem(f)
	}
	return fieldValue{}, false
}

// monthlyDates reads "<payments> are due on the same day of each month as the <first one>" for a
// list of due dates (the field says "due" or "schedule"): as many dates as the call's count of
// those payments (a number field named by them and "count" or "number"), a month apart from the
// date field the rule names; a day the month lacks is its last (January 31 → February 28).
func (p *policy) monthlyDates(f *field, sentences []string) (fieldValue, bool) {
	if own := plainWords(f.Name + " " + f.Description); !slices.Contains(own, "due") && !slices.Contains(own, "schedule") {
		return fieldValue{}, false
	}
	for _, s := range sentences {
		m := monthly.FindStringSubmatch(strings.TrimSpace(strings.ToLower(s)))
		if m == nil {
			continue
		}
		var start canon.Date
		var count float64
		for _, g := range p.m.fields {
			v, ok := p.values[g.Name]
			if g == f || !ok {
				continue
			}
			switch {
			case g.Kind == kindDate && containsAll(spokenWords(g.Name), plainWords(m[2])):
				start, _ = canon.ParseDate(fmt.Sprint(v.value))
			case g.Kind == kindNumber && containsAll(nameWords(g.Name), plainWords(m[1])) &&
				slices.ContainsFunc(nameWords(g.Name), func(w string) bool { return w == "count" || w == "number" }):
				count, _ = lookupNumber(v.value)
			}
		}
		if start.Year == 0 || count < 1 || count > 120 || count != math.Trunc(count) {
			continue
		}
		var dates, spoken []string
		for i := range int(count) {
			y, mo := start.Year, start.Month+i
			y, mo = y+(mo-1)/12, (mo-1)%12+1
			last := time.Date(y, time.Month(mo)+1, 0, 0, 0, 0, 0, time.UTC).Day()
			d := canon.Date{Year: y, Month: mo, Day: min(start.Day, last)}
			dates = append(dates, d.String())
			spoken = append(spoken, spokenDate(d))
		}
		return fieldValue{field: f, value: dates, spoken: strings.Join(spoken, "; ")}, true
	}
	return fieldValue{}, false
}

// plainWords are a phrase's words, lower case, without punctuation ("per-paycheck" → per paycheck).
func plainWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') })
}

// containsAll reports whether every word of ws is among have (by stem).
func containsAll(have, ws []string) bool {
	for _, w := range ws {
		if !slices.ContainsFunc(have, func(h string) bool { return stem(h) == stem(w) }) {
			return false
		}
	}
	return len(ws) > 0
}

// account splits a field's name into its account and its measure ("health_fsa_annual" → health
// fsa, annual) by the sibling fields that share the account: the longest common leading words
// with another field.
func (p *policy) account(f *field) (acct, rest []string) {
	ws := nameWords(f.Name)
	best := 0
	for _, g := range p.m.fields {
		if g == f {
			continue
		}
		gs := nameWords(g.Name)
		n := 0
		for n < len(ws)-1 && n < len(gs)-1 && ws[n] == gs[n] {
			n++
		}
		best = max(best, n)
	}
	return ws[:best], ws[best:]
}

// sibling is the field of the same account with the given measure words, or nil.
func (p *policy) sibling(acct []string, measure ...string) *field {
	return p.m.fieldByName[strings.Join(append(slices.Clone(acct), measure...), "_")]
}

func (p *policy) cappedAmount(f *field, sentences []string) (fieldValue, bool) {
	acct, measure := p.account(f)
	req := p.sibling(acct, "requested")
	// A limit caps what is elected, not what it costs per period ("per paycheck").
	if len(acct) == 0 || req == nil || req == f || slices.Contains(measure, "per") {
		return fieldValue{}, false
	}
	rv, ok := p.values[req.Name]
	if !ok {
		return fieldValue{}, false
	}
	asked, ok := lookupNumber(rv.value)
	if !ok {
		return fieldValue{}, false
	}
	for _, s := range sentences {
		m := upToLimit.FindStringSubmatch(s)
		if m == nil || !containsAll(plainWords(s), acct) {
			continue
		}
		limit, ok := lookupNumber(m[1])
		if !ok {
			continue
		}
		n := min(asked, limit)
		return amountValue(f, strconv.FormatFloat(n, 'f', -1, 64), n), true
	}
	return fieldValue{}, false
}

func (p *policy) quotient(f *field, sentences []string) (fieldValue, bool) {
	acct, measure := p.account(f)
	for _, s := range sentences {
		m := dividedBy.FindStringSubmatch(strings.TrimSpace(strings.ToLower(s)))
		if m == nil || !containsAll(plainWords(m[1]), measure) {
			continue
		}
		// The dividend: a value of the same account named in the rule ("annual election").
		var dividend *fieldValue
		for _, g := range p.m.fields {
			ga, gm := p.account(g)
			if g == f || !slices.Equal(ga, acct) || !containsAll(plainWords(m[2]), gm) {
				continue
			}
			if v, ok := p.values[g.Name]; ok {
				dividend = &v
			}
		}
		if dividend == nil {
			continue
		}
		x, ok := lookupNumber(dividend.value)
		if !ok {
			continue
		}
		// The divisor: the returned number whose name shares the most words with the rule's.
		divWords := plainWords(m[3])
		best, divisor := 0, 0.0
		for _, rec := range p.lookups {
			for k, v := range rec {
				y, ok := lookupNumber(v)
				if !ok || y == 0 {
					continue
				}
				n := 0
				for _, w := range nameWords(k) {
					if !genericWords[w] && containsAll(divWords, []string{w}) {
						n++
					}
				}
				if n > best {
					best, divisor = n, y
				}
			}
		}
		if best < 2 {
			continue
		}
		q := math.Round(x/divisor*100) / 100
		return amountValue(f, strconv.FormatFloat(q, 'f', -1, 64), q), true
	}
	return fieldValue{}, false
}

func (p *policy) becomes(f *field, sentences, looked []string) (fieldValue, bool) {
	for _, s := range sentences {
		low := " " + strings.ToLower(s) + " "
		loc := movesTo.FindStringIndex(low)
		if loc == nil {
			continue
		}
		cond, result := low[:loc[0]], " "+strings.Join(plainWords(low[loc[1]:]), " ")+" "
		if !slices.ContainsFunc(looked, func(l string) bool { return strings.Contains(cond, l) }) {
			continue
		}
		// The rule's case is the call's: a value of another choice the rule names ("adding a
		// child") is the one recorded; an unrecorded one waits.
		applies := true
		for _, l := range looked {
			cond = strings.ReplaceAll(cond, l, " ")
		}
		condWords := " " + strings.Join(plainWords(cond), " ") + " "
		for _, g := range p.m.fields {
			if g == f || g.Kind != kindChoice {
				continue
			}
			for _, e := range g.Enum {
				if !strings.Contains(condWords, " "+strings.Join(nameWords(e), " ")+" ") {
					continue
				}
				if v, ok := p.values[g.Name]; !ok || v.value != e {
					applies = false
				}
			}
		}
		if !applies {
			continue
		}
		for _, e := range f.Enum {
			if strings.HasPrefix(result, " "+strings.Join(nameWords(e), " ")+" ") {
				return fieldValue{field: f, value: e, spoken: strings.Join(nameWords(e), " ")}, true
			}
		}
	}
	return fieldValue{}, false
}

// listedPrice reads "<case on file>: <option> $<price>; …" for an amount the instructions say to
// find in the knowledge base, the option being a choice the call recorded.
func (p *policy) listedPrice(f *field, looked []string) (fieldValue, bool) {
	if !p.kbNamed(f) {
		return fieldValue{}, false
	}
	for _, t := range p.kbTexts {
		for _, s := range strings.Split(strings.ToLower(t), ". ") {
			head, list, ok := strings.Cut(s, ":")
			if !ok || !slices.Contains(looked, strings.TrimSpace(head)) {
				continue
			}
			for _, item := range strings.Split(list, ";") {
				m := dollars.FindStringSubmatchIndex(item)
				if m == nil {
					continue
				}
				label := strings.Join(plainWords(item[:m[0]]), " ")
				for _, g := range p.m.fields {
					v, ok := p.values[g.Name]
					if g == f || !ok || g.Kind != kindChoice || label != strings.Join(nameWords(fmtValue(v.value)), " ") {
						continue
					}
					price := item[m[2]:m[3]]
					if n, ok := lookupNumber(price); ok {
						return amountValue(f, price, n), true
					}
				}
			}
		}
	}
	return fieldValue{}, false
}

func (p *policy) sameDate(f *field, sentences []string) (fieldValue, bool) {
	for _, s := range sentences {
		low := strings.ToLower(s)
		m := onTheDate.FindStringSubmatch(low)
		if m == nil || !containsAll(plainWords(low), keywordsOf(nameWords(f.Name))) {
			continue
		}
		said := plainWords(m[1])
		for _, g := range p.m.fields {
			v, ok := p.values[g.Name]
			if g == f || !ok || g.Kind != kindDate || !containsAll(spokenWords(g.Name), said) {
				continue
			}
			c := v
			c.field, c.alts, c.unsure = f, nil, false
			return c, true
		}
	}
	return fieldValue{}, false
}

func fmtValue(v any) string {
	s, _ := v.(string)
	return s
}

var (
	ruleFor   = regexp.MustCompile(`^(.+?) (?:is|are|equals)((?: [a-z]+ed)?(?: at| by)?) (.+)$`)
	roundedUp = regexp.MustCompile(`,? rounded up\b.*$`)
	otherTail = regexp.MustCompile(`,? (?:rounded|round)\b.*$`)
	literal   = regexp.MustCompile(`^\$\s?([0-9][0-9,]*(?:\.[0-9]+)?)\b`)
)

// formula evaluates a rule "<what> is <expression>" for the field the rule's subject names. The
// expression is "A less B", "A times B", "A divided by B", "the sum of A and B", "the number of
// missing <things>" (billed less received), a dollar amount, or a phrase naming a value the call
// holds (a field recorded or a number a lookup returned, by the words their names share with it).
// A subject that names a case ("insured parcels", "uninsured parcels") applies only when a
// lookup returned that case. Amounts are to the cent, rounded up when the rule says so.
func (p *policy) formula(f *field, sentences []string) (fieldValue, bool) {
	keys := keywordsOf(nameWords(f.Name))
	// The rules about the field ("uninsured parcels are reimbursed …", "insured parcels are
	// reimbursed …"): what tells their cases apart must be known of this call.
	var family [][]string
	for _, s := range sentences {
		if m := ruleFor.FindStringSubmatch(strings.TrimSpace(strings.ToLower(s))); m != nil {
			if subject := plainWords(m[1] + m[2]); allPrefixed(subject, keys) {
				family = append(family, subject)
			}
		}
	}
	for _, s := range sentences {
		low := strings.TrimSpace(strings.ToLower(s))
		m := ruleFor.FindStringSubmatch(low)
		if m == nil || !strings.ContainsAny(m[3], "$") && !strings.Contains(m[3], " times ") && !strings.Contains(m[3], " less ") &&
			!strings.Contains(m[3], " divided by ") && !strings.Contains(m[3], "sum of") {
			continue
		}
		subject := plainWords(m[1] + m[2])
		if !allPrefixed(subject, keys) || !p.caseApplies(subject, family) {
			continue
		}
		expr := m[3]
		up := roundedUp.MatchString(expr)
		expr = otherTail.ReplaceAllString(expr, "")
		x, ok := p.evaluate(expr, f.Name)
		if !ok {
			continue
		}
		if up {
			x = math.Ceil(x*100-1e-9) / 100
		} else {
			x = math.Round(x*100) / 100
		}
		return amountValue(f, strconv.FormatFloat(x, 'f', -1, 64), x), true
	}
	return fieldValue{}, false
}

// allPrefixed reports whether every key is the start of a word of ws, or a word of ws the start of
// it, for six letters at least ("reimbursed" names reimbursement).
func allPrefixed(ws, keys []string) bool {
	for _, k := range keys {
		if !slices.ContainsFunc(ws, func(w string) bool { return sameRoot(w, k) }) {
			return false
		}
	}
	return len(keys) > 0
}

func sameRoot(a, b string) bool {
	a, b = stem(a), stem(b)
	if a == b {
		return true
	}
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n >= 6 && (n == len(a) || n == len(b))
}

// caseApplies checks a rule's case against the call. A word of its subject that another rule
// about the field negates ("insured" against "uninsured") must be a yes/no a lookup returned, yes
// for the word and no for its negation; a word that is a choice of a field ("damaged") must be
// the choice the call recorded. A rule whose case the call does not know yet does not apply.
func (p *policy) caseApplies(subject []string, family [][]string) bool {
	for _, w := range subject {
		base, negated := strings.CutPrefix(w, "un")
		if !negated {
			base, negated = strings.CutPrefix(w, "non")
		}
		paired := slices.ContainsFunc(family, func(o []string) bool {
			return slices.Contains(o, "un"+w) || slices.Contains(o, "non"+w) || negated && slices.Contains(o, base)
		})
		if paired {
			if !negated {
				base = w
			}
			want := map[bool]string{false: "yes", true: "no"}[negated]
			known := false
			for _, rec := range p.lookups {
				for k, v := range rec {
					if yn, ok := v.(string); ok && (k == base || sameRoot(k, base)) {
						if yn != want {
							return false
						}
						known = true
					}
				}
			}
			if !known {
				return false
			}
			continue
		}
		for _, g := range p.m.fields {
			if g.Kind != kindChoice || !slices.ContainsFunc(g.Enum, func(e string) bool { return strings.Join(nameWords(e), " ") == w }) {
				continue
			}
			if v, ok := p.values[g.Name]; !ok || strings.Join(nameWords(fmtValue(v.value)), " ") != w {
				return false
			}
		}
	}
	return true
}

func (p *policy) evaluate(expr, self string) (float64, bool) {
	expr = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(expr), "the "))
	if a, b, ok := strings.Cut(expr, " less "); ok {
		x, ok1 := p.evaluate(a, self)
		y, ok2 := p.evaluate(b, self)
		return x - y, ok1 && ok2
	}
	if a, b, ok := strings.Cut(expr, " divided by "); ok {
		x, ok1 := p.evaluate(a, self)
		y, ok2 := p.evaluate(b, self)
		return x / y, ok1 && ok2 && y != 0
	}
	if a, b, ok := strings.Cut(expr, " times "); ok {
		x, ok1 := p.evaluate(a, self)
		y, ok2 := p.evaluate(b, self)
		return x * y, ok1 && ok2
	}
	if rest, ok := strings.CutPrefix(expr, "sum of "); ok {
		a, b, ok := strings.Cut(rest, " and ")
		if !ok {
			return 0, false
		}
		x, ok1 := p.evaluate(a, self)
		y, ok2 := p.evaluate(b, self)
		return x + y, ok1 && ok2
	}
	if m := literal.FindStringSubmatch(expr); m != nil {
		return lookupNumber(m[1])
	}
	expr = strings.TrimPrefix(expr, "number of ")
	if rest, ok := strings.CutPrefix(expr, "missing "); ok {
		return p.missing(plainWords(rest))
	}
	return p.namedNumber(plainWords(expr), self)
}

// numbers are the call's numeric values by name: the fields recorded and what lookups returned,
// but for the field self, which a rule computes (an installment amount is no term of its own
// rule, "the balance divided by the number of installments").
func (p *policy) numbers(self string) map[string]float64 {
	out := map[string]float64{}
	for _, rec := range p.lookups {
		for k, v := range rec {
			if n, ok := lookupNumber(v); ok {
				out[k] = n
			}
		}
	}
	for name, v := range p.values {
		if n, ok := lookupNumber(v.value); ok && name != self && (v.field == nil || v.field.Kind == kindNumber) {
			out[name] = n
		}
	}
	return out
}

// namedNumber is the value whose name shares the most words with the phrase; several names that
// share as many and hold different values name nothing.
func (p *policy) namedNumber(phrase []string, self string) (float64, bool) {
	best, val, clash := 0, 0.0, false
	for name, n := range p.numbers(self) {
		k := 0
		for _, w := range nameWords(name) {
			if !genericWords[w] && slices.ContainsFunc(phrase, func(x string) bool { return sameRoot(x, w) }) {
				k++
			}
		}
		switch {
		case k > best:
			best, val, clash = k, n, false
		case k == best && k > 0 && n != val:
			clash = true
		}
	}
	return val, best > 0 && !clash
}

var (
	billedWords   = []string{"billed", "invoiced", "ordered", "shipped"}
	receivedWords = []string{"received", "delivered"}
)

// missing is how many of a thing were billed but not received (units_billed less units_received).
func (p *policy) missing(thing []string) (float64, bool) {
	var billed, received []float64
	for name, n := range p.numbers("") {
		ws := nameWords(name)
		switch {
		case slices.ContainsFunc(ws, func(w string) bool { return slices.Contains(billedWords, w) }):
			billed = append(billed, n)
		case slices.ContainsFunc(ws, func(w string) bool { return slices.Contains(receivedWords, w) }):
			received = append(received, n)
		}
	}
	if len(billed) == 0 || len(received) == 0 {
		return 0, false
	}
	b, r := slices.Max(billed), slices.Min(received)
	if slices.Min(billed) != b || slices.Max(received) != r || r > b {
		return 0, false // the values disagree: no single count
	}
	return b - r, true
}

var (
	classHead  = regexp.MustCompile(`(?:^|[.;]\s+)([A-Za-z][A-Za-z ]*?)\s*\([^)]*\):`)
	comparison = regexp.MustCompile(`\b(below|under|less than|above|over|more than)\s+(-?[0-9]+(?:\.[0-9]+)?)\s*(°\s*[fc]|degrees)?`)
	monthSpan  = regexp.MustCompile(`\bbetween (` + monthAlternation + `) ([0-9]{1,2}) and (` + monthAlternation + `) ([0-9]{1,2})\b`)
	everything = regexp.MustCompile(`\b(everything|anything) else\b`)
)

const monthAlternation = "january|february|march|april|may|june|july|august|september|october|november|december"

// classified reads a matrix of the knowledge base that lists the field's choices as headings
// ("Emergency (technician within 4 hours): no heat when …; active water leaks; … Urgent (…): …")
// and takes the first choice with a case the call meets: every number the case bounds ("below
// 60°F") is a recorded value within the bound, any season it names holds today, and at least one
// of its other words is the root of a choice the call recorded ("heat" for heating). A case of
// "everything else" is met by any call, after the others.
func (p *policy) classified(f *field) (fieldValue, bool) {
	for _, t := range p.kbTexts {
		heads := classHead.FindAllStringSubmatchIndex(t, -1)
		if len(heads) < 2 {
			continue
		}
		fallback, undecided := "", false
		for i, h := range heads {
			label := strings.TrimSpace(t[h[2]:h[3]])
			choice := ""
			for _, e := range f.Enum {
				if strings.EqualFold(strings.Join(nameWords(e), " "), label) {
					choice = e
				}
			}
			if choice == "" {
				continue
			}
			end := len(t)
			if i+1 < len(heads) {
				end = heads[i+1][0]
			}
			for _, item := range strings.Split(t[h[1]:end], ";") {
				low := strings.ToLower(strings.TrimSpace(item))
				if everything.MatchString(low) {
					fallback = choice
					continue
				}
				met, known := p.meets(low)
				if met {
					return fieldValue{field: f, value: choice, spoken: strings.Join(nameWords(choice), " ")}, true
				}
				undecided = undecided || !known
			}
		}
		// "Everything else" only once every case could be judged: a temperature not given yet
		// may still make the call an emergency.
		if fallback != "" && !undecided && p.recordedChoice() {
			return fieldValue{field: f, value: fallback, spoken: strings.Join(nameWords(fallback), " ")}, true
		}
	}
	return fieldValue{}, false
}

// recordedChoice reports whether the call has recorded any choice (what a matrix's "everything
// else" is judged on: a call that said nothing yet is no case at all).
func (p *policy) recordedChoice() bool {
	for _, v := range p.values {
		if v.field != nil && v.field.Kind == kindChoice {
			return true
		}
	}
	return false
}

// meets judges one case of a matrix against the call; known is false when the case bounds a
// value the call does not hold yet (for a case about the call's kind of problem only).
func (p *policy) meets(item string) (met, known bool) {
	words := plainWords(item)
	if !p.aboutCall(words) {
		return false, true
	}
	for _, m := range comparison.FindAllStringSubmatchIndex(item, -1) {
		bound, _ := strconv.ParseFloat(item[m[4]:m[5]], 64)
		// The value bounded is named by the words before the comparison ("the indoor temperature").
		x, ok := p.namedNumber(plainWords(item[:m[0]]), "")
		if !ok && m[6] >= 0 {
			// "no heat above 60°F": the value is the call's temperature.
			x, ok = p.temperature()
		}
		if !ok {
			return false, false
		}
		switch item[m[2]:m[3]] {
		case "below", "under", "less than":
			ok = x < bound
		default:
			ok = x > bound
		}
		if !ok {
			return false, true
		}
	}
	if m := monthSpan.FindStringSubmatch(item); m != nil && p.now != nil {
		from := monthDay(m[1], m[2])
		to := monthDay(m[3], m[4])
		now := p.now()
		today := int(now.Month())*100 + now.Day()
		in := from <= today && today <= to
		if from > to { // the span runs over the new year
			in = today >= from || today <= to
		}
		if !in {
			return false, true
		}
	}
	return true, true
}

// aboutCall reports whether one of a case's words is the root of a choice the call recorded
// ("heat" for heating).
func (p *policy) aboutCall(words []string) bool {
	for _, v := range p.values {
		if v.field == nil || v.field.Kind != kindChoice {
			continue
		}
		e, _ := v.value.(string)
		for _, ew := range nameWords(e) {
			for _, w := range words {
				if len(w) >= 4 && len(ew) >= 4 && (strings.HasPrefix(ew, w) || strings.HasPrefix(w, ew)) {
					return true
				}
			}
		}
	}
	return false
}

func monthDay(month, day string) int {
	d, _ := strconv.Atoi(day)
	for i, m := range strings.Split(monthAlternation, "|") {
		if m == month {
			return (i+1)*100 + d
		}
	}
	return 0
}

// temperature is the recorded value of a field in degrees (by its name or description).
func (p *policy) temperature() (float64, bool) {
	for _, f := range p.m.fields {
		d := strings.ToLower(f.Description)
		if f.Kind != kindNumber || !(strings.Contains(d, "degrees") || strings.Contains(d, "fahrenheit") ||
			slices.ContainsFunc(nameWords(f.Name), func(w string) bool { return w == "temp" || w == "temperature" })) {
			continue
		}
		if v, ok := p.values[f.Name]; ok {
			return lookupNumber(v.value)
		}
	}
	return 0, false
}

var byWhom = regexp.MustCompile(`^\s*([^:]+):\s*([a-z]+) by (.+?)\s*$`)

// perItem reads "<item>: <verb> by <who>" rules for each item of a list the call recorded, the
// verb sharing the field's root ("approved" for approvers); who is the last of its appositions
// ("the data owner, the Finance Controller" is the Finance Controller). Every recorded item needs
// a rule, else nothing is read (a list short of one approver is a wrong list).
func (p *policy) perItem(f *field) (fieldValue, bool) {
	root := nameWords(f.Name)
	for _, g := range p.m.fields {
		v, ok := p.values[g.Name]
		items, isList := v.value.([]string)
		if g == f || !ok || g.Kind != kindList || !isList || len(items) == 0 {
			continue
		}
		var who []string
		for _, item := range items {
			item = " " + strings.Join(plainWords(item), " ") + " "
			found := ""
			for _, t := range p.kbTexts {
				for _, s := range strings.Split(t, ". ") {
					m := byWhom.FindStringSubmatch(strings.TrimSuffix(s, "."))
					if m == nil || !slices.ContainsFunc(root, func(r string) bool { return sameRoot(r, strings.ToLower(m[2])) }) ||
						!strings.Contains(item, " "+strings.Join(plainWords(m[1]), " ")+" ") {
						continue
					}
					parts := strings.Split(m[3], ",")
					found = strings.TrimSpace(parts[len(parts)-1])
					found = strings.TrimSpace(strings.TrimPrefix(found, "the "))
				}
			}
			if found == "" {
				return fieldValue{}, false
			}
			if !slices.Contains(who, found) {
				who = append(who, found)
			}
		}
		return fieldValue{field: f, value: who, spoken: strings.Join(who, " and ")}, true
	}
	return fieldValue{}, false
}

// kbNamed reports a field the instructions send the agent to the knowledge base for: a search
// they name holds each of its distinctive words, by root ("the access level that can be granted"
// names granted_access, not requested_access).
func (p *policy) kbNamed(f *field) bool {
	for _, q := range p.m.kbQueries {
		all, any := true, false
		for _, w := range nameWords(f.Name) {
			if genericWords[w] || len(w) <= 3 {
				continue
			}
			any = true
			all = all && slices.ContainsFunc(plainWords(q), func(x string) bool { return sameRoot(x, w) || stem(x) == stem(w) })
		}
		if any && all {
			return true
		}
	}
	return false
}

// sameAs reads a choice the knowledge base ties to another value of the call ("refunded … by the
// method of the duplicate payment"): the choice written in that value ("ACH-0925-7781" is ach;
// "CHK-4471" is check).
func (p *policy) sameAs(f *field, sentences []string) (fieldValue, bool) {
	for _, s := range sentences {
		for _, m := range byTheOf.FindAllStringSubmatch(s, -1) {
			if !slices.Contains(nameWords(f.Name), m[1]) {
				continue
			}
			of := plainWords(m[2])
			for _, g := range p.m.allFields() {
				v, ok := p.values[g.Name]
				if g == f || !ok || !containsAll(nameWords(g.Name), of) {
					continue
				}
				for _, tok := range plainWords(fmtValue(v.value)) {
					if c, ok := choiceAbbreviated(f.Enum, tok); ok {
						return fieldValue{field: f, value: c, spoken: strings.Join(nameWords(c), " ")}, true
					}
				}
			}
		}
	}
	return fieldValue{}, false
}

// choiceAbbreviated is the choice a token of a reference writes: itself ("ach"), or its
// abbreviation in payment references ("chk", "chq" for check; "cc" for card).
func choiceAbbreviated(enum []string, tok string) (string, bool) {
	abbrev := map[string]string{"chk": "check", "chq": "check", "cc": "card"}
	for _, c := range enum {
		if tok == strings.ToLower(c) || abbrev[tok] == strings.ToLower(c) {
			return c, true
		}
	}
	return "", false
}
