package redact

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

const canary = "sk-canary-0123456789abcdef"

func testSet() *Set {
	s := &Set{}
	s.Add("OPENAI_API_KEY", canary)
	s.Add("SHORT", "abc") // too short to be a key: ignored
	return s
}

func TestString(t *testing.T) {
	s := testSet()
	for _, tc := range []struct{ in, want string }{
		{"Incorrect API key provided: " + canary + ".", "Incorrect API key provided: [redacted:OPENAI_API_KEY]."},
		{"Authorization: Bearer " + canary, "Authorization: [redacted:OPENAI_API_KEY]"},
		{canary + canary, "[redacted:OPENAI_API_KEY][redacted:OPENAI_API_KEY]"},
		{"abc is not a secret", "abc is not a secret"},
		{"nothing here", "nothing here"},
	} {
		if got := s.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := string(s.Bytes([]byte(tc.in))); got != tc.want {
			t.Errorf("Bytes(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if s.Len() != 1 {
		t.Errorf("Len = %d, want 1 (the short value is not registered)", s.Len())
	}
}

func TestJSONEscapedForm(t *testing.T) {
	s := &Set{}
	s.Add("K", "key<with>&odd")
	if got := s.String(`{"m":"key\u003cwith\u003e\u0026odd"}`); got != `{"m":"[redacted:K]"}` {
		t.Errorf("escaped form: %s", got)
	}
}

// A value split across writes is still redacted, and line output is never held back.
func TestWriterAcrossWrites(t *testing.T) {
	s := testSet()
	var out bytes.Buffer
	w := NewWriter(&out, s)
	half := len(canary) / 2
	fmt.Fprintf(w, "error: %s", canary[:half])
	if strings.Contains(out.String(), canary[:half]) {
		t.Errorf("the first half of a key was written before the rest decided: %q", out.String())
	}
	fmt.Fprintf(w, "%s done\n", canary[half:])
	fmt.Fprint(w, "progress 45%\r")
	if got := out.String(); got != "error: [redacted:OPENAI_API_KEY] done\nprogress 45%\r" {
		t.Errorf("written %q", got)
	}
	fmt.Fprint(w, "ends with sk-can")
	w.Flush()
	if !strings.HasSuffix(out.String(), "ends with sk-can") {
		t.Errorf("Flush must write what was held: %q", out.String())
	}
}

func TestHandler(t *testing.T) {
	s := testSet()
	var out bytes.Buffer
	log := slog.New(NewHandler(slog.NewJSONHandler(&out, nil), s)).With(slog.String("key", canary))
	log.Error("dial failed: "+canary, slog.Any("err", errors.New("HTTP 401: Incorrect API key provided: "+canary)),
		slog.Group("g", slog.String("h", "Bearer "+canary)), slog.Any("m", map[string]string{"k": canary}))
	if strings.Contains(out.String(), canary) {
		t.Errorf("log line carries the key: %s", out.String())
	}
	if strings.Count(out.String(), "[redacted:OPENAI_API_KEY]") != 5 {
		t.Errorf("want 5 redactions: %s", out.String())
	}
}
