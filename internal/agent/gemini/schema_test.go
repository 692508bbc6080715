package gemini_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/gemini"
	"github.com/voicebench/humanaudit/internal/task"
)

func TestTranslateParameters(t *testing.T) {
	tests := []struct {
		name, in, want string
		notes          []string
	}{
		{"additionalProperties false dropped, order kept",
			`{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}},"required":["b"],"additionalProperties":false}`,
			`{"type":"OBJECT","properties":{"b":{"type":"STRING"},"a":{"type":"INTEGER"}},"propertyOrdering":["b","a"],"required":["b"]}`, nil},
		{"no properties: no parameters", `{"type":"object","properties":{}}`, ``, nil},
		{"union with string narrowed to string",
			`{"type":"object","properties":{"amount":{"type":["number","string"],"description":"dollars"}}}`,
			`{"type":"OBJECT","properties":{"amount":{"type":"STRING","description":"dollars"}}}`,
			[]string{`tool "t": parameters.properties.amount.type: union [number string] narrowed to string, which every member accepts as text`}},
		{"nullable from a type list and from anyOf with null",
			`{"type":"object","properties":{"a":{"type":["integer","null"]},"b":{"anyOf":[{"type":"string","enum":["x","y"]},{"type":"null"}]}}}`,
			`{"type":"OBJECT","properties":{"a":{"type":"INTEGER","nullable":true},"b":{"type":"STRING","nullable":true,"enum":["x","y"]}},"propertyOrdering":["a","b"]}`, nil},
		{"union without string becomes anyOf",
			`{"type":"object","properties":{"v":{"type":["boolean","number"]}}}`,
			`{"type":"OBJECT","properties":{"v":{"anyOf":[{"type":"BOOLEAN"},{"type":"NUMBER"}]}}}`,
			[]string{`tool "t": parameters.properties.v.type: union [boolean number] rewritten as anyOf`}},
		{"const as enum, oneOf as anyOf, $ref inlined",
			`{"type":"object","$defs":{"d":{"type":"string","format":"date-time"}},"properties":{"k":{"const":"fixed"},"when":{"$ref":"#/$defs/d"},` +
				`"x":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`,
			`{"type":"OBJECT","properties":{"k":{"type":"STRING","enum":["fixed"]},"when":{"type":"STRING","format":"date-time"},"x":{"anyOf":[{"type":"STRING"},{"type":"INTEGER"}]}},"propertyOrdering":["k","when","x"]}`,
			[]string{`tool "t": parameters.properties.k.const: const rewritten as a one-value enum`, `tool "t": parameters.properties.x.oneOf: oneOf rewritten as anyOf (the model sends one alternative)`}},
		{"allOf merged",
			`{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"boolean"}},"required":["b"]}]}`,
			`{"type":"OBJECT","properties":{"a":{"type":"STRING"},"b":{"type":"BOOLEAN"}},"propertyOrdering":["a","b"],"required":["a","b"]}`, nil},
		{"restrictions the subset cannot state go into the description",
			`{"type":"object","properties":{"e":{"type":"string","format":"email","default":"x@y.z"},"n":{"type":"integer","exclusiveMinimum":0,"maximum":9},"f":{"type":"number","exclusiveMaximum":1.5}}}`,
			`{"type":"OBJECT","properties":{"e":{"type":"STRING","description":"(format: email; default: \"x@y.z\")"},"n":{"type":"INTEGER","minimum":1,"maximum":9},"f":{"type":"NUMBER","description":"(less than 1.5)"}},"propertyOrdering":["e","n","f"]}`,
			[]string{`tool "t": parameters.properties.e.format: format "email" is not offered for string; said in the description`,
				`tool "t": parameters.properties.e.default: default dropped; said in the description`,
				`tool "t": parameters.properties.f.exclusiveMaximum: an exclusive bound is said in the description`}},
		{"annotations dropped",
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"T","type":"object","properties":{"a":{"type":"array","items":{"type":"string"},"uniqueItems":true,"minItems":1}}}`,
			`{"type":"OBJECT","properties":{"a":{"type":"ARRAY","items":{"type":"STRING"},"minItems":1,"description":"(uniqueItems: true)"}}}`,
			[]string{`tool "t": parameters.properties.a.uniqueItems: uniqueItems dropped; said in the description`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, notes, err := gemini.TranslateParameters("t", json.RawMessage(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.want {
				t.Errorf("got  %s\nwant %s", out, tt.want)
			}
			if strings.Join(notes, "\n") != strings.Join(tt.notes, "\n") {
				t.Errorf("notes\n%s\nwant\n%s", strings.Join(notes, "\n"), strings.Join(tt.notes, "\n"))
			}
		})
	}
}

func TestTranslateRefusesWhatCannotBeExpressed(t *testing.T) {
	tests := []struct{ in, path, keyword string }{
		{`{"type":"object","properties":{"a":{"not":{"type":"string"}}}}`, "parameters.properties.a.not", "not"},
		{`{"type":"object","properties":{"a":{"type":"string","if":{"minLength":1},"then":{"pattern":"x"}}}}`, "parameters.properties.a.if", "if"},
		{`{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"string"}}}}`, "parameters.properties.m.additionalProperties", "additionalProperties"},
		{`{"type":"object","properties":{"m":{"type":"object"}}}`, "parameters.properties.m", "properties"},
		{`{"type":"object","properties":{"l":{"type":"array"}}}`, "parameters.properties.l", "items"},
		{`{"type":"object","properties":{"l":{"type":"array","prefixItems":[{"type":"string"}]}}}`, "parameters.properties.l.prefixItems", "prefixItems"},
		{`{"type":"object","properties":{"n":{"type":"integer","enum":[1,2]}}}`, "parameters.properties.n.enum", "enum"},
		{`{"type":"object","$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}},"properties":{"list":{"$ref":"#/$defs/n"}}}`, "parameters.properties.list.properties.next.$ref", "$ref"},
		{`{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`, "parameters.properties.a.$ref", "$ref"},
		{`{"type":"object","properties":{"a":{"type":"string","x-internal":1,"patternx":2}}}`, "parameters.properties.a.patternx", "patternx"},
		{`{"type":"string"}`, "parameters", "type"},
	}
	for _, tt := range tests {
		t.Run(tt.keyword, func(t *testing.T) {
			_, _, err := gemini.TranslateParameters("book_slot", json.RawMessage(tt.in))
			var se *gemini.SchemaError
			if !errors.As(err, &se) || se.Tool != "book_slot" || se.Path != tt.path || se.Keyword != tt.keyword {
				t.Fatalf("err %v (%+v), want tool book_slot, path %s, keyword %s", err, se, tt.path, tt.keyword)
			}
			if !strings.Contains(err.Error(), `tool "book_slot"`) || !strings.Contains(err.Error(), `keyword "`+tt.keyword+`"`) {
				t.Errorf("message %q does not name the tool and keyword", err)
			}
		})
	}
}

