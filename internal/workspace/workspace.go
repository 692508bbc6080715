// Package workspace is the environment the evaluated agent acts on: the artifact and its lifecycle,
// typed tool dispatch with argument validation, knowledge search, caller verification, and
// environment-enforced approvals. Every effect is emitted as a trace event, and a trace can be
// replayed through a fresh workspace to rebuild (and check) its state.
package workspace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/voicebench/humanaudit/internal/canon"
	"github.com/voicebench/humanaudit/internal/phonetic"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

var printer = message.NewPrinter(language.English)

// Emit records an event the workspace produced. The session appends it to the trace (durably);
// tests collect it. The returned event is the stored one.
type Emit func(trace.Event) trace.Event

// Error codes returned to the agent in a failed tool result.
const (
	CodeUnknownTool      = "unknown_tool"
	CodeBadArguments     = "bad_arguments"
	CodeNotVerified      = "not_verified"
	CodeNotFound         = "not_found"
	CodeIncomplete       = "incomplete"
	CodeBadState         = "bad_state"
	CodeApprovalRequired = "approval_required"
	CodeTransferred      = "transferred"
)

// SoundAlike starts the text of a verification that matched only through a phonetic column
// (auth.verified and its tool.result): "sound-alike: last_name (double_metaphone)".
const SoundAlike = "sound-alike"

// recordedField is a field a record call echoes back, with its encoded value.
type recordedField struct {
	field string
	val   json.RawMessage
}

// ApprovalToken is an action-scoped authorization minted by a caller's approval. It is valid until
// it is used by a commit, revoked by the caller, or invalidated by a change to the approved artifact.
type ApprovalToken struct {
	ID     string
	Action string
	Valid  bool
}

// Workspace is the state of one call's environment. It is not safe for concurrent use; the session
// serialises tool calls and caller authorization events.
type Workspace struct {
	env  *Env
	task *task.Task
	emit Emit

	// Scratch reused from call to call: the decoded arguments, a record call's argument names
	// and echoed fields.
	argScratch map[string]any
	names      []string
	vals       []argValue
	pairs      []plainArg
	recorded   []recordedField

	fields    map[string]json.RawMessage
	state     string
	verified  bool
	tokens    map[string]*ApprovalToken // by action: the current token
	minted    int
	revoked   map[string]bool
	committed map[string]bool
	// transferred: the caller was handed to a human; the call is over for the agent's tools.
	transferred bool
}

// New returns a workspace for task t in its initial state, emitting events through emit. It
// compiles the task's tool schemas; Compile once and use Env.New for many workspaces of a task.
func New(t *task.Task, emit Emit) (*Workspace, error) {
	env, err := Compile(t)
	if err != nil {
		return nil, err
	}
	return env.New(emit), nil
}

// Result is what a tool call returns to the agent.
type Result struct {
	OK     bool
	Output json.RawMessage // JSON object sent back to the agent
	Code   string          // error code when !OK
	// Note is recorded with the result in the trace and never sent to the agent (a
	// verification that matched only by sound).
	Note string
}

func (w *Workspace) out(e trace.Event) trace.Event {
	e.Actor = trace.ActorEnv
	return w.emit(e)
}

// Call executes one tool call from the agent. Unknown tools and bad arguments produce an error
// result for the agent (and the trace), never a panic.
func (w *Workspace) Call(callID, name string, args json.RawMessage) Result {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	w.emit(trace.Event{Type: trace.ToolCall, Actor: trace.ActorAgent, CallID: callID, Tool: name, Args: compactJSON(args)})
	res := w.dispatch(name, args)
	ev := trace.Event{Type: trace.ToolResult, CallID: callID, Tool: name, OK: trace.Bool(res.OK), Result: res.Output, Text: res.Note}
	if !res.OK {
		ev.Error = res.Code
	}
	w.out(ev)
	return res
}

