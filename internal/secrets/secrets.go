// Package secrets resolves API keys by label from a git-ignored secrets file (lines LABEL=value,
// # comments) or the environment. Keys are returned to the caller only; this package never logs
// or prints them.
package secrets

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/voicebench/humanaudit/internal/redact"
)

// DefaultFile is the secrets file read when no other is named.
const DefaultFile = "secrets.txt"

// ErrNotFound is returned when a label is neither in the file nor in the environment.
var ErrNotFound = errors.New("key not found")

// Store holds the labels read from a secrets file.
type Store struct {
	path   string
	values map[string]string
}

// Load reads path (a missing file is an empty store). A malformed line is an error naming the
// file and line, never its content.
func Load(path string) (*Store, error) {
	s := &Store{path: path, values: map[string]string{}}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		k = strings.TrimSpace(strings.TrimPrefix(k, "export "))
		if !ok || k == "" {
			return nil, fmt.Errorf("%s:%d: want LABEL=value", path, line)
		}
		s.values[k] = strings.Trim(strings.TrimSpace(v), `"'`)
		redact.Add(k, s.values[k])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return s, nil
}

// Lookup returns the key for label from the file, else from the environment.
func (s *Store) Lookup(label string) (string, error) {
	if v, ok := s.values[label]; ok && v != "" {
		return v, nil
	}
	if v := os.Getenv(label); v != "" {
		redact.Add(label, v)
		return v, nil
	}
	return "", fmt.Errorf("key label %s not found in %s or the environment: %w", label, s.path, ErrNotFound)
}
