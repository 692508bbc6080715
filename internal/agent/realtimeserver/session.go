package realtimeserver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/voicebench/humanaudit/internal/agent/internal/params"
	"github.com/voicebench/humanaudit/internal/agent/openai/wire"
)

// Provider describes what one server of the family accepts and how it behaves where the
// providers differ, from each provider's documentation. The protocol fakes describe the
// commercial providers with it (deliberately apart from the client's dialect table, so that a
// client mistake is caught rather than mirrored); the reference agent describes itself.
type Provider struct {
	Name   string
	Schema wire.Schema
	// Voices are the voice ids accepted; VoiceFold accepts them in any case (xAI). ModelVoices
	// narrows them for models (by name prefix, the longest that matches) whose documentation
	// lists fewer.
	Voices      []string
	VoiceFold   bool
	ModelVoices map[string][]string
	// DefaultVoice is the session's voice before any update.
	DefaultVoice string
	// BetaHeader requires "OpenAI-Beta: realtime=v1"; without it the header is refused (it
	// selects the beta session shape).
	BetaHeader bool
	// DefaultModel is the model of a connection whose URL names none; empty: a model is required.
	DefaultModel string
	// Greeting lists the server's first events after the upgrade (session.created,
	// conversation.created, ping).
	Greeting []string
	// ConflictMessage is the message of the active-response error (%s: the active response id).
	ConflictMessage string
	// HangOnPartialBatch: a response.create sent before every function_call_output of the last
	// tool batch gets no response at all (xAI).
	HangOnPartialBatch bool
	// DefaultServerVAD: turn detection is on until the session sets it to null.
	DefaultServerVAD bool
	// OutputModalities are the accepted sets of output modalities (GA output_modalities, beta
	// modalities, compared sorted).
	OutputModalities [][]string
	// G711 accepts g711_ulaw and g711_alaw besides pcm16 (beta formats).
	G711 bool
	// TurnTypes are the accepted turn_detection types.
	TurnTypes []string
	// RateLimits sends rate_limits.updated after each response.
	RateLimits bool
	// History accepts the client's conversation.item.delete and function_call items (a
	// conversation replayed into the session); without it both are refused.
	History bool
	// AutoFollowUp starts the next response by itself once every function_call_output of the
	// last tool batch has arrived, without waiting for response.create (the other tool-turn shape
	// some servers of the family have); a response.create meanwhile collides with it.
	AutoFollowUp bool
	// DropTools accepts a session's tools and installs none (session.updated lists no tools), as
	// a provider does that ignores what it cannot use.
	DropTools bool
	// KeyRefusal is how the upgrade of a wrong key is refused; nil is OpenAI's HTTP 401 with an
	// invalid_api_key error object.
	KeyRefusal *KeyRefusal
}

// KeyRefusal is a provider's answer to an upgrade with a wrong key: the HTTP status and the JSON
// body, in which %s is the key as the provider masks it (its first and last two characters).
type KeyRefusal struct {
	Status int
	Body   string
}

// voicesFor returns the voices model may use.
func (p *Provider) voicesFor(model string) []string {
	return wire.VoicesFor(model, p.Voices, p.ModelVoices)
}

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

func missing(path string) *invalid {
	return &invalid{"missing_required_parameter", fmt.Sprintf("Missing required parameter: '%s'.", path), path}
}

// The parameters each schema's session accepts.
var (
	gaTurn = params.Tree{"type": nil, "threshold": nil, "prefix_padding_ms": nil, "silence_duration_ms": nil, "create_response": nil,
		"interrupt_response": nil, "eagerness": nil, "idle_timeout_ms": nil}
	gaKeys = params.Tree{"type": nil, "model": nil, "output_modalities": nil, "instructions": nil, "tools": nil, "tool_choice": nil,
		"max_output_tokens": nil, "tracing": nil, "truncation": nil, "prompt": nil, "include": nil,
		"audio": {"input": {"format": nil, "turn_detection": gaTurn, "transcription": nil, "noise_reduction": nil},
			"output": {"format": nil, "voice": nil, "speed": nil}}}
	betaKeys = params.Tree{"modalities": nil, "instructions": nil, "voice": nil, "input_audio_format": nil, "output_audio_format": nil,
		"input_audio_transcription": nil, "turn_detection": gaTurn, "tools": nil, "tool_choice": nil, "temperature": nil,
		"max_response_output_tokens": nil, "input_audio_noise_reduction": nil, "speed": nil, "tracing": nil}
	grokKeys = params.Tree{"instructions": nil, "voice": nil, "tools": nil, "reasoning": nil,
		"turn_detection": {"type": nil, "threshold": nil, "prefix_padding_ms": nil, "silence_duration_ms": nil, "idle_timeout_ms": nil},
		"audio":          {"input": {"format": nil, "transcription": nil}, "output": {"format": nil, "speed": nil}}}
	toolKeys = params.Tree{"type": nil, "name": nil, "description": nil, "parameters": nil}
)

