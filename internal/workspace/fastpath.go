package workspace

import (
	"encoding/json"
	"slices"
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
		if p.closes('}') {
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
			if !p.colon() {
				return nil, false
			}
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			m[k] = v
			switch done, ok := p.afterItem('}'); {
			case !ok:
				return nil, false
			case done:
				return m, true
			}
		}
	case c == '[':
		p.i++
		a := []any{}
		if p.closes(']') {
			return a, true
		}
		for {
			p.space()
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			a = append(a, v)
			switch done, ok := p.afterItem(']'); {
			case !ok:
				return nil, false
			case done:
				return a, true
			}
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
		if !p.number() {
			return nil, false
		}
		return json.Number(p.b[start:p.i]), true
	}
	return nil, false
}

// closes skips whitespace and then end, the closing bracket of an empty object or array, if it
// comes next.
func (p *plainParser) closes(end byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == end {
		p.i++
		return true
	}
	return false
}

// afterItem reads what follows a member or element: end (done) or a comma (not done); anything
// else is not ok.
func (p *plainParser) afterItem(end byte) (done, ok bool) {
	p.space()
	if p.i >= len(p.b) {
		return false, false
	}
	switch p.b[p.i] {
	case end:
		p.i++
		return true, true
	case ',':
		p.i++
		return false, true
	}
	return false, false
}

// colon reads the colon between a member's name and its value, with the whitespace around it.
func (p *plainParser) colon() bool {
	p.space()
	if p.i >= len(p.b) || p.b[p.i] != ':' {
		return false
	}
	p.i++
	p.space()
	return true
}

// number reads the characters a JSON number can hold and reports whether they are a number
// literal.
func (p *plainParser) number() bool {
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' || c >= '0' && c <= '9' {
			p.i++
			continue
		}
		break
	}
	return validNumber(string(p.b[start:p.i]))
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
	name       string // the property name this schema is declared under, if any
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
				sub.name = name
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

// plainArg is a top-level argument of a call whose value is a plain scalar: a string of printable
// ASCII without escapes, a number, true, false or null. Its raw bytes are then exactly what
// encoding/json writes for the decoded value.
type plainArg struct {
	key  []byte
	raw  []byte
	kind byte // 's' string, 'n' number, 'b' boolean, 'z' null
}

// plainArgs reads a call's arguments when every value is a plain scalar, reusing into; ok is false
// when it declines (nested values, escapes, duplicate keys, anything after the object).
func plainArgs(raw []byte, into []plainArg) ([]plainArg, bool) {
	out := into[:0]
	p := plainParser{b: raw}
	p.space()
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return nil, false
	}
	p.i++
	if !p.closes('}') {
		for {
			p.space()
			ks := p.i
			if _, ok := p.strSpan(); !ok {
				return nil, false
			}
			key := p.b[ks+1 : p.i-1]
			for _, a := range out {
				if string(a.key) == string(key) {
					return nil, false
				}
			}
			if !p.colon() {
				return nil, false
			}
			vs := p.i
			var kind byte
			switch {
			case p.i < len(p.b) && p.b[p.i] == '"':
				if _, ok := p.strSpan(); !ok {
					return nil, false
				}
				kind = 's'
			case p.i < len(p.b) && (p.b[p.i] == '-' || p.b[p.i] >= '0' && p.b[p.i] <= '9'):
				if !p.number() {
					return nil, false
				}
				kind = 'n'
			case p.word("true"), p.word("false"):
				kind = 'b'
			case p.word("null"):
				kind = 'z'
			default:
				return nil, false
			}
			out = append(out, plainArg{key: key, raw: p.b[vs:p.i], kind: kind})
			done, ok := p.afterItem('}')
			if !ok {
				return nil, false
			}
			if done {
				break
			}
		}
	}
	p.space()
	if p.i != len(p.b) {
		return nil, false
	}
	return out, true
}

// strSpan skips a string of printable ASCII without escapes.
func (p *plainParser) strSpan() (int, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return 0, false
	}
	for j := p.i + 1; j < len(p.b); j++ {
		c := p.b[j]
		if c == '"' {
			p.i = j + 1
			return j, true
		}
		if c == '\\' || c < 0x20 || c >= 0x7f {
			return 0, false
		}
	}
	return 0, false
}

// validPlain reports whether plain arguments certainly satisfy the quick schema of an object.
func (q *quickSchema) validPlain(args []plainArg) bool {
	if q.hasEnum || len(q.types) > 0 && !slices.Contains(q.types, "object") {
		return false
	}
	for _, a := range args {
		sub, ok := q.props[string(a.key)]
		if !ok {
			if q.closed {
				return false
			}
			continue
		}
		if len(sub.types) > 0 {
			want := map[byte]string{'s': "string", 'n': "number", 'b': "boolean", 'z': "null"}[a.kind]
			if !slices.Contains(sub.types, want) {
				// An integer is only certain for plain digits.
				if !(a.kind == 'n' && slices.Contains(sub.types, "integer") && quickType("integer", json.Number(a.raw))) {
					return false
				}
			}
		}
		if sub.hasEnum {
			if a.kind != 's' {
				return false
			}
			inner := a.raw[1 : len(a.raw)-1]
			found := false
			for _, e := range sub.enum {
				if e == string(inner) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
	}
	for _, r := range q.required {
		found := false
		for _, a := range args {
			if string(a.key) == r {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// propName returns the argument name as a string, the schema's own copy when it declares it (so
// recording does not allocate it again).
func (q *quickSchema) propName(key []byte) string {
	if sub, ok := q.props[string(key)]; ok && sub.name != "" {
		return sub.name
	}
	return string(key)
}