// suiteTools returns every task's tools, per task.
func suiteTools(t *testing.T) map[string][]agent.Tool {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "tasks")
	tasks, probs := task.LoadAll(dir)
	// Every task file of the suite, however many it grows to (24 when this was written).
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(probs) > 0 || len(tasks) < 24 || len(tasks) != len(files) {
		t.Fatalf("suite: %d tasks of %d files, problems %v", len(tasks), len(files), probs)
	}
	out := map[string][]agent.Tool{}
	for _, tk := range tasks {
		for _, tl := range tk.Agent.Tools {
			out[tk.ID] = append(out[tk.ID], agent.Tool{Name: tl.Name, Description: tl.Description, Parameters: tl.Parameters})
		}
	}
	return out
}

// Every suite task's tools, translated, pass the fake's validation of setup (which refuses what
// the service refuses): one session per task, each carrying all of the task's tools.
func TestSuiteToolsPassSetupValidation(t *testing.T) {
	for id, tools := range suiteTools(t) {
		t.Run(id, func(t *testing.T) {
			h := connect(t, agenttest.Script{}, agent.Config{Instructions: "x", Tools: tools})
			clean(t, h.f)
			decls := get(h.f.Setups()[0], "tools").([]any)[0].(map[string]any)["functionDeclarations"].([]any)
			if len(decls) != len(tools) {
				t.Errorf("%d declarations for %d tools", len(decls), len(tools))
			}
			ap := h.a.Applied()
			if len(ap.Tools) != len(tools) {
				t.Errorf("applied tools %v", ap.Tools)
			}
		})
	}
}

