// Package annotate builds the annotators' rating set of frozen caller utterances: it blinds the
// bank's rating-set items (only the task-visible user state, the structured user plan, the
// transcript and the audio reach an annotator; never gold, grader state or the reference
// trajectory), checks every item against its task for leaked values, orders the items per
// annotator deterministically from the study seed, and exports ratings in long format.
package annotate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/voicebench/humanaudit/internal/bank"
	"github.com/voicebench/humanaudit/internal/flow"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// ErrLeak is wrapped by errors for an item whose payload would show an annotator something hidden.
var ErrLeak = errors.New("rating item leaks hidden task content")

// ErrBadItem is wrapped by errors for a rating-set item that is malformed or does not match its task.
var ErrBadItem = errors.New("bad rating-set item")

// BankItem is one frozen utterance as `audit bank rating-set --json` exports it.
type BankItem struct {
	Task       string          `json:"task"`
	Plan       string          `json:"plan"`
	Variant    Variant         `json:"variant"`
	UserState  json.RawMessage `json:"user_state"`
	UserPlan   json.RawMessage `json:"user_plan"`
	Transcript string          `json:"transcript"`
	Audio      string          `json:"audio"`
}

// Variant is a variant number that may be written as a JSON number or string.
type Variant int

// UnmarshalJSON accepts 2 and "2".
func (v *Variant) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*v = 0
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("variant %s: want a number", b)
	}
	*v = Variant(n)
	return nil
}

// Rating-set files come from outside: their size, item count and text lengths are bounded.
const (
	MaxSetBytes      = 64 << 20 // a rating-set file
	MaxSetItems      = 100000
	maxItemText      = 2000 // a transcript
	maxItemName      = 200  // task id, plan id, audio path
	maxItemStateSize = 64 << 10
)

// ReadBankItems reads the JSON array `audit bank rating-set --json` prints. name is used in
// messages. An empty set is refused: storing it would take the study's rating set away from its
// annotators.
func ReadBankItems(name string, r io.Reader) ([]BankItem, error) {
	var items []BankItem
	lr := &io.LimitedReader{R: r, N: MaxSetBytes + 1}
	dec := json.NewDecoder(lr)
	if err := dec.Decode(&items); err != nil {
		if lr.N <= 0 {
			return nil, fmt.Errorf("%w: %s: larger than %d MiB", ErrBadItem, name, MaxSetBytes>>20)
		}
		return nil, fmt.Errorf("%s: want a JSON array of rating-set items: %w", name, err)
	}
	switch {
	case len(items) == 0:
		return nil, fmt.Errorf("%w: %s: the rating set is empty (audit bank rating-set --json lists the items; run audit bank build first)", ErrBadItem, name)
	case len(items) > MaxSetItems:
		return nil, fmt.Errorf("%w: %s: %d items, at most %d", ErrBadItem, name, len(items), MaxSetItems)
	}
	for i, it := range items {
		where := fmt.Sprintf("%s: item %d", name, i+1)
		switch {
		case it.Task == "" || it.Plan == "":
			return nil, fmt.Errorf("%w: %s: task and plan are required", ErrBadItem, where)
		case len(it.Task) > maxItemName || len(it.Plan) > maxItemName || len(it.Audio) > maxItemName:
			return nil, fmt.Errorf("%w: %s: task, plan and audio are at most %d characters each", ErrBadItem, where, maxItemName)
		case len([]rune(it.Transcript)) > maxItemText:
			return nil, fmt.Errorf("%w: %s: transcript of %d characters, at most %d", ErrBadItem, where, len([]rune(it.Transcript)), maxItemText)
		case len(it.UserState) > maxItemStateSize || len(it.UserPlan) > maxItemStateSize:
			return nil, fmt.Errorf("%w: %s: user_state and user_plan are at most %d KiB each", ErrBadItem, where, maxItemStateSize>>10)
		}
	}
	return items, nil
}

