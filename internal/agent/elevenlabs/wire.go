// Package elevenlabs is the client adapter of the ElevenLabs Agents Platform (Conversational AI)
// WebSocket protocol: a signed-URL (private agent) or agent-ID (public agent) connection, the
// conversation_initiation_client_data overrides (the task's prompt, an empty first message so the
// agent waits for the caller), the audio formats negotiated in conversation_initiation_metadata,
// caller audio as user_audio_chunk, agent audio, agent_response and user_transcript, the
// platform's own turn-taking and interruptions, pings that must be answered, and client tools
// whose results must echo the call id. The platform's agent (its LLM, voice and the task's tool
// declarations) is provisioned on the platform; docs/systems.md says what must be set there, what
// the adapter overrides and what of the protocol is inferred.
package elevenlabs

import "encoding/json"

// DefaultURL is the conversation WebSocket; DefaultAPIURL the REST base of signed URLs and agent
// configurations.
const (
	DefaultURL    = "wss://api.elevenlabs.io/v1/convai/conversation"
	DefaultAPIURL = "https://api.elevenlabs.io"
	// SignedURLPath returns a short-lived signed conversation URL for a private agent.
	SignedURLPath = "/v1/convai/conversation/get-signed-url"
	// AgentPath is an agent's configuration (GET AgentPath + id); ToolPath a workspace tool's.
	AgentPath = "/v1/convai/agents/"
	ToolPath  = "/v1/convai/tools/"
	// KeyHeader carries the API key on REST requests.
	KeyHeader = "xi-api-key"
)

// Client events.
const (
	TypeInitiation = "conversation_initiation_client_data"
	TypePong       = "pong"
	TypeToolResult = "client_tool_result"
	TypeActivity   = "user_activity"
	// AudioKey is the bare key of a caller audio chunk: {"user_audio_chunk": "<base64>"}, a frame
	// without a "type".
	AudioKey = "user_audio_chunk"
)

// Server events.
const (
	TypeMetadata         = "conversation_initiation_metadata"
	TypeAudio            = "audio"
	TypeAgentResponse    = "agent_response"
	TypeAgentCorrection  = "agent_response_correction"
	TypeUserTranscript   = "user_transcript"
	TypeInterruption     = "interruption"
	TypePing             = "ping"
	TypeClientToolCall   = "client_tool_call"
	TypeVADScore         = "vad_score"
	TypeTentative        = "internal_tentative_agent_response"
	TypeAgentToolRequest = "agent_tool_request"
	TypeAgentToolResp    = "agent_tool_response"
	TypeError            = "error"
)

// Initiation is conversation_initiation_client_data.
type Initiation struct {
	Type     string    `json:"type"`
	Override *Override `json:"conversation_config_override,omitempty"`
	// DynamicVariables fill {{placeholders}} of the platform prompt; the adapter sends none.
	DynamicVariables map[string]string `json:"dynamic_variables,omitempty"`
}

// Override is the part of the agent's configuration a conversation may replace, when the
// platform's security settings allow each field.
type Override struct {
	Agent *AgentOverride `json:"agent,omitempty"`
	TTS   *TTSOverride   `json:"tts,omitempty"`
}

// AgentOverride replaces the system prompt, the first message and the language.
type AgentOverride struct {
	Prompt *PromptOverride `json:"prompt,omitempty"`
	// FirstMessage is what the agent says on connecting; "" makes it wait for the caller.
	FirstMessage *string `json:"first_message,omitempty"`
	Language     string  `json:"language,omitempty"`
}

// PromptOverride is the system prompt.
type PromptOverride struct {
	Prompt string `json:"prompt"`
}

// TTSOverride replaces the voice.
type TTSOverride struct {
	VoiceID string `json:"voice_id,omitempty"`
}

// ToolResult answers one client_tool_call.
type ToolResult struct {
	Type       string `json:"type"`
	ToolCallID string `json:"tool_call_id"`
	Result     string `json:"result"`
	IsError    bool   `json:"is_error"`
}

// Pong answers a ping with its event id.
type Pong struct {
	Type    string `json:"type"`
	EventID int64  `json:"event_id"`
}

