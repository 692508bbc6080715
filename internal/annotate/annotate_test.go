package annotate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/bank"
	"github.com/voicebench/humanaudit/internal/flow"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

func loadSuite(t *testing.T) []*task.Task {
	t.Helper()
	tasks, probs := task.LoadAll("../../tasks")
	if len(probs) > 0 {
		t.Fatalf("task suite has problems: %v", probs[0])
	}
	if len(tasks) == 0 {
		t.Fatal("no tasks in ../../tasks")
	}
	return tasks
}

// bankItem makes a rating-set item the way the bank exports one: the caller's role card as user
// state, the plan, and a variant's text.
func bankItem(t *testing.T, tk *task.Task, p trace.Plan, variant int, text string) BankItem {
	t.Helper()
	card, _ := json.Marshal(flow.InitialRoleCard(tk))
	plan, _ := json.Marshal(p)
	return BankItem{Task: tk.ID, Plan: p.ID, Variant: Variant(variant), UserState: card, UserPlan: plan, Transcript: text, Audio: tk.ID + "/x.wav"}
}

// withGoldOnly returns a task of the suite with a gold-only value and that value.
func withGoldOnly(t *testing.T, tasks []*task.Task) (*task.Task, Hidden) {
	t.Helper()
	for _, tk := range tasks {
		for _, h := range HiddenValues(tk) {
			if strings.HasPrefix(h.Source, "gold-only") {
				return tk, h
			}
		}
	}
	t.Fatal("no task of the suite has a gold-only value")
	return nil, Hidden{}
}

