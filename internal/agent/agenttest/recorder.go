package agenttest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent"
)

// Recorder drains an adapter's events in the background, so tests can wait for events in order
// without ever blocking the adapter.
type Recorder struct {
	mu     sync.Mutex
	events []agent.Event
	cursor int
	notify chan struct{}
	done   chan struct{}
}

// Record starts draining a.Events(). The recorder stops when the channel closes.
func Record(a agent.Adapter) *Recorder {
	r := &Recorder{notify: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for ev := range a.Events() {
			r.mu.Lock()
			r.events = append(r.events, ev)
			r.mu.Unlock()
			select {
			case r.notify <- struct{}{}:
			default:
			}
		}
	}()
	return r
}

// Done is closed when the adapter's event channel has been closed.
func (r *Recorder) Done() <-chan struct{} { return r.done }

// WaitClosed fails tb unless the event channel closes within timeout.
func (r *Recorder) WaitClosed(tb testing.TB, timeout time.Duration) {
	tb.Helper()
	select {
	case <-r.done:
	case <-time.After(timeout):
		tb.Fatalf("event channel not closed after %s; events: %s", timeout, r.Summary())
	}
}

// WaitFor returns the first event after the previous WaitFor's match that satisfies pred, failing
// tb after timeout (or when the stream ends without one).
func (r *Recorder) WaitFor(tb testing.TB, timeout time.Duration, what string, pred func(agent.Event) bool) agent.Event {
	tb.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		for i := r.cursor; i < len(r.events); i++ {
			if pred(r.events[i]) {
				r.cursor = i + 1
				ev := r.events[i]
				r.mu.Unlock()
				return ev
			}
		}
		r.mu.Unlock()
		select {
		case <-r.notify:
		case <-r.done:
			r.mu.Lock()
			n := len(r.events)
			r.mu.Unlock()
			if r.scanFrom(pred) < n {
				continue
			}
			tb.Fatalf("event stream ended without %s; events: %s", what, r.Summary())
		case <-deadline.C:
			tb.Fatalf("no %s within %s; events: %s", what, timeout, r.Summary())
		}
	}
}

func (r *Recorder) scanFrom(pred func(agent.Event) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := r.cursor; i < len(r.events); i++ {
		if pred(r.events[i]) {
			return i
		}
	}
	return len(r.events)
}

// WaitType waits for the next event of type t.
func (r *Recorder) WaitType(tb testing.TB, timeout time.Duration, t agent.EventType) agent.Event {
	tb.Helper()
	return r.WaitFor(tb, timeout, string(t), func(e agent.Event) bool { return e.Type == t })
}

// Events returns every event recorded so far.
func (r *Recorder) Events() []agent.Event { return snapshot(&r.mu, &r.events) }

// Of returns the recorded events of type t.
func (r *Recorder) Of(t agent.EventType) []agent.Event {
	var out []agent.Event
	for _, e := range r.Events() {
		if e.Type == t {
			out = append(out, e)
		}
	}
	return out
}

// AudioSamples is the number of agent audio samples received.
func (r *Recorder) AudioSamples() int {
	n := 0
	for _, e := range r.Of(agent.EventAudioDelta) {
		n += len(e.Audio)
	}
	return n
}

// Summary lists the recorded event types compactly (runs collapsed), for failure messages.
func (r *Recorder) Summary() string {
	var b strings.Builder
	var last string
	run := 0
	flush := func() {
		if run > 1 {
			fmt.Fprintf(&b, "×%d", run)
		}
	}
	for _, e := range r.Events() {
		name := string(e.Type)
		switch {
		case e.Type == agent.EventRaw && e.Outbound:
			name = ">" + e.RawType
		case e.Type == agent.EventRaw:
			name = "<" + e.RawType
		case e.Type == agent.EventError && e.Err != nil:
			name = "error(" + string(e.Err.Class) + ":" + e.Err.Code + ")"
		}
		if name == last {
			run++
			continue
		}
		flush()
		if last != "" {
			b.WriteString(" ")
		}
		b.WriteString(name)
		last, run = name, 1
	}
	flush()
	return b.String()
}
