// Package socket is the WebSocket plumbing every protocol family shares: a bounded dial with
// classified failures, a connection with one reader and one writer goroutine under deadlines, and
// the event stream that keeps the reader from ever waiting on the consumer.
package socket

import (
	"errors"
	"fmt"
	"sync"

	"github.com/voicebench/humanaudit/internal/agent"
)

// ErrOverflow is returned by Emit when the stream's bound is reached; the adapter must then fail.
var ErrOverflow = errors.New("event stream full")

// EventStream queues events in memory and a pump goroutine delivers them to a buffered channel,
// so that producers (the socket reader) never block. The queue is bounded: Emit refuses events
// past the limit, and the producer ends the stream with an overflow error (Finish may exceed the
// bound, so that the final error always gets through).
type EventStream struct {
	mu       sync.Mutex
	queue    []agent.Event
	head     int
	limit    int
	finished bool

	wake  chan struct{}
	abort chan struct{}
	done  chan struct{}
	out   chan agent.Event
	once  sync.Once
}

// NewEventStream starts a stream holding at most limit undelivered events beyond the channel
// buffer of size buffer.
func NewEventStream(limit, buffer int) *EventStream {
	s := &EventStream{
		limit: limit,
		wake:  make(chan struct{}, 1),
		abort: make(chan struct{}),
		done:  make(chan struct{}),
		out:   make(chan agent.Event, buffer),
	}
	go s.pump()
	return s
}

// C is the consumer's channel. It is closed after Finish once drained, or at once by Abort.
func (s *EventStream) C() <-chan agent.Event { return s.out }

// Emit queues ev. It returns ErrOverflow when limit events are already waiting, and
// agent.ErrClosed after Finish or Abort (the event is then dropped: the stream has ended).
func (s *EventStream) Emit(ev agent.Event) error {
	s.mu.Lock()
	if s.finished {
		s.mu.Unlock()
		return agent.ErrClosed
	}
	if len(s.queue)-s.head >= s.limit {
		s.mu.Unlock()
		return ErrOverflow
	}
	s.queue = append(s.queue, ev)
	s.mu.Unlock()
	s.signal()
	return nil
}

// FinishOverflow ends the stream with the overflow failure: the consumer fell behind by the events
// pending, and the adapter drops the connection.
func (s *EventStream) FinishOverflow() {
	s.Finish(agent.Event{Type: agent.EventError, Err: &agent.Error{Class: agent.ClassOverflow, Code: "overflow", Fatal: true,
		Message: fmt.Sprintf("event consumer fell behind by %d events; connection dropped", s.Pending())}})
}

// Pending reports how many events wait for the consumer beyond the channel buffer.
func (s *EventStream) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue) - s.head
}

// Finish queues the final events (regardless of the bound) and closes the channel once the
// consumer has read everything. Later Emits are dropped. Finish is idempotent; only the first
// call's events are queued.
func (s *EventStream) Finish(final ...agent.Event) {
	s.mu.Lock()
	if !s.finished {
		s.finished = true
		s.queue = append(s.queue, final...)
	}
	s.mu.Unlock()
	s.signal()
}

// Abort ends the stream now: undelivered events are dropped, the channel is closed and the pump
// has exited when Abort returns.
func (s *EventStream) Abort() {
	s.mu.Lock()
	s.finished = true
	s.mu.Unlock()
	s.once.Do(func() { close(s.abort) })
	<-s.done
}

func (s *EventStream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *EventStream) pump() {
	defer close(s.done)
	defer close(s.out)
	for {
		s.mu.Lock()
		if s.head == len(s.queue) {
			s.queue, s.head = s.queue[:0], 0
			fin := s.finished
			s.mu.Unlock()
			if fin {
				return
			}
			select {
			case <-s.wake:
				continue
			case <-s.abort:
				return
			}
		}
		ev := s.queue[s.head]
		s.queue[s.head] = agent.Event{}
		s.head++
		if s.head > 1024 && s.head*2 > len(s.queue) { // compact so a long call reuses memory
			n := copy(s.queue, s.queue[s.head:])
			s.queue, s.head = s.queue[:n], 0
		}
		s.mu.Unlock()
		select {
		case s.out <- ev:
		case <-s.abort:
			return
		}
	}
}
