package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/task"
)

// TestSystemsProvisionWritesTheTasksTools: one agent body per task whose client tools are the
// task's tools with their schemas, and the overrides the adapter sends enabled.
func TestSystemsProvisionWritesTheTasksTools(t *testing.T) {
	sys, _ := systemsFiles(t, `{"systems":[{"label":"el","family":"elevenlabs","model":"gpt-4.1-mini","key_label":"EL","server_vad":true,"agent_id":"agent_x"}]}`, "")
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"systems", "provision", "--system", "el", "--systems", sys, "--tasks-dir", suiteTasks,
		"--tasks", "it-vpn-incident,fnol-auto-glass", "--out", out}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	for _, id := range []string{"it-vpn-incident", "fnol-auto-glass"} {
		tk, err := task.LoadFile(filepath.Join(suiteTasks, id+".json"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(out, id+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			ConversationConfig struct {
				Agent struct {
					FirstMessage string `json:"first_message"`
					Prompt       struct {
						LLM   string `json:"llm"`
						Tools []struct {
							Type, Name      string
							Parameters      json.RawMessage
							ExpectsResponse bool `json:"expects_response"`
						} `json:"tools"`
					} `json:"prompt"`
				} `json:"agent"`
			} `json:"conversation_config"`
			PlatformSettings struct {
				Overrides struct {
					C struct {
						Agent struct {
							Prompt       struct{ Prompt bool } `json:"prompt"`
							FirstMessage bool                  `json:"first_message"`
						} `json:"agent"`
					} `json:"conversation_config_override"`
				} `json:"overrides"`
			} `json:"platform_settings"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatal(err)
		}
		a := body.ConversationConfig.Agent
		if a.Prompt.LLM != "gpt-4.1-mini" || a.FirstMessage != "" || len(a.Prompt.Tools) != len(tk.Agent.Tools) {
			t.Fatalf("%s: body %s", id, b)
		}
		for i, tl := range tk.Agent.Tools {
			got := a.Prompt.Tools[i]
			var x, y any
			json.Unmarshal(got.Parameters, &x)
			json.Unmarshal(tl.Parameters, &y)
			xb, _ := json.Marshal(x)
			yb, _ := json.Marshal(y)
			if got.Type != "client" || got.Name != tl.Name || !got.ExpectsResponse || string(xb) != string(yb) {
				t.Errorf("%s: tool %d %+v, want %s", id, i, got, tl.Name)
			}
		}
		if ov := body.PlatformSettings.Overrides.C.Agent; !ov.Prompt.Prompt || !ov.FirstMessage {
			t.Errorf("%s: overrides not enabled: %+v", id, ov)
		}
	}
	if b, err := os.ReadFile(filepath.Join(out, "agents.json")); err != nil || !strings.Contains(string(b), `"it-vpn-incident"`) {
		t.Fatalf("agents.json: %s %v", b, err)
	}
	// Only platform systems are provisioned.
	ref, _ := systemsFiles(t, `{"systems":[{"label":"r","family":"reference"}]}`, "")
	if err := run(context.Background(), []string{"systems", "provision", "--system", "r", "--systems", ref, "--tasks-dir", suiteTasks, "--out", t.TempDir()}, &stdout, &stderr); err == nil {
		t.Fatal("a reference system was provisioned")
	}
}
