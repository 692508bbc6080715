package console_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/systems"
	"github.com/voicebench/humanaudit/internal/console"
	"github.com/voicebench/humanaudit/internal/task"
)

// With a probe, the check opens each system's session with the probe task's tools and voice:
// a provider that installs them passes with what it applied, one that drops them fails naming
// the tools, and a Gemini setup the service refuses fails with the service's reason.
func TestCheckSystemsConnectCarriesTheProbeTask(t *testing.T) {
	tk, err := task.LoadFile(filepath.Join("..", "..", "tasks", "it-vpn-incident.json"))
	if err != nil {
		t.Fatal(err)
	}
	probe := systems.ProbeFor(tk)
	dropping := agenttest.OpenAIGA
	dropping.DropTools = true
	ga := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Key: "sk-good"})
	drops := agenttest.NewOpenAIFake(t, dropping, agenttest.Script{Key: "sk-good"})
	gem := agenttest.NewGeminiFake(t, agenttest.Script{Key: "AIza-good"})
	f, err := systems.Parse("systems.json", []byte(`{"systems":[
		{"label":"ga","family":"openai","model":"gpt-realtime","voice":"cedar","key_label":"K","endpoint":"`+ga.URL()+`"},
		{"label":"drops","family":"openai","model":"gpt-realtime","key_label":"K","endpoint":"`+drops.URL()+`"},
		{"label":"gem","family":"gemini","model":"gemini-2.5-flash-native-audio-preview-12-2025","voice":"Kore","key_label":"G","endpoint":"`+gem.URL()+`"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	checks := console.CheckSystems(context.Background(), f, keys{"K": "sk-good", "G": "AIza-good"},
		console.CheckOptions{Connect: true, Probe: probe, HandshakeTimeout: 5 * time.Second})
	want := make([]string, len(probe.Config.Tools))
	for i, tl := range probe.Config.Tools {
		want[i] = tl.Name
	}
	for _, c := range checks {
		d := c.Dial
		switch c.System.Label {
		case "ga", "gem":
			if d.Err != nil || !slices.Equal(d.Report.Applied.Tools, want) || d.Report.Task != "it-vpn-incident" {
				t.Errorf("%s: err %v, applied %v, task %q; want tools %v", c.System.Label, d.Err, d.Report.Applied.Tools, d.Report.Task, want)
			}
		case "drops":
			if d.Err == nil || !strings.Contains(d.Err.Error(), "tools_dropped") || !strings.Contains(d.Err.Error(), "record_incident") {
				t.Errorf("drops: err %v, want the dropped tools named", d.Err)
			}
		}
	}
	if s := gem.Setups(); len(s) != 1 || s[0]["tools"] == nil {
		t.Errorf("gemini setups %v: the probe's tools did not reach the service", s)
	}

	// A tool name longer than Gemini's 64 characters: the service closes the setup with 1007.
	long := probe
	long.Config.Tools = slices.Clone(probe.Config.Tools)
	long.Config.Tools[0].Name = strings.Repeat("r", 65)
	checks = console.CheckSystems(context.Background(), &systems.File{Systems: f.Systems[2:]}, keys{"G": "AIza-good"},
		console.CheckOptions{Connect: true, Probe: long, HandshakeTimeout: 5 * time.Second})
	if err := checks[0].Dial.Err; err == nil || !strings.Contains(err.Error(), "1007") || !strings.Contains(err.Error(), "Invalid function name") {
		t.Errorf("refused setup: %v", err)
	}
	var de *systems.DialError
	if !errors.As(checks[0].Dial.Err, &de) || de.System != "gem" {
		t.Errorf("the failure does not name the system: %#v", checks[0].Dial.Err)
	}
}

// Without a probe task a provider's session would carry no tools and pass where every real call
// fails; it is not dialled.
func TestCheckSystemsConnectWithoutAProbeDialsNoProvider(t *testing.T) {
	ga := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Key: "sk-good"})
	f, err := systems.Parse("systems.json", []byte(`{"systems":[
		{"label":"ga","family":"openai","model":"gpt-realtime","key_label":"K","endpoint":"`+ga.URL()+`"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	checks := console.CheckSystems(context.Background(), f, keys{"K": "sk-good"}, console.CheckOptions{Connect: true, HandshakeTimeout: 5 * time.Second})
	if d := checks[0].Dial; d == nil || !strings.HasPrefix(d.Skipped, "no probe task") {
		t.Errorf("dial %+v, want skipped for want of a probe task", d)
	}
	if n := len(ga.Handshakes()); n != 0 {
		t.Errorf("%d handshakes without a probe", n)
	}
}
