// Package redact is the one redaction layer every sink of the console passes through: logs,
// the stdout and stderr of every command, stored trace events and exclusion notes, exports and
// pages. Every configured API key value, and its "Bearer …" form, is replaced by
// "[redacted:LABEL]". Keys are registered where they are loaded (internal/secrets), so a key the
// process knows is never written by it, whichever provider echoes it back.
package redact

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"sync"
)

// MinSecretLen is the shortest value treated as a secret: shorter values are no API key and
// replacing them would mangle ordinary text.
const MinSecretLen = 8

// Set is a set of secret values by label. The zero value is empty and ready; it is safe for
// concurrent use.
type Set struct {
	mu       sync.RWMutex
	patterns []pattern // longest first, so "Bearer KEY" wins over "KEY"
	labels   map[string]string
}

type pattern struct {
	find []byte
	repl []byte
}

// Add registers value under label. Values shorter than MinSecretLen are ignored.
func (s *Set) Add(label, value string) {
	value = strings.TrimSpace(value)
	if len(value) < MinSecretLen {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.labels == nil {
		s.labels = map[string]string{}
	}
	if _, ok := s.labels[value]; ok {
		return
	}
	s.labels[value] = label
	repl := []byte("[redacted:" + cleanLabel(label) + "]")
	forms := []string{"Bearer " + value, "bearer " + value, value}
	// A JSON encoder escapes some characters of a value ("<", "&", non-ASCII): match that form too.
	if b, err := json.Marshal(value); err == nil {
		if esc := string(b[1 : len(b)-1]); esc != value {
			forms = append(forms, "Bearer "+esc, esc)
		}
	}
	for _, f := range forms {
		s.patterns = append(s.patterns, pattern{find: []byte(f), repl: repl})
	}
	sort.SliceStable(s.patterns, func(i, j int) bool { return len(s.patterns[i].find) > len(s.patterns[j].find) })
}

// cleanLabel keeps a label safe inside JSON strings and log lines.
func cleanLabel(label string) string {
	out := []byte(label)
	for i, c := range out {
		ok := c == '_' || c == '-' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !ok {
			out[i] = '_'
		}
	}
	if len(out) == 0 {
		return "key"
	}
	return string(out)
}

// Len returns how many values are registered.
func (s *Set) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.labels)
}

// String returns s with every registered value replaced.
func (s *Set) String(in string) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, p := range s.patterns {
		if strings.Contains(in, string(p.find)) {
			in = strings.ReplaceAll(in, string(p.find), string(p.repl))
		}
	}
	return in
}

// Bytes returns b with every registered value replaced. It returns b itself when nothing matched,
// so callers on hot paths pay one scan per value and no copy.
func (s *Set) Bytes(b []byte) []byte {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, p := range s.patterns {
		if bytes.Contains(b, p.find) {
			b = bytes.ReplaceAll(b, p.find, p.repl)
		}
	}
	return b
}

// Contains reports whether b holds a registered value.
func (s *Set) Contains(b []byte) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, p := range s.patterns {
		if bytes.Contains(b, p.find) {
			return true
		}
	}
	return false
}

// heldTail returns how many bytes at the end of b could begin a registered value (so a writer
// holds them back until the next write decides). Never across a line end: values hold none.
func (s *Set) heldTail(b []byte) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	start := max(bytes.LastIndexAny(b, "\n\r")+1, 0)
	best := 0
	for _, p := range s.patterns {
		for n := min(len(p.find)-1, len(b)-start); n > best; n-- {
			if bytes.HasSuffix(b, p.find[:n]) {
				best = n
				break
			}
		}
	}
	return best
}

// process is the process-wide set: keys loaded anywhere in the process are redacted everywhere.
var process Set

// Default returns the process-wide set.
func Default() *Set { return &process }

// Add registers a secret in the process-wide set.
func Add(label, value string) { process.Add(label, value) }

// String redacts with the process-wide set.
func String(s string) string { return process.String(s) }

// Bytes redacts with the process-wide set.
func Bytes(b []byte) []byte { return process.Bytes(b) }
