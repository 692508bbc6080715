// Package task defines a task world: the caller's user state with versioned facts and reveal rules,
// the authored events of its reveal graph, the agent side (instructions, tools, knowledge, artifact
// schema) and the grader side (target state, required and forbidden actions, gold fields). It loads
// and validates task files with errors that name the file and JSON path.
package task

import "encoding/json"

// Task is one task world. The grader side (Grader) and the agent side (Agent, Environment) are never
// shown to a caller; the user state is revealed to the caller over time by the flow engine.
type Task struct {
	ID            string        `json:"id"`
	Version       int           `json:"version"`
	Title         string        `json:"title"`
	Archetype     string        `json:"archetype"`
	Industry      string        `json:"industry"`
	ArtifactClass string        `json:"artifact_class"`
	Authorization Authorization `json:"authorization"`
	ToolBurden    string        `json:"tool_burden"`
	Knowledge     string        `json:"knowledge_requirement"`
	Behavior      string        `json:"behavior_profile"`
	RiskTier      string        `json:"risk_tier"`
	Subsets       []string      `json:"subsets,omitempty"`

	User        UserState   `json:"user"`
	Events      []Event     `json:"events,omitempty"`
	Agent       AgentSide   `json:"agent"`
	Environment Environment `json:"environment,omitempty"`
	Grader      GraderSide  `json:"grader"`

	// Bank holds the frozen synthetic caller's utterance variants, keyed by user plan ID.
	Bank map[string][]string `json:"bank,omitempty"`

	// Path is the file the task was loaded from (not part of the format).
	Path string `json:"-"`
}

// Authorization says whether the agent may only prepare the artifact or may commit it after an
// approval from the caller.
type Authorization string

// Authorization values.
const (
	PrepareOnly   Authorization = "prepare_only"
	ApprovalGated Authorization = "approval_gated"
)

// Subset names a task subset flag.
const (
	SubsetAudit24 = "audit24"
	SubsetAnchor  = "anchor"
	// SubsetTransfer marks the transfer-rule tasks kept outside audit24 (its strata unchanged).
	SubsetTransfer = "transfer"
)

// InSubset reports whether the task carries the subset flag.
func (t *Task) InSubset(name string) bool {
	for _, s := range t.Subsets {
		if s == name {
			return true
		}
	}
	return false
}

// UserState is what the caller is: persona, goals, constraints and facts.
type UserState struct {
	Persona     Persona  `json:"persona"`
	Goals       []string `json:"goals"`
	Constraints []string `json:"constraints,omitempty"`
	Facts       []Fact   `json:"facts"`
}

// Persona is who the caller plays.
type Persona struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	Speaking string `json:"speaking,omitempty"` // speaking preferences shown to human callers
	Voice    string `json:"voice,omitempty"`    // synthetic caller voice (Flite: slt, rms, awb, kal16)
}

// Reveal is a fact's reveal rule.
type Reveal string

// Reveal rules.
const (
	Volunteer Reveal = "volunteer" // say it unprompted
	OnAsk     Reveal = "on_ask"    // say it only when asked for it
	OnEvent   Reveal = "on_event"  // unknown to the caller until an authored event reveals it
)

// Fact is one piece of caller knowledge with its versions. Version 1 is known from the start unless
// the reveal rule is on_event; every later version is revealed by an authored event and supersedes
// the previous one.
type Fact struct {
	ID     string `json:"id"`
	Label  string `json:"label"`           // how the role card names it ("Your date of birth")
	Field  string `json:"field,omitempty"` // the artifact field or tool argument it answers
	Reveal Reveal `json:"reveal"`
	// AskedAs are phrases that, in agent speech, ask for this fact ("date of birth", "born").
	AskedAs  []string      `json:"asked_as,omitempty"`
	Versions []FactVersion `json:"versions"`
}

// FactVersion is one value of a fact.
type FactVersion struct {
	Value  string `json:"value"`            // canonical written form
	Spoken string `json:"spoken,omitempty"` // how the caller says it, when that differs
}

// Say returns the spoken form of a version, or its value.
func (v FactVersion) Say() string {
	if v.Spoken != "" {
		return v.Spoken
	}
	return v.Value
}

// EventKind is the kind of an authored event.
type EventKind string

// Event kinds.
const (
	Correction EventKind = "correction"
	Approval   EventKind = "approval"
	Revocation EventKind = "revocation"
	BargeIn    EventKind = "barge_in"
	World      EventKind = "world"
)

// Event is an authored event of the reveal graph: when its trigger fires, it reveals a fact version
// (correction, world, optionally barge-in), lets the caller approve or revoke an action, and shows a
// private cue to a human caller.
type Event struct {
	ID      string    `json:"id"`
	Kind    EventKind `json:"kind"`
	Trigger Trigger   `json:"trigger"`
	Fact    string    `json:"fact,omitempty"`
	Version int       `json:"version,omitempty"`
	Action  string    `json:"action,omitempty"`
	Cue     string    `json:"cue"`
}

