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
	for _, l := range []string{"XAI_API_KEY", "STEPFUN_API_KEY", "GEMINI_API_KEY", "LIVE_API_KEY", "OPENAI_API_KEY", "ELEVENLABS_API_KEY"} {
		t.Setenv(l, "")
	}
	out, errOut, err := systemsRun(t, "--systems", "../../systems.example.json", "--secrets", sec)
	if exitStatus(err) != 1 {
		t.Fatalf("exit %v, want 1 (missing keys)\n%s%s", err, out, errOut)
	}
	for _, want := range []string{
		"../../systems.example.json: 9 systems", "elevenlabs-agents", "ELEVENLABS_API_KEY MISSING",
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
	out, errOut, err := systemsRun(t, "--systems", sys, "--secrets", sec, "--connect", "--timeout", "3s")
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
