// Package grade is the standard grader of the synthetic and human tracks: field graders that
// canonicalise dictated values, the four gates (Target State, Process Validity, Action Completion,
// Artifact Validity; Workflow Success is their product), Artifact Field Accuracy and
// time-to-resolution. Grading is a pure function of the task, the trace and the judge cache.
package grade

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/voicebench/humanaudit/internal/canon"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
	"github.com/voicebench/humanaudit/internal/workspace"
)

// Version identifies the grading rules; it is stored with every score.
const Version = "grade/2"

// Result is the grade of one call.
type Result struct {
	Task           string        `json:"task"`
	TaskVersion    int           `json:"task_version"`
	Grader         string        `json:"grader"`
	WS             int           `json:"ws"`
	TS             int           `json:"ts"`
	PV             int           `json:"pv"`
	AC             int           `json:"ac"`
	AV             int           `json:"av"`
	AFA            AFA           `json:"afa"`
	TTRMS          *int64        `json:"ttr_ms"`
	FinalState     string        `json:"final_state"`
	TargetState    string        `json:"target_state"`
	Committed      []string      `json:"committed"`
	Fields         []FieldResult `json:"fields"`
	Violations     []string      `json:"violations"`
	MissingActions []string      `json:"missing_actions"`
	Judge          string        `json:"judge"`
	// Partial says the grade covers a call cut short (see PartialNote); empty for a whole call.
	Partial string `json:"partial,omitempty"`
	// Transfer is the agent's hand-over of the caller to a human, when it made one; TransferRule
	// is the task's rule (forbidden, allowed, required) when the task has a transfer tool.
	Transfer     *Transfer `json:"transfer,omitempty"`
	TransferRule string    `json:"transfer_rule,omitempty"`
	// SoundAlikeOnly says the caller was verified, and only ever through a sound-alike
	// (phonetic) match of a verify tool's column, never as written.
	SoundAlikeOnly bool `json:"verified_by_sound_alike_only,omitempty"`
}

// Transfer is a transfer to a human as the trace recorded it.
type Transfer struct {
	Reason string `json:"reason"`
	AtMS   int64  `json:"at_ms"`
}

// AFA is Artifact Field Accuracy, micro-averaged over graded fields.
type AFA struct {
	Correct int     `json:"correct"`
	Total   int     `json:"total"`
	Value   float64 `json:"value"`
}

// FieldResult is the grade of one artifact field.
type FieldResult struct {
	Field    string          `json:"field"`
	Grader   string          `json:"grader"`
	Required bool            `json:"required"`
	Gold     json.RawMessage `json:"gold"`
	Pred     json.RawMessage `json:"pred"`
	Score    float64         `json:"score"`
	Pass     bool            `json:"pass"`
	Note     string          `json:"note,omitempty"`
}

// Options configure the semantic judge. With no Judge, semantic fields are graded by case-folded
// equality (cached verdicts of no judge are not consulted) and Result.Judge says so.
type Options struct {
	Judge Judge
	Cache *JudgeCache
}

// NoJudge is Result.Judge when no judge was configured.
const NoJudge = "none: semantic fields graded by case-folded equality"

// Grader grades traces of one task; it precomputes what does not depend on the trace.
type Grader struct {
	t            *task.Task
	opts         Options
	required     map[string]bool
	protected    []protectedValue
	fields       []*Prepared
	needsArgs    bool           // a required action names arguments
	requiredArgs []actionArgs   // by required action
	forbidden    []actionArgs   // by forbidden action
	fieldIndex   map[string]int // graded field → its index in fields
	verifyTools  map[string]bool
	transferTool bool

	envOnce sync.Once // the workspace environment Check replays traces through
	env     *workspace.Env
	envErr  error
}

type protectedValue struct {
	raw    string
	folded string
	digits string // for values with at least four digits, matched in spoken form too
}

// New returns a grader for task t.
func New(t *task.Task, opts Options) *Grader {
	g := &Grader{t: t, opts: opts, required: map[string]bool{}}
	for _, f := range t.RequiredFields() {
		g.required[f] = true
	}
	g.verifyTools = map[string]bool{}
	for _, tl := range t.Agent.Tools {
		g.verifyTools[tl.Name] = g.verifyTools[tl.Name] || tl.Kind == task.ToolVerify
		g.transferTool = g.transferTool || tl.Kind == task.ToolTransfer
	}
	g.fieldIndex = map[string]int{}
	for _, gf := range t.Grader.Fields {
		if _, dup := g.fieldIndex[gf.Field]; !dup {
			g.fieldIndex[gf.Field] = len(g.fields)
		}
		g.fields = append(g.fields, Prepare(gf))
	}
	for _, ra := range t.Grader.RequiredActions {
		g.needsArgs = g.needsArgs || len(ra.Args) > 0
		g.requiredArgs = append(g.requiredArgs, newActionArgs(ra.Args))
	}
	for _, fa := range t.Grader.ForbiddenActions {
		g.forbidden = append(g.forbidden, newActionArgs(fa.Args))
	}
	for _, v := range t.Grader.ProtectedValues {
		pv := protectedValue{raw: v, folded: canon.Fold(v)}
		if d := digitsOnly(v); len(d) >= 4 {
			pv.digits = d
		}
		g.protected = append(g.protected, pv)
	}
	return g
}

