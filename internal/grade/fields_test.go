package grade

import (
	"encoding/json"
	"testing"

	"github.com/voicebench/humanaudit/internal/task"
)

func TestFieldGraders(t *testing.T) {
	type p = task.GraderParams
	tests := []struct {
		name   string
		grader string
		params p
		gold   string // JSON
		pred   string // JSON
		score  float64
	}{
		// exact: only trimming is forgiven.
		{"exact/same", Exact, p{}, `"0x80072EE7"`, `" 0x80072EE7 "`, 1},
		{"exact/case differs", Exact, p{}, `"0x80072EE7"`, `"0x80072ee7"`, 0},
		// casefold
		{"casefold/case and spaces", CaseFold, p{}, `"Clearview Auto Glass"`, `"clearview  auto glass."`, 1},
		{"casefold/other shop", CaseFold, p{}, `"Clearview Auto Glass"`, `"Clear View Glass"`, 0},
		// phone, spoken
		{"phone/spoken digits", Phone, p{}, `"555-1234"`, `"five five five, one two three four"`, 1},
		{"phone/country code", Phone, p{}, `"503-555-0174"`, `"+1 503 555 0174"`, 1},
		{"phone/transposed", Phone, p{}, `"503-555-0174"`, `"503-555-0147"`, 0},
		// date, spoken
		{"date/spoken", Date, p{}, `"1988-07-09"`, `"July ninth 1988"`, 1},
		{"date/US numeric", Date, p{}, `"1988-07-09"`, `"07/09/1988"`, 1},
		{"date/wrong day", Date, p{}, `"1988-07-09"`, `"July 19, 1988"`, 0},
		{"date/unreadable", Date, p{}, `"1988-07-09"`, `"sometime in July"`, 0},
		// address
		{"address/abbreviations and unit", Address, p{}, `"1418 Alder Court, Unit 3B, Eugene, OR 97402"`, `"fourteen eighteen alder ct apt 3b eugene or 97402"`, 1},
		{"address/wrong unit is partial", Address, p{}, `"1418 Alder Court, Unit 3B"`, `"1418 Alder Court, Unit 3D"`, 0.8},
		// enum with synonyms
		{"enum/synonym", Enum, p{Synonyms: map[string][]string{"glass": {"windshield"}}}, `"glass"`, `"Windshield"`, 1},
		{"enum/other value", Enum, p{}, `"glass"`, `"collision"`, 0},
		// numeric with tolerance, spoken
		{"numeric/hedged within tolerance", Numeric, p{AbsTolerance: 1}, `20`, `"about 20"`, 1},
		{"numeric/spoken amount", Numeric, p{AbsTolerance: 0.01}, `612.40`, `"six hundred twelve dollars and forty cents"`, 1},
		{"numeric/relative tolerance", Numeric, p{RelTolerance: 0.05}, `1000`, `1040`, 1},
		{"numeric/outside tolerance", Numeric, p{AbsTolerance: 1}, `20`, `"twenty two"`, 0},
		{"numeric/not a number", Numeric, p{}, `20`, `"a few"`, 0},
		// set: F1
		{"set/same items any order", Set, p{}, `["VPN","Outlook","SharePoint"]`, `["sharepoint","vpn","Outlook"]`, 1},
		{"set/one missing", Set, p{}, `["VPN","Outlook","SharePoint","Teams"]`, `"VPN, Outlook and SharePoint"`, 0.857143},
		{"set/extra item", Set, p{}, `["email","text message"]`, `["email","text message","phone"]`, 0.8},
		// ordered list: LCS over the longer list
		{"ordered/same order", OrderedList, p{Item: Date}, `["2026-12-05","2027-01-05"]`, `["December 5 2026","January 5th, 2027"]`, 1},
		{"ordered/swapped", OrderedList, p{}, `["a","b","c"]`, `["a","c","b"]`, 0.666667},
		// interval: intersection over union
		{"interval/same dates spoken", Interval, p{}, `["2026-12-18","2027-01-02"]`, `"from December 18th 2026 to January 2nd 2027"`, 1},
		{"interval/half overlap", Interval, p{}, `[0,10]`, `[5,15]`, 0.333333},
		{"interval/disjoint", Interval, p{}, `[0,10]`, `[20,30]`, 0},
		// identifier: case, separators, leading zeros, type prefixes
		{"identifier/separators", Identifier, p{}, `"CC-4419"`, `"CC4419"`, 1},
		{"identifier/leading zeros", Identifier, p{}, `"HVAC-007"`, `"HVAC-7"`, 1},
		{"identifier/type prefix omitted", Identifier, p{}, `"JOB-2201"`, `"2201"`, 1},
		{"identifier/spoken", Identifier, p{}, `"PA-20-44718"`, `"p a two zero four four seven one eight"`, 1},
		{"identifier/listed prefix", Identifier, p{Prefixes: []string{"EMP"}}, `"EMP00417"`, `"417"`, 1},
		{"identifier/different", Identifier, p{}, `"CC-4419"`, `"CC-4491"`, 0},
		{"identifier/glued prefix is not a type prefix", Identifier, p{}, `"CC4419"`, `"4419"`, 0},
		// semantic without a judge: case-folded equality
		{"semantic/no judge same text", Semantic, p{}, `"Cannot connect to the VPN"`, `"cannot connect to the vpn"`, 1},
		{"semantic/no judge paraphrase", Semantic, p{}, `"Cannot connect to the VPN"`, `"VPN won't connect"`, 0},
		// missing value
		{"missing/null", CaseFold, p{}, `"x"`, `null`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gf := task.GoldField{Field: "f", Gold: json.RawMessage(tt.gold), Grader: tt.grader, Params: tt.params}
			got := GradeField(gf, json.RawMessage(tt.pred))
			if got.Score != tt.score {
				t.Errorf("score = %v (%s), want %v", got.Score, got.Note, tt.score)
			}
		})
	}
}

// topLevelValue finds what encoding/json finds.
func TestTopLevelValueMatchesDecoding(t *testing.T) {
	for _, raw := range []string{`{"query":"glass deductible"}`, `{ "a" : [1, {"query": "x"}], "query" : "y" }`, `{"q\"uery":"z","query":{"n":[1,2]}}`,
		`{"query":"a","query":"b"}`, `{}`, `{"other":1}`, `[1]`, `not json`, `{"query":"unterminated}`, `{"query": 12.5e3}`, `{"query":"esc \"x\" \\"}`} {
		got, valid := topLevelValue(json.RawMessage(raw), "query")
		var m map[string]json.RawMessage
		err := json.Unmarshal([]byte(raw), &m)
		if valid != (err == nil) {
			t.Errorf("%s: valid %v, decoder error %v", raw, valid, err)
			continue
		}
		if valid && string(got) != string(m["query"]) {
			t.Errorf("%s: %s, decoder %s", raw, got, m["query"])
		}
	}
}
