package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/internal/params"
)

// Gemini Live takes a function's parameters only as its documented Schema subset of OpenAPI 3.0
// (functionDeclarations[].parameters): parametersJsonSchema, which takes full JSON Schema in
// generateContent, is not honoured by the Live models (python-genai #1147: calls arrive with
// empty arguments; livekit/agents PR #5560 moved its Live client back to parameters). A JSON
// Schema keyword outside the subset makes the whole setup fail: 1007 `Invalid JSON payload
// received. Unknown name "additionalProperties" at 'setup.tools[0].function_declarations[0].parameters'`.
// So each tool's JSON Schema is translated here, keyword by keyword: kept, rewritten into what
// the subset can say, dropped when it only restricts what the model may send (noted), or refused.

// SchemaError says why a tool's parameter schema cannot be expressed for Gemini.
type SchemaError struct {
	Tool    string
	Path    string // where in the schema, e.g. parameters.properties.scope
	Keyword string
	Reason  string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("tool %q: %s: keyword %q cannot be expressed in Gemini's function schema: %s", e.Tool, e.Path, e.Keyword, e.Reason)
}

// Keywords of the Schema subset the translation emits (docs: ai.google.dev/api/caching#Schema).
var (
	schemaTypes = map[string]string{"string": "STRING", "number": "NUMBER", "integer": "INTEGER", "boolean": "BOOLEAN", "array": "ARRAY", "object": "OBJECT"}
	formats     = map[string][]string{"STRING": {"enum", "date-time"}, "NUMBER": {"float", "double"}, "INTEGER": {"int32", "int64"}}
	// kept as they are (after translating their values)
	keptBounds = []string{"minimum", "maximum", "minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties", "pattern"}
	// annotations without a meaning for the arguments the model sends
	dropped = []string{"$schema", "$id", "$comment", "$anchor", "$defs", "definitions", "title", "deprecated", "readOnly", "writeOnly",
		"contentMediaType", "contentEncoding", "strict"}
	// restrictions the subset cannot state: dropped, said in the description for the model
	hinted = []string{"default", "examples", "multipleOf", "uniqueItems", "contains", "minContains", "maxContains", "propertyNames",
		"dependentRequired", "exclusiveMinimum", "exclusiveMaximum", "format", "unevaluatedProperties"}
	// keywords that change which values are valid in ways the subset cannot follow
	refused = map[string]string{
		"not":              "negation has no equivalent",
		"if":               "conditional schemas have no equivalent",
		"then":             "conditional schemas have no equivalent",
		"else":             "conditional schemas have no equivalent",
		"prefixItems":      "tuples have no equivalent",
		"dependentSchemas": "schemas that depend on other properties have no equivalent",
		"dependencies":     "schemas that depend on other properties have no equivalent",
		"unevaluatedItems": "tuples have no equivalent",
	}
)

// Declarations translates tools into Gemini function declarations. notes say, per tool, what
// was dropped or rewritten; a schema that cannot be expressed is refused with a *SchemaError
// naming the tool and the keyword (nothing is sent then).
func Declarations(tools []agent.Tool) (decls []FunctionDeclaration, notes []string, err error) {
	for _, t := range tools {
		params, n, err := TranslateParameters(t.Name, t.Parameters)
		if err != nil {
			return nil, nil, err
		}
		notes = append(notes, n...)
		decls = append(decls, FunctionDeclaration{Name: t.Name, Description: t.Description, Parameters: params})
	}
	return decls, notes, nil
}

// TranslateParameters translates one tool's JSON Schema into Gemini's Schema subset. A tool
// without parameters (none, or an object without properties) gets no parameters at all: Gemini
// refuses an OBJECT without properties.
func TranslateParameters(tool string, schema json.RawMessage) (json.RawMessage, []string, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil, nil, nil
	}
	root, err := params.DecodeOrdered(schema)
	if err != nil {
		return nil, nil, &SchemaError{Tool: tool, Path: "parameters", Keyword: "", Reason: "not valid JSON: " + err.Error()}
	}
	ro, ok := root.(*params.Object)
	if !ok {
		return nil, nil, &SchemaError{Tool: tool, Path: "parameters", Keyword: "type", Reason: "the parameters must be a JSON Schema object"}
	}
	tr := &translator{tool: tool, root: ro}
	out, err := tr.schema("parameters", ro, 0)
	if err != nil {
		return nil, nil, err
	}
	if out.Get("type") != "OBJECT" {
		return nil, nil, &SchemaError{Tool: tool, Path: "parameters", Keyword: "type", Reason: fmt.Sprintf("the parameters must be of type object, not %v", out.Get("type"))}
	}
	if props, _ := out.Get("properties").(*params.Object); props == nil || len(props.Keys) == 0 {
		return nil, tr.notes, nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, nil, fmt.Errorf("encode parameters of %s: %w", tool, err)
	}
	return b, tr.notes, nil
}