func (w *Workspace) dispatch(name string, raw json.RawMessage) Result {
	tl, ok := w.task.Tool(name)
	if !ok {
		names := make([]string, len(w.task.Agent.Tools))
		for i, t := range w.task.Agent.Tools {
			names[i] = t.Name
		}
		return fail(CodeUnknownTool, fmt.Sprintf("no tool named %q; tools: %s", name, strings.Join(names, ", ")))
	}
	if w.transferred && tl.Kind != task.ToolGetArtifact {
		return fail(CodeTransferred, "the caller has been handed to a human; the call is over")
	}
	if tl.Kind == task.ToolRecord {
		if q := w.env.quick[name]; q != nil {
			if res, ok := w.recordPlain(tl, q, raw); ok {
				return res
			}
		}
	}
	if w.argScratch == nil {
		w.argScratch = make(map[string]any, 8)
	}
	args, ok := decodeArgs(raw, w.argScratch)
	if !ok {
		args = nil
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&args); err != nil || args == nil {
			return fail(CodeBadArguments, "arguments must be a JSON object")
		}
	}
	if q := w.env.quick[name]; q == nil || !q.valid(args) {
		if err := w.env.schemas[name].Validate(toValidatable(args)); err != nil {
			return fail(CodeBadArguments, describeSchemaError(err))
		}
	}
	switch tl.Kind {
	case task.ToolRecord:
		return w.record(tl, args)
	case task.ToolLookup:
		return w.lookup(tl, args)
	case task.ToolVerify:
		return w.verify(tl, args)
	case task.ToolKBSearch:
		q, _ := args["query"].(string)
		return okResult(map[string]any{"results": w.env.kb.Search(q, 2)})
	case task.ToolTransition:
		return w.transition(tl.To)
	case task.ToolRequestApproval:
		return w.requestApproval(tl.Action, args)
	case task.ToolCommit:
		return w.commit(tl.Action)
	case task.ToolGetArtifact:
		return okResult(map[string]any{"state": w.state, "fields": w.fields})
	case task.ToolTransfer:
		reason, _ := args["reason"].(string)
		w.transferred = true
		w.out(trace.Event{Type: trace.CallTransferred, Tool: tl.Name, Text: strings.TrimSpace(reason)})
		return okStrings("next", "tell the caller a person will take over; the call then ends", "status", "transferred")
	}
	return fail(CodeUnknownTool, "tool kind "+string(tl.Kind)+" is not executable")
}

func (w *Workspace) record(tl *task.Tool, args map[string]any) Result {
	names := w.names[:0]
	for k := range args {
		names = append(names, k)
	}
	sort.Strings(names)
	w.names = names
	vals := w.vals[:0]
	for _, arg := range names {
		vals = append(vals, argValue{arg: arg, val: mustJSON(args[arg])})
	}
	w.vals = vals
	return w.recordValues(tl, vals)
}

// argValue is one argument of a record call, with its encoded value.
type argValue struct {
	arg string
	val json.RawMessage
}

// recordValues records a record call's arguments, given in argument-name order: each one sets its
// field (by name, or as mapped in the tool's "fields"), an unchanged value emits nothing, and a
// change after approval voids the token.
func (w *Workspace) recordValues(tl *task.Tool, vals []argValue) Result {
	if w.state == task.StateCommitted {
		return fail(CodeBadState, "the artifact is committed and can no longer change")
	}
	// recorded lists what the tool result echoes, by field; two arguments mapped to one field
	// leave the later one, as a map assignment would.
	recorded := w.recorded[:0]
	defer func() { w.recorded = recorded[:0] }()
	changed := false
	for _, av := range vals {
		field := av.arg
		if f, ok := tl.Fields[av.arg]; ok {
			field = f
		}
		val := av.val
		dup := false
		for i := range recorded {
			if recorded[i].field == field {
				recorded[i].val, dup = val, true
			}
		}
		if !dup {
			recorded = append(recorded, recordedField{field, val})
		}
		if prev, ok := w.fields[field]; ok && bytes.Equal(prev, val) {
			continue
		}
		w.fields[field] = val
		changed = true
		w.out(trace.Event{Type: trace.ArtifactUpdate, Field: field, Value: val})
	}
	// Approval covers what the caller reviewed: changing the artifact afterwards voids the token.
	if changed && w.state == task.StateApproved {
		w.invalidateAll("artifact changed after approval")
		w.setState(task.StateReady)
	}
	slices.SortFunc(recorded, func(a, b recordedField) int { return strings.Compare(a.field, b.field) })
	// The result is {"ok":true,"recorded":{…},"state":…}, keys in encoding/json's sorted order.
	out := make([]byte, 0, 64+32*len(recorded))
	out = append(out, `{"ok":true,"recorded":{`...)
	for i, r := range recorded {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendJSONString(out, r.field)
		out = append(out, ':')
		out = append(out, r.val...)
	}
	out = append(out, `},"state":`...)
	out = appendJSONString(out, w.state)
	out = append(out, '}')
	return Result{OK: true, Output: out}
}

func (w *Workspace) lookup(tl *task.Tool, args map[string]any) Result {
	if tl.RequiresVerification && !w.verified {
		return fail(CodeNotVerified, "verify the caller's identity before using this tool")
	}
	row := w.findRow(tl, args)
	if row == nil {
		return fail(CodeNotFound, "no matching record")
	}
	out := map[string]any{}
	for _, c := range tl.Returns {
		out[c] = row[c]
	}
	return okResult(map[string]any{"record": out})
}

