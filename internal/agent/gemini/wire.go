// Package gemini is the client adapter of Google's Gemini Live API (BidiGenerateContent): setup
// with function declarations (each tool's JSON Schema translated into Gemini's Schema subset),
// 16 kHz caller audio in and 24 kHz agent audio out, explicit activity start/end for matched
// turn-taking, tool calls and responses, interruption, and session resumption across goAway.
package gemini

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Audio rates of the Live API.
const (
	InputRate  = 16000
	OutputRate = 24000
	// InputMIME is the mime type of caller audio chunks.
	InputMIME = "audio/pcm;rate=16000"
)

// DefaultURL is the v1beta Live endpoint.
const DefaultURL = "wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"

// Voices are the prebuilt voices of the Live API's native-audio models.
var Voices = []string{"Zephyr", "Puck", "Charon", "Kore", "Fenrir", "Leda", "Orus", "Aoede", "Callirrhoe", "Autonoe",
	"Enceladus", "Iapetus", "Umbriel", "Algieba", "Despina", "Erinome", "Algenib", "Rasalgethi", "Laomedeia", "Achernar",
	"Alnilam", "Schedar", "Gacrux", "Pulcherrima", "Achird", "Zubenelgenubi", "Vindemiatrix", "Sadachbia", "Sadaltager", "Sulafat"}

// DefaultVoice replaces an unknown voice.
const DefaultVoice = "Puck"

// Client messages: each has exactly one top-level field.

// Setup is the first client message.
type Setup struct {
	Model                    string               `json:"model"`
	GenerationConfig         *GenerationConfig    `json:"generationConfig,omitempty"`
	SystemInstruction        *Content             `json:"systemInstruction,omitempty"`
	Tools                    []Tool               `json:"tools,omitempty"`
	RealtimeInputConfig      *RealtimeInputConfig `json:"realtimeInputConfig,omitempty"`
	InputAudioTranscription  *struct{}            `json:"inputAudioTranscription,omitempty"`
	OutputAudioTranscription *struct{}            `json:"outputAudioTranscription,omitempty"`
	// SessionResumption asks for resumption handles (and, with Handle, resumes a session).
	SessionResumption *SessionResumption `json:"sessionResumption,omitempty"`
	// ContextWindowCompression lets a session outlive its context window (15 minutes of audio).
	ContextWindowCompression *ContextWindowCompression `json:"contextWindowCompression,omitempty"`
}

// SessionResumption configures resumption: an empty Handle starts a new resumable session.
type SessionResumption struct {
	Handle string `json:"handle,omitempty"`
}

// ContextWindowCompression compresses the context with a sliding window.
type ContextWindowCompression struct {
	SlidingWindow *struct{} `json:"slidingWindow"`
}

// GenerationConfig selects audio output and the voice.
type GenerationConfig struct {
	ResponseModalities []string      `json:"responseModalities"`
	SpeechConfig       *SpeechConfig `json:"speechConfig,omitempty"`
}

// SpeechConfig names the voice and language.
type SpeechConfig struct {
	VoiceConfig  VoiceConfig `json:"voiceConfig"`
	LanguageCode string      `json:"languageCode,omitempty"`
}

// VoiceConfig wraps a prebuilt voice.
type VoiceConfig struct {
	PrebuiltVoiceConfig struct {
		VoiceName string `json:"voiceName"`
	} `json:"prebuiltVoiceConfig"`
}

// Content is a list of parts (system instruction).
type Content struct {
	Parts []Part `json:"parts"`
}

// Part is one part of content: text or inline audio.
type Part struct {
	Text       string      `json:"text,omitempty"`
	InlineData *InlineData `json:"inlineData,omitempty"`
	Thought    bool        `json:"thought,omitempty"`
}

// InlineData is base64 media with its mime type.
type InlineData struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

// Tool holds function declarations.
type Tool struct {
	FunctionDeclarations []FunctionDeclaration `json:"functionDeclarations"`
}

// FunctionDeclaration is one callable function with its parameter schema.
type FunctionDeclaration struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// RealtimeInputConfig sets turn detection.
type RealtimeInputConfig struct {
	AutomaticActivityDetection *ActivityDetection `json:"automaticActivityDetection,omitempty"`
	ActivityHandling           string             `json:"activityHandling,omitempty"`
	TurnCoverage               string             `json:"turnCoverage,omitempty"`
}