// Payload is what an annotator may see of an item (stored as the rating item's payload). Audio is
// the item's WAV relative to the bank directory: the web app serves the file and never shows the
// path.
type Payload struct {
	UserState  UserState `json:"user_state"`
	UserPlan   UserPlan  `json:"user_plan"`
	Transcript string    `json:"transcript"`
	Audio      string    `json:"audio,omitempty"`
}

// UserState is the task-visible user state: who the caller is, why they call, what they must
// respect and the facts they know at the moment of the utterance.
type UserState struct {
	Title       string        `json:"title"`
	Persona     Persona       `json:"persona"`
	Goals       []string      `json:"goals"`
	Constraints []string      `json:"constraints,omitempty"`
	Facts       []VisibleFact `json:"facts"`
	Cues        []string      `json:"cues,omitempty"` // private cues shown to the caller so far
}

// Persona is the caller as an annotator sees them.
type Persona struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	Speaking string `json:"speaking,omitempty"`
}

// VisibleFact is one fact the caller knows.
type VisibleFact struct {
	Label string `json:"label"`
	Value string `json:"value"`
	Hint  string `json:"hint,omitempty"`
}

// UserPlan is the structured plan the utterance expresses, in the caller's language: its kind
// ("answer", "correct", "approve", …), the facts it conveys and, for an approval, a revocation or an
// interruption, the cue the caller was shown. It carries no identifier of the agent side (the
// plan id and the approved action name the agent's tools and actions, "approve:set_up_arrangement"):
// the opaque item id stands for the plan.
type UserPlan struct {
	Kind   string     `json:"kind"`
	Facts  []PlanFact `json:"facts,omitempty"`
	Intent string     `json:"intent,omitempty"`
}

// PlanFact is one fact version the plan conveys.
type PlanFact struct {
	Label   string `json:"label"`
	Value   string `json:"value"`
	Spoken  string `json:"spoken,omitempty"`
	Version int    `json:"version,omitempty"`
}

// Item is a blinded rating item ready to store.
type Item struct {
	ID      string
	Task    string
	Plan    string
	Variant int
	Payload Payload
}

// ItemID is a rating item's stable, opaque id: the same (task, plan, variant) always gets the same
// id, and the id says nothing about the plan to an annotator.
func ItemID(taskID, plan string, variant int) string {
	h := sha256.Sum256([]byte(taskID + "\x00" + plan + "\x00" + strconv.Itoa(variant)))
	return "it-" + hex.EncodeToString(h[:6])
}

// stateDoc is the superset of user-state shapes the bank may export (a role card).
type stateDoc struct {
	Facts []struct {
		ID    string `json:"id"`
		Fact  string `json:"fact"`
		Label string `json:"label"`
		Value string `json:"value"`
		Hint  string `json:"hint"`
	} `json:"facts"`
	Cues []json.RawMessage `json:"cues"`
}

// planDoc is the structured plan (trace.Plan) the bank exports.
type planDoc struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"`
	Facts []struct {
		Fact    string `json:"fact"`
		Version int    `json:"version"`
	} `json:"facts"`
	Action string `json:"action"`
	Event  string `json:"event"`
}

