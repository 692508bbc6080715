package gemini_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/gemini"
)

// BenchmarkEventsThroughAdapter measures normalized events per second through the Gemini adapter
// over a loopback WebSocket: each iteration is one matched turn answered by 2 s of audio in 20 ms
// chunks with an output transcription per chunk.
func BenchmarkEventsThroughAdapter(b *testing.B) {
	words := strings.TrimSpace(strings.Repeat("word ", 100))
	replies := make([]agenttest.Reply, b.N)
	for i := range replies {
		replies[i] = agenttest.Reply{Text: words, AudioMS: 2000, ChunkMS: 20}
	}
	f := agenttest.NewGeminiFake(b, agenttest.Script{Replies: replies})
	a := gemini.New(gemini.Options{URL: f.URL(), Model: model})
	if err := a.Connect(context.Background(), agent.Config{}); err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	frame := agenttest.Speech(40, gemini.InputRate)
	events, samples := 0, 0
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		a.StartTurn()
		for j := 0; j < 3; j++ {
			a.SendAudio(frame)
		}
		a.EndTurn()
		for done := false; !done; {
			ev, ok := <-a.Events()
			if !ok {
				b.Fatal("stream ended")
			}
			events++
			samples += len(ev.Audio)
			done = ev.Type == agent.EventResponseDone
		}
	}
	el := time.Since(start).Seconds()
	b.ReportMetric(float64(events)/el, "events/s")
	b.ReportMetric(float64(samples)/gemini.OutputRate/el, "audio-s/s")
}