// TriggerOn names what a trigger waits for.
type TriggerOn string

// Trigger conditions. MediaTime is anchored to media time since the call's first caller audio; the
// others to an observed condition, optionally delayed on the media clock.
const (
	OnMediaTime         TriggerOn = "media_time"
	OnFieldRecorded     TriggerOn = "field_recorded"
	OnApprovalRequested TriggerOn = "approval_requested"
	OnApprovalGranted   TriggerOn = "approval_granted"
	OnStateReached      TriggerOn = "state_reached"
	OnEventFired        TriggerOn = "event_fired"
	OnAgentAct          TriggerOn = "agent_act"
	OnToolCalled        TriggerOn = "tool_called"
)

// Trigger says when an authored event fires.
type Trigger struct {
	On      TriggerOn `json:"on"`
	AtMS    int64     `json:"at_ms,omitempty"`
	Field   string    `json:"field,omitempty"`
	Action  string    `json:"action,omitempty"`
	State   string    `json:"state,omitempty"`
	Event   string    `json:"event,omitempty"`
	Act     string    `json:"act,omitempty"`
	Tool    string    `json:"tool,omitempty"`
	DelayMS int64     `json:"delay_ms,omitempty"`
	// Deliberate marks a media_time trigger that fires before the agent can have spoken (under
	// MinMediaTriggerMS) on purpose: a cue meant for the caller's opening.
	Deliberate bool `json:"deliberate,omitempty"`
}

// MinMediaTriggerMS is the earliest a media_time trigger may fire unless marked deliberate: an
// agent has rarely spoken 30 s into a call, and a cue before that lands in the caller's opening.
const MinMediaTriggerMS = 30000

// AgentSide is what the evaluated agent is given: instructions, tools, knowledge and the artifact.
type AgentSide struct {
	Instructions string         `json:"instructions"`
	Tools        []Tool         `json:"tools"`
	Knowledge    []Document     `json:"knowledge,omitempty"`
	Artifact     ArtifactSchema `json:"artifact"`
	// ApprovalPhrases are extra phrases that, in agent speech, request approval.
	ApprovalPhrases []string `json:"approval_phrases,omitempty"`
}

// ToolKind says how the workspace executes a tool.
type ToolKind string

// Tool kinds.
const (
	ToolRecord          ToolKind = "record"           // arguments are artifact fields to record
	ToolLookup          ToolKind = "lookup"           // find a row of an environment table by key
	ToolVerify          ToolKind = "verify"           // check caller identity against a table row
	ToolKBSearch        ToolKind = "kb_search"        // search the knowledge documents
	ToolTransition      ToolKind = "transition"       // move the artifact to a lifecycle state
	ToolRequestApproval ToolKind = "request_approval" // put an action to the caller for approval
	ToolCommit          ToolKind = "commit"           // perform an action; needs a valid approval token
	ToolGetArtifact     ToolKind = "get_artifact"     // read the artifact back
	ToolTransfer        ToolKind = "transfer"         // hand the caller to a human, with a reason; the call ends
)

// Tool is a typed tool the agent may call.
type Tool struct {
	Name        string          `json:"name"`
	Kind        ToolKind        `json:"kind"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`

	// Fields maps argument names to artifact fields for record tools (default: same name).
	Fields map[string]string `json:"fields,omitempty"`
	// Table, Key, Match and Returns configure lookup and verify tools: Key and Match map argument
	// names to a column and a comparison ("identifier", "date", "phone", "casefold", "exact").
	Table   string            `json:"table,omitempty"`
	Key     map[string]Column `json:"key,omitempty"`
	Match   map[string]Column `json:"match,omitempty"`
	Returns []string          `json:"returns,omitempty"`
	// RequiresVerification makes the tool fail with not_verified until the caller is verified.
	RequiresVerification bool   `json:"requires_verification,omitempty"`
	To                   string `json:"to,omitempty"`     // transition target state
	Action               string `json:"action,omitempty"` // request_approval and commit
}

// Column names a table column and how an argument is compared with it. A "phonetic" column
// (verify tools only) also matches a value that sounds the same under Algorithm ("soundex" or
// "double_metaphone"): a name spelled as it was heard.
type Column struct {
	Column    string `json:"column"`
	Compare   string `json:"compare"`
	Algorithm string `json:"algorithm,omitempty"`
}

// ComparePhonetic is the sound-alike column comparison.
const ComparePhonetic = "phonetic"

// Document is a knowledge document for kb_search.
type Document struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

