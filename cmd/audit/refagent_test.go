package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestRefagentServesUntilInterrupted: audit refagent prints its ws:// URL, speaks the realtime
// protocol there (session.created first) and returns cleanly when its context ends.
func TestRefagentServesUntilInterrupted(t *testing.T) {
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed (scripts/deps.sh installs it)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"refagent", "--addr", "127.0.0.1:0"}, &stdout, &stderr) }()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(stdout.String(), "\n") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	line := strings.TrimSpace(stdout.String())
	url, ok := strings.CutPrefix(line, "reference agent: ")
	if !ok || !strings.HasPrefix(url, "ws://127.0.0.1:") || !strings.HasSuffix(url, "/v1/realtime") {
		t.Fatalf("stdout %q (stderr %s)", line, stderr.String())
	}
	ws, resp, err := websocket.DefaultDialer.Dial(url+"?model=reference", nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	resp.Body.Close()
	_, data, err := ws.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Type string `json:"type"`
	}
	json.Unmarshal(data, &ev)
	if ev.Type != "session.created" {
		t.Errorf("first event %s", data)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("refagent returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("refagent did not stop after the interrupt")
	}
	ws.Close()
}

// A bad flag or voice is a clear error.
func TestRefagentBadVoice(t *testing.T) {
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed")
	}
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"refagent", "--voice", "hal9000", "--addr", "127.0.0.1:0"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), `no voice "hal9000"`) {
		t.Errorf("err = %v", err)
	}
}
