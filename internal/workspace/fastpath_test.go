package workspace

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// randomValue builds a JSON-like value of the kinds tool arguments carry, with the characters
// that need escaping mixed in.
func randomValue(r *rand.Rand, depth int) any {
	strs := []string{"", "a", "PA-20-44718", "say \"hi\"", `back\slash`, "tab\there", "line\nbreak", "ctl\x01",
		"é ü ß", "\u2028sep\u2029", "bad\xffutf8", "<html>&", "2150 SW Borland Road"}
	switch k := r.IntN(8); {
	case depth > 3 || k < 3:
		return strs[r.IntN(len(strs))]
	case k == 3:
		nums := []string{"0", "-1", "612.40", "1e3", "3.5E-2", "100"}
		if r.IntN(2) == 0 {
			floats := []float64{0, -1, 612.4, 1e21, 1e20, 1e-6, 1e-7, 123456789.125, -0.000001234, 3e-9, 2.5e300}
			return floats[r.IntN(len(floats))]
		}
		return json.Number(nums[r.IntN(len(nums))])
	case k == 4 && depth == 1:
		return []Hit{{ID: "a<b>", Title: "T \"q\"", Text: strs[r.IntN(len(strs))]}, {ID: "2"}}
	case k == 4:
		return r.IntN(2) == 0
	case k == 5:
		return nil
	case k == 6:
		a := make([]any, r.IntN(4))
		for i := range a {
			a[i] = randomValue(r, depth+1)
		}
		return a
	default:
		m := map[string]any{}
		for i := r.IntN(4); i > 0; i-- {
			m[strs[r.IntN(len(strs))]+strconv.Itoa(i)] = randomValue(r, depth+1)
		}
		return m
	}
}

// The hand encoder writes exactly what encoding/json writes.
func TestAppendCanonicalMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		v := randomValue(r, 0)
		got, ok := appendCanonical(nil, v)
		if !ok {
			t.Fatalf("appendCanonical declined %#v", v)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		if want := bytes.TrimSuffix(buf.Bytes(), []byte("\n")); !bytes.Equal(got, want) {
			t.Fatalf("value %#v:\n got %s\nwant %s", v, got, want)
		}
	}
}

// The plain decoder gives what encoding/json gives, or declines.
func TestDecodeArgsMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	inputs := []string{`{}`, ` {"a":1} `, `{"a":1}x`, `{"a":1,"a":2}`, `{"a":"\u00e9"}`, `{"a":[1,{"b":null}]}`, `[1]`, `{"a":01}`,
		`{"a":-}`, `{"a":1.}`, `{"a":tru}`, `{"a":"x` + "\t" + `"}`, `{"x":"é"}`, `{"a" : 1 , "b" : [ ] }`, `null`}
	for i := 0; i < 3000; i++ {
		b, _ := json.Marshal(map[string]any{"v": randomValue(r, 0), "w": randomValue(r, 1)})
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		got, ok := decodeArgs([]byte(in), map[string]any{"stale": 1})
		var want map[string]any
		dec := json.NewDecoder(strings.NewReader(in))
		dec.UseNumber()
		err := dec.Decode(&want)
		if !ok {
			continue // declined: the general path decides
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("decodeArgs(%s) = %#v, encoding/json = %#v, %v", in, got, want, err)
		}
	}
}

// The quick validator never accepts what the JSON Schema validator refuses, on every tool of the
// suite and random arguments built from each tool's own properties.
func TestQuickSchemaNeverAcceptsWhatTheValidatorRefuses(t *testing.T) {
	tasks, probs := task.LoadAll(filepath.Join("..", "..", "tasks"))
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	r := rand.New(rand.NewPCG(5, 6))
	covered, accepted := 0, 0
	for _, tk := range tasks {
		env, err := Compile(tk)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tk.Agent.Tools {
			q := env.quick[tl.Name]
			if q == nil {
				continue
			}
			covered++
			var props []string
			for p := range q.props {
				props = append(props, p)
			}
			for i := 0; i < 200; i++ {
				args := map[string]any{}
				for _, p := range props {
					if r.IntN(3) == 0 {
						continue
					}
					if sub := q.props[p]; sub.hasEnum && r.IntN(2) == 0 {
						args[p] = sub.enum[r.IntN(len(sub.enum))]
					} else {
						args[p] = randomValue(r, 2)
					}
				}
				if r.IntN(10) == 0 {
					args["not_a_parameter"] = "x"
				}
				if !q.valid(args) {
					continue
				}
				accepted++
				if err := env.schemas[tl.Name].Validate(toValidatable(args)); err != nil {
					t.Fatalf("%s %s: quick schema accepts %#v, the validator refuses it: %v", tk.ID, tl.Name, args, err)
				}
			}
		}
	}
	if covered == 0 || accepted == 0 {
		t.Fatalf("quick subset covers %d tools and accepted %d argument sets: the fast path is never taken", covered, accepted)
	}
	t.Logf("%d tools within the quick subset, %d argument sets accepted and confirmed", covered, accepted)
}