// ServerMessage is any server event; each type fills its own field.
type ServerMessage struct {
	Type       string         `json:"type"`
	Metadata   *Metadata      `json:"conversation_initiation_metadata_event,omitempty"`
	Audio      *AudioEvent    `json:"audio_event,omitempty"`
	Response   *ResponseEvent `json:"agent_response_event,omitempty"`
	Correction *struct {
		Original  string `json:"original_agent_response"`
		Corrected string `json:"corrected_agent_response"`
		EventID   int64  `json:"event_id,omitempty"`
	} `json:"agent_response_correction_event,omitempty"`
	Transcript *struct {
		Text    string `json:"user_transcript"`
		EventID int64  `json:"event_id,omitempty"`
	} `json:"user_transcription_event,omitempty"`
	Interruption *struct {
		EventID int64  `json:"event_id"`
		Reason  string `json:"reason,omitempty"`
	} `json:"interruption_event,omitempty"`
	Ping *struct {
		EventID int64 `json:"event_id"`
		PingMS  *int  `json:"ping_ms,omitempty"`
	} `json:"ping_event,omitempty"`
	ToolCall *ToolCall `json:"client_tool_call,omitempty"`
	// Error comes nested or flat ({"type":"error","message":…}) depending on the server path.
	ErrorEvent *struct {
		Type    string `json:"error_type"`
		Code    any    `json:"code,omitempty"`
		Message string `json:"message"`
	} `json:"error_event,omitempty"`
	Message string `json:"message,omitempty"`
}

// Metadata is what the platform confirms for the conversation.
type Metadata struct {
	ConversationID string `json:"conversation_id"`
	OutputFormat   string `json:"agent_output_audio_format"`
	InputFormat    string `json:"user_input_audio_format"`
}

// AudioEvent is a chunk of agent audio; EventID is the agent response it belongs to.
type AudioEvent struct {
	Audio   string `json:"audio_base_64"`
	EventID int64  `json:"event_id"`
}

// ResponseEvent is the full text of one agent response.
type ResponseEvent struct {
	Text    string `json:"agent_response"`
	EventID int64  `json:"event_id,omitempty"`
}

// ToolCall asks the client to run one of the agent's client tools.
type ToolCall struct {
	Name       string          `json:"tool_name"`
	ID         string          `json:"tool_call_id"`
	Parameters json.RawMessage `json:"parameters"`
	// ExpectsResponse is false for fire-and-forget tools; the adapter answers every call anyway.
	ExpectsResponse *bool `json:"expects_response,omitempty"`
}

// AgentConfig is the part of GET AgentPath+id the adapter checks: the tools, the audio formats
// and which overrides the platform's security settings allow.
type AgentConfig struct {
	AgentID            string `json:"agent_id"`
	ConversationConfig struct {
		Agent struct {
			Prompt struct {
				Tools   []ToolConfig `json:"tools"`
				ToolIDs []string     `json:"tool_ids"`
			} `json:"prompt"`
		} `json:"agent"`
		ASR struct {
			InputFormat string `json:"user_input_audio_format"`
		} `json:"asr"`
		TTS struct {
			OutputFormat string `json:"agent_output_audio_format"`
		} `json:"tts"`
	} `json:"conversation_config"`
	PlatformSettings struct {
		Overrides struct {
			ConversationConfigOverride struct {
				Agent struct {
					Prompt struct {
						Prompt bool `json:"prompt"`
					} `json:"prompt"`
					FirstMessage bool `json:"first_message"`
					Language     bool `json:"language"`
				} `json:"agent"`
				TTS struct {
					VoiceID bool `json:"voice_id"`
				} `json:"tts"`
			} `json:"conversation_config_override"`
		} `json:"overrides"`
	} `json:"platform_settings"`
}

// ToolConfig is a tool as the platform stores it; Type is "client" for the task's tools.
type ToolConfig struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	// ExpectsResponse must be true: the agent waits for the workspace's result.
	ExpectsResponse     bool `json:"expects_response"`
	ResponseTimeoutSecs int  `json:"response_timeout_secs,omitempty"`
}

// ToolResource is GET ToolPath+id.
type ToolResource struct {
	ID     string     `json:"id"`
	Config ToolConfig `json:"tool_config"`
}
