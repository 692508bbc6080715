package dialog

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/voicebench/humanaudit/internal/asr"
	"github.com/voicebench/humanaudit/internal/canon"
)

// recordCode is a reference as records write it: letters and digits in dash-joined groups, with
// at least one digit ("ACH-0925-7781", "CHK-4471", "RF-2026-11873").
var recordCode = regexp.MustCompile(`\b[A-Z0-9]+(?:-[A-Z0-9]+)+\b|\b[A-Z]{2,}[0-9][A-Z0-9]*\b`)

// codesOnRecord lists the references in what the lookups returned, in order, once each.
func (p *policy) codesOnRecord() []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			for _, c := range recordCode.FindAllString(x, -1) {
				if digitCount(c) > 0 && symbols(c) >= 5 && !isDateLike(c) && !slices.Contains(out, c) {
					out = append(out, c)
				}
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k])
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	for _, rec := range p.lookups {
		walk(rec)
	}
	return out
}

// isDateLike reports a date written with dashes ("2026-11-04"), which is no reference.
func isDateLike(c string) bool { return dashedDate.MatchString(c) }

var dashedDate = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// onRecord reads a code the caller gave for the asked field as the reference on record it is
// heard as, when one is: a caller reading the duplicate payment's reference off a statement reads
// one the payments lookup returned, and "ach … nine to five … seven seven eight one" is
// ACH-0925-7781, not CHK-4471. The reference is read back like any code; a code that matches no
// reference, or two, is left as heard.
func (l *listener) onRecord(exp expectation, h heard, u Utterance) heard {
	f := exp.field
	if exp.kind != expectField || f == nil || f.Kind != kindIdentifier || len(exp.codes) == 0 {
		return h
	}
	var heardCodes []string
	switch {
	case len(h.values) == 1 && h.values[0].field == f:
		heardCodes = append(heardCodes, fmt.Sprint(h.values[0].value))
		for _, a := range h.values[0].alts {
			heardCodes = append(heardCodes, fmt.Sprint(a.value))
		}
	case len(h.values) == 0 && (h.intent == intentOther || h.intent == intentNone):
		if s := f.slot(l.known); s != nil {
			if v, ok := s.Parse(u.Open.Text); ok {
				heardCodes = append(heardCodes, v.Text)
			}
		}
		for _, r := range u.Readings {
			if r.Slot.Kind == asr.KindIdentifier && r.Answer.OK {
				heardCodes = append(heardCodes, r.Answer.Value.Text)
			}
		}
	default:
		return h
	}
	code, ok := matchingCode(heardCodes, exp.codes)
	if !ok {
		return h
	}
	v := fieldValue{field: f, value: code, spoken: code, unsure: true}
	h.values, h.intent = []fieldValue{v}, intentAnswer
	h.why = withNote(h.why, code+" on record")
	return h
}

// matchingCode is the one reference on record that a heard code matches: the same last four
// digits (what a caller reading a long reference gets across best), or most of its symbols in
// order.
func matchingCode(heard, codes []string) (string, bool) {
	var found []string
	for _, c := range codes {
		cs := strings.ReplaceAll(c, "-", "")
		for _, h := range heard {
			if h == "" {
				continue
			}
			if h == cs || sameLastDigits(h, cs, 4) || similarity(h, cs) >= 0.75 {
				if !slices.Contains(found, c) {
					found = append(found, c)
				}
				break
			}
		}
	}
	if len(found) != 1 {
		return "", false
	}
	return found[0], true
}

// sameLastDigits reports two codes whose digits end in the same n digits.
func sameLastDigits(a, b string, n int) bool {
	da, db := digitsOf(a), digitsOf(b)
	return len(da) >= n && len(db) >= n && da[len(da)-n:] == db[len(db)-n:]
}

func digitsOf(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// inOrder moves a corrected date the caller did not place by name to the other field of its
// start/end pair when, where it was placed, the start would fall after the end and, in the other,
// the pair stays in order: "and since it's still four weeks, [the end date] changes too … Friday,
// February twelfth", the field's name misheard, was taken for the start date (recorded last),
// starting the leave a week after it ended.
func inOrder(m *model, exp expectation, h heard, words []string) heard {
	if len(h.values) != 1 || (h.intent != intentCorrection && h.intent != intentVolunteer) {
		return h
	}
	v := h.values[0]
	if v.field.Kind != kindDate || slices.Contains(m.mentioned(words, m.allFields()), v.field) {
		return h
	}
	other, isStart := datePartner(m, v.field)
	if other == nil {
		return h
	}
	day := func(x any) (canon.Date, bool) {
		if x == nil {
			return canon.Date{}, false
		}
		return canon.ParseDate(fmt.Sprint(x))
	}
	nd, ok1 := day(v.value)
	od, ok2 := day(exp.values[other.Name])
	if !ok1 || !ok2 || nd.Year == 0 || od.Year == 0 {
		return h
	}
	ordered := func(start, end canon.Date) bool { return start.String() <= end.String() }
	var broken bool
	if isStart {
		broken = !ordered(nd, od)
	} else {
		broken = !ordered(od, nd)
	}
	if !broken {
		return h
	}
	// In the other field, against this field's value on record (if any).
	if cur, ok := day(exp.values[v.field.Name]); ok {
		if isStart && !ordered(cur, nd) || !isStart && !ordered(nd, cur) {
			return h
		}
	}
	moved := v
	moved.field = other
	h.values = []fieldValue{moved}
	h.why = withNote(h.why, "the date kept "+v.field.Name+" before "+other.Name)
	return h
}

// datePartner is the other date field of f's start/end pair (leave_start and leave_end,
// start_date and end_date), and whether f is the start.
func datePartner(m *model, f *field) (*field, bool) {
	swaps := [][2]string{{"start", "end"}, {"begin", "end"}, {"from", "to"}, {"first", "last"}, {"check_in", "check_out"}}
	for _, sw := range swaps {
		for i, isStart := range []bool{true, false} {
			a, b := sw[i], sw[1-i]
			name := "_" + f.Name + "_"
			if !strings.Contains(name, "_"+a+"_") {
				continue
			}
			o := m.fieldByName[strings.Trim(strings.Replace(name, "_"+a+"_", "_"+b+"_", 1), "_")]
			if o != nil && o.Kind == kindDate {
				return o, isStart
			}
		}
	}
	return nil, false
}
