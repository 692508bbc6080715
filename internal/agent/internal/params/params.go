// Package params checks the parameter names of a JSON request against the ones an API accepts:
// the realtime APIs refuse an unknown parameter by its path, and the servers here do the same.
package params

import "slices"

// Tree lists the parameters a request accepts; a nil subtree accepts any value.
type Tree map[string]Tree

// Unknown returns the path (below path, dot-separated) of the first parameter of v that tree does
// not accept, in sorted order at each level so that the answer is deterministic, or "" when there
// is none.
func Unknown(path string, v map[string]any, tree Tree) string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		sub, ok := tree[k]
		if !ok {
			return path + "." + k
		}
		if m, isMap := v[k].(map[string]any); isMap && sub != nil {
			if bad := Unknown(path+"."+k, m, sub); bad != "" {
				return bad
			}
		}
	}
	return ""
}

// Strings returns v as a list of strings (non-strings and a non-list read as empty strings and
// an empty list), for checking enumerations in decoded JSON.
func Strings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// Path returns the value at keys inside decoded JSON, and whether it is there.
func Path(m map[string]any, keys ...string) (any, bool) {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = mm[k]; !ok {
			return nil, false
		}
	}
	return v, true
}
