// Package params checks the parameter names of a JSON request against the ones an API accepts:
// the realtime APIs refuse an unknown parameter by its path, and the servers here do the same.
package params

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
)

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

// Object is a decoded JSON object that keeps its key order: the order of a schema's properties is
// the order a model is asked to fill them in, and the order a provider's error messages count
// them in (properties[2].value).
type Object struct {
	Keys []string
	Vals map[string]any
}

// Has reports whether key k is present.
func (o *Object) Has(k string) bool {
	if o == nil {
		return false
	}
	_, ok := o.Vals[k]
	return ok
}

// Get returns the value of k (nil when absent or when o is nil).
func (o *Object) Get(k string) any {
	if o == nil || o.Vals == nil {
		return nil
	}
	return o.Vals[k]
}

// Set sets k, appending it to the order when it is new.
func (o *Object) Set(k string, v any) {
	if o.Vals == nil {
		o.Vals = map[string]any{}
	}
	if _, ok := o.Vals[k]; !ok {
		o.Keys = append(o.Keys, k)
	}
	o.Vals[k] = v
}

// Del removes k.
func (o *Object) Del(k string) {
	if _, ok := o.Vals[k]; !ok {
		return
	}
	delete(o.Vals, k)
	o.Keys = slices.DeleteFunc(o.Keys, func(x string) bool { return x == k })
}

// Clone is a shallow copy.
func (o *Object) Clone() *Object {
	c := &Object{Keys: slices.Clone(o.Keys), Vals: make(map[string]any, len(o.Vals))}
	for k, v := range o.Vals {
		c.Vals[k] = v
	}
	return c
}

// MarshalJSON writes the keys in order.
func (o *Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.Keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.Vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// DecodeOrdered decodes one JSON value with objects as *Object, arrays as []any and numbers as
// json.Number.
func DecodeOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("content after the value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, isDelim := tok.(json.Delim)
	if !isDelim {
		return tok, nil
	}
	if d == '{' {
		o := &Object{Vals: map[string]any{}}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			o.Set(k, v)
		}
		_, err := dec.Token()
		return o, err
	}
	l := []any{}
	for dec.More() {
		v, err := decodeValue(dec)
		if err != nil {
			return nil, err
		}
		l = append(l, v)
	}
	_, err = dec.Token()
	return l, err
}
