// Package wire is the JSON encoding of the OpenAI Realtime protocol family (GA, beta and the
// Grok variant): event names, client and server event shapes, and an Emitter that writes the
// server side of a conversation in the order the real API does. The client adapter decodes with
// it; the protocol fakes and the offline reference agent speak the server side through it.
package wire

import (
	"encoding/json"
	"strings"
)

// VoicesFor returns the voices model may use: byModel's entry for the longest model name (or
// prefix of it, in any case) that matches, else voices. Client and servers of the family narrow
// a provider's allow-list with it the same way.
func VoicesFor(model string, voices []string, byModel map[string][]string) []string {
	m := strings.ToLower(model)
	best := ""
	for k := range byModel {
		if strings.HasPrefix(m, strings.ToLower(k)) && len(k) > len(best) {
			best = k
		}
	}
	if best == "" {
		return voices
	}
	return byModel[best]
}

// Schema is a layout of the protocol: session shape and server event names.
type Schema string

// Schemas.
const (
	// SchemaGA is OpenAI Realtime GA: session.type "realtime", nested audio config, output_* event names.
	SchemaGA Schema = "ga"
	// SchemaBeta is the beta layout (also StepFun): flat session, response.audio.* names.
	SchemaBeta Schema = "beta"
	// SchemaGrok is xAI: flat session with GA-style nested audio formats and GA event names,
	// conversation.created first, usage at the top level of response.done.
	SchemaGrok Schema = "grok"
)

// SampleRate is the PCM16 rate of every OpenAI-family session here (the only rate GA accepts).
const SampleRate = 24000

// Client event types.
const (
	SessionUpdate          = "session.update"
	InputAudioAppend       = "input_audio_buffer.append"
	InputAudioCommit       = "input_audio_buffer.commit"
	InputAudioClear        = "input_audio_buffer.clear"
	ItemCreate             = "conversation.item.create"
	ItemTruncate           = "conversation.item.truncate"
	ItemDelete             = "conversation.item.delete"
	ResponseCreate         = "response.create"
	ResponseCancel         = "response.cancel"
	OutputAudioBufferClear = "output_audio_buffer.clear"
)

// Server event types with the same name in every schema.
const (
	Error                 = "error"
	SessionCreated        = "session.created"
	SessionUpdated        = "session.updated"
	ConversationCreated   = "conversation.created"
	ItemCreated           = "conversation.item.created" // beta
	ItemAdded             = "conversation.item.added"   // GA, Grok
	ItemDone              = "conversation.item.done"    // GA
	ItemTruncated         = "conversation.item.truncated"
	ItemDeleted           = "conversation.item.deleted"
	InputCommitted        = "input_audio_buffer.committed"
	InputCleared          = "input_audio_buffer.cleared"
	SpeechStarted         = "input_audio_buffer.speech_started"
	SpeechStopped         = "input_audio_buffer.speech_stopped"
	InputTranscriptDelta  = "conversation.item.input_audio_transcription.delta"
	InputTranscriptDone   = "conversation.item.input_audio_transcription.completed"
	InputTranscriptFailed = "conversation.item.input_audio_transcription.failed"
	ResponseCreated       = "response.created"
	ResponseDone          = "response.done"
	OutputItemAdded       = "response.output_item.added"
	OutputItemDone        = "response.output_item.done"
	ContentPartAdded      = "response.content_part.added"
	ContentPartDone       = "response.content_part.done"
	FunctionArgsDelta     = "response.function_call_arguments.delta"
	FunctionArgsDone      = "response.function_call_arguments.done"
	RateLimitsUpdated     = "rate_limits.updated"
	Ping                  = "ping" // Grok keep-alive
)

// Server event names that changed between beta and GA. The client accepts both spellings.
const (
	GAAudioDelta        = "response.output_audio.delta"
	GAAudioDone         = "response.output_audio.done"
	GATranscriptDelta   = "response.output_audio_transcript.delta"
	GATranscriptDone    = "response.output_audio_transcript.done"
	GATextDelta         = "response.output_text.delta"
	GATextDone          = "response.output_text.done"
	BetaAudioDelta      = "response.audio.delta"
	BetaAudioDone       = "response.audio.done"
	BetaTranscriptDelta = "response.audio_transcript.delta"
	BetaTranscriptDone  = "response.audio_transcript.done"
	BetaTextDelta       = "response.text.delta"
	BetaTextDone        = "response.text.done"
)

// Error codes the clients treat specially.
const (
	CodeActiveResponse    = "conversation_already_has_active_response"
	CodeCommitEmpty       = "input_audio_buffer_commit_empty"
	CodeCancelNotActive   = "response_cancel_not_active"
	CodeUnknownParameter  = "unknown_parameter"
	CodeInvalidValue      = "invalid_value"
	CodeInvalidAPIKey     = "invalid_api_key"
	CodeRateLimitExceeded = "rate_limit_exceeded"
	CodeServerError       = "server_error"
)

