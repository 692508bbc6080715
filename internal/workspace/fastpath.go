package workspace

import (
	"encoding/json"
)

// The fast paths below let a replay re-execute tool calls cheaply. Each one either gives exactly
// the answer of the general path (encoding/json, the JSON Schema validator) or declines, and the
// general path runs; tests compare both on generated inputs.

// decodeArgs decodes a tool call's arguments as encoding/json's Decoder with UseNumber would, for
// plain input: ASCII without escapes, no duplicate keys, nothing after the value but whitespace.
// ok is false when it declines.
// into, when not nil, is cleared and filled as the top-level object, so a workspace can reuse it
// from call to call.
func decodeArgs(raw []byte, into map[string]any) (args map[string]any, ok bool) {
	clear(into)
	p := plainParser{b: raw, top: into}
	p.space()
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return nil, false
	}
	v, ok := p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	if p.i != len(p.b) {
		return nil, false
	}
	m, _ := v.(map[string]any)
	return m, m != nil
}

type plainParser struct {
	b   []byte
	i   int
	top map[string]any // the map to fill for the top-level object, if any
}

func (p *plainParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *plainParser) value(depth int) (any, bool) {
	if depth > 32 || p.i >= len(p.b) {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		p.i++
		m := p.top
		p.top = nil
		if m == nil {
			m = make(map[string]any, 4)
		}
		p.space()
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			return m, true
		}
		for {
			p.space()
			k, ok := p.str()
			if !ok {
				return nil, false
			}
			if _, dup := m[k]; dup {
				return nil, false
			}
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return nil, false
			}
			p.i++
			p.space()
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			m[k] = v
			p.space()
			if p.i >= len(p.b) {
				return nil, false
			}
			if p.b[p.i] == '}' {
				p.i++
				return m, true
			}
			if p.b[p.i] != ',' {
				return nil, false
			}
			p.i++
		}
	case c == '[':
		p.i++
		a := []any{}
		p.space()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return a, true
		}
		for {
			p.space()
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			a = append(a, v)
			p.space()
			if p.i >= len(p.b) {
				return nil, false
			}
			if p.b[p.i] == ']' {
				p.i++
				return a, true
			}
			if p.b[p.i] != ',' {
				return nil, false
			}
			p.i++
		}
	case c == '"':
		return p.str()
	case c == 't':
		return true, p.word("true")
	case c == 'f':
		return false, p.word("false")
	case c == 'n':
		return nil, p.word("null")
	case c == '-' || c >= '0' && c <= '9':
		start := p.i
		for p.i < len(p.b) {
			c := p.b[p.i]
			if c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' || c >= '0' && c <= '9' {
				p.i++
				continue
			}
			break
		}
		n := string(p.b[start:p.i])
		if !validNumber(n) {
			return nil, false
		}
		return json.Number(n), true
	}
	return nil, false
}

func (p *plainParser) word(w string) bool {
	if len(p.b)-p.i < len(w) || string(p.b[p.i:p.i+len(w)]) != w {
		return false
	}
	p.i += len(w)
	return true
}

// str reads a string of printable ASCII without escapes.
func (p *plainParser) str() (string, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", false
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		c := p.b[j]
		if c == '"' {
			p.i = j + 1
			return string(p.b[start:j]), true
		}
		if c == '\\' || c < 0x20 || c >= 0x7f {
			return "", false
		}
	}
	return "", false
}

// isCompact reports whether raw has no whitespace outside strings, so that json.Compact would
// return it unchanged (or fail on it, in which case compactJSON returns it unchanged too).
func isCompact(raw []byte) bool {
	in := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return true
}

// quickSchema is the subset of JSON Schema that task tool parameters use (type, properties,
// required, enum of strings, additionalProperties true or false, items), compiled for a quick
// yes. valid reports true only when the full validator would accept the value too; any other
// answer sends the value to the full validator, which also words the error.
type quickSchema struct {
	types      []string
	props      map[string]*quickSchema
	required   []string
	enum       []string
	hasEnum    bool
	closed     bool // additionalProperties: false
	items      *quickSchema
	hasProps   bool
	hasItems   bool
	hasAddlSet bool
}

// compileQuick compiles a tool's parameter schema, or returns nil when it uses anything beyond
// the subset.
func compileQuick(raw json.RawMessage) *quickSchema {
	var doc any
	if json.Unmarshal(raw, &doc) != nil {
		return nil
	}
	return quickFrom(doc, 0)
}

func quickFrom(doc any, depth int) *quickSchema {
	m, ok := doc.(map[string]any)
	if !ok || depth > 16 {
		return nil
	}
	q := &quickSchema{}
	for k, v := range m {
		switch k {
		case "description", "title":
		case "type":
			switch t := v.(type) {
			case string:
				q.types = []string{t}
			case []any:
				for _, x := range t {
					s, ok := x.(string)
					if !ok {
						return nil
					}
					q.types = append(q.types, s)
				}
			default:
				return nil
			}
		case "properties":
			pm, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			q.hasProps = true
			q.props = map[string]*quickSchema{}
			for name, ps := range pm {
				sub := quickFrom(ps, depth+1)
				if sub == nil {
					return nil
				}
				q.props[name] = sub
			}
		case "required":
			rs, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, r := range rs {
				s, ok := r.(string)
				if !ok {
					return nil
				}
				q.required = append(q.required, s)
			}
		case "enum":
			es, ok := v.([]any)
			if !ok {
				return nil
			}
			q.hasEnum = true
			for _, e := range es {
				s, ok := e.(string)
				if !ok {
					return nil
				}
				q.enum = append(q.enum, s)
			}
		case "additionalProperties":
			b, ok := v.(bool)
			if !ok {
				return nil
			}
			q.hasAddlSet = true
			q.closed = !b
		case "items":
			sub := quickFrom(v, depth+1)
			if sub == nil {
				return nil
			}
			q.hasItems = true
			q.items = sub
		default:
			return nil
		}
	}
	for _, t := range q.types {
		switch t {
		case "string", "number", "integer", "boolean", "object", "array", "null":
		default:
			return nil
		}
	}
	return q
}

// valid reports whether v certainly satisfies the schema.
func (q *quickSchema) valid(v any) bool {
	if len(q.types) > 0 {
		ok := false
		for _, t := range q.types {
			if quickType(t, v) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if q.hasEnum {
		s, ok := v.(string)
		if !ok {
			return false
		}
		found := false
		for _, e := range q.enum {
			if e == s {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	switch x := v.(type) {
	case map[string]any:
		for _, r := range q.required {
			if _, ok := x[r]; !ok {
				return false
			}
		}
		for k, e := range x {
			sub, ok := q.props[k]
			if !ok {
				if q.closed {
					return false
				}
				continue
			}
			if !sub.valid(e) {
				return false
			}
		}
	case []any:
		if q.hasItems {
			for _, e := range x {
				if !q.items.valid(e) {
					return false
				}
			}
		}
	}
	return true
}

func quickType(t string, v any) bool {
	switch x := v.(type) {
	case string:
		return t == "string"
	case bool:
		return t == "boolean"
	case nil:
		return t == "null"
	case map[string]any:
		return t == "object"
	case []any:
		return t == "array"
	case json.Number:
		if t == "number" {
			return true
		}
		if t != "integer" {
			return false
		}
		// Only plain digit strings are certainly integers; "1.0" and "1e2" go to the full validator.
		s := string(x)
		if len(s) > 0 && s[0] == '-' {
			s = s[1:]
		}
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		}
		return s != ""
	}
	return false
}
