package task

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/voicebench/humanaudit/internal/canon"
	"github.com/voicebench/humanaudit/internal/phonetic"
)

// Lifecycles allowed for each authorization: prepare, review, approval and commit are distinct
// states, and only an approval-gated task has the last two.
var (
	PrepareLifecycle  = []string{StateDraft, StateReady}
	ApprovalLifecycle = []string{StateDraft, StateReady, StateApproved, StateCommitted}
)

// Lifecycle states.
const (
	StateDraft     = "draft"
	StateReady     = "ready_for_review"
	StateApproved  = "approved"
	StateCommitted = "committed"
)

// AgentActs is the semantic-act ontology that agent speech is mapped to ("ask:<fact>" besides).
var AgentActs = []string{"greet", "ask", "confirm", "request_approval", "summarise", "close", "other"}

// Validate cross-checks a schema-valid task: references resolve, every required field has a gold
// value and grader, every fact version is reachable, and no gold-only value leaks into the caller's
// initial user state.
func Validate(file string, t *Task) Problems {
	v := &validator{file: file, t: t}
	v.ids()
	v.facts()
	v.events()
	v.tools()
	v.artifact()
	v.grader()
	v.leaks()
	v.limits()
	v.winnable()
	sortProblems(v.ps)
	return v.ps
}

type validator struct {
	file string
	t    *Task
	ps   Problems
}

func (v *validator) add(path, format string, args ...any) {
	v.ps = append(v.ps, Problem{File: v.file, Path: path, Message: fmt.Sprintf(format, args...)})
}

func (v *validator) ids() {
	dup := func(kind, path string, ids []string) {
		seen := map[string]int{}
		for i, id := range ids {
			if j, ok := seen[id]; ok {
				v.add(fmt.Sprintf("%s[%d].%s", path, i, "id"), "duplicate %s id %q (also at index %d)", kind, id, j)
			}
			seen[id] = i
		}
	}
	var facts, events, tools, docs, fields []string
	for _, f := range v.t.User.Facts {
		facts = append(facts, f.ID)
	}
	for _, e := range v.t.Events {
		events = append(events, e.ID)
	}
	for _, tl := range v.t.Agent.Tools {
		tools = append(tools, tl.Name)
	}
	for _, d := range v.t.Agent.Knowledge {
		docs = append(docs, d.ID)
	}
	for _, f := range v.t.Agent.Artifact.Fields {
		fields = append(fields, f.Name)
	}
	dup("fact", "$.user.facts", facts)
	dup("event", "$.events", events)
	dup("tool", "$.agent.tools", tools)
	dup("document", "$.agent.knowledge", docs)
	dup("field", "$.agent.artifact.fields", fields)
}

// revealers maps fact ID → version → events revealing it.
func (v *validator) revealers() map[string]map[int][]string {
	out := map[string]map[int][]string{}
	for _, e := range v.t.Events {
		if e.Fact == "" {
			continue
		}
		ver := e.Version
		if ver == 0 {
			ver = 1
		}
		if out[e.Fact] == nil {
			out[e.Fact] = map[int][]string{}
		}
		out[e.Fact][ver] = append(out[e.Fact][ver], e.ID)
	}
	return out
}

func (v *validator) facts() {
	rev := v.revealers()
	for i, f := range v.t.User.Facts {
		p := fmt.Sprintf("$.user.facts[%d]", i)
		if f.Field != "" && !v.isFieldOrArg(f.Field) {
			v.add(p+".field", "%q is neither an artifact field nor a tool argument", f.Field)
		}
		if f.Reveal == OnAsk && len(f.AskedAs) == 0 {
			v.add(p+".asked_as", "an on_ask fact needs asked_as phrases, or agent questions for it can never be recognised")
		}
		if f.Reveal == OnEvent && len(rev[f.ID][1]) == 0 {
			v.add(p+".reveal", "on_event fact %q has no event that reveals its version 1", f.ID)
		}
		for n := 2; n <= len(f.Versions); n++ {
			if len(rev[f.ID][n]) == 0 {
				v.add(fmt.Sprintf("%s.versions[%d]", p, n-1), "version %d of fact %q is never revealed: add a correction or world event with \"fact\": %q, \"version\": %d", n, f.ID, f.ID, n)
			}
		}
	}
}

func (v *validator) isFieldOrArg(name string) bool {
	if _, ok := v.t.Field(name); ok {
		return true
	}
	for _, tl := range v.t.Agent.Tools {
		if _, ok := schemaProperties(tl.Parameters)[name]; ok {
			return true
		}
	}
	return false
}

