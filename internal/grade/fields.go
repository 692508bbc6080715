package grade

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/voicebench/humanaudit/internal/canon"
	"github.com/voicebench/humanaudit/internal/task"
)

// Grader types.
const (
	Exact       = "exact"
	CaseFold    = "casefold"
	Phone       = "phone"
	Date        = "date"
	Address     = "address"
	Enum        = "enum"
	Numeric     = "numeric"
	Set         = "set"
	OrderedList = "ordered_list"
	Interval    = "interval"
	Identifier  = "identifier"
	Semantic    = "semantic"
)

// FieldScore is the outcome of grading one field value.
type FieldScore struct {
	Score float64
	Note  string
}

// Prepared is a gold field with its canonical form computed once, so that grading many traces of
// a task canonicalises each gold value only once.
type Prepared struct {
	Gold  task.GoldField
	text  string
	key   string // canonical key for graders that compare keys
	num   float64
	items []string
	iv    canon.Interval
	id    canon.IDForm
	enum  enumTable
	ok    bool // the gold value parsed under its grader
}

// Prepare canonicalises a gold field for its grader.
func Prepare(g task.GoldField) *Prepared {
	p := &Prepared{Gold: g, text: text(g.Gold)}
	if g.Grader == Enum {
		p.enum = newEnumTable(g.Params.Synonyms)
	}
	p.read(g.Gold, p)
	return p
}

// read computes the comparison form of a value (gold or predicted) under the field's grader into
// v; p holds what the grader needs (the enum table).
func (p *Prepared) read(raw json.RawMessage, v *Prepared) {
	t := text(raw)
	v.ok = true
	switch p.Gold.Grader {
	case Exact:
		v.key = strings.TrimSpace(t)
	case Phone:
		v.key = canon.Phone(t)
		v.ok = v.key != ""
	case Date:
		d, ok := canon.ParseDate(t)
		v.key, v.ok = d.String(), ok
	case Address:
		v.key = canon.Address(t)
	case Enum:
		v.key = p.enum.value(t)
	case Numeric:
		v.num, v.ok = canon.Number(t)
	case Set, OrderedList:
		v.items = keys(p.Gold.Params.Item, list(raw))
	case Interval:
		v.iv, v.ok = interval(raw)
	case Identifier:
		v.id = canon.NewIDForm(t)
	case CaseFold:
		v.key = canon.Fold(t)
		if strings.IndexByte(p.text, '@') >= 0 {
			v.key = canon.Email(t) // an address may be dictated: "priya dot v at northwind dot example"
		}
	default: // semantic without a judge
		v.key = canon.Fold(t)
	}
}

// GradeField grades pred against gold with the field's grader type (semantic falls back to
// case-folded equality; Grader handles the judge).
func GradeField(gold task.GoldField, pred json.RawMessage) FieldScore {
	return Prepare(gold).Score(pred)
}

// Score grades one predicted value. A required field is correct only at score 1.
func (p *Prepared) Score(pred json.RawMessage) FieldScore {
	if len(pred) == 0 || string(pred) == "null" {
		return FieldScore{Score: 0, Note: "not recorded"}
	}
	g := p.Gold
	var v Prepared
	p.read(pred, &v)
	switch g.Grader {
	case Date:
		if !v.ok {
			return FieldScore{Note: "not a date"}
		}
		return score(v.key == p.key)
	case Phone:
		return score(v.ok && v.key == p.key)
	case Address:
		if v.key == p.key {
			return FieldScore{Score: 1}
		}
		return FieldScore{Score: round(tokenF1(strings.Fields(v.key), strings.Fields(p.key)))}
	case Numeric:
		if !v.ok {
			return FieldScore{Note: "not a number"}
		}
		tol := math.Max(g.Params.AbsTolerance, g.Params.RelTolerance*math.Abs(p.num))
		return score(math.Abs(v.num-p.num) <= tol+1e-9)
	case Set:
		return setScore(p.items, v.items)
	case OrderedList:
		n := max(len(p.items), len(v.items))
		if n == 0 {
			return FieldScore{Score: 1}
		}
		return FieldScore{Score: round(float64(lcs(p.items, v.items)) / float64(n))}
	case Interval:
		if !v.ok || !p.ok {
			return FieldScore{Note: "not an interval"}
		}
		return intervalScore(p.iv, v.iv)
	case Identifier:
		same, how := canon.SameIdentifier(p.id, v.id, g.Params.Prefixes)
		return FieldScore{Score: float64(b2i(same)), Note: how}
	}
	return score(v.key == p.key)
}

// text renders a JSON value as the text a person dictated: strings as is, numbers in their JSON
// form, arrays joined with commas.
func text(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		if inner := raw[1 : len(raw)-1]; len(raw) >= 2 && bytes.IndexByte(inner, '\\') < 0 && bytes.IndexByte(inner, '"') < 0 {
			return string(inner) // no escapes: the common case, without a decoder
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case '[':
		items := list(raw)
		return strings.Join(items, ", ")
	case '{':
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) == nil {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			parts := make([]string, len(keys))
			for i, k := range keys {
				parts[i] = k + ": " + text(m[k])
			}
			return strings.Join(parts, ", ")
		}
	}
	return string(raw)
}

