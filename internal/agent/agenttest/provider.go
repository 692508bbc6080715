package agenttest

import (
	"github.com/voicebench/humanaudit/internal/agent/openai/wire"
	"github.com/voicebench/humanaudit/internal/agent/realtimeserver"
)

// Provider describes, from each provider's documentation, what an OpenAI-family server accepts
// and how it behaves where providers differ (realtimeserver.Provider). It is deliberately
// independent of the client's dialect table, so that a client mistake is caught rather than
// mirrored.
type Provider = realtimeserver.Provider

var (
	gaVoices   = []string{"alloy", "ash", "ballad", "coral", "echo", "sage", "shimmer", "verse", "marin", "cedar"}
	gaConflict = "Conversation already has an active response in progress: %s. Wait until the response is finished before creating a new one."
	vadTypes   = []string{"server_vad", "semantic_vad"}
)

// The OpenAI-family providers.
var (
	OpenAIGA = Provider{Name: "openai", Schema: wire.SchemaGA, Voices: gaVoices,
		Greeting: []string{wire.SessionCreated}, ConflictMessage: gaConflict,
		DefaultServerVAD: true, DefaultVoice: "alloy", OutputModalities: [][]string{{"audio"}, {"text"}}, TurnTypes: vadTypes,
		RateLimits: true}
	OpenAIBeta = Provider{Name: "openai-beta", Schema: wire.SchemaBeta, BetaHeader: true,
		Voices:   []string{"alloy", "ash", "ballad", "coral", "echo", "sage", "shimmer", "verse"},
		Greeting: []string{wire.SessionCreated}, ConflictMessage: gaConflict,
		DefaultServerVAD: true, DefaultVoice: "alloy", OutputModalities: [][]string{{"audio", "text"}, {"text"}}, G711: true,
		TurnTypes: vadTypes, RateLimits: true}
	XAIGrok = Provider{Name: "grok", Schema: wire.SchemaGrok, VoiceFold: true,
		Voices:             []string{"Ara", "Rex", "Sal", "Eve", "Leo"},
		Greeting:           []string{wire.ConversationCreated, wire.SessionCreated, wire.Ping},
		ConflictMessage:    "A response is already in progress: %s",
		HangOnPartialBatch: true, DefaultServerVAD: true, DefaultVoice: "Eve", TurnTypes: []string{"server_vad"},
		// xAI refuses a wrong key with HTTP 400 (public reports: beeai-framework #447,
		// continuedev/continue #10778), not 401.
		KeyRefusal: &realtimeserver.KeyRefusal{Status: 400,
			Body: `{"code":"Client specified an invalid argument","error":"Incorrect API key provided: %s. You can obtain an API key from https://console.x.ai."}`}}
	// StepFunRealtime: step-audio-2 and step-audio-2-mini speak only qingchunshaonv and
	// wenrounansheng (platform.stepfun.com realtime docs); older models the four voices.
	StepFunRealtime = Provider{Name: "stepfun", Schema: wire.SchemaBeta,
		Voices:          []string{"qingchunshaonv", "wenrounansheng", "elegantgentle-female", "livelybreezy-female"},
		ModelVoices:     map[string][]string{"step-audio-2": {"qingchunshaonv", "wenrounansheng"}},
		Greeting:        []string{wire.SessionCreated},
		ConflictMessage: "ongoing response already exists: %s",
		DefaultVoice:    "qingchunshaonv", OutputModalities: [][]string{{"audio", "text"}}, TurnTypes: []string{"server_vad"},
		RateLimits: true}
)
