package task

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mustRead(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// exampleTask is a valid task used as the base for broken variants.
func exampleTask(tb testing.TB) string {
	return string(mustRead(tb, filepath.Join("..", "..", "tasks", "fnol-auto-glass.json")))
}

func problemsOf(tb testing.TB, file, src string) []string {
	tb.Helper()
	_, err := Parse(file, []byte(src))
	if err == nil {
		return nil
	}
	var ps Problems
	if !errors.As(err, &ps) {
		tb.Fatalf("error is not Problems: %v", err)
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

func TestExampleTasksAreValid(t *testing.T) {
	tasks, probs := LoadAll(filepath.Join("..", "..", "tasks"))
	if len(probs) > 0 {
		t.Fatalf("problems: %v", probs)
	}
	if len(tasks) < 3 {
		t.Fatalf("want the example tasks, got %d", len(tasks))
	}
}

func TestValidationMessagesNameFileAndPath(t *testing.T) {
	base := exampleTask(t)
	tests := []struct {
		name    string
		mutate  func(string) string
		problem string
	}{
		{"bad reveal rule", func(s string) string {
			return strings.Replace(s, `"reveal": "on_ask",
        "asked_as": ["policy number"`, `"reveal": "sometimes",
        "asked_as": ["policy number"`, 1)
		}, `x.json: $.user.facts[1].reveal: "sometimes" is not one of volunteer, on_ask, on_event`},
		{"unknown property", func(s string) string {
			return strings.Replace(s, `"title": "Report a cracked windshield",`, `"title": "Report a cracked windshield", "colour": "red",`, 1)
		}, `x.json: $.colour: unknown property`},
		{"missing required property", func(s string) string {
			return strings.Replace(s, `"risk_tier": "medium",`, ``, 1)
		}, `x.json: $: missing required property "risk_tier"`},
		{"wrong type", func(s string) string { return strings.Replace(s, `"version": 2,`, `"version": "one",`, 1) }, `x.json: $.version: got string, want integer`},
		{"event refers to a missing fact", func(s string) string {
			return strings.Replace(s, `"fact": "callback_phone",
      "version": 2`, `"fact": "callback_fone",
      "version": 2`, 1)
		}, `x.json: $.events[0].fact: correction event needs an existing fact, got "callback_fone"`},
		{"media_time cue before the agent can have spoken", func(s string) string {
			return strings.Replace(s, `{"on": "field_recorded", "field": "damage_description"}`, `{"on": "media_time", "at_ms": 20000}`, 1)
		}, `x.json: $.events[1].trigger.at_ms: event "shop_text" fires at 20000 ms, before the agent can have spoken (under 30000 ms)`},
		{"trigger on an unknown field", func(s string) string {
			return strings.Replace(s, `{"on": "field_recorded", "field": "callback_phone"}`, `{"on": "field_recorded", "field": "callback"}`, 1)
		}, `x.json: $.events[0].trigger.field: unknown artifact field "callback"`},
		{"required field without gold", func(s string) string {
			return strings.Replace(s, `{"field": "preferred_shop", "gold": "Clearview Auto Glass", "grader": "casefold"},`, ``, 1)
		}, `x.json: $.agent.artifact.fields[5]: required field "preferred_shop" has no gold value and grader in $.grader.fields`},
		{"on_event fact never revealed", func(s string) string {
			return strings.Replace(s, `"fact": "estimate",
      "version": 1,`, `"fact": "damage",
      "version": 1,`, 1)
		}, `x.json: $.user.facts[7].reveal: on_event fact "estimate" has no event that reveals its version 1`},
		{"later version never revealed", func(s string) string {
			return strings.Replace(s, `"trigger": {"on": "field_recorded", "field": "callback_phone"},
      "fact": "callback_phone",
      "version": 2,`, `"trigger": {"on": "field_recorded", "field": "callback_phone"},
      "fact": "callback_phone",
      "version": 1,`, 1)
		}, `x.json: $.user.facts[4].versions[1]: version 2 of fact "callback_phone" is never revealed`},
		{"gold-only value in user state", func(s string) string {
			return strings.Replace(s, `"Find out what you will have to pay out of pocket."`, `"Find out whether it really is the $100 deductible, i.e. 100 dollars."`, 1)
		}, `x.json: $.user.goals[1]: gold-only value "100" of field "deductible" appears in the caller's initial user state`},
		{"gold a grader cannot read", func(s string) string {
			return strings.Replace(s, `{"field": "loss_date", "gold": "2026-11-24", "grader": "date"}`, `{"field": "loss_date", "gold": "last Tuesday", "grader": "date"}`, 1)
		}, `x.json: $.grader.fields[1].gold: "last Tuesday" is not a date`},
		{"approval of an unknown action", func(s string) string {
			return strings.Replace(s, `"action": "submit_claim",
      "cue"`, `"action": "file_claim",
      "cue"`, 1)
		}, `x.json: $.events[2].action: approval event needs an action of a commit or request_approval tool, got "file_claim"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.mutate(base)
			if src == base {
				t.Fatal("mutation did not apply")
			}
			got := problemsOf(t, "x.json", src)
			for _, g := range got {
				if strings.HasPrefix(g, tt.problem) {
					return
				}
			}
			t.Errorf("want a problem starting with\n  %s\ngot\n  %s", tt.problem, strings.Join(got, "\n  "))
		})
	}
}

func TestSyntaxErrorNamesLineAndColumn(t *testing.T) {
	src := "{\n  \"id\": \"x\",\n  \"version\": 1,,\n}"
	got := problemsOf(t, "bad.json", src)
	if len(got) != 1 || !strings.HasPrefix(got[0], "bad.json: line 3, column 16: invalid JSON") {
		t.Errorf("got %v", got)
	}
	got = problemsOf(t, "cut.json", "{\n  \"id\": \"x\"")
	if len(got) != 1 || !strings.Contains(got[0], "cut.json: line 2") {
		t.Errorf("truncated file: got %v", got)
	}
}

func TestDuplicateTaskIDs(t *testing.T) {
	dir := t.TempDir()
	src := mustRead(t, filepath.Join("..", "..", "tasks", "it-vpn-incident.json"))
	os.WriteFile(filepath.Join(dir, "a.json"), src, 0o644)
	os.WriteFile(filepath.Join(dir, "b.json"), src, 0o644)
	tasks, probs := LoadAll(dir)
	if len(tasks) != 1 || len(probs) != 1 || !strings.Contains(probs[0].String(), "also used by") {
		t.Errorf("tasks=%d problems=%v", len(tasks), probs)
	}
}

func FuzzLoadTask(f *testing.F) {
	f.Add(mustRead(f, filepath.Join("..", "..", "tasks", "it-vpn-incident.json")))
	f.Add([]byte(`{"id":`))
	f.Add([]byte(`{"agent":{"tools":[{"parameters":{"$ref":"file:///etc/passwd"}}]}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tk, err := Parse("fuzz.json", data)
		if err == nil && tk == nil {
			t.Fatal("nil task without error")
		}
		if err != nil {
			var ps Problems
			if !errors.As(err, &ps) {
				return
			}
			for _, p := range ps {
				if p.File != "fuzz.json" || p.Message == "" {
					t.Fatalf("problem without file or message: %+v", p)
				}
			}
		}
	})
}

func TestToolSchemaMayNotReferenceFiles(t *testing.T) {
	src := strings.Replace(exampleTask(t), `"properties": {"query": {"type": "string"}},`, `"properties": {"query": {"$ref": "file:///etc/passwd"}},`, 1)
	got := problemsOf(t, "x.json", src)
	for _, g := range got {
		if strings.Contains(g, "$.agent.tools[2].parameters: not a valid JSON Schema") && strings.Contains(g, "not allowed") {
			return
		}
	}
	t.Errorf("external $ref not rejected: %v", got)
}

func TestDeliberateEarlyMediaTriggerIsAccepted(t *testing.T) {
	data, err := os.ReadFile("../../tasks/fnol-auto-glass.json")
	if err != nil {
		t.Fatal(err)
	}
	early := strings.Replace(string(data), `{"on": "field_recorded", "field": "damage_description"}`, `{"on": "media_time", "at_ms": 20000, "deliberate": true}`, 1)
	if early == string(data) {
		t.Fatal("the fnol-auto-glass trigger to rewrite is gone")
	}
	if _, err := Parse("x.json", []byte(early)); err != nil {
		t.Fatalf("a deliberate early cue is refused: %v", err)
	}
}
