package agenttest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/voicebench/humanaudit/internal/agent/openai/wire"
)

// Provider describes, from each provider's documentation, what an OpenAI-family server accepts
// and how it behaves where providers differ. It is deliberately independent of the client's
// dialect table, so that a client mistake is caught rather than mirrored.
type Provider struct {
	Name   string
	Schema wire.Schema
	Voices []string
	// VoiceFold accepts voice ids in any case (xAI).
	VoiceFold bool
	// BetaHeader requires "OpenAI-Beta: realtime=v1"; GA refuses it (the beta session shape would
	// be expected otherwise).
	BetaHeader bool
	// ModelInStart: the model comes in a first session.start frame, not the URL.
	ModelInStart bool
	// Greeting lists the server's first events after the upgrade.
	Greeting []string
	// ConflictMessage is the message of the active-response error.
	ConflictMessage string
	// HangOnPartialBatch: a response.create sent before every function_call_output of the last
	// tool batch gets no response at all (xAI).
	HangOnPartialBatch bool
	// DefaultServerVAD: turn detection is on until the session sets it to null.
	DefaultServerVAD bool
	// DefaultVoice is the session's voice before any update.
	DefaultVoice string
}

// The OpenAI-family providers.
var (
	OpenAIGA = Provider{Name: "openai", Schema: wire.SchemaGA,
		Voices:           []string{"alloy", "ash", "ballad", "coral", "echo", "sage", "shimmer", "verse", "marin", "cedar"},
		Greeting:         []string{wire.SessionCreated},
		ConflictMessage:  "Conversation already has an active response in progress: %s. Wait until the response is finished before creating a new one.",
		DefaultServerVAD: true, DefaultVoice: "alloy"}
	OpenAIBeta = Provider{Name: "openai-beta", Schema: wire.SchemaBeta, BetaHeader: true,
		Voices:           []string{"alloy", "ash", "ballad", "coral", "echo", "sage", "shimmer", "verse"},
		Greeting:         []string{wire.SessionCreated},
		ConflictMessage:  "Conversation already has an active response in progress: %s. Wait until the response is finished before creating a new one.",
		DefaultServerVAD: true, DefaultVoice: "alloy"}
	XAIGrok = Provider{Name: "grok", Schema: wire.SchemaGrok, VoiceFold: true,
		Voices:             []string{"Ara", "Rex", "Sal", "Eve", "Leo"},
		Greeting:           []string{wire.ConversationCreated, wire.SessionCreated},
		ConflictMessage:    "A response is already in progress: %s",
		HangOnPartialBatch: true, DefaultServerVAD: true, DefaultVoice: "Eve"}
	StepFunRealtime = Provider{Name: "stepfun", Schema: wire.SchemaBeta,
		Voices:          []string{"qingchunshaonv", "wenrounansheng", "elegantgentle-female", "livelybreezy-female"},
		Greeting:        []string{wire.SessionCreated},
		ConflictMessage: "ongoing response already exists: %s",
		DefaultVoice:    "qingchunshaonv"}
	LiveSession = Provider{Name: "live", Schema: wire.SchemaGA, ModelInStart: true,
		Voices:           []string{"alloy", "ash", "ballad", "coral", "echo", "sage", "shimmer", "verse", "marin", "cedar"},
		ConflictMessage:  "Conversation already has an active response in progress: %s. Wait until the response is finished before creating a new one.",
		DefaultServerVAD: true, DefaultVoice: "marin"}
)

// keyTree lists the parameters a schema accepts; a nil subtree accepts any value.
type keyTree map[string]keyTree

var (
	gaTurn = keyTree{"type": nil, "threshold": nil, "prefix_padding_ms": nil, "silence_duration_ms": nil, "create_response": nil, "interrupt_response": nil, "eagerness": nil, "idle_timeout_ms": nil}
	gaKeys = keyTree{"type": nil, "model": nil, "output_modalities": nil, "instructions": nil, "tools": nil, "tool_choice": nil, "max_output_tokens": nil, "tracing": nil, "truncation": nil, "prompt": nil, "include": nil,
		"audio": {"input": {"format": nil, "turn_detection": gaTurn, "transcription": nil, "noise_reduction": nil}, "output": {"format": nil, "voice": nil, "speed": nil}}}
	betaKeys = keyTree{"modalities": nil, "instructions": nil, "voice": nil, "input_audio_format": nil, "output_audio_format": nil, "input_audio_transcription": nil,
		"turn_detection": gaTurn, "tools": nil, "tool_choice": nil, "temperature": nil, "max_response_output_tokens": nil, "input_audio_noise_reduction": nil, "speed": nil, "tracing": nil}
	grokKeys = keyTree{"instructions": nil, "voice": nil, "tools": nil, "reasoning": nil,
		"turn_detection": {"type": nil, "threshold": nil, "prefix_padding_ms": nil, "silence_duration_ms": nil, "idle_timeout_ms": nil},
		"audio":          {"input": {"format": nil, "transcription": nil}, "output": {"format": nil, "speed": nil}}}
)

