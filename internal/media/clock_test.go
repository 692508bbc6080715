package media

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
)

func TestRealClockScheduleAndShift(t *testing.T) {
	checkLeaks(t)
	c := NewRealClock()
	start := c.Due(0)
	for n := range int64(3) {
		tk, err := c.Next(n)
		if err != nil {
			t.Fatal(err)
		}
		if tk.N != n || !tk.Due.Equal(start.Add(time.Duration(n)*TickDuration)) || tk.Start.Before(tk.Due) {
			t.Fatalf("tick %d: %+v (start %v)", n, tk, start)
		}
	}
	// A shift while Next is waiting re-arms it: tick 30 (1.2 s ahead) comes 1.1 s early.
	go func() { time.Sleep(5 * time.Millisecond); c.Shift(-1100 * time.Millisecond) }()
	tk, err := c.Next(30)
	if err != nil {
		t.Fatal(err)
	}
	if want := start.Add(30*TickDuration - 1100*time.Millisecond); !tk.Due.Equal(want) {
		t.Fatalf("shifted tick due %v, want %v", tk.Due, want)
	}
	done := make(chan error)
	go func() { _, err := c.Next(1000); done <- err }()
	c.Stop()
	c.Stop()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Stop: %v", err)
	}
}

func TestManualClockAdvanceWaitsForProcessing(t *testing.T) {
	checkLeaks(t)
	base := time.Unix(1000, 0)
	c := NewManualClock(base)
	var seen []int64
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		for n := int64(0); ; n++ {
			tk, err := c.Next(n)
			if err != nil {
				return
			}
			time.Sleep(time.Millisecond) // work the test must not overtake
			seen = append(seen, tk.N)
		}
	}()
	for i := range 3 {
		if !c.Advance() {
			t.Fatal("advance failed")
		}
		if len(seen) != i+1 {
			t.Fatalf("after Advance %d the engine had processed %d ticks", i+1, len(seen))
		}
	}
	c.Shift(5 * time.Millisecond)
	if got, want := c.Due(3), base.Add(3*TickDuration+5*time.Millisecond); !got.Equal(want) {
		t.Fatalf("due %v, want %v", got, want)
	}
	c.Stop()
	<-exited
	if c.Advance() {
		t.Fatal("advance after stop reported success")
	}
}

// TestPacerServesEveryRealClock: fifty clocks with scattered phases tick through one pacer, each
// tick on or after its due time and in order, the kernel timer armed on Linux, and the pacer's
// goroutines gone once the last clock stops.
func TestPacerServesEveryRealClock(t *testing.T) {
	checkLeaks(t)
	const clocks, ticks = 50, 6
	cs := make([]*RealClock, clocks)
	for i := range cs {
		cs[i] = NewRealClock()
		cs[i].Shift(time.Duration(i) * 797 * time.Microsecond) // phases across the 40 ms tick
	}
	thePacer.mu.Lock()
	kernel := thePacer.run != nil && thePacer.run.kernel != nil
	thePacer.mu.Unlock()
	if runtime.GOOS == "linux" && !kernel {
		t.Error("no kernel timer behind the pacer on Linux")
	}
	errs := make(chan error, clocks)
	for _, c := range cs {
		go func() {
			var last time.Time
			for n := range int64(ticks) {
				tk, err := c.Next(n)
				if err != nil {
					errs <- err
					return
				}
				if tk.N != n || tk.Start.Before(tk.Due) || !tk.Due.After(last) {
					errs <- fmt.Errorf("tick %d: %+v after %v", n, tk, last)
					return
				}
				last = tk.Due
				if err := c.WaitUntil(tk.Due.Add(TickDuration / 2)); err != nil || time.Now().Before(tk.Due.Add(TickDuration/2)) {
					errs <- fmt.Errorf("half tick %d woke early (%v)", n, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range clocks {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for _, c := range cs {
		c.Stop()
	}
	thePacer.mu.Lock()
	defer thePacer.mu.Unlock()
	if thePacer.users != 0 || thePacer.run != nil || thePacer.waits.Len() != 0 {
		t.Fatalf("pacer still has %d users, run %v, %d wake-ups", thePacer.users, thePacer.run != nil, thePacer.waits.Len())
	}
}
