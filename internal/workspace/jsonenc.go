package workspace

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"
)

// appendCanonical appends the JSON encoding of v, byte for byte what encoding/json writes with
// HTML escaping off (map keys sorted, strings escaped the same way). It handles the values a tool
// call produces (decoded arguments, strings, booleans, maps, lists, raw field values) and reports
// false for anything else, which the caller then hands to encoding/json. Replaying a trace
// re-encodes every tool result, so this path keeps verification cheap.
func appendCanonical(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		if x {
			return append(b, "true"...), true
		}
		return append(b, "false"...), true
	case string:
		return appendJSONString(b, x), true
	case json.Number:
		if x == "" {
			return append(b, '0'), true
		}
		if !validNumber(string(x)) {
			return b, false
		}
		return append(b, x...), true
	case json.RawMessage:
		if x == nil {
			return append(b, "null"...), true
		}
		var buf bytes.Buffer
		if json.Compact(&buf, x) != nil {
			return b, false
		}
		return append(b, buf.Bytes()...), true
	case []any:
		if x == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendCanonical(b, e); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		return appendObject(b, x)
	case float64:
		return appendFloat(b, x)
	case []Hit:
		b = append(b, '[')
		for i, h := range x {
			if i > 0 {
				b = append(b, ',')
			}
			// Struct fields in declaration order, as encoding/json writes them.
			b = append(b, `{"id":`...)
			b = appendJSONString(b, h.ID)
			b = append(b, `,"title":`...)
			b = appendJSONString(b, h.Title)
			b = append(b, `,"text":`...)
			b = appendJSONString(b, h.Text)
			b = append(b, '}')
		}
		return append(b, ']'), true
	case map[string]json.RawMessage:
		return appendObject(b, x)
	}
	return b, false
}

// appendObject appends m as a JSON object with its keys sorted (null for a nil map), as
// encoding/json writes a map with string keys.
func appendObject[V any](b []byte, m map[string]V) ([]byte, bool) {
	if m == nil {
		return append(b, "null"...), true
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		var ok bool
		if b, ok = appendCanonical(b, m[k]); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendFloat writes a float64 the way encoding/json does: the shortest decimal that reads back,
// in exponent form only below 1e-6 or from 1e21 on, with a one-digit negative exponent.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as encoding/json does with HTML escaping off: quote, backslash and
// control characters escaped (\b \f \n \r \t short), invalid UTF-8 as \ufffd, U+2028 and U+2029
// escaped, everything else verbatim.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// validNumber reports whether s is a JSON number literal.
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i == len(s) {
		return false
	}
	switch {
	case s[i] == '0':
		i++
	case s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	return i == len(s)
}