type translator struct {
	tool  string
	root  *params.Object
	refs  []string // $refs being expanded (a cycle is refused)
	notes []string
}

func (t *translator) refuse(path, keyword, reason string) error {
	return &SchemaError{Tool: t.tool, Path: path, Keyword: keyword, Reason: reason}
}

func (t *translator) note(path, format string, args ...any) {
	t.notes = append(t.notes, fmt.Sprintf("tool %q: %s: ", t.tool, path)+fmt.Sprintf(format, args...))
}

const maxDepth = 32

// schema translates one schema node.
func (t *translator) schema(path string, v any, depth int) (*params.Object, error) {
	if depth > maxDepth {
		return nil, t.refuse(path, "", "nested deeper than 32 levels")
	}
	in, ok := v.(*params.Object)
	if !ok {
		return nil, t.refuse(path, "", fmt.Sprintf("a schema must be an object, not %s", jsonKind(v)))
	}
	if ref, ok := in.Get("$ref").(string); ok {
		// The referenced schema stays on the stack while its children are translated: a schema
		// that contains itself is refused, not unrolled.
		if slices.Contains(t.refs, ref) {
			return nil, t.refuse(path+".$ref", "$ref", fmt.Sprintf("%s refers to itself: recursive schemas have no equivalent", ref))
		}
		t.refs = append(t.refs, ref)
		defer func() { t.refs = t.refs[:len(t.refs)-1] }()
	}
	in, err := t.expand(path, in, depth)
	if err != nil {
		return nil, err
	}
	// Keywords that cannot be expressed are named first: they say more than a missing type.
	for _, k := range in.Keys {
		if refused[k] != "" {
			return nil, t.refuse(path+"."+k, k, refused[k])
		}
	}
	out := &params.Object{}
	var hints []string
	typ, nullable, union, err := t.typeOf(path, in)
	if err != nil {
		return nil, err
	}
	if len(union) > 0 {
		// A union without string: anyOf of its members (a member keeps only its type).
		var alts []any
		for _, u := range union {
			alts = append(alts, &params.Object{Keys: []string{"type"}, Vals: map[string]any{"type": u}})
		}
		out.Set("anyOf", alts)
	} else if typ != "" {
		out.Set("type", typ)
	}
	if d, ok := in.Get("description").(string); ok && d != "" {
		out.Set("description", d)
	}
	if n, ok := in.Get("nullable").(bool); (ok && n) || nullable {
		out.Set("nullable", true)
	}
	for _, k := range in.Keys {
		val := in.Vals[k]
		kp := path + "." + k
		switch {
		case k == "type" || k == "description" || k == "nullable" || k == "$ref" || k == "allOf" || k == "oneOf":
			// handled around the loop (expand has merged $ref and allOf, turned oneOf into anyOf)
		case k == "anyOf":
			list, _ := val.([]any)
			alts := make([]any, 0, len(list))
			for i, m := range list {
				ms, err := t.schema(fmt.Sprintf("%s.anyOf[%d]", path, i), m, depth+1)
				if err != nil {
					return nil, err
				}
				alts = append(alts, ms)
			}
			out.Set("anyOf", alts)
		case k == "properties":
			props, ok := val.(*params.Object)
			if !ok {
				return nil, t.refuse(kp, k, "properties must be an object")
			}
			po := &params.Object{}
			for _, name := range props.Keys {
				ps, err := t.schema(path+".properties."+name, props.Vals[name], depth+1)
				if err != nil {
					return nil, err
				}
				po.Set(name, ps)
			}
			out.Set("properties", po)
			if len(po.Keys) > 1 {
				order := make([]any, len(po.Keys))
				for i, name := range po.Keys {
					order[i] = name
				}
				out.Set("propertyOrdering", order)
			}
		case k == "required":
			names, ok := strings1(val)
			if !ok {
				return nil, t.refuse(kp, k, "required must be a list of property names")
			}
			props, _ := in.Get("properties").(*params.Object)
			var keep []any
			for _, n := range names {
				if props != nil && props.Has(n) {
					keep = append(keep, n)
				} else {
					t.note(kp, "%q is required but not a declared property; dropped", n)
				}
			}
			if len(keep) > 0 {
				out.Set("required", keep)
			}
		case k == "items":
			if _, isList := val.([]any); isList {
				return nil, t.refuse(kp, k, "tuples (items as a list) have no equivalent")
			}
			is, err := t.schema(path+".items", val, depth+1)
			if err != nil {
				return nil, err
			}
			out.Set("items", is)
		case k == "enum" || k == "const":
			vals := []any{val}
			if k == "enum" {
				l, ok := val.([]any)
				if !ok {
					return nil, t.refuse(kp, k, "enum must be a list")
				}
				vals = l
			}
			var strs []any
			for _, e := range vals {
				s, isString := e.(string)
				if !isString {
					return nil, t.refuse(kp, k, fmt.Sprintf("Gemini enumerations hold strings only, not %s", jsonKind(e)))
				}
				strs = append(strs, s)
			}
			if k == "const" {
				t.note(kp, "const rewritten as a one-value enum")
			}
			if typ == "" {
				out.Set("type", "STRING")
			}
			out.Set("enum", strs)
		case k == "additionalProperties" || k == "patternProperties":
			if b, isBool := val.(bool); isBool && !b {
				continue // Gemini objects hold only their declared properties anyway
			}
			if props, _ := in.Get("properties").(*params.Object); props == nil || len(props.Keys) == 0 {
				return nil, t.refuse(kp, k, "an object with free-form keys (a map) has no equivalent: declare its properties")
			}
			t.note(kp, "%s dropped: only the declared properties can be sent", k)
		case slices.Contains(keptBounds, k):
			if !isNumber(val) && !(k == "pattern" && isString(val)) {
				return nil, t.refuse(kp, k, fmt.Sprintf("a %s of %s", k, jsonKind(val)))
			}
			out.Set(k, val)
		case slices.Contains(dropped, k):
		case slices.Contains(hinted, k):
			if h := t.hint(path, k, val, typ, out); h != "" {
				hints = append(hints, h)
			}
		case refused[k] != "":
			return nil, t.refuse(kp, k, refused[k])
		case strings.HasPrefix(k, "x-"):
			t.note(kp, "vendor extension dropped")
		default:
			return nil, t.refuse(kp, k, "not a keyword Gemini's Schema or this translation knows")
		}
	}
	if len(hints) > 0 {
		d, _ := out.Get("description").(string)
		if d != "" {
			d += " "
		}
		out.Set("description", d+"("+strings.Join(hints, "; ")+")")
	}
	if typ == "OBJECT" && path != "parameters" {
		if props, _ := out.Get("properties").(*params.Object); props == nil || len(props.Keys) == 0 {
			return nil, t.refuse(path, "properties", "an object without properties has no equivalent (Gemini refuses an empty OBJECT)")
		}
	}
	if typ == "ARRAY" && out.Get("items") == nil {
		return nil, t.refuse(path, "items", "an array needs the schema of its items")
	}
	return out, nil
}

