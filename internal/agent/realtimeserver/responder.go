package realtimeserver

import (
	"net/http"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/openai/wire"
)

// Responder is the agent behind a Server: it opens one Agent per connection.
type Responder interface {
	// Open starts the agent of a new connection, before the server greets the client.
	Open(c *Conn) Agent
}

// Agent is one connection's agent. The server does the protocol (handshake, session validation,
// the input buffer and turn detection, items, the one active response, cancel and truncate) and
// tells the agent only what it hears and when to respond. All methods but Respond and Close are
// called on the connection's reader goroutine in protocol order; Respond runs on the response
// goroutine, one response at a time in the order they were created; Close comes last. The server
// holds none of its locks during these calls.
//
// An agent may also implement Listener, Admitter and Truncater.
type Agent interface {
	// Configure applies the effective session: once when the connection opens, then after every
	// accepted update.
	Configure(s Session)
	// Commit takes a caller turn that became a conversation item: committed audio, or a user
	// message the client created.
	Commit(t Turn)
	// Respond produces one response (already announced with response.created) through r, and
	// says how it ended.
	Respond(r *Response) Outcome
	// Close releases the agent once the connection has ended and Respond has returned.
	Close()
}

// Listener is an Agent that hears a caller turn while it is spoken (to recognize it as it goes).
type Listener interface {
	// Listen receives the audio of the turn being spoken, in order from its first sample (manual
	// turns: all audio appended since the last commit; server VAD: from the padded speech start).
	// Commit or Clear ends the turn.
	Listen(pcm []int16)
	// Clear drops the turn being spoken (input_audio_buffer.clear).
	Clear()
}

// Admitter is an Agent that decides on the client's response.create once the server has found it
// valid; without it every valid request starts a response. Responses that server VAD starts are
// not asked about.
type Admitter interface {
	// Admit returns nil to start the response, or a Refusal.
	Admit(eventID string) *Refusal
}

// Truncater is an Agent told when the client cuts the agent's audio short.
type Truncater interface {
	// Truncate says the caller heard the agent's audio item only up to audioEndMS.
	Truncate(itemID string, audioEndMS int)
}

// Refusal answers a response.create without a response: with an error event (Error set), or with
// nothing at all (as some providers do).
type Refusal struct {
	Error *wire.ErrorDetail
}

// Turn is one caller turn.
type Turn struct {
	ItemID string
	// PCM is the turn's audio (24 kHz); Text the text of a user message.
	PCM  []int16
	Text string
	// Message says the turn came as a conversation item the client created, not from the input
	// audio buffer.
	Message bool
}

// ToolOutput is the client's function_call_output for one of the agent's calls.
type ToolOutput struct {
	CallID, Name, Output string
}

// Session is the effective session configuration of a connection.
type Session struct {
	Model             string
	Instructions      string
	Tools             []wire.Tool // as the client sent them (parameters verbatim, property order kept)
	Voice             string
	ServerVAD         bool
	SilenceMS         int
	PrefixMS          int
	CreateResponse    bool
	InterruptResponse bool
	Transcription     bool // the client asked for caller transcripts
}

// VAD is the server's turn detection on caller audio (24 kHz), standing in for a provider's
// server VAD.
type VAD interface {
	// Feed analyses audio whose first sample is at start (time since the connection's first
	// caller sample) and returns the speech boundaries found in it.
	Feed(pcm []int16, start time.Duration) []SpeechEvent
	// Speaking reports whether the caller is speaking now.
	Speaking() bool
}

// SpeechEvent is a speech boundary found by a VAD.
type SpeechEvent struct {
	Start bool          // speech started; false: it ended
	At    time.Duration // onset or offset
	// Padded is where a turn's audio begins: At minus the prefix padding (start events).
	Padded time.Duration
}

// Observer sees a server's traffic, for tests that assert on it. Its methods are called
// synchronously and must not block.
type Observer interface {
	// Upgrade sees every upgrade request, before the server accepts or refuses it.
	Upgrade(r *http.Request)
	// Received sees every client message as read (typ "(invalid json)" when it does not parse),
	// before the server acts on it.
	Received(conn int, typ string, data []byte)
	// Sent sees every server event just before it is written.
	Sent(conn int, ev *wire.ServerEvent)
	// Misuse sees client behaviour the real API answers by stalling rather than with an error
	// (a response.create before every output of a tool batch, a second output for one call).
	Misuse(conn int, what string)
}
