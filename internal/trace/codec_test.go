package trace

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

type fixedClock struct{ t int64 }

func (c *fixedClock) MediaMS() int64 { return c.t }
func (c *fixedClock) Now() time.Time {
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(c.t) * time.Millisecond)
}

func sampleEvents(t testing.TB) []Event {
	clock := &fixedClock{}
	l := NewLog(clock)
	ctx := context.Background()
	for _, e := range []Event{
		{Type: SessionStart, Actor: ActorSystem, Meta: map[string]string{"task": "x", "mode": "human"}},
		{Type: CallerAudioStart, Actor: ActorCaller},
		{Type: CallerUtterance, Actor: ActorCaller, Text: "It's <five> & \"six\"", Plan: &Plan{ID: "answer:x", Kind: PlanAnswer, Facts: []FactRef{{Fact: "x", Version: 1}}}},
		{Type: ToolCall, Actor: ActorAgent, CallID: "c1", Tool: "record", Args: []byte(`{"a":1}`)},
		{Type: ToolResult, Actor: ActorEnv, CallID: "c1", Tool: "record", OK: Bool(false), Error: "bad_arguments", Result: []byte(`{"ok":false}`)},
		{Type: CueIssued, Actor: ActorEnv, CueID: "fix", Text: "Correct it"},
	} {
		clock.t += 40
		if _, err := l.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	return l.Events()
}

func TestJSONLRoundTripIsCanonical(t *testing.T) {
	events := sampleEvents(t)
	var a, b bytes.Buffer
	if err := WriteJSONL(&a, events); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSONL(bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	WriteJSONL(&b, back)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Errorf("round trip changed the bytes:\n%s\n%s", a.String(), b.String())
	}
	if !strings.Contains(a.String(), `"text":"It's <five> & \"six\""`) {
		t.Errorf("HTML must not be escaped: %s", a.String())
	}
	if events[2].Seq != 3 || events[2].T != 120 || events[2].Wall.IsZero() {
		t.Errorf("stamping: %+v", events[2])
	}
}

func TestReadJSONLNamesTheLine(t *testing.T) {
	_, err := ReadJSONL(strings.NewReader("{\"seq\":1,\"type\":\"a\"}\n\n{\"seq\":2,\"type\":\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "line 3:") {
		t.Errorf("err = %v", err)
	}
	_, err = ReadJSONL(strings.NewReader("{\"seq\":1}\n"))
	if err == nil || !strings.Contains(err.Error(), "line 1: event has no type") {
		t.Errorf("err = %v", err)
	}
}

type failingSink struct{ after int }

func (s *failingSink) WriteEvent(ctx context.Context, e Event) error {
	if e.Seq > int64(s.after) {
		return errors.New("disk full")
	}
	return nil
}

// An event the sink could not make durable is not acknowledged and not kept.
func TestAppendIsDurableBeforeAcknowledged(t *testing.T) {
	l := NewLog(&fixedClock{}, &failingSink{after: 1})
	ctx := context.Background()
	if _, err := l.Append(ctx, Event{Type: SessionStart}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, Event{Type: CallerAudioStart}); err == nil {
		t.Fatal("append succeeded although the sink failed")
	}
	if l.Len() != 1 {
		t.Errorf("log kept %d events, want 1", l.Len())
	}
	l.Seal()
	if _, err := l.Append(ctx, Event{Type: SessionEnd}); !errors.Is(err, ErrSealed) {
		t.Errorf("append after seal: %v", err)
	}
}

func FuzzReadJSONL(f *testing.F) {
	var buf bytes.Buffer
	WriteJSONL(&buf, sampleEvents(f))
	f.Add(buf.Bytes())
	f.Add([]byte("{\"type\":\"x\",\"ok\":true}\n{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		events, err := ReadJSONL(bytes.NewReader(data))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := WriteJSONL(&out, events); err != nil {
			t.Fatalf("decoded events do not encode: %v", err)
		}
		again, err := ReadJSONL(&out)
		if err != nil || len(again) != len(events) {
			t.Fatalf("re-decode: %v (%d vs %d events)", err, len(again), len(events))
		}
	})
}