func (w *Workspace) verify(tl *task.Tool, args map[string]any) Result {
	row, sound := w.findRowSound(tl, args, true)
	if row == nil {
		return Result{OK: true, Output: json.RawMessage(`{"message":"the details do not match our records","ok":true,"verified":false}`)}
	}
	note := ""
	if len(sound) > 0 {
		note = SoundAlike + ": " + strings.Join(sound, ", ")
	}
	if !w.verified {
		w.verified = true
		w.out(trace.Event{Type: trace.AuthVerified, Tool: tl.Name, Text: note})
	}
	// The agent learns only that the caller is verified, not how closely the name matched.
	return Result{OK: true, Output: json.RawMessage(`{"ok":true,"verified":true}`), Note: note}
}

// findRow returns the first row of the tool's table whose columns all match the arguments.
func (w *Workspace) findRow(tl *task.Tool, args map[string]any) map[string]any {
	row, _ := w.findRowSound(tl, args, false)
	return row
}

// findRowSound is findRow; with sound, a row whose phonetic columns match only by sound is the
// answer when no row matches as written, and sound lists those columns ("last_name
// (double_metaphone)").
func (w *Workspace) findRowSound(tl *task.Tool, args map[string]any, sound bool) (map[string]any, []string) {
	f := w.env.finders[tl.Name]
	if f == nil {
		return nil, nil
	}
	keys := make([]canon.IDForm, len(f.args))
	texts := make([]string, len(f.args))
	for i, arg := range f.args {
		a, ok := args[arg]
		if !ok {
			return nil, nil
		}
		s := argText(a)
		texts[i] = s
		compare := f.cols[i].Compare
		if compare == "identifier" {
			keys[i] = canon.NewIDForm(s)
			continue
		}
		if compare == task.ComparePhonetic {
			compare = "casefold" // as written first; by sound only when no row matches so
		}
		k, ok := canon.Key(compare, s)
		if !ok && f.cols[i].Compare != task.ComparePhonetic {
			return nil, nil
		}
		keys[i].Key = k
	}
	rows := w.task.Environment.Tables[f.table]
	for r, rk := range f.rows {
		match := true
		for i := range f.args {
			if !rk[i].matches(f.cols[i].Compare, keys[i]) {
				match = false
				break
			}
		}
		if match {
			return rows[r], nil
		}
	}
	if !sound || !f.phonetic {
		return nil, nil
	}
	for r, rk := range f.rows {
		var by []string
		match := true
		for i := range f.args {
			c, col := rk[i], f.cols[i]
			switch {
			case c.matches(col.Compare, keys[i]):
			case col.Compare == task.ComparePhonetic && c.ok && phonetic.SoundAlike(col.Algorithm, texts[i], c.text):
				by = append(by, col.Column+" ("+col.Algorithm+")")
			default:
				match = false
			}
			if !match {
				break
			}
		}
		if match {
			return rows[r], by
		}
	}
	return nil, nil
}

// argText renders a decoded argument as the text compared with a column.
func argText(a any) string {
	switch x := a.(type) {
	case string:
		return x
	case json.Number:
		return string(x)
	}
	return fmt.Sprint(a)
}

// Same compares two dictated values the way a column or item comparison names (canon.Same).
func Same(compare, a, b string) bool { return canon.Same(compare, a, b) }

func (w *Workspace) missingRequired() []string {
	var missing []string
	for _, f := range w.env.require {
		if _, ok := w.fields[f]; !ok {
			missing = append(missing, f)
		}
	}
	return missing
}

func (w *Workspace) transition(to string) Result {
	switch {
	case w.state == task.StateCommitted:
		return fail(CodeBadState, "the artifact is committed")
	case to == task.StateReady:
		if m := w.missingRequired(); len(m) > 0 {
			return fail(CodeIncomplete, "required fields missing: "+strings.Join(m, ", "))
		}
		if w.state == task.StateDraft {
			w.setState(task.StateReady)
		}
	case to == task.StateDraft:
		w.invalidateAll("artifact reopened for editing")
		w.setState(task.StateDraft)
	default:
		return fail(CodeBadState, "cannot move the artifact to "+to)
	}
	return okStrings("state", w.state)
}

func (w *Workspace) requestApproval(action string, args map[string]any) Result {
	if w.state == task.StateCommitted {
		return fail(CodeBadState, "the artifact is committed")
	}
	if w.state == task.StateDraft {
		return fail(CodeBadState, "mark the artifact ready for review before asking for approval")
	}
	summary, _ := args["summary"].(string)
	w.out(trace.Event{Type: trace.AuthApprovalRequested, Action: action, Text: summary, Source: "tool"})
	return okStrings("next", "ask the caller and wait for a clear yes before committing", "status", "approval_requested")
}

