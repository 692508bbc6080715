package systems

import (
	"context"
	"time"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/elevenlabs"
	"github.com/voicebench/humanaudit/internal/agent/gemini"
	"github.com/voicebench/humanaudit/internal/agent/gptlive"
	"github.com/voicebench/humanaudit/internal/agent/openai"
)

// DialOptions configure Dial.
type DialOptions struct {
	// Config is the session's configuration. An empty Voice takes the system's voice, and
	// ServerTurnDetection is always the system's server_vad setting (the system file decides).
	Config agent.Config
	// Keys resolves the system's key (a *secrets.Store); nil only for systems that need none.
	Keys Keys
	// Endpoint overrides the system's endpoint (the in-process reference agent's ws:// URL).
	Endpoint string
	// HandshakeTimeout bounds dial plus session handshake (0 = the family's default, 15 s).
	HandshakeTimeout time.Duration
	// Task is the id of the task the call runs: platforms that keep an agent per task
	// (ElevenLabs) dial that task's agent.
	Task string
}

// New builds the adapter of sys's family without connecting.
func New(sys System, opts DialOptions) (agent.Adapter, error) {
	key, err := Key(sys, opts.Keys)
	if err != nil {
		return nil, err
	}
	endpoint := sys.EndpointURL()
	if opts.Endpoint != "" {
		endpoint = opts.Endpoint
	}
	if endpoint == "" {
		return nil, sys.problem(ErrBadEndpoint, "no endpoint: a %s system must be dialled with an endpoint", sys.Family)
	}
	if sys.Family == FamilyReference && sys.Model == "" {
		sys.Model = "reference" // GA-compatible servers expect ?model=
	}
	switch sys.Family {
	case FamilyElevenLabs:
		return elevenlabs.New(elevenlabs.Options{URL: endpoint, APIURL: sys.APIURL, AgentID: sys.AgentFor(opts.Task), Key: key,
			Language: sys.Language, Timeouts: elevenlabs.Timeouts{Handshake: opts.HandshakeTimeout}}), nil
	case FamilyGemini:
		return gemini.New(gemini.Options{URL: endpoint, Model: sys.Model, Key: key, ExtraVoices: sys.ExtraVoices,
			LanguageCode: sys.Language, SilenceMS: sys.SilenceMS, Timeouts: gemini.Timeouts{Handshake: opts.HandshakeTimeout}}), nil
	case FamilyLive:
		return gptlive.New(gptlive.Options{URL: endpoint, Model: sys.Model, BackendModel: sys.BackendModel, Key: key,
			ExtraVoices: sys.ExtraVoices, Timeouts: gptlive.Timeouts{Handshake: opts.HandshakeTimeout}}), nil
	}
	return openai.New(openai.Options{URL: endpoint, Model: sys.Model, Key: key, Dialect: dialectOf(sys.Family),
		ExtraVoices: sys.ExtraVoices, TranscriptionModel: sys.TranscriptionModel, SilenceMS: sys.SilenceMS,
		Timeouts: openai.Timeouts{Handshake: opts.HandshakeTimeout}}), nil
}

// Dial builds sys's adapter and connects it. A failure names the system and the endpoint and
// wraps the classified *agent.Error (agent.ClassOf works on it); the adapter is closed then.
func Dial(ctx context.Context, sys System, opts DialOptions) (agent.Adapter, error) {
	a, err := New(sys, opts)
	if err != nil {
		return nil, err
	}
	cfg := opts.Config
	if cfg.Voice == "" {
		cfg.Voice = sys.Voice
	}
	cfg.ServerTurnDetection = sys.ServerVAD
	if err := a.Connect(ctx, cfg); err != nil {
		a.Close()
		endpoint := sys.EndpointURL()
		if opts.Endpoint != "" {
			endpoint = opts.Endpoint
		}
		return nil, &DialError{System: sys.Label, Endpoint: redactURL(endpoint), Err: err}
	}
	return a, nil
}
