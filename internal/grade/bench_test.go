package grade_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/trace"
)

// BenchmarkGrade200 grades a 200-event trace of a real call (the clean success, padded with agent
// transcript turns) and reports traces graded per second.
func BenchmarkGrade200(b *testing.B) {
	tk := loadTask(b, "fnol-auto-glass")
	events, err := trace.ReadFile(filepath.Join("testdata", "golden", "clean-success.trace.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	last := events[len(events)-1]
	events = events[:len(events)-1]
	for len(events) < 199 {
		events = append(events, trace.Event{Seq: int64(len(events) + 1), T: last.T, Type: trace.AgentTranscript, Actor: trace.ActorAgent, Text: "Thanks, I have noted that down for the claim."})
	}
	events = append(events, last)
	if len(events) != 200 {
		b.Fatalf("trace has %d events", len(events))
	}
	g := grade.New(tk, grade.Options{})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := g.Grade(ctx, events); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "traces/s")
}