// invalid is a rejected client event: the error the real API sends.
type invalid struct {
	code, message, param string
}

func unknownParam(path string) *invalid {
	return &invalid{wire.CodeUnknownParameter, fmt.Sprintf("Unknown parameter: '%s'.", path), path}
}

func invalidValue(path string, v any, supported []string) *invalid {
	msg := fmt.Sprintf("Invalid value: '%v'.", v)
	if len(supported) > 0 {
		msg += " Supported values are: '" + strings.Join(supported, "', '") + "'."
	}
	return &invalid{wire.CodeInvalidValue, msg, path}
}

func checkKeys(path string, v map[string]any, tree keyTree) *invalid {
	for k, sub := range v {
		subtree, ok := tree[k]
		if !ok {
			return unknownParam(path + "." + k)
		}
		if m, isMap := sub.(map[string]any); isMap && subtree != nil {
			if bad := checkKeys(path+"."+k, m, subtree); bad != nil {
				return bad
			}
		}
	}
	return nil
}

// sessionSettings is the effective configuration a fake keeps per connection.
type sessionSettings struct {
	voice         string
	tools         []string
	toolChoice    string
	serverVAD     bool
	silenceMS     int
	createResp    bool
	interruptResp bool
	transcription bool
	instructions  string
	effective     map[string]any // echoed in session.updated
}

// validateSession checks a session object as the provider does and returns the settings it
// would apply, or the error it would send (then nothing is applied).
func (p Provider) validateSession(cur sessionSettings, s map[string]any, start bool) (sessionSettings, *invalid) {
	next := cur
	var tree keyTree
	switch p.Schema {
	case wire.SchemaGA:
		tree = gaKeys
	case wire.SchemaBeta:
		tree = betaKeys
	default:
		tree = grokKeys
	}
	if bad := checkKeys("session", s, tree); bad != nil {
		return cur, bad
	}
	if p.Schema == wire.SchemaGA {
		if s["type"] != "realtime" {
			if s["type"] == nil {
				return cur, &invalid{"missing_required_parameter", "Missing required parameter: 'session.type'.", "session.type"}
			}
			return cur, invalidValue("session.type", s["type"], []string{"realtime", "transcription"})
		}
		if start && p.ModelInStart {
			if m, _ := s["model"].(string); m == "" {
				return cur, &invalid{"missing_required_parameter", "Missing required parameter: 'session.model'.", "session.model"}
			}
		}
		if mods, ok := s["output_modalities"]; ok {
			l := strs(mods)
			if !(slices.Equal(l, []string{"audio"}) || slices.Equal(l, []string{"text"})) {
				return cur, invalidValue("session.output_modalities", mods, []string{"audio", "text"})
			}
		}
	}
	if p.Schema == wire.SchemaBeta {
		if mods, ok := s["modalities"]; ok {
			l := strs(mods)
			slices.Sort(l)
			okMods := slices.Equal(l, []string{"audio", "text"}) || (p.Name != "stepfun" && slices.Equal(l, []string{"text"}))
			if !okMods {
				return cur, invalidValue("session.modalities", mods, []string{"text", "audio"})
			}
		}
		for _, k := range []string{"input_audio_format", "output_audio_format"} {
			if f, ok := s[k]; ok && f != "pcm16" && (p.Name == "stepfun" || (f != "g711_ulaw" && f != "g711_alaw")) {
				return cur, invalidValue("session."+k, f, []string{"pcm16"})
			}
		}
	}
	audio, _ := s["audio"].(map[string]any)
	in, _ := audio["input"].(map[string]any)
	out, _ := audio["output"].(map[string]any)
	for path, f := range map[string]any{"session.audio.input.format": in["format"], "session.audio.output.format": out["format"]} {
		if f == nil {
			continue
		}
		m, _ := f.(map[string]any)
		rate, _ := m["rate"].(json.Number)
		if m["type"] != "audio/pcm" || (rate != "" && rate != "24000") {
			return cur, invalidValue(path, f, []string{`{"type":"audio/pcm","rate":24000}`})
		}
	}

	// voice
	voice, voicePath := s["voice"], "session.voice"
	if p.Schema == wire.SchemaGA {
		voice, voicePath = out["voice"], "session.audio.output.voice"
	}
	if voice != nil {
		v, _ := voice.(string)
		i := slices.IndexFunc(p.Voices, func(x string) bool { return x == v || (p.VoiceFold && strings.EqualFold(x, v)) })
		if i < 0 {
			return cur, invalidValue(voicePath, voice, p.Voices)
		}
		next.voice = p.Voices[i]
	}

	// turn detection
	td, tdSet := s["turn_detection"]
	if p.Schema == wire.SchemaGA {
		td, tdSet = in["turn_detection"]
	}
	if tdSet {
		if td == nil {
			next.serverVAD = false
		} else {
			m, _ := td.(map[string]any)
			typ, _ := m["type"].(string)
			allowed := []string{"server_vad", "semantic_vad"}
			if p.Schema == wire.SchemaGrok || p.Name == "stepfun" {
				allowed = []string{"server_vad"}
			}
			if !slices.Contains(allowed, typ) {
				return cur, invalidValue("session.turn_detection.type", m["type"], allowed)
			}
			next.serverVAD, next.silenceMS = true, 500
			if n, ok := m["silence_duration_ms"].(json.Number); ok {
				i, _ := n.Int64()
				next.silenceMS = int(i)
			}
			next.createResp, next.interruptResp = m["create_response"] != false, m["interrupt_response"] != false
		}
	}

	// transcription
	if p.Schema == wire.SchemaGA {
		if _, ok := in["transcription"]; ok {
			next.transcription = in["transcription"] != nil
		}
	} else if t, ok := s["input_audio_transcription"]; ok {
		next.transcription = t != nil
	}

	// tools
	if tools, ok := s["tools"]; ok {
		list, isList := tools.([]any)
		if !isList {
			return cur, &invalid{"invalid_type", "Invalid type for 'session.tools': expected an array.", "session.tools"}
		}
		next.tools = nil
		for i, t := range list {
			m, _ := t.(map[string]any)
			path := fmt.Sprintf("session.tools[%d]", i)
			if bad := checkKeys(path, m, keyTree{"type": nil, "name": nil, "description": nil, "parameters": nil}); bad != nil {
				return cur, bad
			}
			if m["type"] != "function" {
				return cur, invalidValue(path+".type", m["type"], []string{"function"})
			}
			name, _ := m["name"].(string)
			if name == "" {
				return cur, &invalid{"missing_required_parameter", fmt.Sprintf("Missing required parameter: '%s.name'.", path), path + ".name"}
			}
			if params, ok := m["parameters"]; ok {
				if pm, isObj := params.(map[string]any); !isObj || pm["type"] != "object" {
					return cur, &invalid{"invalid_function_parameters", fmt.Sprintf("Invalid schema for function '%s': schema must be a JSON Schema of 'type: \"object\"'.", name), path + ".parameters"}
				}
			}
			next.tools = append(next.tools, name)
		}
	}
	if tc, ok := s["tool_choice"]; ok {
		switch v := tc.(type) {
		case string:
			if !slices.Contains([]string{"auto", "none", "required"}, v) {
				return cur, invalidValue("session.tool_choice", v, []string{"auto", "none", "required"})
			}
			next.toolChoice = v
		case map[string]any:
			next.toolChoice = fmt.Sprint(v["name"])
		default:
			return cur, invalidValue("session.tool_choice", tc, nil)
		}
	}
	if ins, ok := s["instructions"].(string); ok {
		next.instructions = ins
	}
	next.effective = mergeSession(cur.effective, s)
	return next, nil
}

