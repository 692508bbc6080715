// Package agent defines how a session talks to an evaluated voice agent: one Adapter interface over
// every realtime speech-to-speech protocol family, and the normalized events the session records,
// plays and dispatches. The families live in subpackages (openai, gemini, elevenlabs); systems
// names the evaluated systems and dials them; agenttest holds faithful protocol fakes for tests.
package agent

import (
	"context"
	"encoding/json"
	"log/slog"
)

// Adapter is one live connection to an evaluated agent. Methods other than Events may be called
// from different goroutines; none blocks longer than its write deadline.
//
// Backpressure: the socket reader never waits for the consumer. Events queue inside the adapter
// (up to a bound of several thousand, minutes of audio deltas) and a pump feeds the Events
// channel. If the consumer falls so far behind that the bound is reached, the adapter drops the
// connection and ends the stream with a fatal Error of class ClassOverflow; it never drops audio
// silently. Audio of a response the caller interrupted (Interrupt) is discarded on purpose and
// still appears, elided, in the raw events.
type Adapter interface {
	// Connect dials the provider and completes the session handshake (session.update, setup) with
	// the given config; every wait is bounded by ctx and the adapter's own timeouts.
	Connect(ctx context.Context, cfg Config) error
	// Format reports the PCM16 mono sample rates the provider takes and sends.
	Format() Format
	// SendAudio queues one caller frame (40 ms) at Format().InputRate.
	SendAudio(pcm []int16) error
	// StartTurn tells the provider our endpointer heard caller speech begin (matched turn-taking).
	StartTurn() error
	// EndTurn tells the provider our endpointer heard the caller's turn end and asks for a reply.
	EndTurn() error
	// Interrupt cancels the active response (barge-in) and truncates the agent's audio item at
	// playedMS, the milliseconds of that item the caller actually heard.
	Interrupt(playedMS int) error
	// SendToolResult returns the output of one tool call; the adapter batches per family and asks
	// for the follow-up response once every call of the batch has its result.
	SendToolResult(callID, name string, output json.RawMessage) error
	// Events delivers normalized events in provider order. It is closed after Close, or after a
	// fatal Error event when the connection is lost.
	Events() <-chan Event
	// Close ends the connection and releases every goroutine, whether or not Events was drained.
	Close() error
}

// Tool is a function the agent may call, with its parameters as a JSON schema.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Config is what a session asks of the agent for one call.
type Config struct {
	Instructions string
	Tools        []Tool
	// Voice is the provider voice; an unknown voice is replaced by the family's default before the
	// session is configured (an unknown voice makes some providers reject the whole update).
	Voice string
	// ServerTurnDetection lets the provider's own VAD end turns. False is matched turn-taking: our
	// caller endpointer ends every turn through StartTurn and EndTurn.
	ServerTurnDetection bool
	// Logger receives connection diagnostics; nil discards them.
	Logger *slog.Logger
}

// Format gives the PCM16 mono sample rates a provider takes (caller audio) and sends (agent audio).
type Format struct {
	InputRate  int
	OutputRate int
}

// EventType names a normalized agent event.
type EventType string

// Normalized event types.
const (
	EventAudioDelta      EventType = "audio_delta"      // Audio at OutputRate
	EventTranscriptDelta EventType = "transcript_delta" // Text: a piece of what the agent says
	EventTranscriptDone  EventType = "transcript_done"  // Text: the full transcript of one agent item
	EventToolCall        EventType = "tool_call"        // CallID, Name, Arguments (once per call id)
	EventResponseDone    EventType = "response_done"    // Status: completed|cancelled|failed|incomplete
	// EventInterrupted says the provider itself cut its response short (Gemini interrupted, OpenAI
	// server VAD cancelling on caller speech): flush agent audio that is queued but not yet played.
	EventInterrupted         EventType = "interrupted"
	EventCallerSpeechStarted EventType = "caller_speech_started" // provider VAD heard the caller
	EventCallerSpeechStopped EventType = "caller_speech_stopped"
	EventCallerTranscript    EventType = "caller_transcript" // Text: provider transcript of a caller turn
	EventUsage               EventType = "usage"             // Usage of one response
	EventError               EventType = "error"             // Err; fatal ones end the stream
	// EventRaw carries a provider event (or, with Outbound, a control event we sent) that has no
	// normalized meaning, so that the trace keeps every event of the conversation.
	EventRaw EventType = "raw"
)

// Event is one normalized agent event. Each type uses the fields it needs.
//
// RawType/Raw hold the provider's event verbatim, with base64 audio replaced by its decoded byte
// count and bounded in size (MaxRawBytes). Every provider message is attached to exactly one
// Event (the first it produced, or an EventRaw), so storing each Event with a non-empty RawType as
// an agent.raw trace event keeps the provider stream complete without duplicates.
type Event struct {
	Type  EventType
	Audio []int16
	Text  string

	ResponseID string
	ItemID     string

	CallID    string
	Name      string
	Arguments json.RawMessage

	Status string
	Usage  *Usage
	Err    *Error

	RawType  string
	Raw      json.RawMessage
	Outbound bool // Raw is a client event we sent (session.update, response.create, …)
}

// Response statuses carried by EventResponseDone.
const (
	StatusCompleted  = "completed"
	StatusCancelled  = "cancelled"
	StatusFailed     = "failed"
	StatusIncomplete = "incomplete"
)

// MaxRawBytes bounds the raw copy kept per event; larger events keep a prefix (see BoundRaw).
const MaxRawBytes = 16 << 10

// Usage is what one response cost. Tokens are as the provider reports them (zero when it reports
// none); audio seconds are measured by the adapter: caller audio sent since the previous usage
// event and agent audio received for this response.
type Usage struct {
	InputTokens        int
	OutputTokens       int
	InputAudioTokens   int
	OutputAudioTokens  int
	InputAudioSeconds  float64
	OutputAudioSeconds float64
}
