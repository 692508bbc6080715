package dialog

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

var (
	movesTo   = regexp.MustCompile(`\b(?:moves? (?:it |them )?to|changes? (?:it |them )?to|becomes)\b`)
	dividedBy = regexp.MustCompile(`^(.+?) is (?:the )?(.+?) divided by (?:the )?(.+?)(?:[:;,]|$)`)
	upToLimit = regexp.MustCompile(`\bup to \$\s?([0-9][0-9,]*(?:\.[0-9]+)?)`)
	onTheDate = regexp.MustCompile(`\beffective (?:on|from|as of) (?:the )?(.+?)(?:[,;]|$)`)
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
//   - a price listed for the cases on file ("Evergreen PPO 1500: … Family $188.26");
//   - a date that is another date of the call ("coverage for a newborn is effective on the date of
//     birth").
func (p *policy) computedValue(f *field, sentences, looked []string) (fieldValue, bool) {
	switch f.Kind {
	case kindNumber:
		if v, ok := p.quotient(f, sentences); ok {
			return v, true
		}
		if v, ok := p.cappedAmount(f, sentences); ok {
			return v, true
		}
		return p.listedPrice(f, looked)
	case kindChoice:
		return p.becomes(f, sentences, looked)
	case kindDate:
		return p.sameDate(f, sentences)
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
	named := false
	for _, q := range p.m.kbQueries {
		for _, w := range nameWords(f.Name) {
			named = named || !genericWords[w] && len(w) > 3 && containsAll(plainWords(q), []string{w})
		}
	}
	if !named {
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
