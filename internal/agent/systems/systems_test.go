package systems_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/elevenlabs"
	"github.com/voicebench/humanaudit/internal/agent/systems"
	"github.com/voicebench/humanaudit/internal/secrets"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestExampleFileIsValid(t *testing.T) {
	f, err := systems.Load("../../../systems.example.json")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[systems.Family]bool{}
	for _, s := range f.Systems {
		seen[s.Family] = true
		if v, sub := s.EffectiveVoice(); sub {
			t.Errorf("example system %s: voice %q is not offered (would become %s)", s.Label, s.Voice, v)
		}
	}
	for _, fam := range systems.Families {
		if !seen[fam] {
			t.Errorf("example file has no %s system", fam)
		}
	}
}

func TestParseProblems(t *testing.T) {
	tests := []struct {
		name, doc, want string
		sentinel        error
	}{
		{"malformed JSON", "{\n  \"systems\": [\n    {\"label\": \"a\",}\n  ]\n}",
			`systems.json: line 3, column 20: malformed JSON: invalid character '}' looking for beginning of object key string`, systems.ErrMalformed},
		{"unknown field", `{"systems":[{"label":"a","family":"openai","model":"m","key_label":"K","vocie":"x"}]}`,
			`systems.json: unknown field "vocie" (see docs/systems.md)`, systems.ErrMalformed},
		{"wrong type", `{"systems":[{"label":"a","server_vad":"yes"}]}`,
			`systems.json: line 1, column 44: field systems.server_vad: expected bool, got string`, systems.ErrMalformed},
		{"no systems", `{}`, `systems.json: no systems: expected {"systems": [{"label": …, "family": …}, …]}`, systems.ErrMalformed},
		{"unknown family", `{"systems":[{"label":"grok-voice","family":"xai","model":"m","key_label":"XAI_API_KEY"}]}`,
			`systems.json: system "grok-voice": unknown family "xai" (expected one of openai, openai-beta, grok, stepfun, gemini, live, elevenlabs, reference)`, systems.ErrUnknownFamily},
		{"duplicate label", `{"systems":[{"label":"a","family":"reference"},{"label":"a","family":"reference"}]}`,
			`systems.json: system "a": duplicate label (also systems[0])`, systems.ErrDuplicateLabel},
		{"http URL", `{"systems":[{"label":"a","family":"openai","endpoint":"https://api.openai.com/v1/realtime","model":"m","key_label":"K"}]}`,
			`systems.json: system "a": endpoint "https://api.openai.com/v1/realtime": expected a ws:// or wss:// URL`, systems.ErrBadEndpoint},
		{"key over plain ws", `{"systems":[{"label":"a","family":"grok","endpoint":"ws://api.x.ai/v1/realtime","model":"m","key_label":"K"}]}`,
			`systems.json: system "a": endpoint "ws://api.x.ai/v1/realtime": plain ws:// would send the key unencrypted; use wss://`, systems.ErrBadEndpoint},
		{"key in URL", `{"systems":[{"label":"a","family":"gemini","endpoint":"wss://x.example/ws?key=AIzaSECRET","model":"m","key_label":"K"}]}`,
			`systems.json: system "a": endpoint "wss://x.example/ws": a key in the URL is not allowed (use key_label)`, systems.ErrBadEndpoint},
		{"live cannot take matched turns", `{"systems":[{"label":"a","family":"live","model":"gpt-live-1","key_label":"K"}]}`,
			`systems.json: system "a": family live cannot honour matched turn-taking: GPT-Live is full duplex and takes turns itself; set "server_vad": true`, systems.ErrUnsupported},
		{"reserved label", `{"systems":[{"label":"reference-agent","family":"openai","model":"m","key_label":"K"}]}`,
			`systems.json: system "reference-agent": label "reference-agent" is reserved for the console's built-in reference agent: choose another label`, systems.ErrMalformed},
		{"long label", `{"systems":[{"label":"` + strings.Repeat("a", 65) + `","family":"reference"}]}`,
			`systems.json: system "` + strings.Repeat("a", 65) + `": label must be at most 64 letters, digits, '.', '_' or '-'`, systems.ErrMalformed},
		{"elevenlabs without an agent", `{"systems":[{"label":"el","family":"elevenlabs","key_label":"EL","server_vad":true}]}`,
			`systems.json: system "el": missing agent_id (or agents: task id → agent id): the ElevenLabs agent provisioned on the platform`, systems.ErrMalformed},
		{"elevenlabs with matched turns", `{"systems":[{"label":"el","family":"elevenlabs","agent_id":"agent_1"}]}`,
			`systems.json: system "el": server_vad must be true: the ElevenLabs platform takes turns itself (its protocol has no client turn control)`, systems.ErrMalformed},
		{"missing model and key label", `{"systems":[{"label":"a","family":"openai"}]}`,
			"systems.json: system \"a\": missing model\nsystems.json: system \"a\": missing key_label (the label of its API key in secrets.txt or the environment)", systems.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := systems.Parse("systems.json", []byte(tt.doc))
			if err == nil {
				t.Fatal("accepted")
			}
			if err.Error() != tt.want {
				t.Errorf("got  %s\nwant %s", err, tt.want)
			}
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("not %v", tt.sentinel)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("secret in message: %s", err)
			}
		})
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// keys writes a secrets file with the given lines and loads it.
func keys(t *testing.T, lines string) *secrets.Store {
	t.Helper()
	st, err := secrets.Load(writeFile(t, "secrets.txt", lines))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestMissingKeyMessage(t *testing.T) {
	f, err := systems.Parse("systems.json", []byte(`{"systems":[{"label":"grok-voice","family":"grok","model":"grok-voice-latest","key_label":"XAI_API_KEY"},{"label":"ref","family":"reference"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("XAI_API_KEY", "")
	st, err := secrets.Load("secrets.txt") // absent in the test's directory
	if err != nil {
		t.Fatal(err)
	}
	err = f.CheckKeys(st)
	want := `systems.json: system "grok-voice": key label XAI_API_KEY not found in secrets.txt or the environment`
	if err == nil || err.Error() != want || !errors.Is(err, systems.ErrMissingKey) {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	sys, _ := f.Lookup("grok-voice")
	if _, err := systems.Dial(context.Background(), sys, systems.DialOptions{Keys: st}); err == nil || err.Error() != want {
		t.Fatalf("dial without key: %v", err)
	}
	if _, err := f.Lookup("nope"); !errors.Is(err, systems.ErrUnknownSystem) {
		t.Errorf("unknown label: %v", err)
	}
}

func parseOne(t *testing.T, doc string) systems.System {
	t.Helper()
	f, err := systems.Parse("systems.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return f.Systems[0]
}

func TestDialEachFamily(t *testing.T) {
	const key = "sk-dial-test"
	store := keys(t, "# test\nTEST_KEY="+key+"\n")
	cases := []struct {
		family string
		fake   func(t *testing.T) string
	}{
		{"openai", func(t *testing.T) string {
			return agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Key: key}).URL()
		}},
		{"openai-beta", func(t *testing.T) string {
			return agenttest.NewOpenAIFake(t, agenttest.OpenAIBeta, agenttest.Script{Key: key}).URL()
		}},
		{"grok", func(t *testing.T) string {
			return agenttest.NewOpenAIFake(t, agenttest.XAIGrok, agenttest.Script{Key: key}).URL()
		}},
		{"stepfun", func(t *testing.T) string {
			return agenttest.NewOpenAIFake(t, agenttest.StepFunRealtime, agenttest.Script{Key: key}).URL()
		}},
		{"live", func(t *testing.T) string {
			return agenttest.NewGPTLiveFake(t, agenttest.Script{Key: key}, agenttest.GPTLiveOptions{}).URL()
		}},
		{"gemini", func(t *testing.T) string { return agenttest.NewGeminiFake(t, agenttest.Script{Key: key}).URL() }},
	}
	for _, c := range cases {
		t.Run(c.family, func(t *testing.T) {
			sys := parseOne(t, fmt.Sprintf(`{"systems":[{"label":"sut","family":%q,"endpoint":%q,"model":"m-1","key_label":"TEST_KEY","server_vad":%v}]}`,
				c.family, c.fake(t), c.family == "live"))
			a, err := systems.Dial(context.Background(), sys, systems.DialOptions{Keys: store, Config: agent.Config{Instructions: "hi"}})
			if err != nil {
				t.Fatal(err)
			}
			a.Close()
		})
	}
	t.Run("elevenlabs, an agent per task", func(t *testing.T) {
		tool := agent.Tool{Name: "record", Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`)}
		mk := func(id string) agenttest.ElevenLabsAgent {
			return agenttest.ElevenLabsAgent{ID: id, Private: true, AllowPrompt: true, AllowFirstMessage: true,
				Tools: []elevenlabs.ToolConfig{{Type: "client", Name: "record", Parameters: tool.Parameters, ExpectsResponse: true}}}
		}
		f := agenttest.NewElevenLabsFake(t, agenttest.ElevenLabsOptions{Key: key, Agents: []agenttest.ElevenLabsAgent{mk("agent_default"), mk("agent_vpn")}}, agenttest.Script{})
		sys := parseOne(t, fmt.Sprintf(`{"systems":[{"label":"el","family":"elevenlabs","endpoint":%q,"model":"gpt-4.1-mini","key_label":"TEST_KEY",
			"server_vad":true,"agent_id":"agent_default","agents":{"it-vpn-incident":"agent_vpn"}}]}`, f.URL()))
		for task, want := range map[string]string{"it-vpn-incident": "agent_vpn", "other": "agent_default"} {
			if got := sys.AgentFor(task); got != want {
				t.Errorf("agent for %s: %s, want %s", task, got, want)
			}
			a, err := systems.Dial(context.Background(), sys, systems.DialOptions{Keys: store, Task: task,
				Config: agent.Config{Instructions: "hi", Tools: []agent.Tool{tool}}})
			if err != nil {
				t.Fatal(err)
			}
			a.Close()
		}
		if in := f.Initiations(); len(in) != 2 {
			t.Errorf("initiations %d", len(in))
		}
	})
	t.Run("reference needs no key", func(t *testing.T) {
		f := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{})
		sys := parseOne(t, `{"systems":[{"label":"reference","family":"reference"}]}`)
		a, err := systems.Dial(context.Background(), sys, systems.DialOptions{Endpoint: f.URL()})
		if err != nil {
			t.Fatal(err)
		}
		a.Close()
		if hs := f.Handshakes(); len(hs) != 1 || hs[0].Auth {
			t.Errorf("handshakes %+v", hs)
		}
	})
}

func TestDialUnreachableNamesSystemAndEndpoint(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	sys := parseOne(t, fmt.Sprintf(`{"systems":[{"label":"gpt-realtime","family":"openai","endpoint":"ws://%s/v1/realtime","model":"gpt-realtime","key_label":"K"}]}`, addr))
	_, err = systems.Dial(context.Background(), sys, systems.DialOptions{
		Keys: keys(t, "K=sk-never-printed\n"), HandshakeTimeout: 2 * time.Second})
	want := fmt.Sprintf(`system "gpt-realtime" at ws://%s/v1/realtime: unreachable error (refused): connection refused`, addr)
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	if agent.ClassOf(err) != agent.ClassUnreachable {
		t.Errorf("class %q", agent.ClassOf(err))
	}
}
