package grade

import (
	"bytes"
	"encoding/json"
	"math"
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
	lo    float64
	hi    float64
	ok    bool // the gold value parsed under its grader
}

// Prepare canonicalises a gold field for its grader.
func Prepare(g task.GoldField) *Prepared {
	p := &Prepared{Gold: g, text: text(g.Gold)}
	p.key, p.num, p.items, p.lo, p.hi, p.ok = canonical(g.Grader, g.Params, g.Gold)
	return p
}

// canonical computes the comparison form of a value under a grader type.
func canonical(grader string, params task.GraderParams, raw json.RawMessage) (key string, num float64, items []string, lo, hi float64, ok bool) {
	t := text(raw)
	switch grader {
	case Exact:
		return strings.TrimSpace(t), 0, nil, 0, 0, true
	case Phone:
		k := canon.Phone(t)
		return k, 0, nil, 0, 0, k != ""
	case Date:
		d, ok := canon.ParseDate(t)
		return d.String(), 0, nil, 0, 0, ok
	case Address:
		return canon.Address(t), 0, nil, 0, 0, true
	case Enum:
		return enumValue(params, t), 0, nil, 0, 0, true
	case Numeric:
		n, ok := canon.Number(t)
		return "", n, nil, 0, 0, ok
	case Set, OrderedList:
		return "", 0, keys(params.Item, list(raw)), 0, 0, true
	case Interval:
		lo, hi, ok := interval(raw)
		return "", 0, nil, lo, hi, ok
	case Identifier:
		return canon.Identifier(t), 0, nil, 0, 0, true
	default: // casefold, and semantic without a judge
		return canon.Fold(t), 0, nil, 0, 0, true
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
	key, num, items, lo, hi, ok := canonical(g.Grader, g.Params, pred)
	switch g.Grader {
	case Date:
		if !ok {
			return FieldScore{Note: "not a date"}
		}
		return score(key == p.key)
	case Phone:
		return score(ok && key == p.key)
	case Address:
		if key == p.key {
			return FieldScore{Score: 1}
		}
		return FieldScore{Score: round(tokenF1(strings.Fields(key), strings.Fields(p.key)))}
	case Numeric:
		if !ok {
			return FieldScore{Note: "not a number"}
		}
		tol := math.Max(g.Params.AbsTolerance, g.Params.RelTolerance*math.Abs(p.num))
		return score(math.Abs(num-p.num) <= tol+1e-9)
	case Set:
		return setScore(p.items, items)
	case OrderedList:
		n := max(len(p.items), len(items))
		if n == 0 {
			return FieldScore{Score: 1}
		}
		return FieldScore{Score: round(float64(lcs(p.items, items)) / float64(n))}
	case Interval:
		if !ok || !p.ok {
			return FieldScore{Note: "not an interval"}
		}
		return intervalScore(p.lo, p.hi, lo, hi)
	case Identifier:
		return identifierScore(p, key)
	}
	return score(key == p.key)
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

var listSeparators = strings.NewReplacer(";", ",", " and then ", ",", " then ", ",", " and ", ",", "&", ",")

// list reads a JSON array of values, or a string listing items separated by commas, semicolons
// or "and".
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
	s := text(raw)
	s = listSeparators.Replace(s)
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func score(ok bool) FieldScore {
	if ok {
		return FieldScore{Score: 1}
	}
	return FieldScore{Score: 0}
}

// enumValue maps a value through the grader's synonyms to its canonical enumeration value.
func enumValue(p task.GraderParams, v string) string {
	f := canon.Fold(v)
	for canonical, syns := range p.Synonyms {
		if canon.Fold(canonical) == f {
			return canon.Fold(canonical)
		}
		for _, s := range syns {
			if canon.Fold(s) == f {
				return canon.Fold(canonical)
			}
		}
	}
	return f
}

func identifierScore(p *Prepared, pred string) FieldScore {
	gd := p.key
	if pred == gd {
		return FieldScore{Score: 1}
	}
	// A type prefix may be said or left out: 2201 is JOB-2201.
	prefixes := append([]string(nil), p.Gold.Params.Prefixes...)
	if tp := canon.TypePrefix(p.text); tp != "" {
		prefixes = append(prefixes, tp)
	}
	for _, pre := range prefixes {
		pre = canon.Identifier(pre)
		if pre != "" && strings.TrimPrefix(pred, pre) == strings.TrimPrefix(gd, pre) && (strings.HasPrefix(pred, pre) || strings.HasPrefix(gd, pre)) {
			return FieldScore{Score: 1, Note: "type prefix " + pre + " ignored"}
		}
	}
	return FieldScore{Score: 0}
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
	}
	return canon.Fold(s)
}

// setScore is the F1 of predicted against gold items (precision and recall in the note).
func setScore(gi, pi []string) FieldScore {
	gs := map[string]bool{}
	for _, k := range gi {
		gs[k] = true
	}
	ps := map[string]bool{}
	for _, k := range pi {
		ps[k] = true
	}
	tp := 0
	for k := range ps {
		if gs[k] {
			tp++
		}
	}
	if len(ps) == 0 || len(gs) == 0 {
		return score(len(ps) == len(gs))
	}
	prec, rec := float64(tp)/float64(len(ps)), float64(tp)/float64(len(gs))
	f1 := 0.0
	if tp > 0 {
		f1 = 2 * prec * rec / (prec + rec)
	}
	return FieldScore{Score: round(f1), Note: "precision " + ftoa(prec) + " recall " + ftoa(rec)}
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
func intervalScore(gs, ge, ps, pe float64) FieldScore {
	inter := math.Min(ge, pe) - math.Max(gs, ps)
	union := math.Max(ge, pe) - math.Min(gs, ps)
	if inter < 0 {
		return FieldScore{Score: 0}
	}
	if union == 0 {
		return FieldScore{Score: 1}
	}
	return FieldScore{Score: round(inter / union)}
}

// interval reads [a, b], {"start": a, "end": b} or "a to b" / "a - b" / "from a until b". Dates are
// converted to day numbers with the end day included.
func interval(raw json.RawMessage) (float64, float64, bool) {
	var a, b string
	var arr []json.RawMessage
	var obj struct{ Start, End json.RawMessage }
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) > 0 && raw[0] == '[' && json.Unmarshal(raw, &arr) == nil && len(arr) == 2:
		a, b = text(arr[0]), text(arr[1])
	case len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &obj) == nil && obj.Start != nil:
		a, b = text(obj.Start), text(obj.End)
	default:
		s := strings.ToLower(text(raw))
		s = strings.TrimPrefix(strings.TrimSpace(s), "from ")
		for _, sep := range []string{" through ", " until ", " till ", " to ", " - ", "–"} {
			if i := strings.Index(s, sep); i >= 0 {
				a, b = s[:i], s[i+len(sep):]
				break
			}
		}
	}
	if a == "" || b == "" {
		return 0, 0, false
	}
	if da, ok := canon.ParseDate(a); ok {
		db, ok := canon.ParseDate(b)
		if !ok {
			return 0, 0, false
		}
		x, y := float64(da.Ordinal()), float64(db.Ordinal())+1
		return math.Min(x, y-1), math.Max(x+1, y), true
	}
	x, ok1 := canon.Number(a)
	y, ok2 := canon.Number(b)
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	return math.Min(x, y), math.Max(x, y), true
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