// hint turns a restriction the subset cannot state into words for the description (and a format
// the subset knows into its format; an integer's exclusive bound into an inclusive one).
func (t *translator) hint(path, k string, val any, typ string, out *params.Object) string {
	switch k {
	case "format":
		f, _ := val.(string)
		if slices.Contains(formats[typ], f) {
			out.Set("format", f)
			return ""
		}
		t.note(path+".format", "format %q is not offered for %s; said in the description", f, strings.ToLower(typ))
		return "format: " + f
	case "exclusiveMinimum", "exclusiveMaximum":
		n, ok := val.(json.Number)
		if !ok {
			return "" // draft-4 boolean form: the bound itself is kept as minimum/maximum
		}
		if i, err := n.Int64(); err == nil && typ == "INTEGER" {
			if k == "exclusiveMinimum" {
				out.Set("minimum", json.Number(fmt.Sprint(i+1)))
			} else {
				out.Set("maximum", json.Number(fmt.Sprint(i-1)))
			}
			return ""
		}
		t.note(path+"."+k, "an exclusive bound is said in the description")
		if k == "exclusiveMinimum" {
			return "greater than " + n.String()
		}
		return "less than " + n.String()
	}
	b, _ := json.Marshal(val)
	t.note(path+"."+k, "%s dropped; said in the description", k)
	return k + ": " + string(b)
}

