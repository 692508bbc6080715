// Package systems names the evaluated agent systems (a JSON systems file), resolves their API keys
// by label from a git-ignored secrets file or the environment, and dials a system through the
// adapter of its protocol family. Keys never appear in logs, errors or anything stored.
package systems

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/voicebench/humanaudit/internal/agent/elevenlabs"
	"github.com/voicebench/humanaudit/internal/agent/gemini"
	"github.com/voicebench/humanaudit/internal/agent/gptlive"
	"github.com/voicebench/humanaudit/internal/agent/openai"
)

// Family names a protocol family in a systems file.
type Family string

// Families.
const (
	FamilyOpenAI     Family = "openai"      // OpenAI Realtime GA
	FamilyOpenAIBeta Family = "openai-beta" // OpenAI Realtime beta schema
	FamilyGrok       Family = "grok"        // xAI Grok voice agent
	FamilyStepFun    Family = "stepfun"     // StepFun realtime
	FamilyGemini     Family = "gemini"      // Gemini Live
	FamilyLive       Family = "live"        // OpenAI GPT-Live (full duplex, tools delegated to a backend model)
	FamilyReference  Family = "reference"   // the offline reference agent (OpenAI GA protocol, no key)
	FamilyElevenLabs Family = "elevenlabs"  // ElevenLabs Agents Platform (a bundled ASR → LLM → TTS stack)
)

// Families lists the known families in documentation order.
var Families = []Family{FamilyOpenAI, FamilyOpenAIBeta, FamilyGrok, FamilyStepFun, FamilyGemini, FamilyLive, FamilyElevenLabs, FamilyReference}

// defaultEndpoints are used when a system omits its endpoint.
var defaultEndpoints = map[Family]string{
	FamilyOpenAI:     "wss://api.openai.com/v1/realtime",
	FamilyOpenAIBeta: "wss://api.openai.com/v1/realtime",
	FamilyGrok:       "wss://api.x.ai/v1/realtime",
	FamilyStepFun:    "wss://api.stepfun.com/v1/realtime",
	FamilyGemini:     gemini.DefaultURL,
	FamilyElevenLabs: elevenlabs.DefaultURL,
	FamilyLive:       gptlive.DefaultURL,
}

// System is one evaluated system.
type System struct {
	// Label names the system in study plans and reports (blinded from participants).
	Label  string `json:"label"`
	Family Family `json:"family"`
	// Endpoint is the ws:// or wss:// URL; known providers default to their public endpoint and a
	// reference system is pointed at the in-process agent when dialled.
	Endpoint string `json:"endpoint,omitempty"`
	Model    string `json:"model,omitempty"`
	Voice    string `json:"voice,omitempty"`
	// KeyLabel is the label of the API key in secrets.txt or the environment.
	KeyLabel string `json:"key_label,omitempty"`
	// ServerVAD lets the provider end turns; false (the default) is matched turn-taking.
	ServerVAD bool `json:"server_vad,omitempty"`
	// SilenceMS is the server VAD's end-of-turn silence (0 = provider default).
	SilenceMS int `json:"silence_ms,omitempty"`
	// TranscriptionModel asks OpenAI-family providers for caller transcripts.
	TranscriptionModel string `json:"transcription_model,omitempty"`
	// Language is the speech language: Gemini's language code (en-US), the ElevenLabs agent's
	// language override (en).
	Language string `json:"language,omitempty"`
	// BackendModel is the Responses model GPT-Live delegates tools to (live only).
	BackendModel string `json:"backend_model,omitempty"`
	// ExtraVoices extends the family's voice allow-list (custom or newly released voices).
	ExtraVoices []string `json:"extra_voices,omitempty"`
	// AgentID is the ElevenLabs platform agent every task is called on; Agents names one per task
	// id (task → agent id), which is what the platform needs when tasks have different tools.
	AgentID string            `json:"agent_id,omitempty"`
	Agents  map[string]string `json:"agents,omitempty"`
	// APIURL is the ElevenLabs REST base (signed URLs, agent checks); derived from the endpoint
	// when empty.
	APIURL string `json:"api_url,omitempty"`
	// MaxConcurrent caps the calls to this system at once (providers rate-limit concurrent
	// sessions); a synthetic run's --parallel is lowered to it. 0: no cap.
	MaxConcurrent int `json:"max_concurrent,omitempty"`

	source string // the file it came from, for messages
}