// Names are the server event names of one schema.
type Names struct {
	AudioDelta, AudioDone           string
	TranscriptDelta, TranscriptDone string
	ContentType                     string // content part type of assistant audio: output_audio (GA) or audio (beta)
	ItemAdded                       string // conversation.item.added (GA) or conversation.item.created (beta)
	ItemDone                        bool   // GA also sends conversation.item.done
}

// NamesFor returns the event names of s.
func NamesFor(s Schema) Names {
	if s == SchemaBeta {
		return Names{BetaAudioDelta, BetaAudioDone, BetaTranscriptDelta, BetaTranscriptDone, "audio", ItemCreated, false}
	}
	return Names{GAAudioDelta, GAAudioDone, GATranscriptDelta, GATranscriptDone, "output_audio", ItemAdded, s == SchemaGA}
}

// ClientEvent is any client event; each type uses its own fields.
type ClientEvent struct {
	Type           string          `json:"type"`
	EventID        string          `json:"event_id,omitempty"`
	Session        json.RawMessage `json:"session,omitempty"`
	Audio          string          `json:"audio,omitempty"`
	PreviousItemID string          `json:"previous_item_id,omitempty"`
	Item           *Item           `json:"item,omitempty"`
	Response       json.RawMessage `json:"response,omitempty"`
	ResponseID     string          `json:"response_id,omitempty"`
	ItemID         string          `json:"item_id,omitempty"`
	ContentIndex   *int            `json:"content_index,omitempty"`
	AudioEndMS     *int            `json:"audio_end_ms,omitempty"`
}

// ServerEvent is any server event; each type uses its own fields. Index fields are pointers so
// that a zero index is sent while absent ones are omitted.
type ServerEvent struct {
	Type           string          `json:"type"`
	EventID        string          `json:"event_id,omitempty"`
	Session        json.RawMessage `json:"session,omitempty"`
	Conversation   *Conversation   `json:"conversation,omitempty"`
	Response       *Response       `json:"response,omitempty"`
	PreviousItemID *string         `json:"previous_item_id,omitempty"`
	Item           *Item           `json:"item,omitempty"`
	ResponseID     string          `json:"response_id,omitempty"`
	ItemID         string          `json:"item_id,omitempty"`
	OutputIndex    *int            `json:"output_index,omitempty"`
	ContentIndex   *int            `json:"content_index,omitempty"`
	Part           *Content        `json:"part,omitempty"`
	Delta          string          `json:"delta,omitempty"`
	Transcript     *string         `json:"transcript,omitempty"`
	Text           *string         `json:"text,omitempty"`
	CallID         string          `json:"call_id,omitempty"`
	Name           string          `json:"name,omitempty"`
	Arguments      *string         `json:"arguments,omitempty"`
	AudioStartMS   *int            `json:"audio_start_ms,omitempty"`
	AudioEndMS     *int            `json:"audio_end_ms,omitempty"`
	Error          *ErrorDetail    `json:"error,omitempty"`
	Usage          *Usage          `json:"usage,omitempty"` // Grok: top level of response.done
	RateLimits     []RateLimit     `json:"rate_limits,omitempty"`
	Timestamp      int64           `json:"timestamp,omitempty"`
}

// Conversation is the object of conversation.created.
type Conversation struct {
	ID     string `json:"id"`
	Object string `json:"object"`
}

// Item is a conversation item: a message, a function call or a function call output.
type Item struct {
	ID        string    `json:"id,omitempty"`
	Object    string    `json:"object,omitempty"`
	Type      string    `json:"type"`
	Status    string    `json:"status,omitempty"`
	Role      string    `json:"role,omitempty"`
	Content   []Content `json:"content,omitempty"`
	CallID    string    `json:"call_id,omitempty"`
	Name      string    `json:"name,omitempty"`
	Arguments *string   `json:"arguments,omitempty"`
	Output    *string   `json:"output,omitempty"`
}

// Content is one content part of a message item.
type Content struct {
	Type       string  `json:"type"`
	Text       string  `json:"text,omitempty"`
	Audio      string  `json:"audio,omitempty"`
	Transcript *string `json:"transcript,omitempty"`
}

// Response is the response object of response.created and response.done.
type Response struct {
	ID            string         `json:"id"`
	Object        string         `json:"object"`
	Status        string         `json:"status"`
	StatusDetails *StatusDetails `json:"status_details"`
	Output        []Item         `json:"output"`
	Usage         *Usage         `json:"usage"`
}

