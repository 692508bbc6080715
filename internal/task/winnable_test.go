package task

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// mutateTask loads a suite task as generic JSON, applies mutate and returns the problems of the
// result as "FILE: PATH: message" lines.
func mutateTask(t *testing.T, id string, mutate func(doc map[string]any)) []string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(mustRead(t, filepath.Join("..", "..", "tasks", id+".json")), &doc); err != nil {
		t.Fatal(err)
	}
	mutate(doc)
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return problemsOf(t, "x.json", string(b))
}

func obj(v any, keys ...any) map[string]any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			v = v.(map[string]any)[k]
		case int:
			v = v.([]any)[k]
		}
	}
	return v.(map[string]any)
}

func arr(v any, keys ...any) []any {
	m := obj(v, keys[:len(keys)-1]...)
	return m[keys[len(keys)-1].(string)].([]any)
}

// Each task no agent could pass, or whose grade would not follow from the trace, is refused with
// a message naming the file, the JSON path and the fix.
func TestUnwinnableTasksAreRefused(t *testing.T) {
	tests := []struct {
		name, task string
		mutate     func(doc map[string]any)
		path, msg  string
	}{
		{"approval-gated task without an approval event for its commit", "fnol-auto-glass", func(doc map[string]any) {
			events := arr(doc, "events")
			var keep []any
			for _, e := range events {
				if e.(map[string]any)["kind"] != "approval" {
					keep = append(keep, e)
				}
			}
			doc["events"] = keep
		}, "$.grader.target_state", `the grader expects "submit_claim" committed, but no approval event lets the caller approve it, so every commit is blocked and the task cannot be won: add an event with "kind": "approval", "action": "submit_claim"`},
		{"required graded field no record tool can set", "fnol-auto-glass", func(doc map[string]any) {
			delete(obj(doc, "agent", "tools", 3, "parameters", "properties"), "deductible")
		}, "$.grader.fields[7].field", `required graded field "deductible" cannot be set: no record tool has an argument for it, so Artifact Validity can never pass: add a "deductible" parameter to a record tool`},
		{"gold outside the record tool's enum", "fnol-auto-glass", func(doc map[string]any) {
			obj(doc, "agent", "tools", 3, "parameters", "properties")["claim_type"] = map[string]any{"type": "string", "enum": []any{"collision", "comprehensive"}}
		}, "$.grader.fields[8].gold", `gold "glass" of field "claim_type" cannot be recorded: the record tool's argument only allows "collision", "comprehensive"`},
		{"item on a numeric field", "fnol-auto-glass", func(doc map[string]any) {
			obj(doc, "grader", "fields", 6, "params")["item"] = "casefold"
		}, "$.grader.fields[6].params.item", `"item" does not apply to a numeric field (only set and ordered_list use it), so it would be ignored: remove it, or change the grader`},
		{"synonyms on an identifier field", "fnol-auto-glass", func(doc map[string]any) {
			obj(doc, "grader", "fields", 0)["params"] = map[string]any{"synonyms": map[string]any{"PA-20-44718": []any{"my policy"}}}
		}, "$.grader.fields[0].params.synonyms", `"synonyms" does not apply to an identifier field (only enum use it)`},
		{"a synonym of two canonical values", "fnol-auto-glass", func(doc map[string]any) {
			obj(doc, "grader", "fields", 8, "params")["synonyms"] = map[string]any{
				"glass": []any{"Windshield", "auto glass"}, "comprehensive": []any{"windshield"}}
		}, `$.grader.fields[8].params.synonyms["glass"][0]`, `"Windshield" is a synonym of "glass" but also means "comprehensive" (both read "windshield"), so a grade would depend on which is looked up first: keep it under one canonical value`},
		{"a synonym that is another canonical value", "fnol-auto-glass", func(doc map[string]any) {
			obj(doc, "grader", "fields", 8, "params")["synonyms"] = map[string]any{
				"glass": []any{"Comprehensive"}, "comprehensive": []any{"full coverage"}}
		}, `$.grader.fields[8].params.synonyms["glass"][0]`, `"Comprehensive" is a synonym of "glass" but also means "comprehensive"`},
		{"a gold-only amount in words in the caller's goals", "parcel-lost-claim", func(doc map[string]any) {
			goals := arr(doc, "user", "goals")
			goals[0] = goals[0].(string) + " You expect two hundred twenty-five dollars back."
		}, "$.user.goals[0]", `gold-only value "225" of field "reimbursement_amount" appears in the caller's initial user state (said in words): remove it`},
		{"a gold-only amount in words with a hyphen", "fnol-auto-glass", func(doc map[string]any) {
			goals := arr(doc, "user", "goals")
			goals[1] = "Check that the deductible really is one-hundred dollars."
		}, "$.user.goals[1]", `gold-only value "100" of field "deductible" appears in the caller's initial user state (said in words)`},
		{"a record tool with a nested fields object", "fnol-auto-glass", func(doc map[string]any) {
			params := obj(doc, "agent", "tools", 3, "parameters")
			inner := params["properties"]
			params["properties"] = map[string]any{"fields": map[string]any{"type": "object", "properties": inner}}
		}, "$.agent.tools[3].parameters.properties.fields", `a record tool takes one argument per artifact field, not a nested "fields" object: declare each field (e.g. "policy_number") as its own property of the tool's parameters`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mutateTask(t, tt.task, tt.mutate)
			want := "x.json: " + tt.path + ": " + tt.msg
			for _, g := range got {
				if strings.HasPrefix(g, want) {
					return
				}
			}
			t.Errorf("want a problem starting with\n  %s\ngot\n  %s", want, strings.Join(got, "\n  "))
		})
	}
}

// The nested-object message replaces the misleading "maps to no artifact field" one.
func TestNestedRecordArgumentHasOneMessage(t *testing.T) {
	got := mutateTask(t, "fnol-auto-glass", func(doc map[string]any) {
		params := obj(doc, "agent", "tools", 3, "parameters")
		params["properties"] = map[string]any{"fields": map[string]any{"type": "object", "properties": params["properties"]}}
	})
	for _, g := range got {
		if strings.Contains(g, "maps to no artifact field") {
			t.Errorf("misleading message kept: %s", g)
		}
	}
}
