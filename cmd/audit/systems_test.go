package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
)

func systemsRun(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), append([]string{"systems", "check"}, args...), &out, &errb)
	return out.String(), errb.String(), err
}

func systemsFiles(t *testing.T, systemsJSON, secretsTxt string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	sys, sec := filepath.Join(dir, "systems.json"), filepath.Join(dir, "secrets.txt")
	if err := os.WriteFile(sys, []byte(systemsJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sec, []byte(secretsTxt), 0o600); err != nil {
		t.Fatal(err)
	}
	return sys, sec
}

func exitStatus(err error) int {
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestSystemsCheckExample(t *testing.T) {
	_, sec := systemsFiles(t, "{}", "OPENAI_API_KEY=sk-example-secret\n")
	for _, l := range []string{"XAI_API_KEY", "STEPFUN_API_KEY", "GEMINI_API_KEY", "LIVE_API_KEY", "OPENAI_API_KEY"} {
		t.Setenv(l, "")
	}
	out, errOut, err := systemsRun(t, "--systems", "../../systems.example.json", "--secrets", sec)
	if exitStatus(err) != 1 {
		t.Fatalf("exit %v, want 1 (missing keys)\n%s%s", err, out, errOut)
	}
	for _, want := range []string{
		"../../systems.example.json: 8 systems",
		"gpt-realtime", "OPENAI_API_KEY present", "XAI_API_KEY MISSING", "reference", "(in-process)", "key not needed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	wantErr := fmt.Sprintf(`../../systems.example.json: system "grok-voice": key label XAI_API_KEY not found in %s or the environment`, sec)
	if !strings.Contains(errOut, wantErr+"\n") {
		t.Errorf("stderr lacks %q:\n%s", wantErr, errOut)
	}
	if strings.Contains(out+errOut, "sk-example-secret") {
		t.Error("a key was printed")
	}
}

func TestSystemsCheckMalformed(t *testing.T) {
	sys, sec := systemsFiles(t, `{"systems":[{"label":"a","family":"openai","model":"m","key_label":"K"},{"label":"a","family":"reference"}]}`, "")
	_, errOut, err := systemsRun(t, "--systems", sys, "--secrets", sec)
	want := sys + `: system "a": duplicate label (also systems[0])` + "\n"
	if exitStatus(err) != 1 || errOut != want {
		t.Fatalf("exit %v, stderr %q, want %q", err, errOut, want)
	}
}

func TestSystemsCheckConnect(t *testing.T) {
	f := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Key: "sk-good"})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	sys, sec := systemsFiles(t, fmt.Sprintf(`{"systems":[
		{"label":"fake-gpt","family":"openai","endpoint":%q,"model":"gpt-realtime","key_label":"GOOD_KEY"},
		{"label":"down","family":"openai","endpoint":"ws://%s/v1/realtime","model":"gpt-realtime","key_label":"GOOD_KEY"},
		{"label":"bad-key","family":"openai","endpoint":%q,"model":"gpt-realtime","key_label":"BAD_KEY"}]}`, f.URL(), dead, f.URL()),
		"GOOD_KEY=sk-good\nBAD_KEY=sk-bad\n")
	out, errOut, err := systemsRun(t, "--systems", sys, "--secrets", sec, "--connect", "--timeout", "3s", "--tasks", "../../tasks")
	if exitStatus(err) != 1 {
		t.Fatalf("exit %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(out, "fake-gpt: ok (handshake") {
		t.Errorf("stdout:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	want := []string{
		fmt.Sprintf(`system "down" at ws://%s/v1/realtime: unreachable error (refused): connection refused`, dead),
		fmt.Sprintf(`system "bad-key" at %s: auth error (http_401): upgrade refused: HTTP 401:`, f.URL()),
	}
	if len(lines) != 2 || lines[0] != want[0] || !strings.HasPrefix(lines[1], want[1]) {
		t.Errorf("stderr lines:\n%s\nwant:\n%s", errOut, strings.Join(want, "\n"))
	}
	if strings.Contains(out+errOut, "sk-good") || strings.Contains(out+errOut, "sk-bad") {
		t.Error("a key was printed")
	}
}

// The connect check opens a session with a suite task's instructions, tools and voice: it reports
// what each provider applied, and fails naming what a provider refused.
func TestSystemsCheckConnectExercisesTheSession(t *testing.T) {
	ga := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Key: "sk-good"})
	dropping := agenttest.OpenAIGA
	dropping.DropTools = true
	refusing := agenttest.NewOpenAIFake(t, dropping, agenttest.Script{Key: "sk-good"})
	beta := agenttest.NewOpenAIFake(t, agenttest.OpenAIBeta, agenttest.Script{Key: "sk-good"})
	grok := agenttest.NewOpenAIFake(t, agenttest.XAIGrok, agenttest.Script{Key: "sk-good"})
	step := agenttest.NewOpenAIFake(t, agenttest.StepFunRealtime, agenttest.Script{Key: "sk-good"})
	gem := agenttest.NewGeminiFake(t, agenttest.Script{Key: "AIza-good"})
	live := agenttest.NewGPTLiveFake(t, agenttest.Script{Key: "sk-good"}, agenttest.GPTLiveOptions{GreetFirst: true})
	sys, sec := systemsFiles(t, fmt.Sprintf(`{"systems":[
		{"label":"fake-gpt","family":"openai","endpoint":%q,"model":"gpt-realtime","voice":"cedar","key_label":"GOOD_KEY"},
		{"label":"drops-tools","family":"openai","endpoint":%q,"model":"gpt-realtime","key_label":"GOOD_KEY"},
		{"label":"fake-beta","family":"openai-beta","endpoint":%q,"model":"gpt-4o-realtime-preview","voice":"sage","key_label":"GOOD_KEY"},
		{"label":"fake-grok","family":"grok","endpoint":%q,"model":"grok-voice-latest","voice":"Ara","key_label":"GOOD_KEY"},
		{"label":"fake-step","family":"stepfun","endpoint":%q,"model":"step-audio-2","voice":"wenrounansheng","key_label":"GOOD_KEY"},
		{"label":"fake-gemini","family":"gemini","endpoint":%q,"model":"gemini-2.5-flash-native-audio-preview-12-2025","voice":"Kore","key_label":"GEMINI_KEY"},
		{"label":"fake-live","family":"live","endpoint":%q,"model":"gpt-live-1","server_vad":true,"key_label":"GOOD_KEY"}]}`,
		ga.URL(), refusing.URL(), beta.URL(), grok.URL(), step.URL(), gem.URL(), live.URL()), "GOOD_KEY=sk-good\nGEMINI_KEY=AIza-good\n")
	out, errOut, err := systemsRun(t, "--systems", sys, "--secrets", sec, "--connect", "--timeout", "3s", "--tasks", "../../tasks", "--task", "it-vpn-incident")
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	if exitStatus(err) != 1 {
		t.Fatalf("exit %v, want 1 (a provider dropped the tools)", err)
	}
	for _, want := range []string{
		"connect (task it-vpn-incident: 4 tools):",
		"fake-gpt: ok (handshake", "fake-gpt: ok", "tools 4/4 installed, voice cedar, audio 24000/24000 Hz, turn detection manual; echoed by the provider",
		"drops-tools: FAILED",
		"fake-gemini: ok", "tools 4/4 installed, voice Kore, audio 16000/24000 Hz, turn detection manual; accepted as sent (the provider echoes nothing)",
		"fake-beta: ok", "tools 4/4 installed, voice sage, audio 24000/24000 Hz, turn detection manual; echoed by the provider",
		"fake-grok: ok", "tools 4/4 installed, voice Ara, audio 24000/24000 Hz, turn detection manual; echoed by the provider",
		"fake-step: ok", "tools 4/4 installed, voice wenrounansheng, audio 24000/24000 Hz, turn detection manual; echoed by the provider",
		"fake-live: ok", "turn detection full_duplex; echoed by the provider",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	wantErr := fmt.Sprintf(`system "drops-tools" at %s: protocol error (tools_dropped): provider applied 0 of 4 tools; refused: record_incident, mark_ready_for_triage, dispatch_ticket, get_ticket`, refusing.URL())
	if strings.TrimSpace(errOut) != wantErr {
		t.Errorf("stderr:\n%s\nwant:\n%s", errOut, wantErr)
	}
	// The session carried the task: its tools reached every provider that took them.
	if s := gem.Setups(); len(s) != 1 || len(s[0]["tools"].([]any)[0].(map[string]any)["functionDeclarations"].([]any)) != 4 {
		t.Errorf("gemini setup %v", s)
	}
	if strings.Contains(out+errOut, "sk-good") || strings.Contains(out+errOut, "AIza-good") {
		t.Error("a key was printed")
	}
}

// Without dialling: a task whose tools a family cannot take is named with the tool and keyword,
// and options a family cannot honour are refused or warned about.
func TestSystemsCheckNamesWhatAFamilyCannotTake(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("../../tasks/it-vpn-incident.json")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(b), `"error_code": {`, `"error_code": {"not": {"const": ""},`, 1)
	if bad == string(b) {
		t.Fatal("task file changed shape")
	}
	os.WriteFile(filepath.Join(dir, "it-vpn-incident.json"), []byte(bad), 0o644)
	sys, sec := systemsFiles(t, `{"systems":[
		{"label":"gem","family":"gemini","model":"gemini-live","key_label":"K"},
		{"label":"grok","family":"grok","model":"grok-voice-latest","transcription_model":"whisper-1","key_label":"K"},
		{"label":"step","family":"stepfun","model":"step-audio-2-mini","voice":"elegantgentle-female","key_label":"K"}]}`, "K=sk-x1234567\n")
	out, errOut, err := systemsRun(t, "--systems", sys, "--secrets", sec, "--tasks", dir)
	if exitStatus(err) != 1 {
		t.Fatalf("exit %v\n%s%s", err, out, errOut)
	}
	for _, want := range []string{
		sys + `: system "gem": task it-vpn-incident: tool "record_incident": parameters.properties.error_code.not: keyword "not" cannot be expressed in Gemini's function schema`,
		"warning: " + sys + `: system "grok": transcription_model "whisper-1" is ignored: xAI drops it silently`,
		"warning: " + sys + `: system "step": voice "elegantgentle-female" is not offered for model "step-audio-2-mini"; "qingchunshaonv" is used instead`,
	} {
		if n := strings.Count(errOut, want); n != 1 {
			t.Errorf("stderr has %q %d times, want once:\n%s", want, n, errOut)
		}
	}
	if !strings.Contains(out, "elegantgentle-female→qingchunshaonv (not offered)") {
		t.Errorf("stdout:\n%s", out)
	}
}

// A setup the service refuses fails the connect check with the service's reason, naming the
// system: here a tool name longer than the 64 characters Gemini's FunctionDeclaration allows,
// which no offline check looks at. A handshake without the task's tools would have passed.
func TestSystemsCheckConnectFailsOnASetupTheServiceRefuses(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("../../tasks/it-vpn-incident.json")
	if err != nil {
		t.Fatal(err)
	}
	long := "get_ticket_" + strings.Repeat("x", 54) // 65 characters
	bad := strings.Replace(string(b), `"name": "get_ticket"`, fmt.Sprintf(`"name": %q`, long), 1)
	if bad == string(b) {
		t.Fatal("task file changed shape")
	}
	if err := os.WriteFile(filepath.Join(dir, "it-vpn-incident.json"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	gem := agenttest.NewGeminiFake(t, agenttest.Script{Key: "AIza-good"})
	sys, sec := systemsFiles(t, fmt.Sprintf(`{"systems":[
		{"label":"fake-gemini","family":"gemini","endpoint":%q,"model":"gemini-2.5-flash-native-audio-preview-12-2025","voice":"Kore","key_label":"GEMINI_KEY"}]}`,
		gem.URL()), "GEMINI_KEY=AIza-good\n")
	out, errOut, err := systemsRun(t, "--systems", sys, "--secrets", sec, "--connect", "--timeout", "3s", "--tasks", dir)
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	if exitStatus(err) != 1 {
		t.Fatalf("exit %v, want 1 (the service refused the setup)", err)
	}
	if !strings.Contains(out, "fake-gemini: FAILED") {
		t.Errorf("stdout lacks the failure")
	}
	for _, want := range []string{`system "fake-gemini" at ` + gem.URL(), "1007", "setup.tools[0].function_declarations[3].name: Invalid function name"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if c := gem.Closes(); len(c) != 1 || !strings.HasPrefix(c[0], "1007 ") {
		t.Errorf("fake closes %q, want one 1007", c)
	}
}