// list reads a JSON array of values, or a string listing items (see canon.Items: items
// separated by ";" are split only there).
func list(raw json.RawMessage) []string {
	raw = bytes.TrimSpace(raw)
	var arr []json.RawMessage
	if len(raw) > 0 && raw[0] == '[' && json.Unmarshal(raw, &arr) == nil {
		out := make([]string, 0, len(arr))
		for _, a := range arr {
			if s := strings.TrimSpace(text(a)); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return canon.Items(text(raw))
}

func score(ok bool) FieldScore {
	if ok {
		return FieldScore{Score: 1}
	}
	return FieldScore{Score: 0}
}

// enumTable maps the enum key of every canonical value and synonym to its canonical value's key.
// It is built in sorted order of the canonical values, so a synonym listed under two of them
// (which the task validator refuses) still maps the same way on every run; lookups never range
// over a map.
type enumTable map[string]string

func newEnumTable(synonyms map[string][]string) enumTable {
	canonicals := make([]string, 0, len(synonyms))
	for c := range synonyms {
		canonicals = append(canonicals, c)
	}
	sort.Strings(canonicals)
	t := enumTable{}
	for _, c := range canonicals {
		k := canon.EnumKey(c)
		if _, ok := t[k]; !ok {
			t[k] = k
		}
	}
	for _, c := range canonicals {
		k := canon.EnumKey(c)
		for _, s := range synonyms[c] {
			if sk := canon.EnumKey(s); sk != "" {
				if _, ok := t[sk]; !ok {
					t[sk] = k
				}
			}
		}
	}
	return t
}

// value maps a value through the synonyms to its canonical value's key; a yes/no answer recorded
// as a boolean (true, false) reads as yes or no.
func (t enumTable) value(v string) string {
	k := canon.EnumKey(v)
	if c, ok := t[k]; ok {
		return c
	}
	switch k {
	case "true":
		return "yes"
	case "false":
		return "no"
	}
	return k
}

// itemKey canonicalises one item of a set or list.
func itemKey(kind, s string) string {
	switch kind {
	case Identifier:
		return canon.Identifier(s)
	case Date:
		if d, ok := canon.ParseDate(s); ok {
			return d.String()
		}
	case Phone:
		return canon.Phone(s)
	case Address:
		return canon.Address(s)
	case Exact:
		return strings.TrimSpace(s)
	case Numeric:
		if n, ok := canon.Number(s); ok {
			return strconv.FormatFloat(n, 'g', -1, 64)
		}
	case Enum:
		return canon.EnumKey(s)
	}
	return canon.Fold(s)
}

// setScore is the F1 of predicted against gold items (precision and recall in the note), over
// the distinct items of each side.
func setScore(gi, pi []string) FieldScore {
	gs, ps := distinct(gi), distinct(pi)
	if len(ps) == 0 || len(gs) == 0 {
		return score(len(ps) == len(gs))
	}
	tp := 0
	for i, j := 0, 0; i < len(gs) && j < len(ps); {
		switch {
		case gs[i] == ps[j]:
			tp++
			i++
			j++
		case gs[i] < ps[j]:
			i++
		default:
			j++
		}
	}
	prec, rec := float64(tp)/float64(len(ps)), float64(tp)/float64(len(gs))
	f1 := 0.0
	if tp > 0 {
		f1 = 2 * prec * rec / (prec + rec)
	}
	return FieldScore{Score: round(f1), Note: "precision " + ftoa(prec) + " recall " + ftoa(rec)}
}

// distinct returns the sorted distinct items.
func distinct(items []string) []string {
	out := append([]string(nil), items...)
	sort.Strings(out)
	return slices.Compact(out)
}

func keys(kind string, items []string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = itemKey(kind, it)
	}
	return out
}

func lcs(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			switch {
			case a[i-1] == b[j-1]:
				cur[j] = prev[j-1] + 1
			case prev[j] >= cur[j-1]:
				cur[j] = prev[j]
			default:
				cur[j] = cur[j-1]
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// intervalScore is the intersection over union of two intervals.
func intervalScore(g, p canon.Interval) FieldScore {
	inter := math.Min(g.Hi, p.Hi) - math.Max(g.Lo, p.Lo)
	union := math.Max(g.Hi, p.Hi) - math.Min(g.Lo, p.Lo)
	if inter < 0 {
		return FieldScore{Score: 0}
	}
	if union == 0 {
		return FieldScore{Score: 1}
	}
	return FieldScore{Score: round(inter / union)}
}

// interval reads [a, b], {"start": a, "end": b} or a dictated range ("from a until b", "between a
// and b", "a/b" in ISO). Dates become day numbers with the end day included.
func interval(raw json.RawMessage) (canon.Interval, bool) {
	var arr []json.RawMessage
	var obj struct{ Start, End json.RawMessage }
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) > 0 && raw[0] == '[' && json.Unmarshal(raw, &arr) == nil && len(arr) == 2:
		return canon.Endpoints(text(arr[0]), text(arr[1]))
	case len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &obj) == nil && obj.Start != nil:
		return canon.Endpoints(text(obj.Start), text(obj.End))
	}
	return canon.ParseInterval(text(raw))
}

func tokenF1(a, b []string) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	count := map[string]int{}
	for _, t := range b {
		count[t]++
	}
	tp := 0
	for _, t := range a {
		if count[t] > 0 {
			count[t]--
			tp++
		}
	}
	if tp == 0 {
		return 0
	}
	p, r := float64(tp)/float64(len(a)), float64(tp)/float64(len(b))
	return 2 * p * r / (p + r)
}

// round keeps six decimals so that scores print the same on every machine.
func round(x float64) float64 { return math.Round(x*1e6) / 1e6 }

func ftoa(x float64) string { return strconv.FormatFloat(round(x), 'f', -1, 64) }