// typeOf reads a node's type: a name, or a list of names ("null" makes it nullable; a union with
// string narrows to string, every value of which the original accepts; integer and number narrow
// to number; other unions become anyOf).
func (t *translator) typeOf(path string, in *params.Object) (typ string, nullable bool, union []any, err error) {
	v, ok := in.Vals["type"]
	if !ok {
		switch {
		case in.Has("properties"):
			return "OBJECT", false, nil, nil
		case in.Has("items"):
			return "ARRAY", false, nil, nil
		case in.Has("enum") || in.Has("const"):
			return "STRING", false, nil, nil
		}
		if in.Has("anyOf") {
			return "", false, nil, nil // only its alternatives say what it is (already merged in expand)
		}
		return "", false, nil, t.refuse(path, "type", "a schema without a type has no equivalent")
	}
	names, isList := strings1(v)
	if !isList {
		s, isStr := v.(string)
		if !isStr {
			return "", false, nil, t.refuse(path+".type", "type", "type must be a name or a list of names")
		}
		names = []string{s}
	}
	var kinds []string
	for _, n := range names {
		if n == "null" {
			nullable = true
			continue
		}
		up, known := schemaTypes[n]
		if !known {
			return "", false, nil, t.refuse(path+".type", "type", fmt.Sprintf("unknown type %q", n))
		}
		if !slices.Contains(kinds, up) {
			kinds = append(kinds, up)
		}
	}
	switch {
	case len(kinds) == 0:
		return "", false, nil, t.refuse(path+".type", "type", "a value that can only be null has no equivalent")
	case len(kinds) == 1:
		return kinds[0], nullable, nil, nil
	case slices.Contains(kinds, "STRING"):
		t.note(path+".type", "union %v narrowed to string, which every member accepts as text", names)
		return "STRING", nullable, nil, nil
	case len(kinds) == 2 && slices.Contains(kinds, "NUMBER") && slices.Contains(kinds, "INTEGER"):
		return "NUMBER", nullable, nil, nil
	}
	for _, k := range kinds {
		if k == "OBJECT" || k == "ARRAY" {
			return "", false, nil, t.refuse(path+".type", "type", fmt.Sprintf("a union %v with a structured member has no equivalent", names))
		}
		union = append(union, k)
	}
	t.note(path+".type", "union %v rewritten as anyOf", names)
	return "", nullable, union, nil
}