func (w *Workspace) commit(action string) Result {
	if w.committed[action] {
		return fail(CodeBadState, "already committed")
	}
	tok := w.tokens[action]
	if tok == nil || !tok.Valid {
		reason := "no approval from the caller"
		switch {
		case w.revoked[action]:
			reason = "the caller revoked the approval"
		case tok != nil:
			reason = "the approval is no longer valid"
		}
		w.out(trace.Event{Type: trace.AuthCommitBlocked, Action: action, Text: reason})
		return fail(CodeApprovalRequired, "blocked: "+reason)
	}
	if m := w.missingRequired(); len(m) > 0 {
		return fail(CodeIncomplete, "required fields missing: "+strings.Join(m, ", "))
	}
	tok.Valid = false
	w.committed[action] = true
	w.out(trace.Event{Type: trace.AuthCommitted, Action: action, Token: tok.ID})
	if action == w.task.Agent.Artifact.CommitAction {
		w.setState(task.StateCommitted)
	}
	return okStrings("committed", action, "state", w.state)
}

func (w *Workspace) setState(to string) {
	if w.state == to {
		return
	}
	from := w.state
	w.state = to
	w.out(trace.Event{Type: trace.ArtifactState, From: from, State: to})
}

func (w *Workspace) invalidateAll(reason string) {
	actions := make([]string, 0, len(w.tokens))
	for a := range w.tokens {
		actions = append(actions, a)
	}
	sort.Strings(actions)
	for _, a := range actions {
		if tok := w.tokens[a]; tok.Valid {
			tok.Valid = false
			w.out(trace.Event{Type: trace.AuthTokenInvalidated, Action: a, Token: tok.ID, Text: reason})
		}
	}
}

// Approve records the caller's approval of action and mints an action-scoped token. The artifact
// moves to approved when the approval is for its commit action and it was under review.
func (w *Workspace) Approve(action string) ApprovalToken {
	return w.approve(trace.Event{Type: trace.AuthApprovalGranted, Actor: trace.ActorCaller, Action: action})
}

// ApproveSpoken records a human caller's approval read from their words: the token is minted as
// by Approve, and the event keeps the words and how they were read (source caller_speech,
// confidence, the audio span).
func (w *Workspace) ApproveSpoken(action, words string, meta map[string]string) ApprovalToken {
	return w.approve(trace.Event{Type: trace.AuthApprovalGranted, Actor: trace.ActorCaller, Action: action,
		Source: "caller_speech", Text: words, Meta: meta})
}

func (w *Workspace) approve(ev trace.Event) ApprovalToken {
	action := ev.Action
	w.minted++
	tok := &ApprovalToken{ID: "apv-" + action + "-" + strconv.Itoa(w.minted), Action: action, Valid: true}
	if prev := w.tokens[action]; prev != nil && prev.Valid {
		prev.Valid = false
	}
	w.tokens[action] = tok
	delete(w.revoked, action)
	ev.Token = tok.ID
	w.emit(ev)
	if action == w.task.Agent.Artifact.CommitAction && w.state == task.StateReady {
		w.setState(task.StateApproved)
	}
	return *tok
}

// Revoke records the caller's withdrawal of an approval: the token is invalid at once.
func (w *Workspace) Revoke(action string) {
	tok := w.tokens[action]
	ev := trace.Event{Type: trace.AuthRevoked, Actor: trace.ActorCaller, Action: action}
	if tok != nil && tok.Valid {
		tok.Valid = false
		ev.Token = tok.ID
	}
	w.revoked[action] = true
	w.emit(ev)
	if action == w.task.Agent.Artifact.CommitAction && w.state == task.StateApproved {
		w.setState(task.StateReady)
	}
}

// Decline records that the caller refused to approve action.
func (w *Workspace) Decline(action string) {
	w.emit(trace.Event{Type: trace.AuthApprovalDeclined, Actor: trace.ActorCaller, Action: action})
}

// DeclineSpoken records a human caller's refusal read from their words.
func (w *Workspace) DeclineSpoken(action, words string, meta map[string]string) {
	w.emit(trace.Event{Type: trace.AuthApprovalDeclined, Actor: trace.ActorCaller, Action: action,
		Source: "caller_speech", Text: words, Meta: meta})
}

