// Package gptlive is the client adapter of GPT-Live, OpenAI's full-duplex voice API
// (wss://api.openai.com/v1/live/sessions), as published: the model and a strict configuration in
// a first session.start, PCM16 24 kHz both ways, the live model listening and speaking at once
// with no turns, and tools run by a backend Responses model the live model delegates to. The
// client runs the backend's function calls and returns their outputs.
//
// What the protocol does not say is inferred, as docs/systems.md explains: where an agent turn
// ends (no end-of-turn event exists) and which voices a model speaks.
package gptlive

import "encoding/json"

// DefaultURL is the public GPT-Live WebSocket endpoint; it takes no query parameters.
const DefaultURL = "wss://api.openai.com/v1/live/sessions"

// SampleRate is the PCM16 rate of the session's audio in both directions.
const SampleRate = 24000

// DefaultVoice is the voice of a session that names none (the published examples use marin).
const DefaultVoice = "marin"

// Voices are the voices the adapter lets through: the Realtime GA voices, which GPT-Live's
// documentation does not narrow (an assumption: see docs/systems.md).
var Voices = []string{"marin", "cedar", "alloy", "ash", "ballad", "coral", "echo", "sage", "shimmer", "verse"}

// DefaultBackendModel is the Responses model tools are delegated to when the systems file names
// none (the one in OpenAI's published configuration example).
const DefaultBackendModel = "gpt-5.5"

// Client event types.
const (
	SessionStart       = "session.start"
	SessionClose       = "session.close"
	InputAudioAppend   = "session.input_audio.append"
	ResponseItemCreate = "response.item.create"
	ResponseCreate     = "response.create"
)

// Server event types.
const (
	SessionStarted        = "session.started"
	SessionUpdated        = "session.updated"
	SessionClosed         = "session.closed"
	OutputAudioDelta      = "session.output_audio.delta"
	OutputTranscriptDelta = "session.output_transcript.delta"
	InputTranscriptDelta  = "session.input_transcript.delta"
	DelegationCreated     = "session.delegation.created"
	ResponseEvent         = "response.event"
	UsageUpdated          = "session.usage.updated"
	Error                 = "error"
)

// Backend (Responses API) event types carried inside response.event.
const (
	BackendCreated    = "response.created"
	BackendItemDone   = "response.output_item.done"
	BackendCompleted  = "response.completed"
	BackendFailed     = "response.failed"
	BackendIncomplete = "response.incomplete"
)

// ClientEvent is any client event; each type uses its own fields.
type ClientEvent struct {
	Type    string   `json:"type"`
	EventID string   `json:"event_id,omitempty"`
	Session *Session `json:"session,omitempty"`
	Audio   string   `json:"audio,omitempty"`
	Item    *Item    `json:"item,omitempty"`
}

// Session is the strict startup configuration of session.start (unknown fields are refused).
type Session struct {
	Model        string      `json:"model"`
	Instructions string      `json:"instructions,omitempty"`
	Audio        *Audio      `json:"audio,omitempty"`
	Delegation   *Delegation `json:"delegation,omitempty"`
}

// Audio is the session's audio: the WebSocket's format and the output voice.
type Audio struct {
	Format *AudioFormat `json:"format,omitempty"`
	Output *AudioOutput `json:"output,omitempty"`
}

// AudioFormat is {"type":"audio/pcm","rate":24000}.
type AudioFormat struct {
	Type string `json:"type"`
	Rate int    `json:"rate,omitempty"`
}

// AudioOutput names the voice.
type AudioOutput struct {
	Voice string `json:"voice,omitempty"`
}

// Delegation says who runs the work the live model delegates: a Responses model here.
type Delegation struct {
	Type      string     `json:"type"` // "responses" or "client"
	Responses *Responses `json:"responses,omitempty"`
}

// Responses configures the backend Responses model and the tools it may call.
type Responses struct {
	Model             string `json:"model"`
	Instructions      string `json:"instructions,omitempty"`
	Tools             []Tool `json:"tools,omitempty"`
	ToolChoice        string `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool  `json:"parallel_tool_calls,omitempty"`
}

// Tool is a Responses function tool.
type Tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Item is a Responses item: a function call the backend made, or the client's output for it.
type Item struct {
	ID        string          `json:"id,omitempty"`
	Type      string          `json:"type"`
	Status    string          `json:"status,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments string          `json:"arguments,omitempty"`
	Output    *string         `json:"output,omitempty"`
	Role      string          `json:"role,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
}

// ServerEvent is any server event; each type uses its own fields.
type ServerEvent struct {
	Type          string          `json:"type"`
	EventID       string          `json:"event_id,omitempty"`
	ClientEventID string          `json:"client_event_id,omitempty"`
	Session       json.RawMessage `json:"session,omitempty"`
	Delta         string          `json:"delta,omitempty"`
	StartMS       *int64          `json:"start_ms,omitempty"`
	EndMS         *int64          `json:"end_ms,omitempty"`
	Delegation    *DelegationItem `json:"delegation,omitempty"`
	DelegationID  string          `json:"delegation_id,omitempty"`
	Event         *BackendEvent   `json:"event,omitempty"`
	Usage         *SessionUsage   `json:"usage,omitempty"`
	Reason        string          `json:"reason,omitempty"`
	Error         *ErrorDetail    `json:"error,omitempty"`
}

// DelegationItem is the metadata of delegated work (not the task text).
type DelegationItem struct {
	ID         string `json:"id"`
	Target     string `json:"target,omitempty"`
	ResponseID string `json:"response_id,omitempty"`
}

// BackendEvent is a Responses streaming event relayed by response.event.
type BackendEvent struct {
	Type        string           `json:"type"`
	OutputIndex *int             `json:"output_index,omitempty"`
	Item        *Item            `json:"item,omitempty"`
	Response    *BackendResponse `json:"response,omitempty"`
}

// BackendResponse is a Responses response object.
type BackendResponse struct {
	ID     string        `json:"id"`
	Object string        `json:"object,omitempty"`
	Model  string        `json:"model,omitempty"`
	Status string        `json:"status,omitempty"`
	Output []Item        `json:"output"`
	Usage  *BackendUsage `json:"usage,omitempty"`
}

// BackendUsage is a Responses usage object.
type BackendUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// SessionUsage is the session's billed duration so far.
type SessionUsage struct {
	Seconds float64 `json:"seconds"`
}

// ErrorDetail is the error object of an error event.
type ErrorDetail struct {
	Type          string  `json:"type,omitempty"`
	Code          string  `json:"code,omitempty"`
	Message       string  `json:"message"`
	Param         *string `json:"param,omitempty"`
	ClientEventID string  `json:"client_event_id,omitempty"`
}
