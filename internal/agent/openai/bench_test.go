package openai_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/openai"
)

// BenchmarkEventsThroughAdapter measures normalized events per second through a real adapter over
// a loopback WebSocket from the fake: each iteration is one caller turn answered by 2 s of agent
// audio in 20 ms deltas with a word-by-word transcript (about 230 provider events).
func BenchmarkEventsThroughAdapter(b *testing.B) {
	for _, fam := range []family{families[0], families[2]} {
		b.Run(fam.name, func(b *testing.B) {
			words := strings.TrimSpace(strings.Repeat("word ", 100))
			replies := make([]agenttest.Reply, b.N)
			for i := range replies {
				replies[i] = agenttest.Reply{Text: words, AudioMS: 2000, ChunkMS: 20}
			}
			f := agenttest.NewOpenAIFake(b, fam.p, agenttest.Script{Replies: replies})
			a := openai.New(openai.Options{URL: f.URL(), Model: fam.model, Dialect: fam.d})
			if err := a.Connect(context.Background(), agent.Config{}); err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			frame := agenttest.Speech(40, 24000)
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
			b.ReportMetric(float64(samples)/24000/el, "audio-s/s")
		})
	}
}
