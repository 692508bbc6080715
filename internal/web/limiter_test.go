package web

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// At most max attempts per key in any window, reserved atomically under concurrency; a cancelled
// reservation is given back; memory stays bounded however many keys a flood uses.
func TestAttemptLimiter(t *testing.T) {
	l := newAttemptLimiter(5, 10*time.Minute, 1000)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var ok atomic.Int32
	var wg sync.WaitGroup
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, granted, _ := l.reserve(now, "name:ana", "ip:192.0.2.1"); granted {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 5 {
		t.Fatalf("%d of 200 concurrent attempts reserved, want 5", ok.Load())
	}
	if _, granted, retry := l.reserve(now.Add(time.Minute), "name:ana"); granted || retry != 9*time.Minute {
		t.Errorf("6th attempt: granted %v, retry %v (want refused, 9m)", granted, retry)
	}
	// Another address for the same account is refused too; another account from the address as well.
	if _, granted, _ := l.reserve(now, "name:ana", "ip:198.51.100.1"); granted {
		t.Error("the account's limit did not hold from another address")
	}
	if _, granted, _ := l.reserve(now, "name:bob", "ip:192.0.2.1"); granted {
		t.Error("the address's limit did not hold for another account")
	}
	// A refused multi-key attempt reserved nothing under its other keys.
	if _, granted, _ := l.reserve(now, "name:bob", "ip:198.51.100.1"); !granted {
		t.Error("bob from a fresh address is refused: an earlier refusal leaked a reservation")
	}
	// The window slides.
	if _, granted, _ := l.reserve(now.Add(10*time.Minute), "name:ana", "ip:192.0.2.1"); !granted {
		t.Error("after the window the account may try again")
	}
	// Cancel gives the attempt back.
	c := newAttemptLimiter(1, time.Hour, 0)
	r, granted, _ := c.reserve(now, "k")
	if !granted {
		t.Fatal("first")
	}
	r.cancel()
	if _, granted, _ := c.reserve(now, "k"); !granted {
		t.Error("a cancelled reservation still counts")
	}
	// Bounded memory.
	for i := range 100000 {
		l.reserve(now, "ip:"+time.Duration(i).String())
	}
	if n := l.size(); n > 1000 {
		t.Errorf("limiter holds %d keys, bound 1000", n)
	}
}
