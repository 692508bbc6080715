package agenttest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/voicebench/humanaudit/internal/agent/internal/params"
)

// The function declarations the Live API accepts, from its documentation (ai.google.dev/api/caching
// #FunctionDeclaration, #Schema) and from the errors it is publicly reported to give: parameters
// are a Schema, a select subset of OpenAPI 3.0; any other key (additionalProperties, $schema,
// const, …) is an unknown field, reported with the path in the proto's snake_case names, map
// entries by position (properties[2].value).
var (
	geminiDeclFields = []string{"name", "description", "behavior", "parameters", "parametersJsonSchema", "response", "responseJsonSchema"}
	// geminiSchemaFields are the Schema's fields, in camelCase (snake_case is accepted too).
	geminiSchemaFields = []string{"type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems", "properties",
		"required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example", "anyOf", "propertyOrdering",
		"default", "items", "minimum", "maximum"}
	geminiTypes   = []string{"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"}
	geminiFormats = map[string][]string{"STRING": {"enum", "date-time"}, "NUMBER": {"float", "double"}, "INTEGER": {"int32", "int64"}}
	functionName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$`)
)

const geminiTypeProto = "type.googleapis.com/google.ai.generativelanguage.v1beta.Type"

// checkTools validates setup.tools as the service does; it returns the close reason of the first
// problem, or "".
func (c *geminiConn) checkTools(raw []byte) string {
	doc, err := params.DecodeOrdered(raw)
	if err != nil {
		return "Invalid JSON payload received. Unexpected token."
	}
	either := func(o *params.Object, camel string) any {
		if v := o.Get(camel); v != nil {
			return v
		}
		return o.Get(snakeName(camel))
	}
	root, _ := doc.(*params.Object)
	setup, _ := root.Get("setup").(*params.Object)
	tools, _ := setup.Get("tools").([]any)
	for i, t := range tools {
		tm, _ := t.(*params.Object)
		decls, _ := either(tm, "functionDeclarations").([]any)
		for j, d := range decls {
			dm, _ := d.(*params.Object)
			path := fmt.Sprintf("setup.tools[%d].function_declarations[%d]", i, j)
			if dm == nil {
				return fmt.Sprintf("Invalid value at '%s' (type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionDeclaration)", path)
			}
			for _, k := range dm.Keys {
				if !slices.Contains(geminiDeclFields, camelName(k)) {
					return unknownName(k, path)
				}
			}
			name, _ := dm.Get("name").(string)
			if !functionName.MatchString(name) {
				return fmt.Sprintf("* %s.name: Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:), or dashes (-), with a maximum length of 64.", path)
			}
			if dm.Has("parametersJsonSchema") || dm.Has("parameters_json_schema") {
				// Accepted on the wire, but Live models ignore it: their calls carry no arguments
				// (python-genai #1147).
				c.f.violation("%s: parametersJsonSchema is ignored by Live models; calls arrive with empty arguments", path)
			}
			p := dm.Get("parameters")
			if p == nil {
				continue
			}
			if msg := checkSchema(path+".parameters", p, 0); msg != "" {
				return msg
			}
			if pm, _ := p.(*params.Object); !strings.EqualFold(fmt.Sprint(pm.Get("type")), "OBJECT") {
				return fmt.Sprintf("* %s.parameters.type: must be OBJECT", path)
			}
		}
	}
	return ""
}

// checkSchema validates one Schema (path in the service's snake_case notation).
func checkSchema(path string, v any, depth int) string {
	o, ok := v.(*params.Object)
	if !ok || depth > 40 {
		return fmt.Sprintf("Invalid value at '%s' (type.googleapis.com/google.ai.generativelanguage.v1beta.Schema), %s", path, jsonText(v))
	}
	for _, k := range o.Keys {
		if !slices.Contains(geminiSchemaFields, camelName(k)) {
			return unknownName(k, path)
		}
	}
	get := func(k string) any {
		if v := o.Get(k); v != nil {
			return v
		}
		return o.Get(snakeName(k))
	}
	typ := ""
	if t := get("type"); t != nil {
		s, isString := t.(string)
		if !isString {
			if _, isList := t.([]any); isList {
				return fmt.Sprintf("Invalid JSON payload received. Proto field is not repeating, cannot start list. at '%s.type'", path)
			}
			return fmt.Sprintf("Invalid value at '%s.type' (%s), %s", path, geminiTypeProto, jsonText(t))
		}
		typ = strings.ToUpper(s)
		if !slices.Contains(geminiTypes, typ) {
			return fmt.Sprintf("Invalid value at '%s.type' (%s), %q", path, geminiTypeProto, s)
		}
	}
	if f, ok := get("format").(string); ok && typ != "" {
		if allowed, has := geminiFormats[typ]; has && !slices.Contains(allowed, f) {
			return fmt.Sprintf("* %s.format: only '%s' are supported for %s type", path, strings.Join(allowed, "' and '"), typ)
		}
	}
	if e := get("enum"); e != nil {
		list, isList := e.([]any)
		if !isList {
			return fmt.Sprintf("Invalid value at '%s.enum' (TYPE_STRING), %s", path, jsonText(e))
		}
		for i, x := range list {
			if _, isString := x.(string); !isString {
				return fmt.Sprintf("Invalid value at '%s.enum[%d]' (TYPE_STRING), %s", path, i, jsonText(x))
			}
		}
	}
	for _, k := range []string{"required", "propertyOrdering"} {
		if r := get(k); r != nil {
			list, _ := r.([]any)
			for i, x := range list {
				if _, isString := x.(string); !isString {
					return fmt.Sprintf("Invalid value at '%s.%s[%d]' (TYPE_STRING), %s", path, snakeName(k), i, jsonText(x))
				}
			}
		}
	}
	for _, k := range []string{"minimum", "maximum", "minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties"} {
		if n := get(k); n != nil {
			if _, isNum := n.(json.Number); !isNum {
				if s, isString := n.(string); !isString || !isInteger(s) || k == "minimum" || k == "maximum" {
					return fmt.Sprintf("Invalid value at '%s.%s' (TYPE_%s), %s", path, snakeName(k), numberProto(k), jsonText(n))
				}
			}
		}
	}
	props, _ := get("properties").(*params.Object)
	if p := get("properties"); p != nil && props == nil {
		return fmt.Sprintf("Invalid value at '%s.properties' (type.googleapis.com/google.ai.generativelanguage.v1beta.Schema.PropertiesEntry), %s", path, jsonText(p))
	}
	if props != nil {
		for i, name := range props.Keys {
			if msg := checkSchema(fmt.Sprintf("%s.properties[%d].value", path, i), props.Vals[name], depth+1); msg != "" {
				return msg
			}
		}
	}
	if it := get("items"); it != nil {
		if msg := checkSchema(path+".items", it, depth+1); msg != "" {
			return msg
		}
	}
	if a := get("anyOf"); a != nil {
		list, _ := a.([]any)
		for i, x := range list {
			if msg := checkSchema(fmt.Sprintf("%s.any_of[%d]", path, i), x, depth+1); msg != "" {
				return msg
			}
		}
	}
	switch typ {
	case "OBJECT":
		if props == nil || len(props.Keys) == 0 {
			return fmt.Sprintf("* %s.properties: should be non-empty for OBJECT type", path)
		}
	case "ARRAY":
		if get("items") == nil {
			return fmt.Sprintf("* %s.items: missing field.", path)
		}
	}
	return ""
}

func unknownName(k, path string) string {
	return fmt.Sprintf("Invalid JSON payload received. Unknown name %q at '%s': Cannot find field.", k, path)
}

func numberProto(k string) string {
	if k == "minimum" || k == "maximum" {
		return "DOUBLE"
	}
	return "INT64"
}

func isInteger(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// camelName and snakeName convert between the proto's field spellings.
func camelName(k string) string {
	parts := strings.Split(k, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

func snakeName(k string) string {
	var b strings.Builder
	for _, r := range k {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
