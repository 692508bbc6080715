// Package openai is the client adapter of the OpenAI Realtime protocol family: OpenAI GA and beta,
// xAI Grok and StepFun, each a Dialect of one implementation because they differ only in session
// shape, event names and framing. (GPT-Live, OpenAI's full-duplex API, is another protocol:
// package gptlive.)
package openai

import (
	"encoding/json"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/openai/wire"
)

// Dialect is what distinguishes one provider of the family.
type Dialect struct {
	// Name is the family name used in systems files.
	Name string
	// Schema selects the session.update layout and the expected server event names (the client
	// accepts both GA and beta spellings whatever the schema).
	Schema wire.Schema
	// BetaHeader sends "OpenAI-Beta: realtime=v1" (beta only: GA must not).
	BetaHeader bool
	// Voices is the provider's allow-list; DefaultVoice replaces an unknown voice.
	Voices       []string
	DefaultVoice string
	// ModelVoices narrows Voices for the models whose documentation lists fewer (by model name
	// or a prefix of it, the longest that matches).
	ModelVoices map[string][]string
	// NoTranscription: the provider ignores a transcription model (xAI drops it silently), so a
	// systems file asking for one is warned about.
	NoTranscription bool
	// ToolChoice sends tool_choice "auto" (without it some models never call tools). Grok's
	// session has no such field.
	ToolChoice bool
	// ResponseModalities sends response.create with response.modalities (Grok).
	ResponseModalities bool
}

var (
	gaVoices   = []string{"alloy", "ash", "ballad", "coral", "echo", "sage", "shimmer", "verse", "marin", "cedar"}
	betaVoices = []string{"alloy", "ash", "ballad", "coral", "echo", "sage", "shimmer", "verse"}
)

// The dialects of the family.
var (
	// GA is OpenAI Realtime GA (gpt-realtime, gpt-realtime-mini) and compatible servers.
	GA = Dialect{Name: "openai", Schema: wire.SchemaGA, Voices: gaVoices, DefaultVoice: "marin", ToolChoice: true}
	// Beta is the OpenAI Realtime beta schema (gpt-4o-realtime-preview*).
	Beta = Dialect{Name: "openai-beta", Schema: wire.SchemaBeta, BetaHeader: true, Voices: betaVoices, DefaultVoice: "alloy", ToolChoice: true}
	// Grok is xAI's Grok voice agent API.
	Grok = Dialect{Name: "grok", Schema: wire.SchemaGrok, Voices: []string{"Ara", "Rex", "Sal", "Eve", "Leo"}, DefaultVoice: "Ara",
		ResponseModalities: true, NoTranscription: true}
	// StepFun is StepFun realtime (step-1o-audio, step-audio-2): beta schema, its own voices;
	// step-audio-2 and step-audio-2-mini speak only two of them (platform.stepfun.com docs).
	StepFun = Dialect{Name: "stepfun", Schema: wire.SchemaBeta,
		Voices:       []string{"qingchunshaonv", "wenrounansheng", "elegantgentle-female", "livelybreezy-female"},
		DefaultVoice: "qingchunshaonv", ToolChoice: true,
		ModelVoices: map[string][]string{"step-audio-2": {"qingchunshaonv", "wenrounansheng"}}}
)

// Dialects lists the family's dialects by systems-file name.
var Dialects = map[string]Dialect{GA.Name: GA, Beta.Name: Beta, Grok.Name: Grok, StepFun.Name: StepFun}

// VoicesFor returns the voices model may use: ModelVoices' entry for the longest model name (or
// prefix of it) that matches, else Voices.
func (d Dialect) VoicesFor(model string) []string {
	return wire.VoicesFor(model, d.Voices, d.ModelVoices)
}

// Options configure an Adapter.
type Options struct {
	// URL is the WebSocket endpoint (wss://api.openai.com/v1/realtime); the model is added as
	// ?model= unless the dialect names it in session.start.
	URL     string
	Model   string
	Key     string // bearer key; empty sends no Authorization header (the reference agent)
	Dialect Dialect
	// ExtraVoices extends the dialect's allow-list (custom or newly released voices).
	ExtraVoices []string
	// TranscriptionModel asks the provider for caller transcripts (e.g. gpt-4o-mini-transcribe).
	TranscriptionModel string
	// SilenceMS sets server VAD's silence_duration_ms when server turn detection is on (0 = provider default).
	SilenceMS int
	// PreRollMS is how much caller audio from before StartTurn is sent when a turn starts, in
	// matched turn-taking (default 500 ms: the endpointer's confirmation delay plus its padding).
	PreRollMS int
	Timeouts  Timeouts
	// EventLimit bounds undelivered events before the adapter fails with an overflow (default 8192).
	EventLimit int
}

// Timeouts bound every wait. Zero fields take the defaults.
type Timeouts struct {
	Handshake     time.Duration // dial plus session handshake (default 15 s)
	Write         time.Duration // one frame (default 5 s)
	Idle          time.Duration // nothing from the provider, pongs included (default 60 s)
	Ping          time.Duration // keep-alive interval (default 15 s)
	ResponseStart time.Duration // response.create to response.created (default 15 s)
}

func (t Timeouts) withDefaults() Timeouts {
	if t.Handshake <= 0 {
		t.Handshake = 15 * time.Second
	}
	if t.ResponseStart <= 0 {
		t.ResponseStart = 15 * time.Second
	}
	return t
}

// sessionObject builds the session of session.update (or session.start) for the dialect.
func (o *Options) sessionObject(instructions string, tools []wire.Tool, voice string, serverVAD bool) any {
	d := o.Dialect
	toolChoice := ""
	if d.ToolChoice && len(tools) > 0 {
		toolChoice = "auto"
	}
	var transcription *wire.Transcription
	if o.TranscriptionModel != "" {
		transcription = &wire.Transcription{Model: o.TranscriptionModel}
	}
	turn := json.RawMessage("null")
	if serverVAD {
		td := wire.TurnDetection{Type: "server_vad", SilenceDurationMS: o.SilenceMS}
		if d.Schema == wire.SchemaGA {
			t := true
			td.CreateResponse, td.InterruptResponse = &t, &t
		}
		turn, _ = json.Marshal(td)
	}
	switch d.Schema {
	case wire.SchemaBeta:
		return &wire.SessionBeta{
			Modalities: []string{"text", "audio"}, Instructions: instructions, Voice: voice,
			InputAudioFormat: "pcm16", OutputAudioFormat: "pcm16", InputAudioTranscription: transcription,
			TurnDetection: turn, Tools: tools, ToolChoice: toolChoice,
		}
	case wire.SchemaGrok:
		return &wire.SessionGrok{
			Instructions: instructions, Voice: voice, TurnDetection: turn, Tools: tools,
			Audio: &wire.AudioConfig{Input: &wire.AudioInput{Format: wire.PCM24k()}, Output: &wire.AudioOutput{Format: wire.PCM24k()}},
		}
	default:
		s := &wire.SessionGA{
			Type: "realtime", OutputModalities: []string{"audio"}, Instructions: instructions,
			Audio: &wire.AudioConfig{
				Input:  &wire.AudioInput{Format: wire.PCM24k(), TurnDetection: turn, Transcription: transcription},
				Output: &wire.AudioOutput{Format: wire.PCM24k(), Voice: voice},
			},
			Tools: tools, ToolChoice: toolChoice,
		}
		return s
	}
}