// ApplyPlan gives a synthetic caller's plan its effect on authorizations: an approval, revocation
// or decline of the plan's action (Approve, Revoke, Decline); other plans change nothing here.
func (w *Workspace) ApplyPlan(p trace.Plan) {
	switch p.Kind {
	case trace.PlanApprove:
		w.Approve(p.Action)
	case trace.PlanRevoke:
		w.Revoke(p.Action)
	case trace.PlanDecline:
		w.Decline(p.Action)
	}
}

// Snapshot is the workspace state at one moment.
type Snapshot struct {
	Fields    map[string]json.RawMessage `json:"fields"`
	State     string                     `json:"state"`
	Verified  bool                       `json:"verified"`
	Committed []string                   `json:"committed,omitempty"`
	Tokens    []ApprovalToken            `json:"tokens,omitempty"`
}

// Snapshot returns a copy of the current state.
func (w *Workspace) Snapshot() Snapshot {
	s := Snapshot{Fields: map[string]json.RawMessage{}, State: w.state, Verified: w.verified}
	for k, v := range w.fields {
		s.Fields[k] = v
	}
	for a := range w.committed {
		s.Committed = append(s.Committed, a)
	}
	sort.Strings(s.Committed)
	for _, t := range w.tokens {
		s.Tokens = append(s.Tokens, *t)
	}
	sort.Slice(s.Tokens, func(i, j int) bool { return s.Tokens[i].ID < s.Tokens[j].ID })
	return s
}

// State returns the artifact's lifecycle state.
func (w *Workspace) State() string { return w.state }

// okStrings is a successful result {"ok": true, key: value, …} with string values, encoded as
// encoding/json would (keys sorted) without building a map.
func okStrings(kv ...string) Result {
	type pair struct{ k, v string }
	pairs := make([]pair, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		pairs = append(pairs, pair{kv[i], kv[i+1]})
	}
	slices.SortFunc(pairs, func(a, b pair) int { return strings.Compare(a.k, b.k) })
	b := make([]byte, 0, 64)
	b = append(b, '{')
	okDone := false
	for i, p := range pairs {
		if !okDone && p.k > "ok" {
			b = append(b, `"ok":true,`...)
			okDone = true
		}
		b = appendJSONString(b, p.k)
		b = append(b, ':')
		b = appendJSONString(b, p.v)
		if i < len(pairs)-1 {
			b = append(b, ',')
		}
	}
	if !okDone {
		if len(pairs) > 0 {
			b = append(b, ',')
		}
		b = append(b, `"ok":true`...)
	}
	return Result{OK: true, Output: append(b, '}')}
}

func okResult(v map[string]any) Result {
	v["ok"] = true
	return Result{OK: true, Output: mustJSON(v)}
}

func fail(code, msg string) Result {
	return Result{OK: false, Code: code, Output: mustJSON(map[string]any{"ok": false, "error": code, "message": msg})}
}

// mustJSON encodes v as encoding/json does without HTML escaping: by hand for the values tool
// calls carry (decoded arguments, strings, maps), through encoding/json for anything else.
func mustJSON(v any) json.RawMessage {
	if b, ok := appendCanonical(make([]byte, 0, 64), v); ok {
		return b
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return json.RawMessage(strconv.Quote(fmt.Sprint(v)))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}

func compactJSON(raw json.RawMessage) json.RawMessage {
	if isCompact(raw) {
		return raw
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}

// toValidatable converts json.Number into values the schema validator accepts.
func toValidatable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = toValidatable(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toValidatable(e)
		}
		return out
	default:
		return v
	}
}

func describeSchemaError(err error) string {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return err.Error()
	}
	var msgs []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "$"
			for _, t := range e.InstanceLocation {
				loc += "." + t
			}
			msgs = append(msgs, loc+": "+e.ErrorKind.LocalizedString(printer))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.Strings(msgs)
	return strings.Join(msgs, "; ")
}

// recordPlain runs a record call whose arguments are all plain scalars that certainly satisfy
// the tool's schema, without decoding them into a map: each value's bytes are already its
// encoding. ok is false when it declines and the general path runs.
func (w *Workspace) recordPlain(tl *task.Tool, q *quickSchema, raw []byte) (Result, bool) {
	pairs, ok := plainArgs(raw, w.pairs)
	if !ok {
		return Result{}, false
	}
	w.pairs = pairs
	if !q.validPlain(pairs) {
		return Result{}, false
	}
	slices.SortFunc(pairs, func(a, b plainArg) int { return bytes.Compare(a.key, b.key) })
	vals := w.vals[:0]
	for _, a := range pairs {
		vals = append(vals, argValue{arg: q.propName(a.key), val: json.RawMessage(a.raw)})
	}
	w.vals = vals
	return w.recordValues(tl, vals), true
}
