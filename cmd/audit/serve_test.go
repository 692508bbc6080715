package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/store/storetest"
)

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeCreatesStudyFromFile: audit serve --study FILE creates the study on first start (plan,
// consent, participant links) and leaves it alone on the next.
func TestServeCreatesStudyFromFile(t *testing.T) {
	t.Setenv("DATABASE_URL", storetest.NewURL(t))
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"study", "plan", "--tasks", "it-vpn-incident,fnol-auto-glass", "--tasks-dir", "../../tasks",
		"--systems", "reference-agent", "--anchor", "", "--sessions-per-participant", "1", "--seed", "3", "--out", filepath.Join(dir, "plan.csv")}, &out, &errOut); err != nil {
		t.Fatalf("plan: %v\n%s", err, errOut.String())
	}
	os.WriteFile(filepath.Join(dir, "consent.txt"), []byte("Pilot consent text."), 0o644)
	os.WriteFile(filepath.Join(dir, "study.json"), []byte(`{"id":"pilot-1","name":"Pilot","seed":3,"plan":"plan.csv","consent":"consent.txt","completion_code":"PILOT-OK"}`), 0o644)
	serve := func() string {
		ctx, cancel := context.WithCancel(context.Background())
		var stdout, stderr syncBuffer
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--tasks", "../../tasks",
				"--systems", filepath.Join(dir, "none.json"), "--study", filepath.Join(dir, "study.json"), "--loopback-only"}, &stdout, &stderr)
		}()
		deadline := time.Now().Add(60 * time.Second)
		for !strings.Contains(stdout.String(), "console:") && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("serve: %v\n%s", err, stderr.String())
		}
		return stdout.String()
	}
	first := serve()
	if n := strings.Count(first, "participant: http://127.0.0.1:"); n != 2 {
		t.Errorf("first start printed %d participant links:\n%s", n, first)
	}
	second := serve()
	if !strings.Contains(second, "study pilot-1: already created") || strings.Contains(second, "participant:") {
		t.Errorf("second start:\n%s", second)
	}
}