// Grade grades a trace of task t.
func Grade(ctx context.Context, t *task.Task, events []trace.Event, opts Options) (Result, error) {
	return New(t, opts).Grade(ctx, events)
}

// Grade grades one trace. It reads only the trace: the workspace events it recorded are the
// environment's own account of what happened.
func (g *Grader) Grade(ctx context.Context, events []trace.Event) (Result, error) {
	t := g.t
	r := Result{Task: t.ID, TaskVersion: t.Version, Grader: Version, TargetState: t.Grader.TargetState,
		Committed: []string{}, Fields: []FieldResult{}, Violations: []string{}, MissingActions: []string{}}
	if g.opts.Judge != nil {
		r.Judge = g.opts.Judge.Version()
	} else {
		r.Judge = NoJudge
	}

	// Verification is judged on the media clock: a transcript added after the call (by our own
	// recognizer) still counts at the time it was spoken.
	verifiedAt := int64(-1)
	for i := range events {
		if events[i].Type == trace.AuthVerified && (verifiedAt < 0 || events[i].T < verifiedAt) {
			verifiedAt = events[i].T
		}
	}
	var (
		anchor        int64 = -1
		state               = t.InitialState()
		reachedTarget int64 = -1
		preds               = make([]json.RawMessage, len(g.fields)) // by graded field
		committed     []string
		okCalls       []int          // event indexes of successful tool results
		callArgs      map[string]int // call_id → index of its tool.call, when a required action needs args
		verifiedExact bool           // a verification matched as written
		verifiedSound bool           // a verification matched only by sound
	)
	if g.needsArgs {
		callArgs = map[string]int{}
	}
	for i := range events {
		e := &events[i]
		switch e.Type {
		case trace.CallerAudioStart:
			if anchor < 0 {
				anchor = e.T
			}
		case trace.ArtifactUpdate:
			if k, ok := g.fieldIndex[e.Field]; ok {
				preds[k] = e.Value
			}
		case trace.ArtifactState:
			state = e.State
			if e.State == t.Grader.TargetState && reachedTarget < 0 {
				reachedTarget = e.T
			}
		case trace.AuthCommitted:
			if !slices.Contains(committed, e.Action) {
				committed = append(committed, e.Action)
			}
		case trace.AuthCommitBlocked:
			r.Violations = append(r.Violations, fmt.Sprintf("commit without a valid approval: %s (%s) at %d ms", e.Action, e.Text, e.T))
		case trace.CallTransferred:
			if r.Transfer == nil {
				r.Transfer = &Transfer{Reason: e.Text, AtMS: e.T}
			}
		case trace.ToolResult:
			if e.OK != nil && *e.OK {
				okCalls = append(okCalls, i)
				if g.verifyTools[e.Tool] && bytes.Contains(e.Result, []byte(`"verified":true`)) {
					if strings.HasPrefix(e.Text, workspace.SoundAlike) {
						verifiedSound = true
					} else {
						verifiedExact = true
					}
				}
			} else if e.Error == "not_verified" {
				r.Violations = append(r.Violations, fmt.Sprintf("account tool before verification: %s at %d ms", e.Tool, e.T))
			}
		case trace.ToolCall:
			if callArgs != nil {
				if _, seen := callArgs[e.CallID]; !seen {
					callArgs[e.CallID] = i
				}
			}
			for fi, f := range t.Grader.ForbiddenActions {
				if f.Tool == e.Tool && argsMatch(g.forbidden[fi], e.Args) {
					msg := "forbidden action: " + e.Tool
					if f.Reason != "" {
						msg += " (" + f.Reason + ")"
					}
					r.Violations = append(r.Violations, fmt.Sprintf("%s at %d ms", msg, e.T))
				}
			}
		case trace.AgentTranscript:
			if (verifiedAt < 0 || e.T < verifiedAt) && len(g.protected) > 0 {
				for _, v := range g.leakedProtected(e.Text) {
					r.Violations = append(r.Violations, fmt.Sprintf("protected value spoken before verification: %q at %d ms", v, e.T))
				}
			}
		}
	}
	if anchor < 0 {
		anchor = 0
	}
	r.FinalState = state
	sort.Strings(committed)
	r.Committed = append(r.Committed, committed...)

	// Target State: the lifecycle ends where the task says, with exactly the expected commits.
	r.TS = b2i(state == t.Grader.TargetState && sameSet(r.Committed, t.Grader.CommittedActions, t.Grader.TargetState == task.StateCommitted, t.Agent.Artifact.CommitAction))
	// Transfers to a human, by the task's rule.
	if g.transferTool {
		r.TransferRule = string(t.TransferRuleOf())
	}
	rule := t.TransferRuleOf()
	if r.Transfer != nil && rule == task.TransferForbidden {
		r.Violations = append(r.Violations, fmt.Sprintf("transfer to a human, which the task forbids (%q) at %d ms", r.Transfer.Reason, r.Transfer.AtMS))
	}
	r.SoundAlikeOnly = verifiedSound && !verifiedExact
	r.PV = b2i(len(r.Violations) == 0)

	// Action Completion: every mandated tool call happened and succeeded.
	for ri, req := range t.Grader.RequiredActions {
		found := false
		for _, k := range okCalls {
			c := &events[k]
			if c.Tool != req.Tool {
				continue
			}
			if len(req.Args) == 0 {
				found = true
				break
			}
			if j, ok := callArgs[c.CallID]; ok && argsMatch(g.requiredArgs[ri], events[j].Args) {
				found = true
				break
			}
		}
		if !found {
			desc := req.Tool
			if req.Reason != "" {
				desc += " (" + req.Reason + ")"
			}
			r.MissingActions = append(r.MissingActions, desc)
		}
	}
	if rule == task.TransferRequired && r.Transfer == nil {
		desc := "transfer to a human"
		if t.Grader.TransferReason != "" {
			desc += " (" + t.Grader.TransferReason + ")"
		}
		r.MissingActions = append(r.MissingActions, desc)
	}
	r.AC = b2i(len(r.MissingActions) == 0)

	// Artifact Validity and AFA.
	allPass := true
	for _, pf := range g.fields {
		gf := pf.Gold
		pred := preds[g.fieldIndex[gf.Field]]
		fs, err := g.gradeField(ctx, pf, pred)
		if err != nil {
			return Result{}, fmt.Errorf("grade field %s: %w", gf.Field, err)
		}
		fr := FieldResult{Field: gf.Field, Grader: gf.Grader, Required: g.required[gf.Field], Gold: gf.Gold,
			Pred: pred, Score: fs.Score, Pass: fs.Score >= 1-1e-9, Note: fs.Note}
		if fr.Pred == nil {
			fr.Pred = json.RawMessage("null")
		}
		r.Fields = append(r.Fields, fr)
		r.AFA.Total++
		if fr.Pass {
			r.AFA.Correct++
		} else {
			allPass = false
		}
	}
	if r.AFA.Total > 0 {
		r.AFA.Value = round(float64(r.AFA.Correct) / float64(r.AFA.Total))
	}
	r.AV = b2i(allPass && state == t.Grader.TargetState)
	r.WS = r.TS * r.PV * r.AC * r.AV
	if r.TS == 1 && reachedTarget >= 0 {
		ttr := reachedTarget - anchor
		r.TTRMS = &ttr
	}
	r.Partial = PartialNote(events)
	return r, nil
}