// actions lists the actions a task can approve or commit.
func (v *validator) actions() map[string]bool {
	out := map[string]bool{}
	for _, tl := range v.t.Agent.Tools {
		if (tl.Kind == ToolCommit || tl.Kind == ToolRequestApproval) && tl.Action != "" {
			out[tl.Action] = true
		}
	}
	return out
}

func (v *validator) events() {
	actions := v.actions()
	for i, e := range v.t.Events {
		p := fmt.Sprintf("$.events[%d]", i)
		switch e.Kind {
		case Correction, World:
			f, ok := v.t.Fact(e.Fact)
			if !ok {
				v.add(p+".fact", "%s event needs an existing fact, got %q", e.Kind, e.Fact)
				break
			}
			ver := e.Version
			if ver == 0 {
				ver = 1
			}
			if e.Kind == Correction && ver < 2 {
				v.add(p+".version", "a correction reveals a new version (2 or more) of fact %q, got %d", e.Fact, ver)
			}
			if ver > len(f.Versions) {
				v.add(p+".version", "fact %q has %d versions, got %d", e.Fact, len(f.Versions), ver)
			}
		case Approval, Revocation:
			if !actions[e.Action] {
				v.add(p+".action", "%s event needs an action of a commit or request_approval tool, got %q (known: %s)", e.Kind, e.Action, keys(actions))
			}
			if v.t.Authorization == PrepareOnly && e.Kind == Approval {
				v.add(p+".kind", "a prepare_only task cannot authorise an action; use approval_gated")
			}
		case BargeIn:
			if e.Fact != "" {
				if f, ok := v.t.Fact(e.Fact); !ok {
					v.add(p+".fact", "unknown fact %q", e.Fact)
				} else if e.Version > len(f.Versions) {
					v.add(p+".version", "fact %q has %d versions, got %d", e.Fact, len(f.Versions), e.Version)
				}
			}
		}
		v.trigger(p+".trigger", e, actions)
	}
	// Event chains must not loop.
	for _, e := range v.t.Events {
		seen := map[string]bool{e.ID: true}
		cur := e
		for cur.Trigger.On == OnEventFired {
			next, ok := v.t.EventByID(cur.Trigger.Event)
			if !ok {
				break
			}
			if seen[next.ID] {
				v.add("$.events", "event %q is part of a trigger cycle", e.ID)
				break
			}
			seen[next.ID] = true
			cur = *next
		}
	}
}

func (v *validator) trigger(p string, e Event, actions map[string]bool) {
	tr := e.Trigger
	switch tr.On {
	case OnMediaTime:
		if tr.AtMS <= 0 {
			v.add(p+".at_ms", "a media_time trigger needs at_ms > 0 (ms since the first caller audio)")
		} else if tr.AtMS < MinMediaTriggerMS && !tr.Deliberate {
			v.add(p+".at_ms", "event %q fires at %d ms, before the agent can have spoken (under %d ms): trigger on what the agent does (field_recorded, agent_act), or set \"deliberate\": true if the cue is meant for the caller's opening",
				e.ID, tr.AtMS, MinMediaTriggerMS)
		}
	case OnFieldRecorded:
		if _, ok := v.t.Field(tr.Field); !ok {
			v.add(p+".field", "unknown artifact field %q", tr.Field)
		}
	case OnApprovalRequested, OnApprovalGranted:
		if !actions[tr.Action] {
			v.add(p+".action", "unknown action %q (known: %s)", tr.Action, keys(actions))
		}
	case OnStateReached:
		if !contains(v.t.Agent.Artifact.Lifecycle, tr.State) {
			v.add(p+".state", "%q is not in the artifact lifecycle %v", tr.State, v.t.Agent.Artifact.Lifecycle)
		}
	case OnEventFired:
		if tr.Event == e.ID {
			v.add(p+".event", "an event cannot trigger itself")
		} else if _, ok := v.t.EventByID(tr.Event); !ok {
			v.add(p+".event", "unknown event %q", tr.Event)
		}
	case OnAgentAct:
		act, arg, _ := strings.Cut(tr.Act, ":")
		if !contains(AgentActs, act) {
			v.add(p+".act", "%q is not one of %s", tr.Act, strings.Join(AgentActs, ", "))
		} else if act == "ask" {
			if _, ok := v.t.Fact(arg); !ok {
				v.add(p+".act", "ask act needs a fact: \"ask:<fact id>\", got %q", tr.Act)
			}
		}
	case OnToolCalled:
		if _, ok := v.t.Tool(tr.Tool); !ok {
			v.add(p+".tool", "unknown tool %q", tr.Tool)
		}
	}
}

