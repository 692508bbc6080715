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

// fieldGrader grades one predicted value against a gold field. A required field is correct only at
// score 1.
type fieldGrader func(gold task.GoldField, pred json.RawMessage) FieldScore

var fieldGraders = map[string]fieldGrader{
	Exact:       gradeExact,
	CaseFold:    gradeCaseFold,
	Phone:       gradePhone,
	Date:        gradeDate,
	Address:     gradeAddress,
	Enum:        gradeEnum,
	Numeric:     gradeNumeric,
	Set:         gradeSet,
	OrderedList: gradeOrderedList,
	Interval:    gradeInterval,
	Identifier:  gradeIdentifier,
}

// GradeField grades pred against gold with the field's grader type (semantic falls back to
// case-folded equality; Grader handles the judge).
func GradeField(gold task.GoldField, pred json.RawMessage) FieldScore {
	if len(pred) == 0 || string(pred) == "null" {
		return FieldScore{Score: 0, Note: "not recorded"}
	}
	g, ok := fieldGraders[gold.Grader]
	if !ok {
		g = gradeCaseFold
	}
	return g(gold, pred)
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
	s = strings.NewReplacer(";", ",", " and then ", ",", " then ", ",", " and ", ",", "&", ",").Replace(s)
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

func gradeExact(g task.GoldField, pred json.RawMessage) FieldScore {
	return score(strings.TrimSpace(text(pred)) == strings.TrimSpace(text(g.Gold)))
}

func gradeCaseFold(g task.GoldField, pred json.RawMessage) FieldScore {
	return score(canon.Fold(text(pred)) == canon.Fold(text(g.Gold)))
}

func gradePhone(g task.GoldField, pred json.RawMessage) FieldScore {
	p := canon.Phone(text(pred))
	return score(p != "" && p == canon.Phone(text(g.Gold)))
}

func gradeDate(g task.GoldField, pred json.RawMessage) FieldScore {
	p, ok := canon.ParseDate(text(pred))
	if !ok {
		return FieldScore{Note: "not a date"}
	}
	gd, _ := canon.ParseDate(text(g.Gold))
	return score(p == gd)
}

// gradeAddress scores the token F1 of the canonical addresses; only an exact match scores 1.
func gradeAddress(g task.GoldField, pred json.RawMessage) FieldScore {
	p, gd := canon.Address(text(pred)), canon.Address(text(g.Gold))
	if p == gd {
		return FieldScore{Score: 1}
	}
	return FieldScore{Score: round(tokenF1(strings.Fields(p), strings.Fields(gd)))}
}

func gradeEnum(g task.GoldField, pred json.RawMessage) FieldScore {
	return score(enumValue(g.Params, text(pred)) == enumValue(g.Params, text(g.Gold)))
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

func gradeNumeric(g task.GoldField, pred json.RawMessage) FieldScore {
	p, ok := canon.Number(text(pred))
	if !ok {
		return FieldScore{Note: "not a number"}
	}
	gd, _ := canon.Number(text(g.Gold))
	tol := math.Max(g.Params.AbsTolerance, g.Params.RelTolerance*math.Abs(gd))
	return score(math.Abs(p-gd) <= tol+1e-9)
}

func gradeIdentifier(g task.GoldField, pred json.RawMessage) FieldScore {
	p, gd := canon.Identifier(text(pred)), canon.Identifier(text(g.Gold))
	if p == gd {
		return FieldScore{Score: 1}
	}
	// A type prefix may be said or left out: 2201 is JOB-2201.
	prefixes := append([]string(nil), g.Params.Prefixes...)
	if tp := canon.TypePrefix(text(g.Gold)); tp != "" {
		prefixes = append(prefixes, tp)
	}
	for _, pre := range prefixes {
		pre = canon.Identifier(pre)
		if pre != "" && strings.TrimPrefix(p, pre) == strings.TrimPrefix(gd, pre) && (strings.HasPrefix(p, pre) || strings.HasPrefix(gd, pre)) {
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

// gradeSet scores F1 of predicted against gold items (precision and recall in the note).
func gradeSet(g task.GoldField, pred json.RawMessage) FieldScore {
	gi, pi := keys(g.Params.Item, list(g.Gold)), keys(g.Params.Item, list(pred))
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

// gradeOrderedList scores the longest common subsequence over the longer list; only the exact
// sequence scores 1.
func gradeOrderedList(g task.GoldField, pred json.RawMessage) FieldScore {
	gi, pi := keys(g.Params.Item, list(g.Gold)), keys(g.Params.Item, list(pred))
	n := max(len(gi), len(pi))
	if n == 0 {
		return FieldScore{Score: 1}
	}
	return FieldScore{Score: round(float64(lcs(gi, pi)) / float64(n))}
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

// gradeInterval scores intersection over union of two intervals of dates (whole days, inclusive)
// or numbers.
func gradeInterval(g task.GoldField, pred json.RawMessage) FieldScore {
	gs, ge, okg := interval(g.Gold)
	ps, pe, okp := interval(pred)
	if !okg || !okp {
		return FieldScore{Note: "not an interval"}
	}
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
