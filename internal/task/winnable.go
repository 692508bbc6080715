package task

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/voicebench/humanaudit/internal/canon"
)

// The checks in this file refuse tasks no agent can pass, and grader settings that would make a
// grade depend on something other than the trace. Each message names the JSON path and the fix.

// winnable runs the checks that a perfect agent could pass the task.
func (v *validator) winnable() {
	v.commitsNeedApproval()
	v.gradedFieldsSettable()
	v.graderParams()
	v.synonymsMeanOneThing()
	v.nestedRecordArguments()
	v.leaksInWords()
}

// expectedCommits returns the actions the grader expects committed (Target State), as the
// grader reads committed_actions.
func (v *validator) expectedCommits() []string {
	g := v.t.Grader
	if g.CommittedActions != nil {
		return g.CommittedActions
	}
	if g.TargetState == StateCommitted && v.t.Agent.Artifact.CommitAction != "" {
		return []string{v.t.Agent.Artifact.CommitAction}
	}
	return nil
}

// commitsNeedApproval: a commit is blocked without the caller's approval, and a caller approves
// only through an approval event, so every action the grader expects committed needs one.
func (v *validator) commitsNeedApproval() {
	if v.t.Authorization != ApprovalGated {
		return
	}
	for i, action := range v.expectedCommits() {
		found := false
		for _, e := range v.t.Events {
			if e.Kind == Approval && e.Action == action {
				found = true
			}
		}
		if found {
			continue
		}
		path := "$.grader.target_state"
		if v.t.Grader.CommittedActions != nil {
			path = fmt.Sprintf("$.grader.committed_actions[%d]", i)
		}
		v.add(path, "the grader expects %q committed, but no approval event lets the caller approve it, so every commit is blocked and the task cannot be won: add an event with \"kind\": \"approval\", \"action\": %q", action, action)
	}
}

// recordable returns, per artifact field, the record tools and argument schemas that can set it.
func (v *validator) recordable() map[string][]json.RawMessage {
	out := map[string][]json.RawMessage{}
	for _, tl := range v.t.Agent.Tools {
		if tl.Kind != ToolRecord {
			continue
		}
		for arg, schema := range argumentSchemas(tl) {
			field := arg
			if f, ok := tl.Fields[arg]; ok {
				field = f
			}
			out[field] = append(out[field], schema)
		}
	}
	return out
}

// gradedFieldsSettable: Artifact Validity needs every graded field right, and only record tools
// set fields, so each graded field needs a record tool argument that can hold its gold value.
func (v *validator) gradedFieldsSettable() {
	rec := v.recordable()
	for i, gf := range v.t.Grader.Fields {
		spec, ok := v.t.Field(gf.Field)
		if !ok {
			continue // reported by grader()
		}
		schemas := rec[gf.Field]
		p := fmt.Sprintf("$.grader.fields[%d].field", i)
		what := "graded field"
		if spec.Required {
			what = "required graded field"
		}
		if len(schemas) == 0 {
			v.add(p, "%s %q cannot be set: no record tool has an argument for it, so Artifact Validity can never pass: add a %q parameter to a record tool (or map an argument to it in the tool's \"fields\")", what, gf.Field, gf.Field)
			continue
		}
		reachable := false
		var allowed []string
		for _, sch := range schemas {
			enum, ok := schemaEnum(sch)
			if !ok {
				reachable = true
				break
			}
			allowed = append(allowed, enum...)
			for _, e := range enum {
				if enumReaches(gf, e) {
					reachable = true
				}
			}
		}
		if !reachable {
			v.add(fmt.Sprintf("$.grader.fields[%d].gold", i), "gold %s of field %q cannot be recorded: the record tool's argument only allows %s, and none of them grades as the gold: add the gold value to the argument's enum (or a synonym that is in it)", gf.Gold, gf.Field, quoteList(allowed))
		}
	}
}

// schemaEnum returns the string enum of an argument schema, if it has one.
func schemaEnum(raw json.RawMessage) ([]string, bool) {
	var s struct {
		Enum []any `json:"enum"`
	}
	if json.Unmarshal(raw, &s) != nil || s.Enum == nil {
		return nil, false
	}
	out := make([]string, 0, len(s.Enum))
	for _, e := range s.Enum {
		str, ok := e.(string)
		if !ok {
			return nil, false // a non-string enum: not judged here
		}
		out = append(out, str)
	}
	return out, true
}

