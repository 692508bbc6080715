package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/storetest"
	"github.com/voicebench/humanaudit/internal/trace"
)

// burst is one benchmark op: a session's burst of events (transcript deltas, media stats).
const burst = 100

// BenchmarkEventSink measures durable event appends (each WriteEvent returns after its commit),
// for one session writing alone and for many sessions at once, with group commit and with one
// INSERT per event.
func BenchmarkEventSink(b *testing.B) {
	for _, group := range []bool{true, false} {
		for _, sessions := range []int{1, 16} {
			name := fmt.Sprintf("sessions=%d/group=%v", sessions, group)
			b.Run(name, func(b *testing.B) { benchSink(b, sessions, group) })
		}
	}
}

func benchSink(b *testing.B, sessions int, group bool) {
	ctx := context.Background()
	db := storetest.New(b)
	store.SetGroupCommit(db, group)
	ids := newSessions(b, db, sessions)
	seqs := make([]int64, sessions)
	e := trace.Event{T: 1234, Wall: time.Now(), Type: trace.AgentTranscript, Actor: trace.ActorAgent, Text: "Thanks, I have your new address as 12 Elm Street.", Source: "provider"}
	b.ResetTimer()
	start := time.Now()
	var done atomic.Int64
	for range b.N {
		// Each op: every session writes a burst, sessions in parallel, each session in order.
		errs := make(chan error, sessions)
		for s := range sessions {
			go func() {
				sink := db.EventSink(ids[s])
				ev := e
				for range burst {
					seqs[s]++
					ev.Seq = seqs[s]
					if err := sink.WriteEvent(ctx, ev); err != nil {
						errs <- err
						return
					}
					done.Add(1)
				}
				errs <- nil
			}()
		}
		for range sessions {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(done.Load())/time.Since(start).Seconds(), "events/s")
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(done.Load())*float64(sessions), "µs/event/session")
}