// ActivityDetection configures (or disables) the server's VAD.
type ActivityDetection struct {
	Disabled          bool `json:"disabled"`
	SilenceDurationMs int  `json:"silenceDurationMs,omitempty"`
}

// FunctionResponse answers one function call by id.
type FunctionResponse struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// Server messages.

// ServerMessage is any server message (one top-level field, usageMetadata may accompany).
type ServerMessage struct {
	SetupComplete           *json.RawMessage      `json:"setupComplete,omitempty"`
	ServerContent           *ServerContent        `json:"serverContent,omitempty"`
	ToolCall                *ToolCall             `json:"toolCall,omitempty"`
	ToolCallCancellation    *ToolCallCancellation `json:"toolCallCancellation,omitempty"`
	GoAway                  *GoAway               `json:"goAway,omitempty"`
	SessionResumptionUpdate *ResumptionUpdate     `json:"sessionResumptionUpdate,omitempty"`
	UsageMetadata           *UsageMetadata        `json:"usageMetadata,omitempty"`
}

// ServerContent is model output and turn state.
type ServerContent struct {
	ModelTurn           *Content       `json:"modelTurn,omitempty"`
	GenerationComplete  bool           `json:"generationComplete,omitempty"`
	TurnComplete        bool           `json:"turnComplete,omitempty"`
	Interrupted         bool           `json:"interrupted,omitempty"`
	InputTranscription  *Transcription `json:"inputTranscription,omitempty"`
	OutputTranscription *Transcription `json:"outputTranscription,omitempty"`
}

// Transcription is a piece of transcript.
type Transcription struct {
	Text     string `json:"text,omitempty"`
	Finished bool   `json:"finished,omitempty"`
}

// ToolCall asks the client to run functions.
type ToolCall struct {
	FunctionCalls []FunctionCall `json:"functionCalls"`
}

// FunctionCall is one call with its arguments as a JSON object.
type FunctionCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// ToolCallCancellation withdraws calls (after an interruption).
type ToolCallCancellation struct {
	IDs []string `json:"ids"`
}

// GoAway announces that the server will close the connection.
type GoAway struct {
	TimeLeft string `json:"timeLeft"`
}

// ResumptionUpdate hands out a handle the session can be resumed from (when Resumable).
type ResumptionUpdate struct {
	NewHandle string `json:"newHandle,omitempty"`
	Resumable bool   `json:"resumable,omitempty"`
	// LastConsumedClientMessageIndex is sent in transparent mode only (int64 as a string).
	LastConsumedClientMessageIndex string `json:"lastConsumedClientMessageIndex,omitempty"`
}

// UsageMetadata is the token usage the server reports.
type UsageMetadata struct {
	PromptTokenCount      int             `json:"promptTokenCount,omitempty"`
	ResponseTokenCount    int             `json:"responseTokenCount,omitempty"`
	TotalTokenCount       int             `json:"totalTokenCount,omitempty"`
	PromptTokensDetails   []ModalityCount `json:"promptTokensDetails,omitempty"`
	ResponseTokensDetails []ModalityCount `json:"responseTokensDetails,omitempty"`
}

// ModalityCount is a token count of one modality.
type ModalityCount struct {
	Modality   string `json:"modality"`
	TokenCount int    `json:"tokenCount"`
}

// opaqueKeys hold caller data (function arguments and results, JSON schemas) whose keys must not
// be rewritten.
var opaqueKeys = map[string]bool{"args": true, "response": true, "parameters": true, "parametersJsonSchema": true, "responseJsonSchema": true}

// CamelKeys rewrites snake_case field names (as Python SDKs send them) to the Live API's
// camelCase, leaving function arguments, results and schemas untouched. Messages without an
// underscore are returned as they are.
func CamelKeys(data []byte) ([]byte, error) {
	if bytes.IndexByte(data, '_') < 0 {
		return data, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(camel(v))
}

func camel(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			ck := camelKey(k)
			if opaqueKeys[ck] {
				out[ck] = x
				continue
			}
			out[ck] = camel(x)
		}
		return out
	case []any:
		for i := range t {
			t[i] = camel(t[i])
		}
		return t
	}
	return v
}

func camelKey(k string) string {
	if !strings.Contains(k, "_") {
		return k
	}
	parts := strings.Split(k, "_")
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		if p != "" {
			b.WriteString(strings.ToUpper(p[:1]) + p[1:])
		}
	}
	return b.String()
}