func (v *validator) tools() {
	hasKB := false
	transfers := 0
	for i, tl := range v.t.Agent.Tools {
		p := fmt.Sprintf("$.agent.tools[%d]", i)
		props, err := compileToolSchema(tl.Parameters)
		if err != nil {
			v.add(p+".parameters", "not a valid JSON Schema for the arguments: %v", err)
			continue
		}
		switch tl.Kind {
		case ToolRecord:
			if len(props) == 0 {
				v.add(p+".parameters", "a record tool needs at least one argument property")
			}
			for arg := range props {
				field := arg
				if f, ok := tl.Fields[arg]; ok {
					field = f
				}
				if v.nestedObject(tl, arg, props[arg]) {
					continue // nestedRecordArguments says what to do
				}
				if _, ok := v.t.Field(field); !ok {
					v.add(p+".parameters.properties."+arg, "argument %q maps to no artifact field (add it to fields or map it in \"fields\")", arg)
				}
			}
		case ToolLookup, ToolVerify:
			rows, ok := v.t.Environment.Tables[tl.Table]
			if !ok {
				v.add(p+".table", "unknown environment table %q", tl.Table)
				break
			}
			cols := tl.Key
			what := "key"
			if tl.Kind == ToolVerify {
				cols, what = tl.Match, "match"
			}
			if len(cols) == 0 {
				v.add(p+"."+what, "a %s tool needs %q columns", tl.Kind, what)
			}
			for arg, c := range cols {
				if _, ok := props[arg]; !ok {
					v.add(p+"."+what+"."+arg, "argument %q is not a parameter of the tool", arg)
				}
				switch {
				case c.Compare == ComparePhonetic && tl.Kind != ToolVerify:
					v.add(p+"."+what+"."+arg+".compare", "phonetic compares only verify tools' match columns (a lookup by sound would find another person's record)")
				case c.Compare == ComparePhonetic && !slices.Contains(phonetic.Algorithms, c.Algorithm):
					v.add(p+"."+what+"."+arg+".algorithm", "a phonetic column names its algorithm: %s", strings.Join(phonetic.Algorithms, " or "))
				case c.Compare != ComparePhonetic && c.Algorithm != "":
					v.add(p+"."+what+"."+arg+".algorithm", "algorithm applies to phonetic columns only (compare is %q)", c.Compare)
				}
				if len(rows) > 0 {
					if _, ok := rows[0][c.Column]; !ok {
						v.add(p+"."+what+"."+arg+".column", "table %q has no column %q", tl.Table, c.Column)
					}
				}
			}
			for _, r := range tl.Returns {
				if len(rows) > 0 {
					if _, ok := rows[0][r]; !ok {
						v.add(p+".returns", "table %q has no column %q", tl.Table, r)
					}
				}
			}
		case ToolKBSearch:
			hasKB = true
			if _, ok := props["query"]; !ok {
				v.add(p+".parameters", "a kb_search tool takes a \"query\" string argument")
			}
		case ToolTransition:
			if tl.To == "" {
				v.add(p+".to", "a transition tool needs a target state")
			}
		case ToolRequestApproval, ToolCommit:
			if tl.Action == "" {
				v.add(p+".action", "a %s tool needs an action", tl.Kind)
			}
		case ToolTransfer:
			if _, ok := props["reason"]; !ok {
				v.add(p+".parameters", "a transfer tool takes a \"reason\" string argument (why the caller is handed to a human)")
			}
			transfers++
		}
	}
	switch rule := v.t.Grader.Transfer; {
	case transfers > 1:
		v.add("$.agent.tools", "a task has at most one transfer tool, got %d", transfers)
	case transfers == 1 && rule == "":
		v.add("$.grader.transfer", "a task with a transfer tool states its rule: forbidden, allowed or required")
	case transfers == 0 && rule == TransferRequired:
		v.add("$.grader.transfer", "a transfer is required but the task has no transfer tool")
	case transfers == 0 && rule == TransferAllowed:
		v.add("$.grader.transfer", "a transfer is allowed but the task has no transfer tool")
	}
	if hasKB && len(v.t.Agent.Knowledge) == 0 {
		v.add("$.agent.knowledge", "the task has a kb_search tool but no knowledge documents")
	}
}