// ArtifactSchema is the artifact the agent prepares: its fields and lifecycle.
type ArtifactSchema struct {
	Fields    []FieldSpec `json:"fields"`
	Lifecycle []string    `json:"lifecycle"`
	// CommitAction is the action whose commit moves the artifact to its committed state.
	CommitAction string `json:"commit_action,omitempty"`
}

// FieldSpec is one artifact field.
type FieldSpec struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"` // string, date, phone, address, number, enum, identifier, list, set, interval, text
	Description string   `json:"description,omitempty"`
	Required    bool     `json:"required,omitempty"`
	Enum        []string `json:"enum,omitempty"`
}

// Environment is the system of record the agent reaches through lookup and verify tools.
type Environment struct {
	Tables map[string][]map[string]any `json:"tables,omitempty"`
}

// GraderSide is the answer key. It never reaches a caller or annotator.
type GraderSide struct {
	TargetState      string       `json:"target_state"`
	CommittedActions []string     `json:"committed_actions,omitempty"`
	RequiredActions  []ActionSpec `json:"required_actions,omitempty"`
	ForbiddenActions []ActionSpec `json:"forbidden_actions,omitempty"`
	// ProtectedValues must not be spoken by the agent before the caller is verified.
	ProtectedValues []string `json:"protected_values,omitempty"`
	// Transfer is the task's rule for handing the caller to a human (a transfer tool):
	// forbidden (the default: a transfer fails Process Validity), allowed, or required (Action
	// Completion fails without one). TransferReason documents why.
	Transfer       TransferRule `json:"transfer,omitempty"`
	TransferReason string       `json:"transfer_reason,omitempty"`
	Fields         []GoldField  `json:"fields"`
}

// TransferRule says whether a task's call may, or must, end with a transfer to a human.
type TransferRule string

// Transfer rules.
const (
	TransferForbidden TransferRule = "forbidden"
	TransferAllowed   TransferRule = "allowed"
	TransferRequired  TransferRule = "required"
)

// TransferRuleOf is the task's transfer rule, forbidden when it states none.
func (t *Task) TransferRuleOf() TransferRule {
	if t.Grader.Transfer == "" {
		return TransferForbidden
	}
	return t.Grader.Transfer
}

// ActionSpec names a tool call, optionally with arguments that must match.
type ActionSpec struct {
	Tool   string            `json:"tool"`
	Args   map[string]string `json:"args,omitempty"`
	Reason string            `json:"reason,omitempty"`
}

// GoldField is the gold value of one artifact field and how it is graded.
type GoldField struct {
	Field  string          `json:"field"`
	Gold   json.RawMessage `json:"gold"`
	Grader string          `json:"grader"`
	Params GraderParams    `json:"params,omitempty"`
	// Source says where the gold comes from when no caller fact holds it ("kb:plan-table").
	Source string `json:"source,omitempty"`
}

// GraderParams tunes a field grader.
type GraderParams struct {
	AbsTolerance float64             `json:"abs_tolerance,omitempty"`
	RelTolerance float64             `json:"rel_tolerance,omitempty"`
	Synonyms     map[string][]string `json:"synonyms,omitempty"`
	Prefixes     []string            `json:"prefixes,omitempty"`
	Item         string              `json:"item,omitempty"` // item comparison for set and ordered_list
}

// Field returns the artifact field spec by name.
func (t *Task) Field(name string) (FieldSpec, bool) {
	for _, f := range t.Agent.Artifact.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return FieldSpec{}, false
}

// Fact returns the fact by ID.
func (t *Task) Fact(id string) (*Fact, bool) {
	for i := range t.User.Facts {
		if t.User.Facts[i].ID == id {
			return &t.User.Facts[i], true
		}
	}
	return nil, false
}

// Tool returns the tool by name.
func (t *Task) Tool(name string) (*Tool, bool) {
	for i := range t.Agent.Tools {
		if t.Agent.Tools[i].Name == name {
			return &t.Agent.Tools[i], true
		}
	}
	return nil, false
}

// EventByID returns the authored event by ID.
func (t *Task) EventByID(id string) (*Event, bool) {
	for i := range t.Events {
		if t.Events[i].ID == id {
			return &t.Events[i], true
		}
	}
	return nil, false
}

// InitialState is the lifecycle state an artifact starts in.
func (t *Task) InitialState() string {
	if len(t.Agent.Artifact.Lifecycle) == 0 {
		return "draft"
	}
	return t.Agent.Artifact.Lifecycle[0]
}

// RequiredFields lists the required artifact fields in schema order.
func (t *Task) RequiredFields() []string {
	var out []string
	for _, f := range t.Agent.Artifact.Fields {
		if f.Required {
			out = append(out, f.Name)
		}
	}
	return out
}