// Blind builds the annotator's view of a rating-set item from an allow-list: persona, goals and
// constraints come from the task's user side; facts and cues are kept only when they are the
// task's caller facts and cue texts; the plan is rebuilt from its fact references. Anything else
// the item carries is dropped. The result is then scanned for hidden task content (Leaks); an item
// that leaks is refused with ErrLeak.
func Blind(t *task.Task, it BankItem) (Item, error) {
	where := fmt.Sprintf("item %s/%s/%d", it.Task, it.Plan, it.Variant)
	if t == nil || t.ID != it.Task {
		return Item{}, fmt.Errorf("%w: %s: its task is not loaded", ErrBadItem, where)
	}
	if strings.TrimSpace(it.Transcript) == "" {
		return Item{}, fmt.Errorf("%w: %s: the transcript is empty", ErrBadItem, where)
	}
	var pd planDoc
	if len(bytes.TrimSpace(it.UserPlan)) > 0 {
		if err := json.Unmarshal(it.UserPlan, &pd); err != nil {
			return Item{}, fmt.Errorf("%w: %s: user_plan: %v", ErrBadItem, where, err)
		}
	}
	if pd.ID == "" {
		pd.ID = it.Plan
	}
	if pd.ID != it.Plan {
		return Item{}, fmt.Errorf("%w: %s: user_plan id %q differs from the item's plan", ErrBadItem, where, pd.ID)
	}
	plan := trace.Plan{ID: pd.ID, Kind: trace.PlanKind(pd.Kind), Action: pd.Action, Event: pd.Event}
	for _, f := range pd.Facts {
		fact, ok := t.Fact(f.Fact)
		if !ok || f.Version < 1 || f.Version > len(fact.Versions) {
			return Item{}, fmt.Errorf("%w: %s: user_plan names fact %s version %d, which task %s does not have", ErrBadItem, where, f.Fact, f.Version, t.ID)
		}
		plan.Facts = append(plan.Facts, trace.FactRef{Fact: f.Fact, Version: f.Version})
	}
	if plan.Kind == "" {
		plan.Kind = trace.PlanKind(strings.SplitN(plan.ID, ":", 2)[0])
	}
	if plan.Action == "" && (plan.Kind == trace.PlanApprove || plan.Kind == trace.PlanRevoke) {
		plan.Action = strings.TrimPrefix(plan.ID, string(plan.Kind)+":")
	}
	out := Item{ID: ItemID(it.Task, it.Plan, int(it.Variant)), Task: it.Task, Plan: it.Plan, Variant: int(it.Variant)}
	up := UserPlan{Kind: string(plan.Kind), Intent: planIntent(t, plan)}
	for _, pf := range flow.PlanFacts(t, plan) {
		up.Facts = append(up.Facts, PlanFact{Label: pf.Label, Value: pf.Value, Spoken: pf.Spoken, Version: pf.Version})
	}

	var sd stateDoc
	if len(bytes.TrimSpace(it.UserState)) > 0 {
		if err := json.Unmarshal(it.UserState, &sd); err != nil {
			return Item{}, fmt.Errorf("%w: %s: user_state: %v", ErrBadItem, where, err)
		}
	}
	u := t.User
	us := UserState{Title: t.Title, Persona: Persona{Name: u.Persona.Name, Role: u.Persona.Role, Speaking: u.Persona.Speaking},
		Goals: append([]string{}, u.Goals...), Constraints: append([]string(nil), u.Constraints...), Facts: []VisibleFact{}}
	if len(sd.Facts) == 0 {
		us.Facts = initialFacts(t, plan)
	}
	for _, f := range sd.Facts {
		fact := findFact(t, f.ID, f.Fact, f.Label)
		if fact == nil {
			return Item{}, fmt.Errorf("%w: %s: user_state fact %q is not a caller fact of task %s", ErrBadItem, where, firstNonEmpty(f.ID, f.Fact, f.Label), t.ID)
		}
		if !holdsValue(fact, f.Value) {
			return Item{}, fmt.Errorf("%w: %s: user_state fact %s has value %q, which is none of its versions", ErrLeak, where, fact.ID, f.Value)
		}
		us.Facts = append(us.Facts, VisibleFact{Label: fact.Label, Value: f.Value, Hint: knownHint(f.Hint)})
	}
	for _, raw := range sd.Cues {
		var text string
		var obj struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &text) != nil {
			json.Unmarshal(raw, &obj)
			text = obj.Text
		}
		if !isCue(t, text) {
			return Item{}, fmt.Errorf("%w: %s: user_state cue %q is not one of task %s's cues", ErrBadItem, where, text, t.ID)
		}
		us.Cues = append(us.Cues, text)
	}
	out.Payload = Payload{UserState: us, UserPlan: up, Transcript: strings.TrimSpace(it.Transcript)}
	if leaks := Leaks(t, out.Payload); len(leaks) > 0 {
		return Item{}, fmt.Errorf("%w: %s: %s", ErrLeak, where, strings.Join(leaks, "; "))
	}
	// The transcript is held to the frozen bank's own checks too: values said in words ("one
	// hundred dollars"), protected values, facts the plan does not allow.
	if reasons := bank.CheckVariant(t, plan, out.Payload.Transcript); len(reasons) > 0 {
		return Item{}, fmt.Errorf("%w: %s: transcript: %s", ErrLeak, where, strings.Join(reasons, "; "))
	}
	return out, nil
}