// A record call taken by the plain path records, emits and answers exactly what the general
// path (decode, validate, encode) does, on every record tool of the suite.
func TestRecordPlainMatchesTheGeneralPath(t *testing.T) {
	tasks, probs := task.LoadAll(filepath.Join("..", "..", "tasks"))
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	r := rand.New(rand.NewPCG(8, 9))
	scalars := []string{`"2026-11-24"`, `"PA-20-44718"`, `"glass"`, `100`, `612.40`, `-3`, `1e2`, `true`, `false`, `null`, `"two words"`, `""`}
	taken := 0
	for _, tk := range tasks {
		env, err := Compile(tk)
		if err != nil {
			t.Fatal(err)
		}
		for i := range tk.Agent.Tools {
			tl := &tk.Agent.Tools[i]
			q := env.quick[tl.Name]
			if tl.Kind != task.ToolRecord || q == nil {
				continue
			}
			var props []string
			for p := range q.props {
				props = append(props, p)
			}
			slices.Sort(props)
			var fastEv, slowEv []trace.Event
			fast := env.New(func(e trace.Event) trace.Event { fastEv = append(fastEv, e); return e })
			slow := env.New(func(e trace.Event) trace.Event { slowEv = append(slowEv, e); return e })
			for k := 0; k < 60; k++ {
				var parts []string
				for _, p := range props {
					if r.IntN(3) != 0 {
						continue
					}
					v := scalars[r.IntN(len(scalars))]
					if sub := q.props[p]; sub.hasEnum && r.IntN(2) == 0 {
						v = strconv.Quote(sub.enum[r.IntN(len(sub.enum))])
					}
					parts = append(parts, strconv.Quote(p)+":"+v)
				}
				raw := []byte("{" + strings.Join(parts, ",") + "}")
				res, ok := fast.recordPlain(tl, q, raw)
				if !ok {
					continue
				}
				taken++
				args, ok := decodeArgs(raw, nil)
				if !ok {
					t.Fatalf("%s: %s decodes on the plain path only", tl.Name, raw)
				}
				if err := env.schemas[tl.Name].Validate(toValidatable(args)); err != nil {
					t.Fatalf("%s: the plain path accepted %s, the validator refuses it: %v", tl.Name, raw, err)
				}
				want := slow.record(tl, args)
				if !bytes.Equal(res.Output, want.Output) || res.OK != want.OK {
					t.Fatalf("%s %s:\n plain   %s\n general %s", tl.Name, raw, res.Output, want.Output)
				}
				if !reflect.DeepEqual(fastEv, slowEv) {
					t.Fatalf("%s %s: events differ:\n%v\n%v", tl.Name, raw, fastEv, slowEv)
				}
			}
		}
	}
	if taken == 0 {
		t.Fatal("the plain path was never taken")
	}
	t.Logf("%d record calls compared", taken)
}

// okStrings encodes as encoding/json does.
func TestOkStringsMatchesEncodingJSON(t *testing.T) {
	for _, kv := range [][]string{{"state", "draft"}, {"committed", "submit <claim> & \"x\"", "state", "committed"},
		{"next", "ask the caller", "status", "approval_requested"}, {"a", "1", "z", "2"}, {}} {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		if got, want := okStrings(kv...).Output, okResult(m).Output; !bytes.Equal(got, want) {
			t.Errorf("okStrings(%q) = %s, want %s", kv, got, want)
		}
	}
}