// settings is a connection's session: what it means (Session) and what the server echoes.
type settings struct {
	Session
	effective map[string]any // echoed in session.created and session.updated
}

// defaults is the session a connection starts with.
func (p *Provider) defaults(model string) settings {
	return settings{
		Session: Session{Model: model, Voice: p.DefaultVoice, ServerVAD: p.DefaultServerVAD, SilenceMS: 500, PrefixMS: 300,
			CreateResponse: true, InterruptResponse: true},
		effective: p.defaultSession(model),
	}
}

// defaultSession is the session object a provider starts with.
func (p *Provider) defaultSession(model string) map[string]any {
	turn := any(nil)
	if p.DefaultServerVAD {
		turn = map[string]any{"type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300, "silence_duration_ms": 500,
			"create_response": true, "interrupt_response": true}
	}
	pcm := map[string]any{"type": "audio/pcm", "rate": wire.SampleRate}
	switch p.Schema {
	case wire.SchemaGA:
		return map[string]any{"type": "realtime", "object": "realtime.session", "model": model, "output_modalities": []any{"audio"},
			"instructions": "", "tools": []any{}, "tool_choice": "auto", "max_output_tokens": "inf",
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

// validate checks a session object as the provider does and returns the settings it would
// apply, or the error it would send (then nothing is applied). tools are the same tools decoded
// verbatim; spoke says assistant audio was sent
// (the voice is then frozen).
func (p *Provider) validate(cur settings, s map[string]any, tools []wire.Tool, spoke bool) (settings, *invalid) {
	next := cur
	tree := grokKeys
	switch p.Schema {
	case wire.SchemaGA:
		tree = gaKeys
	case wire.SchemaBeta:
		tree = betaKeys
	}
	if bad := params.Unknown("session", s, tree); bad != "" {
		return cur, unknownParam(bad)
	}
	if bad := p.checkShape(s); bad != nil {
		return cur, bad
	}
	audio, _ := s["audio"].(map[string]any)
	in, _ := audio["input"].(map[string]any)
	out, _ := audio["output"].(map[string]any)
	for _, f := range []struct {
		path string
		v    any
	}{{"session.audio.input.format", in["format"]}, {"session.audio.output.format", out["format"]}} {
		if f.v == nil {
			continue
		}
		m, _ := f.v.(map[string]any)
		rate, _ := m["rate"].(json.Number)
		if m["type"] != "audio/pcm" || (rate != "" && rate != "24000") {
			return cur, invalidValue(f.path, f.v, []string{`{"type":"audio/pcm","rate":24000}`})
		}
	}

	voice, voicePath := s["voice"], "session.voice"
	turn, turnSet := s["turn_detection"]
	turnPath := "session.turn_detection"
	if p.Schema == wire.SchemaGA {
		voice, voicePath = out["voice"], "session.audio.output.voice"
		turn, turnSet = in["turn_detection"]
		turnPath = "session.audio.input.turn_detection"
	}
	if voice != nil {
		v, _ := voice.(string)
		voices := p.voicesFor(cur.Model)
		i := slices.IndexFunc(voices, func(x string) bool { return x == v || (p.VoiceFold && strings.EqualFold(x, v)) })
		if i < 0 {
			return cur, invalidValue(voicePath, voice, voices)
		}
		if voices[i] != cur.Voice && spoke {
			return cur, &invalid{"cannot_update_voice", "Cannot update a conversation's voice if assistant audio is present.", voicePath}
		}
		next.Voice = voices[i]
	}
	if turnSet {
		if bad := p.applyTurn(&next.Session, turn, turnPath); bad != nil {
			return cur, bad
		}
	}
	if p.Schema == wire.SchemaGA {
		if t, ok := in["transcription"]; ok {
			next.Transcription = t != nil
		}
	} else if t, ok := s["input_audio_transcription"]; ok {
		next.Transcription = t != nil
	}
	if _, ok := s["tools"]; ok {
		if bad := checkTools(s["tools"]); bad != nil {
			return cur, bad
		}
		next.Tools = tools
		if p.DropTools {
			next.Tools = nil
			s["tools"] = []any{}
		}
	}
	if tc, ok := s["tool_choice"]; ok {
		switch v := tc.(type) {
		case string:
			if !slices.Contains([]string{"auto", "none", "required"}, v) {
				return cur, invalidValue("session.tool_choice", v, []string{"auto", "none", "required"})
			}
		case map[string]any:
		default:
			return cur, invalidValue("session.tool_choice", tc, nil)
		}
	}
	if ins, ok := s["instructions"].(string); ok {
		next.Instructions = ins
	}
	next.effective = mergeSession(cur.effective, s)
	return next, nil
}

// checkShape checks the schema's required fields, modalities and beta audio formats.
func (p *Provider) checkShape(s map[string]any) *invalid {
	okModalities := func(v any, sorted bool) bool {
		l := params.Strings(v)
		if sorted {
			slices.Sort(l)
		}
		return slices.ContainsFunc(p.OutputModalities, func(m []string) bool { return slices.Equal(l, m) })
	}
	switch p.Schema {
	case wire.SchemaGA:
		if s["type"] != "realtime" {
			if s["type"] == nil {
				return missing("session.type")
			}
			return invalidValue("session.type", s["type"], []string{"realtime", "transcription"})
		}
		if mods, ok := s["output_modalities"]; ok && !okModalities(mods, false) {
			return invalidValue("session.output_modalities", mods, []string{"audio", "text"})
		}
	case wire.SchemaBeta:
		if mods, ok := s["modalities"]; ok && !okModalities(mods, true) {
			return invalidValue("session.modalities", mods, []string{"text", "audio"})
		}
		for _, k := range []string{"input_audio_format", "output_audio_format"} {
			if f, ok := s[k]; ok && f != "pcm16" && (!p.G711 || (f != "g711_ulaw" && f != "g711_alaw")) {
				return invalidValue("session."+k, f, []string{"pcm16"})
			}
		}
	}
	return nil
}

// applyTurn applies a turn_detection object (null: manual turns). Absent fields keep their
// values, as in every partial session update.
func (p *Provider) applyTurn(s *Session, turn any, path string) *invalid {
	if turn == nil {
		s.ServerVAD = false
		return nil
	}
	m, _ := turn.(map[string]any)
	if typ, _ := m["type"].(string); !slices.Contains(p.TurnTypes, typ) {
		return invalidValue(path+".type", m["type"], p.TurnTypes)
	}
	s.ServerVAD = true
	if n, ok := m["silence_duration_ms"].(json.Number); ok {
		if i, err := n.Int64(); err == nil && i > 0 {
			s.SilenceMS = int(i)
		}
	}
	if n, ok := m["prefix_padding_ms"].(json.Number); ok {
		if i, err := n.Int64(); err == nil && i >= 0 {
			s.PrefixMS = int(i)
		}
	}
	if b, ok := m["create_response"].(bool); ok {
		s.CreateResponse = b
	}
	if b, ok := m["interrupt_response"].(bool); ok {
		s.InterruptResponse = b
	}
	return nil
}

// checkTools checks the tools array of a session.
func checkTools(v any) *invalid {
	list, isList := v.([]any)
	if !isList {
		return &invalid{"invalid_type", "Invalid type for 'session.tools': expected an array.", "session.tools"}
	}
	for i, t := range list {
		m, _ := t.(map[string]any)
		path := fmt.Sprintf("session.tools[%d]", i)
		if bad := params.Unknown(path, m, toolKeys); bad != "" {
			return unknownParam(bad)
		}
		if m["type"] != "function" {
			return invalidValue(path+".type", m["type"], []string{"function"})
		}
		name, _ := m["name"].(string)
		if name == "" {
			return missing(path + ".name")
		}
		if ps, ok := m["parameters"]; ok {
			if pm, isObj := ps.(map[string]any); !isObj || pm["type"] != "object" {
				return &invalid{"invalid_function_parameters", fmt.Sprintf("Invalid schema for function '%s': schema must be a JSON Schema of 'type: \"object\"'.", name), path + ".parameters"}
			}
		}
		if d, ok := m["description"]; ok {
			if _, isString := d.(string); !isString {
				return &invalid{"invalid_type", fmt.Sprintf("Invalid type for '%s.description': expected a string.", path), path + ".description"}
			}
		}
	}
	return nil
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
