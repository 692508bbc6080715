package media

import (
	"errors"
	"sync"
	"time"
)

// TickDuration is the media clock's period: each tick moves one frame per channel.
const TickDuration = 40 * time.Millisecond

// Tick is one period of the media clock. Tick N covers media time [N·40 ms, (N+1)·40 ms).
type Tick struct {
	N     int64     // tick index from 0
	Due   time.Time // wall time the tick was due
	Start time.Time // wall time its processing started (Due for a manual clock)
}

// MediaTime is the media time at the start of the tick.
func (t Tick) MediaTime() time.Duration { return time.Duration(t.N) * TickDuration }

// MediaClock paces one call. The engine asks for tick 0, 1, 2, … in order. A clock may be shifted
// by small amounts so that the caller's packets arrive just before the tick that needs them (phase
// lock); media time stays the tick count, only its wall-time anchor moves.
type MediaClock interface {
	// Next blocks until tick n is due and returns it; it returns ErrClosed once the clock stops.
	Next(n int64) (Tick, error)
	// Due returns the wall time tick n is due at, given the shifts so far.
	Due(n int64) time.Time
	// Shift moves every tick not yet returned by d (positive = later).
	Shift(d time.Duration)
	// WaitUntil blocks until wall time t (the half tick, when the second packet leaves); a manual
	// clock returns at once. It returns ErrClosed once the clock stops.
	WaitUntil(t time.Time) error
	// Stop ends the clock; a blocked Next returns ErrClosed. Safe to call more than once.
	Stop()
}

// RealClock is the production MediaClock: a drift-free 40 ms schedule on the wall clock (tick n
// is due at start + n·40 ms + shifts, however late earlier ticks ran, so lateness never
// accumulates). Every RealClock of the process waits on one timer, the pacer's.
type RealClock struct {
	start time.Time

	mu    sync.Mutex
	shift time.Duration

	wake     *wakeup       // this clock's entry in the pacer (the engine goroutine's only)
	kick     chan struct{} // a shift happened: re-schedule the wake-up
	stop     chan struct{}
	stopOnce sync.Once
}

// NewRealClock returns a clock whose tick 0 is due now.
func NewRealClock() *RealClock {
	thePacer.acquire()
	return &RealClock{
		start: time.Now(),
		wake:  newWakeup(),
		kick:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
	}
}

// Due returns when tick n is due.
func (c *RealClock) Due(n int64) time.Time {
	c.mu.Lock()
	s := c.shift
	c.mu.Unlock()
	return c.start.Add(time.Duration(n)*TickDuration + s)
}

// Shift moves all later ticks by d.
func (c *RealClock) Shift(d time.Duration) {
	c.mu.Lock()
	c.shift += d
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Next waits for tick n's due time. Only one goroutine (the call's engine) may call it.
func (c *RealClock) Next(n int64) (Tick, error) {
	for {
		select {
		case <-c.stop:
			return Tick{}, ErrClosed
		default:
		}
		due := c.Due(n)
		if now := time.Now(); !now.Before(due) {
			return Tick{N: n, Due: due, Start: now}, nil
		}
		switch c.sleep(due, true) {
		case errStopped:
			return Tick{}, ErrClosed
		}
	}
}

// WaitUntil sleeps until t. Only the goroutine that calls Next may call it.
func (c *RealClock) WaitUntil(t time.Time) error {
	for time.Now().Before(t) {
		if c.sleep(t, false) == errStopped {
			return ErrClosed
		}
	}
	return nil
}

var errStopped = errors.New("clock stopped")

// sleep waits for the pacer to pass due, for a shift (when kickable) or for Stop.
func (c *RealClock) sleep(due time.Time, kickable bool) error {
	select { // a stale signal of an earlier wait
	case <-c.wake.ch:
	default:
	}
	thePacer.schedule(c.wake, due)
	kick := c.kick
	if !kickable {
		kick = nil
	}
	select {
	case <-c.wake.ch:
		return nil
	case <-kick:
		thePacer.cancel(c.wake)
		return nil
	case <-c.stop:
		thePacer.cancel(c.wake)
		return errStopped
	}
}

// Stop ends the clock.
func (c *RealClock) Stop() {
	c.stopOnce.Do(func() {
		close(c.stop)
		thePacer.release()
	})
}

// ManualClock is a MediaClock that tests drive tick by tick: Advance releases one tick and returns
// once the engine has finished processing it, so a test sees every effect of the tick.
type ManualClock struct {
	base time.Time

	mu    sync.Mutex
	shift time.Duration

	advance   chan struct{}
	processed chan struct{}
	stop      chan struct{}
	stopOnce  sync.Once
	inFlight  bool // engine goroutine only: a tick was returned and not yet acknowledged
}

// NewManualClock returns a clock whose tick n is due at base + n·40 ms (plus shifts).
func NewManualClock(base time.Time) *ManualClock {
	return &ManualClock{
		base:      base,
		advance:   make(chan struct{}),
		processed: make(chan struct{}),
		stop:      make(chan struct{}),
	}
}

// Due returns when tick n is due.
func (c *ManualClock) Due(n int64) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.base.Add(time.Duration(n)*TickDuration + c.shift)
}

// Shift moves all later ticks by d.
func (c *ManualClock) Shift(d time.Duration) {
	c.mu.Lock()
	c.shift += d
	c.mu.Unlock()
}

// Shifted returns the sum of all shifts so far.
func (c *ManualClock) Shifted() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.shift
}

// Next returns tick n once a test calls Advance.
func (c *ManualClock) Next(n int64) (Tick, error) {
	if c.inFlight {
		c.inFlight = false
		select {
		case c.processed <- struct{}{}:
		case <-c.stop:
			return Tick{}, ErrClosed
		}
	}
	select {
	case <-c.advance:
		c.inFlight = true
		due := c.Due(n)
		return Tick{N: n, Due: due, Start: due}, nil
	case <-c.stop:
		return Tick{}, ErrClosed
	}
}

// Advance releases the next tick and waits until the engine has processed it. It returns false
// if the clock was stopped.
func (c *ManualClock) Advance() bool {
	select {
	case c.advance <- struct{}{}:
	case <-c.stop:
		return false
	}
	select {
	case <-c.processed:
		return true
	case <-c.stop:
		return false
	}
}

// AdvanceN releases n ticks one after the other.
func (c *ManualClock) AdvanceN(n int) bool {
	for range n {
		if !c.Advance() {
			return false
		}
	}
	return true
}

// WaitUntil returns at once: simulated time does not pass by itself.
func (c *ManualClock) WaitUntil(time.Time) error {
	select {
	case <-c.stop:
		return ErrClosed
	default:
		return nil
	}
}

// Stop ends the clock.
func (c *ManualClock) Stop() { c.stopOnce.Do(func() { close(c.stop) }) }

var (
	_ MediaClock = (*RealClock)(nil)
	_ MediaClock = (*ManualClock)(nil)
)
