package grade_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/textcall"
	"github.com/voicebench/humanaudit/internal/trace"
)

func suiteTasks(t testing.TB) []*task.Task {
	t.Helper()
	tasks, probs := task.LoadAll(filepath.Join("..", "..", "tasks"))
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	n := 0
	for _, tk := range tasks {
		if tk.InSubset(task.SubsetAudit24) {
			n++
		}
	}
	if n != 24 || len(tasks) != 27 {
		t.Fatalf("suite has %d tasks, %d of them audit24; want 24 audit24 and 3 transfer tasks", len(tasks), n)
	}
	return tasks
}

// flawSets are the scripted agent's behaviours the invariant and property tests run.
func flawSets(tk *task.Task) []textcall.Flaws {
	skip := map[string]bool{}
	for _, ra := range tk.Grader.RequiredActions {
		skip[ra.Tool] = true
	}
	return []textcall.Flaws{{}, {IgnoreCorrections: true}, {CommitWithoutApproval: true}, {CommitAfterRevocation: true},
		{SkipTools: skip}, {SpeakProtectedEarly: true}, {NeverMarkReady: true}, {TransferEarly: true}}
}

// Invariant: every trace the console writes verifies. Its workspace events are exactly what a
// replay of its tool calls and authorization acts produces, its numbering and types are clean, and
// its JSONL has only documented fields of their documented types. A failure here is a console
// bug, not a defect of the trace.
func TestConsoleTracesVerify(t *testing.T) {
	ctx := context.Background()
	n := 0
	for _, tk := range suiteTasks(t) {
		g := grade.New(tk, grade.Options{})
		for fi, flaws := range flawSets(tk) {
			for seed := int64(1); seed <= 2; seed++ {
				events, err := textcall.Run(ctx, tk, textcall.NewScripted(tk, flaws), textcall.Options{Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				if err := g.Check(events, grade.CheckOptions{}); err != nil {
					t.Errorf("%s flaws #%d seed %d: %v", tk.ID, fi, seed, err)
				}
				var buf bytes.Buffer
				trace.WriteJSONL(&buf, events)
				if ds := trace.CheckLines(buf.Bytes(), false); len(ds) > 0 {
					t.Errorf("%s flaws #%d seed %d: %v", tk.ID, fi, seed, ds)
				}
				n++
			}
		}
	}
	t.Logf("%d console traces of %d tasks verify", n, 24)
}

// rebuildMaps returns a deep copy of t whose every map (synonyms, tool field mappings and columns,
// environment rows, the bank) was rebuilt by inserting its keys in a shuffled order.
func rebuildMaps(tb testing.TB, t *task.Task, r *rand.Rand) *task.Task {
	tb.Helper()
	b, err := json.Marshal(t)
	if err != nil {
		tb.Fatal(err)
	}
	var c task.Task
	if err := json.Unmarshal(b, &c); err != nil {
		tb.Fatal(err)
	}
	c.Path = t.Path
	for i := range c.Grader.Fields {
		c.Grader.Fields[i].Params.Synonyms = shuffled(c.Grader.Fields[i].Params.Synonyms, r)
	}
	for i := range c.Agent.Tools {
		tl := &c.Agent.Tools[i]
		tl.Fields = shuffled(tl.Fields, r)
		tl.Key = shuffled(tl.Key, r)
		tl.Match = shuffled(tl.Match, r)
	}
	c.Environment.Tables = shuffled(c.Environment.Tables, r)
	for _, rows := range c.Environment.Tables {
		for j := range rows {
			rows[j] = shuffled(rows[j], r)
		}
	}
	c.Bank = shuffled(c.Bank, r)
	return &c
}

func shuffled[V any](m map[string]V, r *rand.Rand) map[string]V {
	if m == nil {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	out := make(map[string]V, len(m))
	for _, k := range keys {
		out[k] = m[k]
	}
	return out
}

// candidateValues are values an agent might record for a field: the gold, every fact version in
// written and spoken form, the synonyms, and a value of the wrong kind.
func candidateValues(tk *task.Task, gf task.GoldField) []json.RawMessage {
	out := []json.RawMessage{gf.Gold, json.RawMessage(`"not this"`), json.RawMessage(`null`), json.RawMessage(`42`)}
	q := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	for _, f := range tk.User.Facts {
		if f.Field != gf.Field {
			continue
		}
		for _, v := range f.Versions {
			out = append(out, q(v.Value), q(v.Say()))
		}
	}
	for c, syns := range gf.Params.Synonyms {
		out = append(out, q(c))
		for _, s := range syns {
			out = append(out, q(s))
		}
	}
	return out
}

// randomTraces returns scripted calls of the task with random flaws and seeds, and copies of them
// whose recorded field values were replaced at random by candidate values.
func randomTraces(t *testing.T, tk *task.Task, r *rand.Rand) [][]trace.Event {
	ctx := context.Background()
	var out [][]trace.Event
	sets := flawSets(tk)
	for k := 0; k < 3; k++ {
		events, err := textcall.Run(ctx, tk, textcall.NewScripted(tk, sets[r.IntN(len(sets))]), textcall.Options{Seed: r.Int64N(1000)})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, events)
		mutated := append([]trace.Event(nil), events...)
		for i := range mutated {
			if mutated[i].Type != trace.ArtifactUpdate || r.IntN(2) == 0 {
				continue
			}
			for _, gf := range tk.Grader.Fields {
				if gf.Field == mutated[i].Field {
					cands := candidateValues(tk, gf)
					mutated[i].Value = cands[r.IntN(len(cands))]
				}
			}
		}
		out = append(out, mutated)
	}
	return out
}

// Property: grading is a pure function of (task, trace). Random traces of every suite task are
// graded twice, the second time with every map of the task rebuilt in a shuffled order, and the
// encoded grades compared byte for byte.
func TestGradingDoesNotDependOnMapOrder(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(16, 2026))
	graded := 0
	for _, tk := range suiteTasks(t) {
		for _, events := range randomTraces(t, tk, r) {
			first, err := grade.Grade(ctx, tk, events, grade.Options{})
			if err != nil {
				t.Fatal(err)
			}
			a, _ := grade.Encode(first)
			for k := 0; k < 3; k++ {
				second, err := grade.Grade(ctx, rebuildMaps(t, tk, r), events, grade.Options{})
				if err != nil {
					t.Fatal(err)
				}
				b, _ := grade.Encode(second)
				if !bytes.Equal(a, b) {
					t.Fatalf("%s: the grade changed when the task's maps were rebuilt:\n%s\n%s", tk.ID, a, b)
				}
			}
			graded++
		}
	}
	t.Logf("%d random traces of 24 tasks graded identically under rebuilt maps", graded)
}

// A synonym listed under two canonical values (which the validator refuses) still grades the same
// on every run: the grader never picks by map order. With the old lookup, which returned the first
// match while ranging over the synonyms, about one run in ten differed.
func TestEnumSynonymOfTwoValuesGradesTheSameEveryRun(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	gf := task.GoldField{Field: "f", Grader: grade.Enum, Gold: json.RawMessage(`"glass"`), Params: task.GraderParams{Synonyms: map[string][]string{
		"glass": {"windshield"}, "comprehensive": {"windshield"}, "collision": {"crash"}, "liability": {"other car"}}}}
	want := grade.GradeField(gf, json.RawMessage(`"windshield"`))
	for i := 0; i < 200; i++ {
		g := gf
		g.Params.Synonyms = shuffled(gf.Params.Synonyms, r)
		if got := grade.GradeField(g, json.RawMessage(`"Windshield"`)); got != want {
			t.Fatalf("run %d: %+v, first run %+v", i, got, want)
		}
	}
}