// mergeSession applies a partial update: absent fields keep their values, nested objects merge.
func mergeSession(cur, upd map[string]any) map[string]any {
	out := make(map[string]any, len(cur)+len(upd))
	for k, v := range cur {
		out[k] = v
	}
	for k, v := range upd {
		if um, ok := v.(map[string]any); ok {
			if cm, ok := out[k].(map[string]any); ok {
				out[k] = mergeSession(cm, um)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// defaultSession is the session a provider starts with (echoed in session.created).
func (p Provider) defaultSession(model string) map[string]any {
	turn := any(nil)
	if p.DefaultServerVAD {
		turn = map[string]any{"type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300, "silence_duration_ms": 500}
	}
	pcm := map[string]any{"type": "audio/pcm", "rate": 24000}
	switch p.Schema {
	case wire.SchemaGA:
		return map[string]any{"type": "realtime", "object": "realtime.session", "model": model, "output_modalities": []any{"audio"},
			"instructions": "", "tools": []any{}, "tool_choice": "auto",
			"audio": map[string]any{"input": map[string]any{"format": pcm, "turn_detection": turn, "transcription": nil},
				"output": map[string]any{"format": pcm, "voice": p.DefaultVoice, "speed": 1.0}}}
	case wire.SchemaBeta:
		return map[string]any{"object": "realtime.session", "model": model, "modalities": []any{"text", "audio"}, "instructions": "",
			"voice": p.DefaultVoice, "input_audio_format": "pcm16", "output_audio_format": "pcm16", "turn_detection": turn,
			"input_audio_transcription": nil, "tools": []any{}, "tool_choice": "auto"}
	default:
		return map[string]any{"object": "realtime.session", "instructions": "", "voice": p.DefaultVoice, "turn_detection": turn,
			"audio": map[string]any{"input": map[string]any{"format": pcm}, "output": map[string]any{"format": pcm}}, "tools": []any{}}
	}
}

func strs(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
