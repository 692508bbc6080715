package trace

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/redact"
)

type memSink struct{ lines []string }

func (m *memSink) WriteEvent(_ context.Context, e Event) error {
	b, err := MarshalEvent(e)
	m.lines = append(m.lines, string(b))
	return err
}

// A key echoed by a provider in an error, a raw event or metadata never reaches a sink or the log.
func TestAppendRedactsSecrets(t *testing.T) {
	const key = "sk-trace-canary-5f1e2d3c4b"
	redact.Add("TRACE_TEST_KEY", key)
	sink := &memSink{}
	l := NewLog(nil, sink)
	for _, e := range []Event{
		{Type: AgentError, Text: "Incorrect API key provided: " + key, Source: "auth"},
		{Type: AgentRaw, Raw: json.RawMessage(`{"type":"error","error":{"message":"Bearer ` + key + `"}}`), Meta: map[string]string{"type": "error"}},
		{Type: SessionEnd, Text: "agent_lost", Meta: map[string]string{"close_reason": "bad key " + key}},
	} {
		if _, err := l.Append(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	all := strings.Join(sink.lines, "\n")
	for _, e := range l.Events() {
		b, _ := MarshalEvent(e)
		all += string(b)
	}
	if strings.Contains(all, key) {
		t.Fatalf("the key reached the trace:\n%s", all)
	}
	if n := strings.Count(strings.Join(sink.lines, "\n"), "[redacted:TRACE_TEST_KEY]"); n != 3 {
		t.Errorf("%d redactions in the sink, want 3:\n%s", n, strings.Join(sink.lines, "\n"))
	}
	if !json.Valid([]byte(l.Events()[1].Raw)) {
		t.Errorf("redacted raw event is not JSON: %s", l.Events()[1].Raw)
	}
}