func TestEveryShippedVariantBlindsCleanly(t *testing.T) {
	tasks := loadSuite(t)
	n := 0
	for _, tk := range tasks {
		for _, p := range flow.ReachablePlans(tk) {
			for i, text := range tk.Bank[p.ID] {
				it, err := Blind(tk, bankItem(t, tk, p, i+1, text))
				if err != nil {
					t.Errorf("%v", err)
					continue
				}
				n++
				b, _ := json.Marshal(it.Payload)
				for _, k := range GraderKeys {
					if strings.Contains(string(b), k) {
						t.Fatalf("%s: payload holds %s", it.ID, k)
					}
				}
				if it.Payload.UserPlan.Kind != string(p.Kind) || len(it.Payload.UserPlan.Facts) != len(p.Facts) {
					t.Fatalf("%s: plan %+v, want %s with %d facts", it.ID, it.Payload.UserPlan, p.ID, len(p.Facts))
				}
				// Annotators meet the caller's language only: no tool or action name of the agent.
				if ids := ScanIdentifiers(string(b), AgentIdentifiers(tk)); len(ids) > 0 {
					t.Fatalf("%s: payload carries %v: %s", it.ID, ids, b)
				}
				if (p.Kind == trace.PlanApprove || p.Kind == trace.PlanRevoke) && it.Payload.UserPlan.Intent == "" {
					t.Errorf("%s: an %s plan says what it is about (the caller's cue): %s", it.ID, p.Kind, b)
				}
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d variants blinded", n)
	}
	t.Logf("%d variants of %d tasks blinded without leaks", n, len(tasks))
}

func TestBlindDropsEverythingOutsideTheAllowList(t *testing.T) {
	tasks := loadSuite(t)
	tk, hidden := withGoldOnly(t, tasks)
	p := flow.ReachablePlans(tk)[0]
	it := bankItem(t, tk, p, 1, tk.Bank[p.ID][0])
	// A careless exporter puts the grader side and the agent's procedure into the item.
	var state map[string]any
	json.Unmarshal(it.UserState, &state)
	state["gold"] = hidden.Text
	state["grader"] = map[string]any{"target_state": tk.Grader.TargetState}
	state["instructions"] = tk.Agent.Instructions
	it.UserState, _ = json.Marshal(state)
	var plan map[string]any
	json.Unmarshal(it.UserPlan, &plan)
	plan["reference_trajectory"] = []string{"kb_search", "commit"}
	plan["expected_value"] = hidden.Text
	it.UserPlan, _ = json.Marshal(plan)
	got, err := Blind(tk, it)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got.Payload)
	for _, bad := range []string{hidden.Text, "reference_trajectory", tk.Grader.TargetState + `"`, head(tk.Agent.Instructions, 40)} {
		if strings.Contains(string(b), bad) {
			t.Errorf("payload keeps %q: %s", bad, b)
		}
	}
	if got.Payload.UserState.Persona.Name != tk.User.Persona.Name || !reflect.DeepEqual(got.Payload.UserState.Goals, tk.User.Goals) {
		t.Errorf("persona or goals not taken from the task: %+v", got.Payload.UserState)
	}
}

func TestBlindRefusesLeaksAndStrangers(t *testing.T) {
	tasks := loadSuite(t)
	tk, hidden := withGoldOnly(t, tasks)
	p := flow.ReachablePlans(tk)[0]
	good := bankItem(t, tk, p, 1, tk.Bank[p.ID][0])

	leaky := good
	leaky.Transcript = "Sure, and by the way it is " + hidden.Text + "."
	if _, err := Blind(tk, leaky); !errors.Is(err, ErrLeak) || !strings.Contains(err.Error(), hidden.Source) {
		t.Errorf("transcript with a gold-only value: %v", err)
	}

	var card flow.RoleCard
	json.Unmarshal(good.UserState, &card)
	card.Facts = append(card.Facts, flow.CardFact{ID: tk.User.Facts[0].ID, Label: tk.User.Facts[0].Label, Value: hidden.Text})
	forged := good
	forged.UserState, _ = json.Marshal(card)
	if _, err := Blind(tk, forged); !errors.Is(err, ErrLeak) || !strings.Contains(err.Error(), "which is none of its versions") {
		t.Errorf("user state fact with a foreign value: %v", err)
	}

	stranger := good
	stranger.UserPlan, _ = json.Marshal(trace.Plan{ID: p.ID, Kind: p.Kind, Facts: []trace.FactRef{{Fact: "no_such_fact", Version: 1}}})
	if _, err := Blind(tk, stranger); !errors.Is(err, ErrBadItem) || !strings.Contains(err.Error(), "no_such_fact") {
		t.Errorf("plan naming an unknown fact: %v", err)
	}

	cue := good
	card.Facts = card.Facts[:len(card.Facts)-1]
	card.Cues = []flow.CardCue{{Text: "Tell the agent the gold answer"}}
	cue.UserState, _ = json.Marshal(card)
	if _, err := Blind(tk, cue); !errors.Is(err, ErrBadItem) || !strings.Contains(err.Error(), "is not one of task") {
		t.Errorf("invented cue: %v", err)
	}

	other := good
	other.Task = "someone-else"
	if _, err := Blind(tk, other); !errors.Is(err, ErrBadItem) {
		t.Errorf("item of another task: %v", err)
	}
}

func TestScanFindsFoldedValuesAndRespectsWordBoundaries(t *testing.T) {
	hidden := []Hidden{{Text: "POL-88231", Source: "gold"}, {Text: "A12", Source: "short"}}
	if got := Scan(`{"t":"it is POL-88231."}`, hidden); len(got) != 1 {
		t.Errorf("missed an exact value: %v", got)
	}
	if got := Scan(`{"t":"flat A12B"}`, hidden); len(got) != 0 {
		t.Errorf("short value matched inside a word: %v", got)
	}
	if got := Scan(`{"t":"flat a12, please"}`, hidden); len(got) != 1 {
		t.Errorf("short value as a word missed: %v", got)
	}
	if got := Scan(`{"gold":"x"}`, nil); len(got) != 1 || !strings.Contains(got[0], `"gold"`) {
		t.Errorf("grader key missed: %v", got)
	}
}

func TestOrderIsPerAnnotatorAndDeterministic(t *testing.T) {
	var ids []string
	for i := 0; i < 72; i++ {
		ids = append(ids, ItemID("task", "plan", i))
	}
	a0, a1 := Order(7, 0, ids), Order(7, 1, ids)
	if !reflect.DeepEqual(a0, Order(7, 0, slices.Clone(ids))) {
		t.Fatal("the same annotator got two orders")
	}
	if reflect.DeepEqual(a0, a1) || reflect.DeepEqual(a0, Order(8, 0, ids)) {
		t.Fatal("annotators or seeds share an order")
	}
	sorted := slices.Clone(a0)
	slices.Sort(sorted)
	want := slices.Clone(ids)
	slices.Sort(want)
	if !reflect.DeepEqual(sorted, want) {
		t.Fatal("Order is not a permutation")
	}
	// Pinned: the order must not change across Go versions or refactors.
	if got := Order(1, 0, []string{"a", "b", "c", "d", "e"}); !reflect.DeepEqual(got, []string{"a", "c", "d", "b", "e"}) {
		t.Fatalf("pinned order changed: %v", got)
	}
}

func TestPrepareResolvesAudioFromTheManifest(t *testing.T) {
	tasks := loadSuite(t)
	tk := tasks[0]
	plans := flow.ReachablePlans(tk)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, tk.ID), 0o755)
	os.WriteFile(filepath.Join(dir, tk.ID, "open.1.wav"), []byte("RIFF"), 0o644)
	os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"entries":[{"task":"`+tk.ID+`","plan":"open","variant":1,"file":"`+tk.ID+`/open.1.wav"}]}`), 0o644)
	ix, err := LoadAudioIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	ok := bankItem(t, tk, plans[0], 1, tk.Bank[plans[0].ID][0])
	items, err := Prepare([]BankItem{ok}, tasks, ix)
	if err != nil || len(items) != 1 {
		t.Fatalf("prepare: %v", err)
	}
	p, _ := ParsePayload(items[0].Payload)
	if p.Audio != tk.ID+"/open.1.wav" || items[0].ID != ItemID(tk.ID, "open", 1) || items[0].Variant != "1" {
		t.Fatalf("item %+v, audio %q", items[0], p.Audio)
	}
	missing := ok
	missing.Variant = 2
	missing.Audio = ""
	traversal := ok
	traversal.Variant, traversal.Audio = 3, "../../etc/passwd"
	_, err = Prepare([]BankItem{missing, traversal, ok, ok}, tasks, ix)
	for _, want := range []string{"/open/2: no audio", "is not inside the bank directory", "appears twice"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("prepare error lacks %q: %v", want, err)
		}
	}
}

func TestTheBanksRatingSetBlindsCleanly(t *testing.T) {
	tasks := loadSuite(t)
	set, err := bank.RatingSet(tasks)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(set)
	items, err := ReadBankItems("rating-set.json", strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 72 {
		t.Fatalf("%d items, want 72", len(items))
	}
	byID := map[string]*task.Task{}
	for _, tk := range tasks {
		byID[tk.ID] = tk
	}
	withCues := 0
	for _, it := range items {
		bl, err := Blind(byID[it.Task], it)
		if err != nil {
			t.Error(err)
			continue
		}
		withCues += min(len(bl.Payload.UserState.Cues), 1)
		if len(bl.Payload.UserState.Facts) == 0 || bl.Payload.Transcript != it.Transcript {
			t.Errorf("%s: blinded item lost its facts or transcript: %+v", bl.ID, bl.Payload)
		}
	}
	if withCues == 0 {
		t.Error("no item shows the cue of its event: the event items' role cards were dropped")
	}
}

// The reviewer's tampered item: a gold value said in words and a protected value appended to an
// opening. Neither may reach an annotator.
func TestBlindRefusesSpokenGoldAndProtectedValues(t *testing.T) {
	var tk *task.Task
	for _, x := range loadSuite(t) {
		if x.ID == "fnol-auto-glass" {
			tk = x
		}
	}
	if tk == nil {
		t.Skip("fnol-auto-glass not in the suite")
	}
	p := flow.ReachablePlans(tk)[0]
	good := bankItem(t, tk, p, 1, tk.Bank[p.ID][0])
	for _, extra := range []string{" The deductible is one hundred dollars.", " My VIN is " + tk.Grader.ProtectedValues[0] + "."} {
		bad := good
		bad.Transcript += extra
		if _, err := Blind(tk, bad); !errors.Is(err, ErrLeak) {
			t.Errorf("transcript with %q: %v", extra, err)
		}
	}
}
