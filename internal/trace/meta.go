package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Meta maps names to strings: session metadata, usage counters, a raw provider event's name. A
// trace written elsewhere may give a number or a boolean (`"seed": 3`); it is read as its JSON
// text ("3"), so traces from other harnesses need no rewriting. An object, an array or null is an
// error that names the key.
type Meta map[string]string

// UnmarshalJSON reads a meta object, accepting numbers and booleans as their text.
func (m *Meta) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*m = nil
		return nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("meta: want an object of string values: %w", err)
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first bad key reported is the same on every run
	out := make(Meta, len(raw))
	for _, k := range keys {
		v := bytes.TrimSpace(raw[k])
		switch {
		case len(v) > 0 && v[0] == '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return fmt.Errorf("meta %q: %w", k, err)
			}
			out[k] = s
		case len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9'), string(v) == "true", string(v) == "false":
			out[k] = string(v)
		default:
			return fmt.Errorf("meta %q: got %s, want a string (meta values are strings; a number or boolean is read as its text)", k, jsonKind(v))
		}
	}
	*m = out
	return nil
}

// jsonKind names the kind of a JSON value for messages.
func jsonKind(v []byte) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
