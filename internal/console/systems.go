package console

import (
	"context"
	"encoding/json"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/systems"
	"github.com/voicebench/humanaudit/internal/audit"
)

// SystemRecord is how a system of the systems file is stored: its label, protocol family and the
// settings that are not secret (model, voice, endpoint, server turn detection). Its key never is.
func SystemRecord(s systems.System) audit.System {
	conf, _ := json.Marshal(map[string]any{"model": s.Model, "voice": s.Voice, "endpoint": s.Endpoint, "server_vad": s.ServerVAD})
	return audit.System{Label: s.Label, Family: string(s.Family), Config: conf}
}

// SystemCheck is what checking one system of the systems file found.
type SystemCheck struct {
	System systems.System
	// Voice is the voice the system will speak with; Substituted says it is not the one the file
	// asks for, which the system does not offer.
	Voice       string
	Substituted bool
	// KeyErr says why the system's key is missing (nil when present or not needed).
	KeyErr error
	// Dial is the handshake, when CheckSystems was asked to dial.
	Dial *DialCheck
}

// DialCheck is the outcome of opening a session of a system with the probe task's instructions,
// tools and voice (systems.CheckConnect).
type DialCheck struct {
	// Skipped says why the system was not dialled ("" when it was).
	Skipped   string
	Handshake time.Duration
	// Report is what the provider applied of what was asked.
	Report systems.ConnectReport
	Err    error
}

// CheckOptions say how to check systems.
type CheckOptions struct {
	// Connect opens a session of each system that has an endpoint and its key, configured with
	// Probe, and reports what the provider applied. Without a probe task only the reference
	// agent is dialled.
	Connect bool
	Probe   systems.Probe
	// HandshakeTimeout bounds each handshake (the dialler's default when zero).
	HandshakeTimeout time.Duration
}

// CheckSystems checks every system of f: the voice it will speak with, whether its key is among
// keys (never the key itself), and with opts.Connect whether it answers a session handshake. It is
// what `audit systems check` reports before a study starts.
func CheckSystems(ctx context.Context, f *systems.File, keys systems.Keys, opts CheckOptions) []SystemCheck {
	out := make([]SystemCheck, 0, len(f.Systems))
	for _, s := range f.Systems {
		c := SystemCheck{System: s}
		c.Voice, c.Substituted = s.EffectiveVoice()
		if s.NeedsKey() {
			_, c.KeyErr = systems.Key(s, keys)
		}
		if opts.Connect {
			c.Dial = dialCheck(ctx, s, keys, opts)
		}
		out = append(out, c)
	}
	return out
}

func dialCheck(ctx context.Context, s systems.System, keys systems.Keys, opts CheckOptions) *DialCheck {
	if s.EndpointURL() == "" {
		return &DialCheck{Skipped: "in-process reference agent"}
	}
	if _, err := systems.Key(s, keys); err != nil {
		return &DialCheck{Skipped: "no key"}
	}
	if opts.Probe.Task == "" && s.Family != systems.FamilyReference {
		// A handshake without a task's tools passes where every real call would fail.
		return &DialCheck{Skipped: "no probe task: a session without the task's tools proves nothing"}
	}
	r, err := systems.CheckConnect(ctx, s, systems.DialOptions{Keys: keys, HandshakeTimeout: opts.HandshakeTimeout}, opts.Probe)
	return &DialCheck{Handshake: r.Handshake, Report: r, Err: err}
}
