package secrets

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/redact"
)

func TestLookupFileThenEnvironment(t *testing.T) {
	p := filepath.Join(t.TempDir(), "secrets.txt")
	os.WriteFile(p, []byte("# keys\nOPENAI_API_KEY = sk-file\nexport XAI_API_KEY=\"xai-file\"\n"), 0o600)
	t.Setenv("GEMINI_API_KEY", "gm-env")
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	for label, want := range map[string]string{"OPENAI_API_KEY": "sk-file", "XAI_API_KEY": "xai-file", "GEMINI_API_KEY": "gm-env"} {
		if got, err := s.Lookup(label); err != nil || got != want {
			t.Errorf("Lookup(%s) = %q, %v; want %q", label, got, err, want)
		}
	}
	if _, err := s.Lookup("MISSING_KEY"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "MISSING_KEY") {
		t.Errorf("missing label: %v", err)
	}
}

func TestMalformedLineNamesLineNotContent(t *testing.T) {
	p := filepath.Join(t.TempDir(), "secrets.txt")
	os.WriteFile(p, []byte("sk-live-secret-without-label\n"), 0o600)
	_, err := Load(p)
	if err == nil || !strings.Contains(err.Error(), ":1:") || strings.Contains(err.Error(), "sk-live") {
		t.Fatalf("err = %v", err)
	}
}

func TestMissingFileIsEmpty(t *testing.T) {
	s, err := Load(filepath.Join(t.TempDir(), "none.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup("NOPE_NOT_SET_ANYWHERE"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
}

// Every value read, from the file or the environment, is registered for redaction.
func TestLoadedKeysAreRedacted(t *testing.T) {
	p := filepath.Join(t.TempDir(), "secrets.txt")
	os.WriteFile(p, []byte("FILE_KEY=file-secret-0123456789\n"), 0o600)
	t.Setenv("ENV_KEY_FOR_REDACTION", "env-secret-0123456789")
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup("ENV_KEY_FOR_REDACTION"); err != nil {
		t.Fatal(err)
	}
	got := redact.String("a file-secret-0123456789 and Bearer env-secret-0123456789")
	if got != "a [redacted:FILE_KEY] and [redacted:ENV_KEY_FOR_REDACTION]" {
		t.Errorf("redacted: %q", got)
	}
}