// The fake's validation is that of the service: the untranslated suite schemas (JSON Schema with
// additionalProperties) are refused with the close the service gives.
func TestFakeRefusesJSONSchemaKeywordsLikeTheService(t *testing.T) {
	tools := suiteTools(t)["it-vpn-incident"]
	var decls []map[string]any
	for _, tl := range tools {
		decls = append(decls, map[string]any{"name": tl.Name, "description": tl.Description, "parameters": tl.Parameters})
	}
	ws := rawClient(t, agenttest.NewGeminiFake(t, agenttest.Script{}))
	ws.WriteJSON(map[string]any{"setup": map[string]any{"model": "models/" + model, "tools": []any{map[string]any{"functionDeclarations": decls}}}})
	ce := readClose(t, ws)
	// The service's message, cut (as every close reason) to what a close frame holds.
	full := `Invalid JSON payload received. Unknown name "additionalProperties" at 'setup.tools[0].function_declarations[0].parameters': Cannot find field.`
	if ce.Code != websocket.CloseInvalidFramePayloadData || !strings.HasPrefix(full, ce.Text) ||
		!strings.Contains(ce.Text, `Unknown name "additionalProperties" at 'setup.tools[0].function_declarations[0].parameters'`) {
		t.Fatalf("close %d %q\nwant 1007 %q", ce.Code, ce.Text, full)
	}
	cases := map[string]string{
		`{"type":"object","properties":{"a":{"type":["number","string"]}}}`:                        `Invalid JSON payload received. Proto field is not repeating, cannot start list. at 'setup.tools[0].function_declarations[0].parameters.properties[0].value.type'`,
		`{"type":"object","properties":{}}`:                                                        `* setup.tools[0].function_declarations[0].parameters.properties: should be non-empty for OBJECT type`,
		`{"type":"OBJECT","properties":{"x":{"type":"STRING"},"y":{"type":"STRING","const":"c"}}}`: `Invalid JSON payload received. Unknown name "const" at 'setup.tools[0].function_declarations[0].parameters.properties[1].value': Cannot`,
	}
	for params, want := range cases {
		ws := rawClient(t, agenttest.NewGeminiFake(t, agenttest.Script{}))
		ws.WriteJSON(map[string]any{"setup": map[string]any{"model": "models/" + model,
			"tools": []any{map[string]any{"functionDeclarations": []any{map[string]any{"name": "f", "parameters": json.RawMessage(params)}}}}}})
		if ce := readClose(t, ws); ce.Code != 1007 || !strings.HasPrefix(want, ce.Text) || len(ce.Text) < min(len(want), 110) {
			t.Errorf("%s: close %d %q\nwant %q", params, ce.Code, ce.Text, want)
		}
	}
}

// A task whose schema cannot be translated is refused by the adapter with the tool and keyword.
func TestDeclarationsRefuseNamingToolAndKeyword(t *testing.T) {
	_, _, err := gemini.Declarations([]agent.Tool{{Name: "ok", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)},
		{Name: "bad", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","dependentSchemas":{}}}}`)}})
	if err == nil || !strings.Contains(err.Error(), `tool "bad"`) || !strings.Contains(err.Error(), `"dependentSchemas"`) {
		t.Fatalf("err %v", err)
	}
	f := agenttest.NewGeminiFake(t, agenttest.Script{})
	a := gemini.New(gemini.Options{URL: f.URL(), Model: model, Timeouts: gemini.Timeouts{Handshake: time.Second}})
	defer a.Close()
	if err := a.Connect(context.Background(), agent.Config{Tools: []agent.Tool{{Name: "bad", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"not":{}}}}`)}}}); agent.ClassOf(err) != agent.ClassProtocol {
		t.Fatalf("connect: %v", err)
	}
}