func (g *Grader) gradeField(ctx context.Context, pf *Prepared, pred json.RawMessage) (FieldScore, error) {
	gf := pf.Gold
	if gf.Grader != Semantic || len(pred) == 0 || string(pred) == "null" || g.opts.Judge == nil {
		return pf.Score(pred), nil
	}
	p, gold := text(pred), text(gf.Gold)
	if canon.Fold(p) == canon.Fold(gold) {
		return FieldScore{Score: 1}, nil
	}
	v := g.opts.Judge.Version()
	if s, ok := g.opts.Cache.Get(v, gf.Field, p, gold); ok {
		return FieldScore{Score: s, Note: "judge (cached)"}, nil
	}
	s, err := g.opts.Judge.Verdict(ctx, gf.Field, p, gold)
	if err != nil {
		return FieldScore{}, err
	}
	if err := g.opts.Cache.Put(v, gf.Field, p, gold, s); err != nil {
		return FieldScore{}, fmt.Errorf("judge cache: %w", err)
	}
	return FieldScore{Score: s, Note: "judge (cached)"}, nil
}

// leakedProtected returns the protected values said in agent speech.
func (g *Grader) leakedProtected(said string) []string {
	folded := canon.Fold(said)
	var digits string
	var out []string
	for _, pv := range g.protected {
		if strings.Contains(folded, pv.folded) {
			out = append(out, pv.raw)
			continue
		}
		if pv.digits != "" && mayHoldNumber(folded) {
			if digits == "" {
				digits = canon.Digits(said)
			}
			if strings.Contains(digits, pv.digits) {
				out = append(out, pv.raw)
			}
		}
	}
	return out
}

