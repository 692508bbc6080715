// Package agent defines how a session talks to an evaluated voice agent: one Adapter interface over
// every realtime speech-to-speech protocol family, and the normalized events the session records,
// plays and dispatches. The families live in subpackages (openai, gemini, gptlive, elevenlabs); systems
// names the evaluated systems and dials them; realtimeserver is the one server of the OpenAI
// family, which the reference agent and the protocol fakes of agenttest drive.
//
// # The agent's turn
//
// Providers end an agent's turn in different shapes. In the OpenAI Realtime family a response
// that calls tools ends with response.done, and the answer comes in a second response after the
// client sends the outputs and response.create (or, on some servers, as soon as they have the
// outputs). Gemini Live continues the same model turn once
// it gets the toolResponse and ends it with one turnComplete; some Gemini models instead close
// the tool-call turn with turnComplete and answer in a new turn. GPT-Live has no turns at all.
// A session must never guess which shape it faces from EventResponseDone and tool counts.
//
// So every adapter emits exactly one EventTurnEnd when the agent's turn is really over: no
// further agent output (audio, transcript, tool call) is coming unless the caller says something
// (or the session sends input of its own). In particular no EventTurnEnd is emitted while a tool
// call of the turn waits for its result, nor after the results are sent and before the
// provider's continuation has ended. EventResponseDone still reports every provider response (an
// agent turn may hold several) for the trace. An adapter of a new family must keep the same
// contract:
//
//   - emit EventTurnEnd after the last event of the turn (after its EventResponseDone, when the
//     family has one), once per agent turn, with Status completed, cancelled (the caller barged
//     in or the provider's VAD cut the agent off: the caller has the floor), failed or incomplete;
//   - never emit it while the provider still owes the continuation of a tool call;
//   - where the protocol has no end-of-turn signal, infer it from what the provider sent (and say
//     so in docs/systems.md), never from a timer started by the session.
//
// The synthetic caller takes the floor on EventTurnEnd (other than cancelled) once the agent's
// audio has played out.
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

// Schema is the tool's parameters, or the schema of no parameters (an empty object) that the
// providers require when it has none.
func (t Tool) Schema() json.RawMessage {
	if len(t.Parameters) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return t.Parameters
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

// Applied is what a provider applied to a session, as far as its protocol says: what a connect
// check reports before a study relies on the system.
type Applied struct {
	// Tools are the names of the tools installed, in the provider's order.
	Tools []string
	// Voice is the voice the session speaks with.
	Voice string
	// InputRate and OutputRate are the PCM16 rates of caller and agent audio.
	InputRate, OutputRate int
	// TurnDetection is how turns end: "manual" (our endpointer) or the provider's detector
	// ("server_vad", "semantic_vad", "automatic", "full_duplex").
	TurnDetection string
	// Echoed says the provider returned its effective configuration (OpenAI session.updated,
	// GPT-Live session.started); false means it only accepted what was sent (Gemini's
	// setupComplete echoes nothing), so the fields repeat the request.
	Echoed bool
	// Notes say what the adapter changed to make the provider accept the session (schema
	// keywords dropped or rewritten, a voice substituted).
	Notes []string
}

// Clone returns a copy that shares no slice with a.
func (a Applied) Clone() Applied {
	a.Tools = append([]string(nil), a.Tools...)
	a.Notes = append([]string(nil), a.Notes...)
	return a
}

// SessionReporter is an Adapter that reports what the provider applied, once Connect succeeded.
type SessionReporter interface {
	Applied() Applied
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
	// EventTurnEnd says the agent's turn is really over: no further output comes without new
	// input from the caller. Status is completed, cancelled (the caller took the floor: barge-in
	// or provider VAD), failed or incomplete. See "The agent's turn" in the package doc.
	EventTurnEnd EventType = "turn_end"
	// EventReconnect says the adapter moved the call to a new provider connection (a resumed
	// session) without losing it: Text says why ("goAway: 10s left"). Audio, tool calls and the
	// caller's media clock continue; nothing is replayed.
	EventReconnect EventType = "reconnect"
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
