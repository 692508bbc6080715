package grade_test

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/trace"
)

// trace200 is a 200-event trace of a real call: the clean success, padded with agent transcript
// turns before its session.end, numbered 1 to 200.
func trace200(b *testing.B) []trace.Event {
	events, err := trace.ReadFile(filepath.Join("testdata", "golden", "clean-success.trace.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	last := events[len(events)-1]
	events = events[:len(events)-1]
	for len(events) < 199 {
		events = append(events, trace.Event{Seq: int64(len(events) + 1), T: last.T, Type: trace.AgentTranscript, Actor: trace.ActorAgent, Text: "Thanks, I have noted that down for the claim."})
	}
	last.Seq = 200
	events = append(events, last)
	if len(events) != 200 {
		b.Fatalf("trace has %d events", len(events))
	}
	return events
}

// cpuTime is the CPU time this process has used (all threads: the collector's work included).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportThroughput reports traces per wall-clock second and per CPU second; the second does not
// depend on what else the machine runs (run with -cpu 1 for one core).
func reportThroughput(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "traces/s")
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu.Seconds(), "traces/cpu-s")
	}
}

// BenchmarkGrade200 grades a 200-event trace of a real call and reports traces graded per second.
func BenchmarkGrade200(b *testing.B) {
	tk := loadTask(b, "fnol-auto-glass")
	events := trace200(b)
	g := grade.New(tk, grade.Options{})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := g.Grade(ctx, events); err != nil {
			b.Fatal(err)
		}
	}
	reportThroughput(b, cpu0)
}

// BenchmarkGrade200Verified verifies (format checks and the workspace replay of every tool call
// and authorization act) and then grades the same 200-event trace, as audit grade and
// import-traces do, and reports traces per second.
func BenchmarkGrade200Verified(b *testing.B) {
	tk := loadTask(b, "fnol-auto-glass")
	events := trace200(b)
	g := grade.New(tk, grade.Options{})
	if err := g.Check(events, grade.CheckOptions{}); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if err := g.Check(events, grade.CheckOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := g.Grade(ctx, events); err != nil {
			b.Fatal(err)
		}
	}
	reportThroughput(b, cpu0)
}