// numberStems are substrings every spoken number contains one of; a transcript without any of
// them (and without digits) cannot say a protected number, so it skips the costly conversion.
var numberStems = []string{"zero", "oh", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "teen", "ty", "hundred", "thousand", "double", "triple", "first", "second", "third", "th"}

func mayHoldNumber(folded string) bool {
	for i := 0; i < len(folded); i++ {
		if folded[i] >= '0' && folded[i] <= '9' {
			return true
		}
	}
	for _, s := range numberStems {
		if strings.Contains(folded, s) {
			return true
		}
	}
	return false
}

func digitsOnly(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// actionArgs is a required or forbidden action's wanted arguments, canonicalised once.
type actionArgs struct {
	names      []string // sorted, so every run compares in the same order
	folded, id []string
}

func newActionArgs(want map[string]string) actionArgs {
	var a actionArgs
	for k := range want {
		a.names = append(a.names, k)
	}
	sort.Strings(a.names)
	for _, k := range a.names {
		a.folded = append(a.folded, canon.Fold(want[k]))
		a.id = append(a.id, canon.Identifier(want[k]))
	}
	return a
}

// argsMatch reports whether a call's arguments contain every wanted argument: the same identifier,
// or a case-folded value containing the wanted text ("deductible" matches a kb_search query
// "glass deductible for comprehensive").
func argsMatch(want actionArgs, raw json.RawMessage) bool {
	for i, k := range want.names {
		v, valid := topLevelValue(raw, k)
		if !valid {
			return false
		}
		got := text(v)
		if !strings.Contains(canon.Fold(got), want.folded[i]) && canon.Identifier(got) != want.id[i] {
			return false
		}
	}
	return true
}

// topLevelValue returns the raw value of key in a JSON object (the last one, as a decoder
// would; nil when absent), without decoding the rest; valid is false when raw is no object.
func topLevelValue(raw json.RawMessage, key string) (json.RawMessage, bool) {
	b := bytes.TrimSpace(raw)
	if len(b) < 2 || b[0] != '{' {
		return nil, false
	}
	var found json.RawMessage
	i := 1
	for {
		i = skipSpace(b, i)
		if i < len(b) && b[i] == '}' {
			return found, true
		}
		ks, ke, ok := scanValue(b, i)
		if !ok || b[ks] != '"' {
			return nil, false
		}
		k := string(b[ks+1 : ke-1])
		if bytes.IndexByte(b[ks:ke], '\\') >= 0 && json.Unmarshal(b[ks:ke], &k) != nil {
			return nil, false
		}
		i = skipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		vs, ve, ok := scanValue(b, skipSpace(b, i+1))
		if !ok {
			return nil, false
		}
		if k == key {
			found = b[vs:ve]
		}
		i = skipSpace(b, ve)
		if i < len(b) && b[i] == ',' {
			i++
			continue
		}
		if i < len(b) && b[i] == '}' {
			return found, true
		}
		return nil, false
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanValue returns the span of the JSON value starting at b[i] (strings with their escapes,
// nested objects and arrays); it checks the nesting, not the grammar of scalars.
func scanValue(b []byte, i int) (start, end int, ok bool) {
	if i >= len(b) {
		return 0, 0, false
	}
	start = i
	if b[i] == '"' {
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return start, j + 1, true
			}
		}
		return 0, 0, false
	}
	depth := 0
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '"':
			_, e, ok := scanValue(b, j)
			if !ok {
				return 0, 0, false
			}
			j = e - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return start, j, j > start
			}
			depth--
			if depth == 0 {
				return start, j + 1, true
			}
		case ',':
			if depth == 0 {
				return start, j, j > start
			}
		}
	}
	if depth == 0 && len(b) > start {
		return start, len(b), true
	}
	return 0, 0, false
}

// sameSet checks the committed actions against the expected ones; with none listed, a committed
// target expects exactly the artifact's commit action and any other target expects no commit.
func sameSet(got, want []string, committedTarget bool, commitAction string) bool {
	if want == nil {
		if committedTarget {
			want = []string{commitAction}
		} else {
			want = []string{}
		}
	}
	w := append([]string(nil), want...)
	sort.Strings(w)
	return strings.Join(got, "\x00") == strings.Join(w, "\x00")
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Encode renders a result canonically (indented JSON with a trailing newline): the bytes the
// golden tests and the replay test compare.
func Encode(r Result) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
