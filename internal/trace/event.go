// Package trace holds the canonical event trace of one call: every user, agent, tool, artifact,
// authorization, cue, media and session event, stamped on the session's media clock and the wall
// clock, in one append-only log that is the only input the grader reads.
package trace

import (
	"encoding/json"
	"time"
)

// Type names an event. The prefix before the dot is the event's family.
type Type string

// Session lifecycle.
const (
	SessionStart Type = "session.start" // task, task version, mode, seed, system alias
	SessionEnd   Type = "session.end"   // reason
	Exclusion    Type = "session.exclusion"
)

// Caller side. CallerAudioStart anchors media time: authored media-time triggers count from it.
const (
	CallerAudioStart  Type = "caller.audio_start"
	CallerSpeechStart Type = "caller.speech_start"
	CallerSpeechEnd   Type = "caller.speech_end"
	CallerPlan        Type = "caller.plan"      // the flow engine's user plan for the next caller turn
	CallerUtterance   Type = "caller.utterance" // what the caller said (bank text, ASR or provider transcript)
)

// Agent side (normalized from the provider's protocol).
const (
	AgentSpeechStart  Type = "agent.speech_start"
	AgentSpeechEnd    Type = "agent.speech_end"
	AgentTranscript   Type = "agent.transcript" // a final transcript segment of agent speech
	AgentAct          Type = "agent.act"        // semantic act recognised in agent speech
	AgentResponseDone Type = "agent.response_done"
	// AgentTurnEnd: the agent's turn is over (no output comes without new caller input), whatever
	// the provider's shape; Text is its status (completed, cancelled, failed, incomplete).
	AgentTurnEnd Type = "agent.turn_end"
	// AgentReconnect: the adapter moved the call to a resumed provider session (Gemini goAway);
	// the call, its media clock and the conversation continue. Text says why.
	AgentReconnect Type = "agent.reconnect"
	AgentUsage     Type = "agent.usage"
	AgentError     Type = "agent.error"
	AgentRaw       Type = "agent.raw" // a provider event kept verbatim for audits
)

// Tool calls and their results, as executed by the workspace.
const (
	ToolCall   Type = "tool.call"
	ToolResult Type = "tool.result"
)

// Workspace state.
const (
	ArtifactUpdate Type = "artifact.update" // a field recorded or changed
	ArtifactState  Type = "artifact.state"  // a lifecycle transition
)

// Authorization: environment-enforced approvals.
const (
	AuthVerified          Type = "auth.verified"
	AuthApprovalRequested Type = "auth.approval_requested"
	AuthApprovalGranted   Type = "auth.approval_granted" // mints Token for Action
	AuthApprovalDeclined  Type = "auth.approval_declined"
	// AuthApprovalUnclear: a human caller's answer to an approval request that the recognizer
	// could not read as an approval or a refusal; nothing is minted and the review flags it.
	AuthApprovalUnclear  Type = "auth.approval_unclear"
	AuthRevoked          Type = "auth.revoked"           // invalidates Token at once
	AuthTokenInvalidated Type = "auth.token_invalidated" // the approved content changed
	AuthCommitted        Type = "auth.committed"
	AuthCommitBlocked    Type = "auth.commit_blocked" // a commit without a valid token; fails Process Validity
)

// Call outcome: the agent handed the caller to a human (a transfer tool); Text is its reason.
const CallTransferred Type = "call.transferred"

// Environment: authored events of the task's reveal graph and the facts they reveal.
const (
	EnvEvent     Type = "env.event"
	FactRevealed Type = "fact.revealed"
)

// Cue lifecycle for human callers. A cue is issued, shown, spoken (the caller's first speech
// after it, and whether it carries the cued content) and applied (the workspace changed in the
// cued way).
const (
	CueIssued  Type = "cue.issued"
	CueShown   Type = "cue.shown"
	CueSpoken  Type = "cue.spoken"
	CueApplied Type = "cue.applied"
	// CueActed is the single cue outcome of traces recorded before cue.spoken and cue.applied;
	// it is read, never written.
	CueActed Type = "cue.acted"
)

