package workspace

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/task"
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
		return json.Number(nums[r.IntN(len(nums))])
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