// expand resolves $ref (same document), merges allOf and turns oneOf into anyOf, returning the
// node to translate.
func (t *translator) expand(path string, in *params.Object, depth int) (*params.Object, error) {
	if ref, ok := in.Get("$ref").(string); ok {
		if depth > maxDepth {
			return nil, t.refuse(path+".$ref", "$ref", fmt.Sprintf("%s refers to itself: recursive schemas have no equivalent", ref))
		}
		target, err := t.resolve(path, ref)
		if err != nil {
			return nil, err
		}
		exp, err := t.expand(path, target, depth+1)
		if err != nil {
			return nil, err
		}
		merged := exp.Clone()
		for _, k := range in.Keys {
			if k != "$ref" {
				merged.Set(k, in.Vals[k])
			}
		}
		in = merged
	}
	if all, ok := in.Vals["allOf"]; ok {
		list, isList := all.([]any)
		if !isList {
			return nil, t.refuse(path+".allOf", "allOf", "allOf must be a list")
		}
		merged := in.Clone()
		merged.Del("allOf")
		for i, part := range list {
			po, ok := part.(*params.Object)
			if !ok {
				return nil, t.refuse(fmt.Sprintf("%s.allOf[%d]", path, i), "allOf", "a member must be a schema object")
			}
			po, err := t.expand(fmt.Sprintf("%s.allOf[%d]", path, i), po, depth+1)
			if err != nil {
				return nil, err
			}
			if err := mergeInto(merged, po); err != nil {
				return nil, t.refuse(fmt.Sprintf("%s.allOf[%d]", path, i), "allOf", err.Error())
			}
		}
		in = merged
	}
	alt, key := in.Vals["anyOf"], "anyOf"
	if o, ok := in.Vals["oneOf"]; ok {
		if alt != nil {
			return nil, t.refuse(path+".oneOf", "oneOf", "oneOf beside anyOf has no equivalent")
		}
		alt, key = o, "oneOf"
	}
	if alt == nil {
		return in, nil
	}
	list, isList := alt.([]any)
	if !isList || len(list) == 0 {
		return nil, t.refuse(path+"."+key, key, key+" must be a non-empty list")
	}
	// [X, {"type":"null"}] is a nullable X.
	var members []*params.Object
	nullable := false
	for i, m := range list {
		mo, ok := m.(*params.Object)
		if !ok {
			return nil, t.refuse(fmt.Sprintf("%s.%s[%d]", path, key, i), key, "a member must be a schema object")
		}
		if len(mo.Keys) == 1 && mo.Get("type") == "null" {
			nullable = true
			continue
		}
		members = append(members, mo)
	}
	out := in.Clone()
	out.Del("anyOf")
	out.Del("oneOf")
	if nullable {
		out.Set("nullable", true)
	}
	if len(members) == 1 {
		if err := mergeInto(out, members[0]); err != nil {
			return nil, t.refuse(path+"."+key, key, err.Error())
		}
		return out, nil
	}
	if key == "oneOf" {
		t.note(path+".oneOf", "oneOf rewritten as anyOf (the model sends one alternative)")
	}
	alts := make([]any, len(members))
	for i, m := range members {
		alts[i] = m
	}
	out.Set("anyOf", alts) // translated member by member in schema
	return out, nil
}

// resolve finds a same-document reference (#/$defs/x, #/definitions/x).
func (t *translator) resolve(path, ref string) (*params.Object, error) {
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, t.refuse(path+".$ref", "$ref", fmt.Sprintf("%s is not a reference inside the schema", ref))
	}
	var cur any = t.root
	for _, part := range strings.Split(rest, "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		o, ok := cur.(*params.Object)
		if !ok || !o.Has(part) {
			return nil, t.refuse(path+".$ref", "$ref", fmt.Sprintf("%s does not resolve", ref))
		}
		cur = o.Vals[part]
	}
	o, ok := cur.(*params.Object)
	if !ok {
		return nil, t.refuse(path+".$ref", "$ref", fmt.Sprintf("%s is not a schema object", ref))
	}
	return o, nil
}

// mergeInto merges schema b into a (allOf, a single alternative): properties and required are
// united, other keywords must agree.
func mergeInto(a, b *params.Object) error {
	for _, k := range b.Keys {
		bv := b.Vals[k]
		av, has := a.Vals[k]
		switch {
		case !has:
			a.Set(k, bv)
		case k == "properties":
			ap, aok := av.(*params.Object)
			bp, bok := bv.(*params.Object)
			if !aok || !bok {
				return fmt.Errorf("properties must be objects")
			}
			m := ap.Clone()
			for _, n := range bp.Keys {
				if m.Has(n) && !sameJSON(m.Vals[n], bp.Vals[n]) {
					return fmt.Errorf("property %q is declared twice, differently", n)
				}
				m.Set(n, bp.Vals[n])
			}
			a.Set(k, m)
		case k == "required":
			an, _ := strings1(av)
			bn, _ := strings1(bv)
			var all []any
			for _, n := range append(an, bn...) {
				if !slices.Contains(all, any(n)) {
					all = append(all, n)
				}
			}
			a.Set(k, all)
		case k == "description":
			// keep the outer description
		case !sameJSON(av, bv):
			return fmt.Errorf("%q differs between the schemas it combines", k)
		}
	}
	return nil
}

func strings1(v any) ([]string, bool) {
	l, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, ok := x.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func isNumber(v any) bool { _, ok := v.(json.Number); return ok }
func isString(v any) bool { _, ok := v.(string); return ok }

func sameJSON(a, b any) bool {
	ab, _ := json.Marshal(a)
	bb, _ := json.Marshal(b)
	return bytes.Equal(ab, bb)
}

func jsonKind(v any) string {
	switch v.(type) {
	case *params.Object:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}