// Media path.
const (
	MediaBargeIn Type = "media.barge_in" // queued agent audio flushed; DroppedMS says how much
	MediaGap     Type = "media.gap"      // caller audio missing (reconnect, loss burst)
	MediaStats   Type = "media.stats"
)

// Actor says whose act an event records.
type Actor string

// Actors.
const (
	ActorCaller Actor = "caller"
	ActorAgent  Actor = "agent"
	ActorEnv    Actor = "env"
	ActorSystem Actor = "system"
)

// Event is one entry of the trace. It is a flat record: each type uses the fields it needs and
// leaves the rest empty, which keeps encoding canonical and grading allocation-light.
type Event struct {
	Seq   int64     `json:"seq"`
	T     int64     `json:"t_ms"` // media clock, ms since session start
	Wall  time.Time `json:"wall"`
	Type  Type      `json:"type"`
	Actor Actor     `json:"actor,omitempty"`

	// Text of an utterance or transcript segment, a cue, an error message or an end reason.
	Text   string `json:"text,omitempty"`
	Source string `json:"source,omitempty"` // transcript source: bank, provider, asr; error class

	Plan *Plan  `json:"plan,omitempty"`
	Act  string `json:"act,omitempty"`

	Field string          `json:"field,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`

	Tool   string          `json:"tool,omitempty"`
	CallID string          `json:"call_id,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	OK     *bool           `json:"ok,omitempty"`
	Error  string          `json:"error,omitempty"`

	From   string `json:"from,omitempty"` // lifecycle state before a transition
	State  string `json:"state,omitempty"`
	Action string `json:"action,omitempty"`
	Token  string `json:"token,omitempty"`

	EventID string `json:"event_id,omitempty"` // authored event of the task
	CueID   string `json:"cue_id,omitempty"`
	Fact    string `json:"fact,omitempty"`
	Version int    `json:"version,omitempty"`

	// Media bookkeeping.
	DurationMS int64 `json:"duration_ms,omitempty"`
	DroppedMS  int64 `json:"dropped_ms,omitempty"`
	RefMS      int64 `json:"ref_ms,omitempty"` // a related media time (cue issued, speech onset)

	Meta Meta            `json:"meta,omitempty"` // session metadata, usage counters, raw event name
	Raw  json.RawMessage `json:"raw,omitempty"`
}

// Plan is a structured user plan: what the caller should do in the next turn and with which facts.
// Its ID keys the frozen caller bank.
type Plan struct {
	ID     string    `json:"id"`
	Kind   PlanKind  `json:"kind"`
	Facts  []FactRef `json:"facts,omitempty"`
	Event  string    `json:"event,omitempty"`  // authored event this plan acts on
	Action string    `json:"action,omitempty"` // approval-scoped action
}

// FactRef names one version of a caller fact.
type FactRef struct {
	Fact    string `json:"fact"`
	Version int    `json:"version"`
}

// PlanKind is the kind of a user plan.
type PlanKind string

// Plan kinds the flow engine produces.
const (
	PlanOpen        PlanKind = "open"
	PlanAnswer      PlanKind = "answer"
	PlanVolunteer   PlanKind = "volunteer"
	PlanCorrect     PlanKind = "correct"
	PlanAffirm      PlanKind = "affirm"
	PlanApprove     PlanKind = "approve"
	PlanDecline     PlanKind = "decline"
	PlanRevoke      PlanKind = "revoke"
	PlanBargeIn     PlanKind = "barge_in"
	PlanUnknown     PlanKind = "unknown"     // asked for something the caller does not know (yet)
	PlanAcknowledge PlanKind = "acknowledge" // the agent's turn asked nothing the caller can act on
	PlanClose       PlanKind = "close"
)

// Bool returns a pointer to b, for Event.OK.
func Bool(b bool) *bool { return &b }