// enumReaches reports whether recording value e would grade as the gold of gf (for the graders
// a schema enum can restrict: enum, casefold, exact).
func enumReaches(gf GoldField, e string) bool {
	var gold string
	if json.Unmarshal(gf.Gold, &gold) != nil {
		return true // not a string: not judged here
	}
	switch gf.Grader {
	case "enum":
		gk, ek := canon.EnumKey(gold), canon.EnumKey(e)
		if gk == ek {
			return true
		}
		for c, syns := range gf.Params.Synonyms {
			if canon.EnumKey(c) != gk {
				continue
			}
			for _, s := range syns {
				if canon.EnumKey(s) == ek {
					return true
				}
			}
		}
		return false
	case "exact":
		return strings.TrimSpace(e) == strings.TrimSpace(gold)
	case "casefold", "semantic":
		return canon.Fold(e) == canon.Fold(gold)
	}
	return true
}

// paramUse says which graders each grader parameter applies to.
var paramUse = map[string][]string{
	"abs_tolerance": {"numeric"},
	"rel_tolerance": {"numeric"},
	"synonyms":      {"enum"},
	"prefixes":      {"identifier"},
	"item":          {"set", "ordered_list"},
}

// graderParams: a parameter the grader ignores means the task author expects a comparison that
// does not happen.
func (v *validator) graderParams() {
	for i, gf := range v.t.Grader.Fields {
		pr := gf.Params
		set := map[string]bool{
			"abs_tolerance": pr.AbsTolerance != 0, "rel_tolerance": pr.RelTolerance != 0,
			"synonyms": len(pr.Synonyms) > 0, "prefixes": len(pr.Prefixes) > 0, "item": pr.Item != "",
		}
		names := make([]string, 0, len(set))
		for n := range set {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if !set[n] || contains(paramUse[n], gf.Grader) {
				continue
			}
			v.add(fmt.Sprintf("$.grader.fields[%d].params.%s", i, n), "%q does not apply to %s field (only %s use it), so it would be ignored: remove it, or change the grader", n, article(gf.Grader), strings.Join(paramUse[n], " and "))
		}
		if pr.AbsTolerance < 0 || pr.RelTolerance < 0 {
			v.add(fmt.Sprintf("$.grader.fields[%d].params", i), "a tolerance cannot be negative")
		}
	}
}

// synonymsMeanOneThing: a value listed under two canonical values (or equal to another canonical
// value) has two meanings, and a grade must not depend on which one is looked up first.
func (v *validator) synonymsMeanOneThing() {
	for i, gf := range v.t.Grader.Fields {
		syn := gf.Params.Synonyms
		if len(syn) == 0 {
			continue
		}
		canonicals := make([]string, 0, len(syn))
		for c := range syn {
			canonicals = append(canonicals, c)
		}
		sort.Strings(canonicals)
		owner := map[string]string{} // enum key → canonical value it means
		for _, c := range canonicals {
			k := canon.EnumKey(c)
			if prev, dup := owner[k]; dup && prev != c {
				v.add(fmt.Sprintf("$.grader.fields[%d].params.synonyms[%s]", i, strconv.Quote(c)), "canonical values %q and %q read the same (%q): merge them", prev, c, k)
				continue
			}
			owner[k] = c
		}
		for _, c := range canonicals {
			for j, s := range syn[c] {
				k := canon.EnumKey(s)
				prev, dup := owner[k]
				switch {
				case !dup:
					owner[k] = c
				case prev != c:
					v.add(fmt.Sprintf("$.grader.fields[%d].params.synonyms[%s][%d]", i, strconv.Quote(c), j),
						"%q is a synonym of %q but also means %q (both read %q), so a grade would depend on which is looked up first: keep it under one canonical value", s, c, prev, k)
				}
			}
		}
	}
}

// nestedRecordArguments: record tools take one argument per artifact field; a nested "fields"
// object (the shape some function-calling APIs use) records nothing.
func (v *validator) nestedRecordArguments() {
	for i, tl := range v.t.Agent.Tools {
		if tl.Kind != ToolRecord {
			continue
		}
		args := argumentSchemas(tl)
		for _, arg := range slices.Sorted(maps.Keys(args)) {
			if !isObjectSchema(args[arg]) {
				continue
			}
			if _, ok := v.t.Field(mapped(&tl, arg)); ok {
				continue // an object-valued field (e.g. an interval as {start, end})
			}
			v.add(fmt.Sprintf("$.agent.tools[%d].parameters.properties.%s", i, arg), "a record tool takes one argument per artifact field, not a nested %q object: declare each field (e.g. %q) as its own property of the tool's parameters", arg, firstField(v.t))
		}
	}
}

// nestedObject reports whether a record tool argument is a nested object that maps to no field;
// tools() leaves it to nestedRecordArguments, whose message says what to do.
func (v *validator) nestedObject(tl Tool, arg string, schema any) bool {
	b, _ := json.Marshal(schema)
	if !isObjectSchema(b) {
		return false
	}
	_, ok := v.t.Field(mapped(&tl, arg))
	return !ok
}

