package elevenlabs

import "github.com/voicebench/humanaudit/internal/agent"

// Provisioning is what the platform needs so that an ElevenLabs system gets the same prompt and
// tools as every other system: one agent per task (its client tools are the task's tools, with
// their parameter schemas, each waiting for the workspace's result), PCM16 at 16 kHz both ways,
// the prompt and first-message overrides allowed (the adapter sends the task's instructions and
// an empty first message on every call), and authentication on (conversations through signed
// URLs). The prompt stored on the platform is a placeholder: the override replaces it.
type Provisioning struct {
	Name               string         `json:"name"`
	ConversationConfig map[string]any `json:"conversation_config"`
	PlatformSettings   map[string]any `json:"platform_settings"`
	Tags               []string       `json:"tags,omitempty"`
}

// Provision is the agent-creation body (POST /v1/convai/agents/create) of one task's agent. llm
// and voiceID may be empty (the platform's defaults); the audio formats are those the console
// carries best.
func Provision(name string, tools []agent.Tool, llm, voiceID string) Provisioning {
	var ts []ToolConfig
	for _, t := range tools {
		ts = append(ts, ToolConfig{Type: "client", Name: t.Name, Description: t.Description, Parameters: t.Schema(),
			ExpectsResponse: true, ResponseTimeoutSecs: 20})
	}
	prompt := map[string]any{"prompt": "Placeholder: the audit console overrides this prompt on every conversation.", "tools": ts}
	if llm != "" {
		prompt["llm"] = llm
	}
	tts := map[string]any{"agent_output_audio_format": "pcm_16000"}
	if voiceID != "" {
		tts["voice_id"] = voiceID
	}
	return Provisioning{
		Name: name,
		ConversationConfig: map[string]any{
			"agent": map[string]any{"first_message": "", "language": "en", "prompt": prompt},
			"asr":   map[string]any{"user_input_audio_format": "pcm_16000"},
			"tts":   tts,
		},
		PlatformSettings: map[string]any{
			"auth": map[string]any{"enable_auth": true},
			"overrides": map[string]any{"conversation_config_override": map[string]any{
				"agent": map[string]any{"prompt": map[string]any{"prompt": true}, "first_message": true, "language": true},
				"tts":   map[string]any{"voice_id": true},
			}},
		},
		Tags: []string{"humanaudit"},
	}
}
