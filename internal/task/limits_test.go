package task

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Oversized text fields are problems naming the field; an oversized file is refused before it is
// parsed.
func TestTextLimits(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(exampleTask(t)), &doc); err != nil {
		t.Fatal(err)
	}
	doc["title"] = strings.Repeat("T", 201)
	doc["user"].(map[string]any)["goals"].([]any)[0] = strings.Repeat("g", 1001)
	b, _ := json.Marshal(doc)
	got := strings.Join(problemsOf(t, "big.json", string(b)), "\n")
	for _, want := range []string{"big.json: $.title: 201 characters, at most 200", "big.json: $.user.goals[0]: 1001 characters, at most 1000"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}

	huge := filepath.Join(t.TempDir(), "huge.json")
	if err := os.WriteFile(huge, []byte(`{"title":"`+strings.Repeat("x", MaxFileBytes)+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadFile(huge)
	if err == nil || !strings.Contains(err.Error(), "huge.json: file is") || !strings.Contains(err.Error(), "at most 2097152") {
		t.Errorf("oversized file: %v", err)
	}
}