func (v *validator) artifact() {
	a := v.t.Agent.Artifact
	want := PrepareLifecycle
	if v.t.Authorization == ApprovalGated {
		want = ApprovalLifecycle
	}
	if strings.Join(a.Lifecycle, ",") != strings.Join(want, ",") {
		v.add("$.agent.artifact.lifecycle", "a %s task has the lifecycle %v, got %v", v.t.Authorization, want, a.Lifecycle)
	}
	if v.t.Authorization == ApprovalGated {
		if a.CommitAction == "" {
			v.add("$.agent.artifact", "an approval_gated artifact needs a commit_action")
		} else if !v.hasCommitTool(a.CommitAction) {
			v.add("$.agent.artifact.commit_action", "no commit tool performs action %q", a.CommitAction)
		}
	}
	for i, f := range a.Fields {
		if f.Type == "enum" && len(f.Enum) == 0 {
			v.add(fmt.Sprintf("$.agent.artifact.fields[%d].enum", i), "an enum field needs its values")
		}
	}
}

func (v *validator) hasCommitTool(action string) bool {
	for _, tl := range v.t.Agent.Tools {
		if tl.Kind == ToolCommit && tl.Action == action {
			return true
		}
	}
	return false
}

func (v *validator) grader() {
	g := v.t.Grader
	graded := map[string]bool{}
	for i, f := range g.Fields {
		p := fmt.Sprintf("$.grader.fields[%d]", i)
		spec, ok := v.t.Field(f.Field)
		if !ok {
			v.add(p+".field", "unknown artifact field %q", f.Field)
			continue
		}
		if graded[f.Field] {
			v.add(p+".field", "field %q is graded twice", f.Field)
		}
		graded[f.Field] = true
		if msg := checkGold(f, spec); msg != "" {
			v.add(p+".gold", "%s", msg)
		}
	}
	for i, f := range v.t.Agent.Artifact.Fields {
		if f.Required && !graded[f.Name] {
			v.add(fmt.Sprintf("$.agent.artifact.fields[%d]", i), "required field %q has no gold value and grader in $.grader.fields", f.Name)
		}
	}
	checkActions := func(path string, specs []ActionSpec) {
		for i, a := range specs {
			tl, ok := v.t.Tool(a.Tool)
			if !ok {
				v.add(fmt.Sprintf("%s[%d].tool", path, i), "unknown tool %q", a.Tool)
				continue
			}
			props := schemaProperties(tl.Parameters)
			for arg := range a.Args {
				if _, ok := props[arg]; !ok {
					v.add(fmt.Sprintf("%s[%d].args.%s", path, i, arg), "tool %q has no argument %q", a.Tool, arg)
				}
			}
		}
	}
	checkActions("$.grader.required_actions", g.RequiredActions)
	checkActions("$.grader.forbidden_actions", g.ForbiddenActions)
	if !contains(v.t.Agent.Artifact.Lifecycle, g.TargetState) {
		v.add("$.grader.target_state", "%q is not in the artifact lifecycle %v", g.TargetState, v.t.Agent.Artifact.Lifecycle)
	}
	actions := v.actions()
	for i, a := range g.CommittedActions {
		if !actions[a] {
			v.add(fmt.Sprintf("$.grader.committed_actions[%d]", i), "unknown action %q", a)
		}
	}
}

// checkGold reports a gold value its grader cannot read.
func checkGold(f GoldField, spec FieldSpec) string {
	var s string
	str := json.Unmarshal(f.Gold, &s) == nil
	switch f.Grader {
	case "date":
		if !str {
			return "a date gold value is a string such as \"1988-07-09\""
		}
		if _, ok := canon.ParseDate(s); !ok {
			return fmt.Sprintf("%q is not a date", s)
		}
	case "phone":
		if !str || len(canon.Phone(s)) < 7 {
			return fmt.Sprintf("%s is not a phone number", f.Gold)
		}
	case "numeric":
		var n float64
		if json.Unmarshal(f.Gold, &n) != nil {
			if !str {
				return "a numeric gold value is a number"
			}
			if _, ok := canon.Number(s); !ok {
				return fmt.Sprintf("%q is not a number", s)
			}
		}
	case "set", "ordered_list":
		var xs []string
		if json.Unmarshal(f.Gold, &xs) != nil {
			return fmt.Sprintf("a %s gold value is an array of strings", f.Grader)
		}
	case "interval":
		var xs []json.RawMessage
		var obj struct{ Start, End json.RawMessage }
		if json.Unmarshal(f.Gold, &xs) != nil || len(xs) != 2 {
			if json.Unmarshal(f.Gold, &obj) != nil || obj.Start == nil || obj.End == nil {
				return "an interval gold value is [start, end] or {\"start\":…, \"end\":…}"
			}
		}
	case "enum":
		if !str {
			return "an enum gold value is a string"
		}
		if len(spec.Enum) > 0 && !containsFold(spec.Enum, s) {
			return fmt.Sprintf("%q is not one of the field's values %v", s, spec.Enum)
		}
	default:
		if !str {
			return fmt.Sprintf("a %s gold value is a string", f.Grader)
		}
	}
	return ""
}