// planIntent is what an approval, revocation or interruption plan is about as the caller was told:
// the cue of the authored event it acts on (the plan id names it, "approve:ACTION" or
// "barge_in:EVENT", when the bank's plan does not).
func planIntent(t *task.Task, p trace.Plan) string {
	switch p.Kind {
	case trace.PlanApprove, trace.PlanRevoke, trace.PlanBargeIn:
	default:
		return ""
	}
	for _, e := range t.Events {
		if e.Cue == "" {
			continue
		}
		if e.ID == p.Event || p.Kind == trace.PlanBargeIn && p.ID == "barge_in:"+e.ID ||
			p.Kind != trace.PlanBargeIn && p.Event == "" && e.Action != "" && e.Action == p.Action && string(e.Kind) == kindEvent(p.Kind) {
			return e.Cue
		}
	}
	return ""
}

// kindEvent is the authored event kind a plan kind acts on.
func kindEvent(k trace.PlanKind) string {
	switch k {
	case trace.PlanApprove:
		return string(task.Approval)
	case trace.PlanRevoke:
		return string(task.Revocation)
	}
	return ""
}

// initialFacts is the caller's knowledge when the bank gives no user state: the first version of
// every fact not revealed by an event, with the plan's fact versions in place of earlier ones.
func initialFacts(t *task.Task, p trace.Plan) []VisibleFact {
	planVersion := map[string]int{}
	for _, r := range p.Facts {
		planVersion[r.Fact] = r.Version
	}
	out := []VisibleFact{}
	for _, f := range t.User.Facts {
		v := 0
		if f.Reveal != task.OnEvent {
			v = 1
		}
		if pv := planVersion[f.ID]; pv > v {
			v = pv
		}
		if v == 0 {
			continue
		}
		hint := flow.HintOnAsk
		switch {
		case v > 1 || f.Reveal == task.OnEvent:
			hint = flow.HintNew
		case f.Reveal == task.Volunteer:
			hint = flow.HintVolunteer
		}
		out = append(out, VisibleFact{Label: f.Label, Value: f.Versions[v-1].Value, Hint: hint})
	}
	return out
}

func findFact(t *task.Task, ids ...string) *task.Fact {
	for _, id := range ids[:2] {
		if f, ok := t.Fact(id); ok && id != "" {
			return f
		}
	}
	for i := range t.User.Facts {
		if label := ids[2]; label != "" && t.User.Facts[i].Label == label {
			return &t.User.Facts[i]
		}
	}
	return nil
}

func holdsValue(f *task.Fact, v string) bool {
	for _, ver := range f.Versions {
		if ver.Value == v {
			return true
		}
	}
	return false
}

// knownHint keeps the role card's hints and drops anything else.
func knownHint(h string) string {
	switch h {
	case flow.HintVolunteer, flow.HintOnAsk, flow.HintNew:
		return h
	}
	return ""
}

func isCue(t *task.Task, text string) bool {
	for _, e := range t.Events {
		if e.Cue != "" && e.Cue == text {
			return true
		}
	}
	return false
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
