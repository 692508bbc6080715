package grade_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/task"
)

// corpusCase is one dictated value a professional reviewer would accept (pass) or reject against
// the gold value, under the field's grader.
type corpusCase struct {
	Name   string            `json:"name"`
	Class  string            `json:"class"`
	Grader string            `json:"grader"`
	Params task.GraderParams `json:"params"`
	Gold   json.RawMessage   `json:"gold"`
	Pred   json.RawMessage   `json:"pred"`
	Pass   bool              `json:"pass"`
	Why    string            `json:"why"`
}

func loadCorpus(t *testing.T) []corpusCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "dictation.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []corpusCase
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var c corpusCase
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			t.Fatalf("testdata/dictation.jsonl line %d: %v", line, err)
		}
		cases = append(cases, c)
	}
	return cases
}

// requiredClasses are the classes of dictated equivalence the grader must get right; each has
// cases that must pass and cases that must fail.
var requiredClasses = []string{
	"numbers: a hundred", "numbers: a thousand dollars", "numbers: a hundred percent", "numbers: minus fifty",
	"numbers: hyphenated twelve-hundred", "numbers: hedges", "numbers: currencies", "numbers: percentages",
	"numbers: signs", "numbers: all number words", "numbers: digits and words",
	"identifiers: type prefix on either side", "identifiers: declared prefixes interchangeable",
	"identifiers: spelled letters", "addresses: state names and codes", "addresses: dotted directionals",
	"addresses: USPS abbreviations both ways", "addresses: unit forms", "intervals: between and", "intervals: ISO a/b",
	"enums: hyphen and space", "casefold: Unicode case folding", "dates: with a time part",
	"sets: ';'-separated item not split on and", "phones: spoken digits", "phones: separators",
}

// TestDictationCorpus grades every pair of the corpus; a regression shows as the named case.
func TestDictationCorpus(t *testing.T) {
	cases := loadCorpus(t)
	seen := map[string]bool{}
	passes, fails := map[string]int{}, map[string]int{}
	graders := map[string]bool{}
	for _, c := range cases {
		if seen[c.Name] {
			t.Fatalf("duplicate case name %s", c.Name)
		}
		seen[c.Name] = true
		graders[c.Grader] = true
		if c.Pass {
			passes[c.Class]++
		} else {
			fails[c.Class]++
		}
		t.Run(c.Name, func(t *testing.T) {
			gf := task.GoldField{Field: "f", Gold: c.Gold, Grader: c.Grader, Params: c.Params}
			got := grade.GradeField(gf, c.Pred)
			if pass := got.Score >= 1-1e-9; pass != c.Pass {
				verb := "must pass"
				if !c.Pass {
					verb = "must fail"
				}
				t.Errorf("%s: gold %s, dictated %s %s; graded %v (%s) %s", c.Class, c.Gold, c.Pred, verb, got.Score, got.Note, c.Why)
			}
		})
	}
	nFail := 0
	for _, n := range fails {
		nFail += n
	}
	if len(cases) < 300 || 2*nFail < len(cases) {
		t.Errorf("corpus has %d pairs, %d of them must-fail; want at least 300, half must-fail", len(cases), nFail)
	}
	for _, cl := range requiredClasses {
		if passes[cl] == 0 || fails[cl] == 0 {
			t.Errorf("class %q has %d must-pass and %d must-fail cases; want both", cl, passes[cl], fails[cl])
		}
	}
	for _, g := range []string{grade.Exact, grade.CaseFold, grade.Phone, grade.Date, grade.Address, grade.Enum, grade.Numeric,
		grade.Set, grade.OrderedList, grade.Interval, grade.Identifier, grade.Semantic} {
		if !graders[g] {
			t.Errorf("no corpus case for the %s grader", g)
		}
	}
	t.Logf("%d dictated pairs, %d must-fail, %d classes", len(cases), nFail, len(passes)+len(fails)-overlap(passes, fails))
}

func overlap(a, b map[string]int) int {
	n := 0
	for k := range a {
		if b[k] > 0 {
			n++
		}
	}
	return n
}