// StatusDetails says why a response ended as it did.
type StatusDetails struct {
	Type   string       `json:"type"`
	Reason string       `json:"reason,omitempty"`
	Error  *ErrorDetail `json:"error,omitempty"`
}

// Usage is the token usage of a response.
type Usage struct {
	TotalTokens        int           `json:"total_tokens"`
	InputTokens        int           `json:"input_tokens"`
	OutputTokens       int           `json:"output_tokens"`
	InputTokenDetails  *TokenDetails `json:"input_token_details,omitempty"`
	OutputTokenDetails *TokenDetails `json:"output_token_details,omitempty"`
}

// TokenDetails splits tokens by modality.
type TokenDetails struct {
	TextTokens   int `json:"text_tokens"`
	AudioTokens  int `json:"audio_tokens"`
	CachedTokens int `json:"cached_tokens,omitempty"`
}

// ErrorDetail is the error object of an error event (and of a failed response).
type ErrorDetail struct {
	Type    string  `json:"type"`
	Code    string  `json:"code,omitempty"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
	EventID *string `json:"event_id"`
}

// RateLimit is one entry of rate_limits.updated.
type RateLimit struct {
	Name         string  `json:"name"`
	Limit        int     `json:"limit"`
	Remaining    int     `json:"remaining"`
	ResetSeconds float64 `json:"reset_seconds"`
}

// Session shapes the clients send. Absent fields leave the provider's value unchanged.

// SessionGA is the GA session object.
type SessionGA struct {
	Type             string       `json:"type"`
	Model            string       `json:"model,omitempty"`
	OutputModalities []string     `json:"output_modalities,omitempty"`
	Instructions     string       `json:"instructions,omitempty"`
	Audio            *AudioConfig `json:"audio,omitempty"`
	Tools            []Tool       `json:"tools,omitempty"`
	ToolChoice       string       `json:"tool_choice,omitempty"`
}

// SessionBeta is the beta (and StepFun) session object.
type SessionBeta struct {
	Modalities              []string        `json:"modalities,omitempty"`
	Instructions            string          `json:"instructions,omitempty"`
	Voice                   string          `json:"voice,omitempty"`
	InputAudioFormat        string          `json:"input_audio_format,omitempty"`
	OutputAudioFormat       string          `json:"output_audio_format,omitempty"`
	InputAudioTranscription *Transcription  `json:"input_audio_transcription,omitempty"`
	TurnDetection           json.RawMessage `json:"turn_detection,omitempty"`
	Tools                   []Tool          `json:"tools,omitempty"`
	ToolChoice              string          `json:"tool_choice,omitempty"`
}

// SessionGrok is xAI's flat session object.
type SessionGrok struct {
	Instructions  string          `json:"instructions,omitempty"`
	Voice         string          `json:"voice,omitempty"`
	TurnDetection json.RawMessage `json:"turn_detection,omitempty"`
	Audio         *AudioConfig    `json:"audio,omitempty"`
	Tools         []Tool          `json:"tools,omitempty"`
}

// AudioConfig is the nested audio configuration (GA, Grok).
type AudioConfig struct {
	Input  *AudioInput  `json:"input,omitempty"`
	Output *AudioOutput `json:"output,omitempty"`
}

// AudioInput configures caller audio. TurnDetection "null" selects manual turns.
type AudioInput struct {
	Format        *AudioFormat    `json:"format,omitempty"`
	TurnDetection json.RawMessage `json:"turn_detection,omitempty"`
	Transcription *Transcription  `json:"transcription,omitempty"`
}

// AudioOutput configures agent audio.
type AudioOutput struct {
	Format *AudioFormat `json:"format,omitempty"`
	Voice  string       `json:"voice,omitempty"`
}

// AudioFormat is {"type":"audio/pcm","rate":24000}.
type AudioFormat struct {
	Type string `json:"type"`
	Rate int    `json:"rate,omitempty"`
}

// PCM24k is the PCM16 24 kHz format object.
func PCM24k() *AudioFormat { return &AudioFormat{Type: "audio/pcm", Rate: SampleRate} }

// Transcription asks for caller transcripts.
type Transcription struct {
	Model string `json:"model"`
}

// TurnDetection is server VAD configuration.
type TurnDetection struct {
	Type              string `json:"type"`
	SilenceDurationMS int    `json:"silence_duration_ms,omitempty"`
	CreateResponse    *bool  `json:"create_response,omitempty"`
	InterruptResponse *bool  `json:"interrupt_response,omitempty"`
}

// Tool is a function tool definition.
type Tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Int returns a pointer to i, for index fields.
func Int(i int) *int { return &i }

// Str returns a pointer to s, for fields that must be sent even when empty.
func Str(s string) *string { return &s }