func isObjectSchema(raw json.RawMessage) bool {
	var s struct {
		Type       any             `json:"type"`
		Properties json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return false
	}
	return s.Type == "object" || s.Properties != nil
}

func mapped(tl *Tool, arg string) string {
	if f, ok := tl.Fields[arg]; ok {
		return f
	}
	return arg
}

func firstField(t *Task) string {
	if len(t.Agent.Artifact.Fields) > 0 {
		return t.Agent.Artifact.Fields[0].Name
	}
	return "field_name"
}

// argumentSchemas returns a tool's argument schemas by argument name (none when its parameters
// have no properties object; tools() reports that).
func argumentSchemas(tl Tool) map[string]json.RawMessage {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	json.Unmarshal(tl.Parameters, &s)
	return s.Properties
}

// article puts "a" or "an" before a grader name.
func article(w string) string {
	if w != "" && strings.ContainsRune("aeiou", rune(w[0])) {
		return "an " + w
	}
	return "a " + w
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return strings.Join(q, ", ")
}

// leaksInWords extends the leak check to values said in words: a gold-only amount written
// "two hundred twenty-five dollars" or a gold-only date written "December fifth, 2026" in the
// caller's initial state tells the caller the answer as surely as digits do.
func (v *validator) leaksInWords() {
	knows := v.callerKnows()
	for _, gf := range v.t.Grader.Fields {
		for _, gold := range GoldStrings(gf.Gold) {
			if len(gold) < 3 || knows(gold) {
				continue
			}
			if n, ok := canon.Number(gold); ok && gf.Grader != "date" && gf.Grader != "identifier" && gf.Grader != "phone" {
				for _, pl := range v.initialState() {
					if hasDigitsOf(pl.text, gold) {
						continue // said in digits: reported by leaks()
					}
					for _, x := range canon.FindNumbers(pl.text) {
						if x == n {
							v.add(pl.path, "gold-only value %q of field %q appears in the caller's initial user state (said in words): remove it, the caller must not be told the answer", gold, gf.Field)
							break
						}
					}
				}
			}
			if d, ok := canon.ParseDate(gold); ok {
				for _, pl := range v.initialState() {
					for _, x := range canon.FindDates(pl.text) {
						if x.Month == d.Month && x.Day == d.Day && (x.Year == 0 || x.Year == d.Year) && !strings.Contains(pl.text, gold) {
							v.add(pl.path, "gold-only date %q of field %q appears in the caller's initial user state (%s): remove it, the caller must not be told the answer", gold, gf.Field, x)
							break
						}
					}
				}
			}
		}
	}
}

// hasDigitsOf reports whether text writes value's digits as a number (what leaks() catches).
func hasDigitsOf(text, value string) bool {
	return strings.Contains(canon.Fold(text), canon.Fold(value))
}

type place struct{ path, text string }

// initialState lists what a caller is shown before any event fires.
func (v *validator) initialState() []place {
	var out []place
	u := v.t.User
	out = append(out, place{"$.user.persona.name", u.Persona.Name}, place{"$.user.persona.role", u.Persona.Role}, place{"$.user.persona.speaking", u.Persona.Speaking})
	for i, g := range u.Goals {
		out = append(out, place{fmt.Sprintf("$.user.goals[%d]", i), g})
	}
	for i, c := range u.Constraints {
		out = append(out, place{fmt.Sprintf("$.user.constraints[%d]", i), c})
	}
	for i, f := range u.Facts {
		if f.Reveal == OnEvent {
			continue
		}
		out = append(out, place{fmt.Sprintf("$.user.facts[%d].label", i), f.Label})
		out = append(out, place{fmt.Sprintf("$.user.facts[%d].versions[0]", i), f.Versions[0].Value + " " + f.Versions[0].Spoken})
	}
	return out
}

// callerKnows reports whether a gold value is one the caller holds (a whole fact value, an item
// of a listed one, or the same quantity or date): such a value is not gold-only.
func (v *validator) callerKnows() func(string) bool {
	var folded []string
	var numbers []float64
	var dates []canon.Date
	for _, f := range v.t.User.Facts {
		for _, ver := range f.Versions {
			folded = append(folded, canon.Fold(ver.Value))
			if n, ok := canon.Number(ver.Value); ok {
				numbers = append(numbers, n)
			}
			if d, ok := canon.ParseDate(ver.Value); ok {
				dates = append(dates, d)
			}
		}
	}
	return func(gold string) bool {
		g := canon.Fold(gold)
		for _, fv := range folded {
			if strings.Contains(fv, g) {
				return true
			}
		}
		if n, ok := canon.Number(gold); ok {
			for _, x := range numbers {
				if x == n {
					return true
				}
			}
		}
		if d, ok := canon.ParseDate(gold); ok {
			for _, x := range dates {
				if x.SameDay(d) {
					return true
				}
			}
		}
		return false
	}
}
