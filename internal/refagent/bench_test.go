package refagent

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/trace"
)

// responseLatencies measures, on the media clock of a call's trace, the time from the end of each
// caller turn (caller.speech_end) to the agent's next audio (agent.speech_start), for turns the
// agent answered before the caller spoke again.
func responseLatencies(events []trace.Event) []time.Duration {
	var out []time.Duration
	end := int64(-1)
	for _, e := range events {
		switch e.Type {
		case trace.CallerSpeechEnd:
			end = e.T
		case trace.CallerSpeechStart:
			end = -1
		case trace.AgentSpeechStart:
			if end >= 0 && e.T >= end {
				out = append(out, time.Duration(e.T-end)*time.Millisecond)
			}
			end = -1
		}
	}
	return out
}

func TestResponseLatencies(t *testing.T) {
	ev := []trace.Event{
		{Type: trace.CallerSpeechStart, T: 0}, {Type: trace.CallerSpeechEnd, T: 1000}, {Type: trace.AgentSpeechStart, T: 2500},
		{Type: trace.AgentSpeechEnd, T: 4000},
		{Type: trace.CallerSpeechStart, T: 4700}, {Type: trace.CallerSpeechEnd, T: 6000},
		{Type: trace.CallerSpeechStart, T: 6600}, {Type: trace.CallerSpeechEnd, T: 7000}, {Type: trace.AgentSpeechStart, T: 7800},
	}
	got := responseLatencies(ev)
	if !slices.Equal(got, []time.Duration{1500 * time.Millisecond, 800 * time.Millisecond}) {
		t.Errorf("latencies %v", got)
	}
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// BenchmarkResponseLatency runs a synthetic call of fnol-auto-glass against the reference agent
// in real time and reports its response latency (end of caller speech to first agent audio, on
// the media clock), which includes the matched endpointer's 500 ms of silence, recognition,
// tool round trips and speech synthesis.
func BenchmarkResponseLatency(b *testing.B) {
	rec := &asrTimes{}
	s := startServer(b, Config{Logger: slog.New(rec)})
	var all []time.Duration
	for b.Loop() {
		res := syntheticCall(b, s, "fnol-auto-glass", callLimit)
		all = append(all, responseLatencies(res.Events)...)
	}
	if len(all) == 0 {
		b.Fatal("no agent response after a caller turn")
	}
	b.ReportMetric(float64(percentile(all, 0.5).Milliseconds()), "response_ms_p50")
	b.ReportMetric(float64(percentile(all, 0.9).Milliseconds()), "response_ms_p90")
	b.ReportMetric(float64(len(all))/float64(b.N), "turns/call")
	if ms := rec.values(); len(ms) > 0 {
		b.ReportMetric(float64(percentile(ms, 0.5).Milliseconds()), "recognition_ms_p50")
	}
}

// asrTimes is a log handler that collects the recognition time of each caller turn (the time
// from the commit to the turn being understood).
type asrTimes struct {
	mu sync.Mutex
	ms []time.Duration
}

func (h *asrTimes) Enabled(context.Context, slog.Level) bool { return true }
func (h *asrTimes) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *asrTimes) WithGroup(string) slog.Handler            { return h }
func (h *asrTimes) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "asr_ms" {
			h.mu.Lock()
			h.ms = append(h.ms, time.Duration(a.Value.Int64())*time.Millisecond)
			h.mu.Unlock()
		}
		return true
	})
	return nil
}

func (h *asrTimes) values() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ms)
}