// File is a parsed systems file.
type File struct {
	Path    string
	Systems []System
}

// Lookup returns the system with the given label.
func (f *File) Lookup(label string) (System, error) {
	for _, s := range f.Systems {
		if s.Label == label {
			return s, nil
		}
	}
	return System{}, &ConfigError{File: f.Path, Msg: fmt.Sprintf("no system labelled %q", label), Err: ErrUnknownSystem}
}

// Source is the file the system was read from.
func (s System) Source() string { return s.source }

// EndpointURL is the endpoint the system dials: its own or its family's default.
func (s System) EndpointURL() string {
	if s.Endpoint != "" {
		return s.Endpoint
	}
	return defaultEndpoints[s.Family]
}

// NeedsKey reports whether the system needs an API key.
func (s System) NeedsKey() bool { return s.Family != FamilyReference && s.KeyLabel != "" }

var (
	labelRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	keyLabelRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Load reads and validates a systems file.
func Load(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read systems file: %w", err)
	}
	return Parse(path, b)
}

// Parse validates systems file content; name is used in messages. Every problem is one line
// naming the file, the system and what is wrong; all problems are returned together.
func Parse(name string, data []byte) (*File, error) {
	var doc struct {
		Systems []System `json:"systems"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, &ConfigError{File: name, Msg: jsonProblem(data, err), Err: ErrMalformed}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &ConfigError{File: name, Msg: "unexpected content after the top-level object", Err: ErrMalformed}
	}
	if len(doc.Systems) == 0 {
		return nil, &ConfigError{File: name, Msg: `no systems: expected {"systems": [{"label": …, "family": …}, …]}`, Err: ErrMalformed}
	}
	var errs []error
	seen := map[string]int{}
	for i := range doc.Systems {
		s := &doc.Systems[i]
		s.source = name
		if s.Label == "" {
			errs = append(errs, &ConfigError{File: name, Msg: fmt.Sprintf("systems[%d]: missing label", i), Err: ErrMalformed})
			continue
		}
		if j, dup := seen[s.Label]; dup {
			errs = append(errs, s.problem(ErrDuplicateLabel, "duplicate label (also systems[%d])", j))
			continue
		}
		seen[s.Label] = i
		errs = append(errs, s.validate()...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &File{Path: name, Systems: doc.Systems}, nil
}

func (s *System) problem(sentinel error, format string, args ...any) *ConfigError {
	return &ConfigError{File: s.source, System: s.Label, Msg: fmt.Sprintf(format, args...), Err: sentinel}
}

// ReferenceAgentLabel is the label of the console's built-in reference agent. A systems file may
// not use it: a study's "reference-agent" must always be the offline agent the console ships.
const ReferenceAgentLabel = "reference-agent"

// maxLabel bounds a system label (it appears in plans, reports and file names).
const maxLabel = 64

// WithReferenceAgent returns f (nil: no file) with the built-in reference agent added, unless f
// already has a reference-family system.
func WithReferenceAgent(f *File) *File {
	if f == nil {
		f = &File{Path: "(built-in)"}
	}
	for _, s := range f.Systems {
		if s.Family == FamilyReference {
			return f
		}
	}
	f.Systems = append(f.Systems, System{Label: ReferenceAgentLabel, Family: FamilyReference, source: "(built-in)"})
	return f
}

func (s *System) validate() []error {
	var errs []error
	if !labelRE.MatchString(s.Label) || len(s.Label) > maxLabel {
		errs = append(errs, s.problem(ErrMalformed, "label must be at most %d letters, digits, '.', '_' or '-'", maxLabel))
	}
	if s.Label == ReferenceAgentLabel {
		errs = append(errs, s.problem(ErrMalformed, "label %q is reserved for the console's built-in reference agent: choose another label", ReferenceAgentLabel))
	}
	if !slices.Contains(Families, s.Family) {
		names := make([]string, len(Families))
		for i, f := range Families {
			names[i] = string(f)
		}
		errs = append(errs, s.problem(ErrUnknownFamily, "unknown family %q (expected one of %s)", s.Family, strings.Join(names, ", ")))
		return errs
	}
	if s.Family == FamilyElevenLabs {
		errs = append(errs, s.validateElevenLabs()...)
	} else if s.Family != FamilyReference {
		if s.Model == "" {
			errs = append(errs, s.problem(ErrMalformed, "missing model"))
		}
		if s.KeyLabel == "" {
			errs = append(errs, s.problem(ErrMalformed, "missing key_label (the label of its API key in secrets.txt or the environment)"))
		}
	}
	if s.MaxConcurrent < 0 {
		errs = append(errs, s.problem(ErrMalformed, "max_concurrent %d must be 0 (no cap) or a positive number of calls", s.MaxConcurrent))
	}
	if s.KeyLabel != "" && !keyLabelRE.MatchString(s.KeyLabel) {
		errs = append(errs, s.problem(ErrMalformed, "key_label %q must be letters, digits and '_' (like OPENAI_API_KEY)", s.KeyLabel))
	}
	if s.EndpointURL() == "" && s.Family != FamilyReference {
		errs = append(errs, s.problem(ErrBadEndpoint, "missing endpoint (family %s has no default)", s.Family))
	} else if s.Endpoint != "" {
		if err := checkEndpoint(s.Endpoint, s.NeedsKey()); err != "" {
			errs = append(errs, s.problem(ErrBadEndpoint, "endpoint %q: %s", redactURL(s.Endpoint), err))
		}
	}
	if s.SilenceMS < 0 {
		errs = append(errs, s.problem(ErrMalformed, "silence_ms must not be negative"))
	}
	if s.Family == FamilyLive && !s.ServerVAD {
		errs = append(errs, s.problem(ErrUnsupported, `family live cannot honour matched turn-taking: GPT-Live is full duplex and takes turns itself; set "server_vad": true`))
	}
	return errs
}

// Warnings are the system's options its family cannot honour but that do not stop a call: each
// says what happens instead. audit systems check prints them.
func (s System) Warnings() []string {
	var w []string
	add := func(format string, args ...any) {
		w = append(w, fmt.Sprintf("%s: system %q: ", s.source, s.Label)+fmt.Sprintf(format, args...))
	}
	if s.TranscriptionModel != "" {
		switch s.Family {
		case FamilyGrok:
			add("transcription_model %q is ignored: xAI drops it silently and sends no caller transcripts; they come from post-call recognition", s.TranscriptionModel)
		case FamilyGemini:
			add("transcription_model %q is ignored: Gemini transcribes with its own model (inputAudioTranscription)", s.TranscriptionModel)
		case FamilyLive:
			add("transcription_model %q is ignored: GPT-Live sends its own transcripts", s.TranscriptionModel)
		case FamilyReference:
			add("transcription_model %q is ignored by the reference agent", s.TranscriptionModel)
		}
	}
	if s.Language != "" && s.Family != FamilyGemini {
		add("language %q is ignored: only the gemini family takes a speech language", s.Language)
	}
	if s.BackendModel != "" && s.Family != FamilyLive {
		add("backend_model %q is ignored: only the live family delegates to a backend model", s.BackendModel)
	}
	if s.SilenceMS > 0 && (!s.ServerVAD || s.Family == FamilyLive) {
		add("silence_ms %d is ignored: it sets the provider's turn detection, which %s", s.SilenceMS,
			map[bool]string{true: "GPT-Live does not expose", false: "matched turn-taking does not use"}[s.Family == FamilyLive])
	}
	if v, substituted := s.EffectiveVoice(); substituted {
		add("voice %q is not offered for model %q; %q is used instead (extra_voices adds voices)", s.Voice, s.Model, v)
	}
	return w
}

func checkEndpoint(raw string, sendsKey bool) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "not a URL"
	case u.Scheme != "ws" && u.Scheme != "wss":
		return "expected a ws:// or wss:// URL"
	case u.Hostname() == "":
		return "missing host"
	case u.User != nil:
		return "credentials in the URL are not allowed (use key_label)"
	case u.Query().Has("key") || u.Query().Has("api_key"):
		return "a key in the URL is not allowed (use key_label)"
	case u.Scheme == "ws" && sendsKey && !isLoopback(u.Hostname()):
		return "plain ws:// would send the key unencrypted; use wss://"
	}
	return ""
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redactURL drops query and credentials (they may hold secrets) from a URL for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// jsonProblem turns a decoding error into "line L, column C: what".
func jsonProblem(data []byte, err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		l, c := lineCol(data, syn.Offset)
		return fmt.Sprintf("line %d, column %d: malformed JSON: %s", l, c, syn.Error())
	case errors.As(err, &typ):
		l, c := lineCol(data, typ.Offset)
		return fmt.Sprintf("line %d, column %d: field %s: expected %s, got %s", l, c, typ.Field, typ.Type, typ.Value)
	case errors.Is(err, io.EOF):
		return "empty file"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "malformed JSON: unexpected end of file"
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return "unknown field " + f + " (see docs/systems.md)"
	}
	return "malformed JSON: " + msg
}

func lineCol(data []byte, off int64) (line, col int) {
	off = min(off, int64(len(data)))
	line = 1 + bytes.Count(data[:off], []byte("\n"))
	col = int(off) - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

// EffectiveVoice reports the voice the system will use: its voice clamped to the voices its
// family offers its model (plus ExtraVoices), and whether the configured voice is replaced.
func (s System) EffectiveVoice() (voice string, substituted bool) {
	var allowed []string
	var def string
	switch s.Family {
	case FamilyGemini:
		allowed, def = gemini.Voices, gemini.DefaultVoice
	case FamilyLive:
		allowed, def = gptlive.Voices, gptlive.DefaultVoice
	case FamilyReference, FamilyElevenLabs:
		return s.Voice, false // the reference agent has one voice; ElevenLabs voices are ids
	default:
		d := dialectOf(s.Family)
		allowed, def = d.VoicesFor(s.Model), d.DefaultVoice
	}
	allowed = append(append([]string{}, allowed...), s.ExtraVoices...)
	for _, v := range allowed {
		if strings.EqualFold(v, s.Voice) {
			return v, false
		}
	}
	return def, s.Voice != ""
}

func dialectOf(f Family) openai.Dialect {
	switch f {
	case FamilyOpenAIBeta:
		return openai.Beta
	case FamilyGrok:
		return openai.Grok
	case FamilyStepFun:
		return openai.StepFun
	}
	return openai.GA // openai, reference
}

// validateElevenLabs checks what an ElevenLabs system needs: a platform agent (for every task or
// per task) and the platform's own turn-taking; the model is the platform agent's LLM, named for
// the record only, and a public agent needs no key.
func (s *System) validateElevenLabs() []error {
	var errs []error
	if s.AgentID == "" && len(s.Agents) == 0 {
		errs = append(errs, s.problem(ErrMalformed, "missing agent_id (or agents: task id → agent id): the ElevenLabs agent provisioned on the platform"))
	}
	for task, id := range s.Agents {
		if task == "" || id == "" {
			errs = append(errs, s.problem(ErrMalformed, "agents: task %q → agent %q: both must be set", task, id))
		}
	}
	if !s.ServerVAD {
		errs = append(errs, s.problem(ErrMalformed, "server_vad must be true: the ElevenLabs platform takes turns itself (its protocol has no client turn control)"))
	}
	if s.APIURL != "" {
		if u, err := url.Parse(s.APIURL); err != nil || (u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname()))) {
			errs = append(errs, s.problem(ErrBadEndpoint, "api_url %q: expected an https:// URL", redactURL(s.APIURL)))
		}
	}
	return errs
}

// AgentFor is the ElevenLabs agent of a task: its entry in Agents, else AgentID.
func (s System) AgentFor(taskID string) string {
	if id, ok := s.Agents[taskID]; ok {
		return id
	}
	return s.AgentID
}