// leaks reports gold-only values (gold that no caller fact holds) found in the caller's initial
// user state: the caller must not be told an answer the agent is supposed to work out.
func (v *validator) leaks() {
	// A gold value the caller can say (a whole fact value, or an item of a listed one) is not
	// gold-only.
	callerKnows := v.t.KnownToCaller()
	initial := v.initialState()
	for _, gf := range v.t.Grader.Fields {
		for _, gold := range GoldStrings(gf.Gold) {
			if len(gold) < 3 || callerKnows(gold) {
				continue
			}
			if isCommonWord(gold) {
				continue
			}
			for _, pl := range initial {
				if strings.Contains(canon.Fold(pl.text), canon.Fold(gold)) {
					v.add(pl.path, "gold-only value %q of field %q appears in the caller's initial user state", gold, gf.Field)
				}
			}
		}
	}
}

// KnownToCaller returns the test of whether a value is one the caller can say: it stands, case
// and accents folded, inside some version of a caller fact's value.
func (t *Task) KnownToCaller() func(value string) bool {
	var factValues []string
	for _, f := range t.User.Facts {
		for _, ver := range f.Versions {
			factValues = append(factValues, canon.Fold(ver.Value))
		}
	}
	return func(value string) bool {
		g := canon.Fold(value)
		for _, fv := range factValues {
			if strings.Contains(fv, g) {
				return true
			}
		}
		return false
	}
}

// GoldStrings lists the string forms inside a gold value (a string, a number, or arrays/objects of them).
func GoldStrings(raw json.RawMessage) []string {
	var x any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&x) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(x any) {
		switch y := x.(type) {
		case string:
			out = append(out, y)
		case json.Number:
			out = append(out, y.String())
		case []any:
			for _, e := range y {
				walk(e)
			}
		case map[string]any:
			ks := make([]string, 0, len(y))
			for k := range y {
				ks = append(ks, k)
			}
			sort.Strings(ks)
			for _, k := range ks {
				walk(y[k])
			}
		}
	}
	walk(x)
	return out
}

// isCommonWord is true for enum-like gold values ("yes", "silver", "standard") that may legitimately
// appear in ordinary text; the leak check is about specific values such as amounts and codes.
func isCommonWord(s string) bool {
	for _, r := range s {
		if r >= '0' && r <= '9' {
			return false
		}
	}
	return !strings.ContainsAny(s, " -/") && len(s) < 12
}

// noExternalRefs refuses every external $ref: a tool schema must be self-contained, and a task
// file must never make the console read a local file or fetch a URL.
type noExternalRefs struct{}

func (noExternalRefs) Load(url string) (any, error) {
	return nil, fmt.Errorf("external reference %s is not allowed in a tool schema", url)
}

// CompileToolSchema compiles a tool's argument schema with external references refused.
func CompileToolSchema(name string, raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noExternalRefs{})
	url := "tool:" + name
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

func compileToolSchema(raw json.RawMessage) (map[string]any, error) {
	if _, err := CompileToolSchema("check", raw); err != nil {
		return nil, err
	}
	return schemaProperties(raw), nil
}

// schemaProperties returns the top-level properties of an object schema.
func schemaProperties(raw json.RawMessage) map[string]any {
	var s struct {
		Properties map[string]any `json:"properties"`
	}
	json.Unmarshal(raw, &s)
	return s.Properties
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func containsFold(xs []string, s string) bool {
	for _, x := range xs {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func keys(m map[string]bool) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	if len(ks) == 0 {
		return "none"
	}
	return strings.Join(ks, ", ")
}
