package media

import (
	"container/heap"
	"sync"
	"time"
)

// pacer is the one timer behind every RealClock of the process: each call's tick goroutine asks
// it to be woken at a wall time, and it keeps the pending wake-ups in a heap ordered by time,
// armed for the earliest only. Go's timers alone wake up to a millisecond late on an idle
// machine (the runtime sleeps in epoll with millisecond timeouts), which was nearly all of the
// agent's added latency; so the pacer also arms a kernel timer (timerfd on Linux) for the same
// instant, whose expiry wakes the runtime on time. The Go timer stays armed too: under load the
// scheduler runs due timers at every switch, sooner than it polls the kernel.
//
// The pacer's goroutines run while at least one RealClock is in use and exit with the last one.
type pacer struct {
	mu    sync.Mutex
	waits wakeupHeap
	armed time.Time // when the timers are set to fire; zero when nothing is pending
	users int
	run   *pacerRun // the running goroutines and their timers; nil with no users
}

// pacerRun is one start of the pacer's goroutines, from the first RealClock to the last.
type pacerRun struct {
	timer  *time.Timer
	kernel kernelTimer // nil where the platform has none
	stop   chan struct{}
	done   sync.WaitGroup
}

// wakeup is one pending wake-up: a RealClock's goroutine waiting for due.
type wakeup struct {
	due   time.Time
	ch    chan struct{} // buffered (1): signalled once due has passed
	index int           // position in the heap, -1 when not queued
}

func newWakeup() *wakeup { return &wakeup{ch: make(chan struct{}, 1), index: -1} }

// wakeupHeap orders pending wake-ups by due time (container/heap).
type wakeupHeap []*wakeup

func (h wakeupHeap) Len() int           { return len(h) }
func (h wakeupHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h wakeupHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *wakeupHeap) Push(x any) {
	w := x.(*wakeup)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *wakeupHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.index = -1
	return w
}

// thePacer serves every RealClock of the process.
var thePacer pacer

// acquire registers a RealClock, starting the pacer's goroutines for the first one.
func (p *pacer) acquire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.users++
	if p.users > 1 {
		return
	}
	r := &pacerRun{timer: time.NewTimer(time.Hour), stop: make(chan struct{})}
	r.timer.Stop()
	r.done.Add(1)
	go p.runTimer(r)
	if k, err := newKernelTimer(); err == nil {
		r.kernel = k
		r.done.Add(1)
		go p.runKernel(r)
	}
	p.run, p.armed = r, time.Time{}
}

// release unregisters a RealClock; the last one stops the goroutines and waits for them.
func (p *pacer) release() {
	p.mu.Lock()
	p.users--
	if p.users > 0 {
		p.mu.Unlock()
		return
	}
	r := p.run
	p.run, p.armed = nil, time.Time{}
	for p.waits.Len() > 0 {
		heap.Pop(&p.waits)
	}
	p.mu.Unlock()
	close(r.stop)
	r.timer.Stop()
	if r.kernel != nil {
		r.kernel.close() // its goroutine's wait returns
	}
	r.done.Wait()
}

func (p *pacer) runTimer(r *pacerRun) {
	defer r.done.Done()
	for {
		select {
		case <-r.timer.C:
			p.fire()
		case <-r.stop:
			return
		}
	}
}

func (p *pacer) runKernel(r *pacerRun) {
	defer r.done.Done()
	for r.kernel.wait() == nil {
		p.fire()
	}
}

// schedule queues w to be signalled once due has passed (re-queueing it if it was pending).
func (p *pacer) schedule(w *wakeup, due time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.index >= 0 {
		w.due = due
		heap.Fix(&p.waits, w.index)
	} else {
		w.due = due
		heap.Push(&p.waits, w)
	}
	if p.armed.IsZero() || due.Before(p.armed) {
		p.armLocked(due)
	}
}

// cancel drops w if it is still pending.
func (p *pacer) cancel(w *wakeup) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.index >= 0 {
		heap.Remove(&p.waits, w.index)
	}
}

// fire signals every wake-up whose time has come and re-arms for the next one. Both timers call
// it, so it must not mind being called early, late or twice.
func (p *pacer) fire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for p.waits.Len() > 0 && !p.waits[0].due.After(now) {
		w := heap.Pop(&p.waits).(*wakeup)
		select {
		case w.ch <- struct{}{}:
		default:
		}
	}
	switch {
	case p.waits.Len() == 0:
		p.armed = time.Time{}
	case !p.waits[0].due.Equal(p.armed) || !p.armed.After(now):
		p.armLocked(p.waits[0].due)
	}
}

// backstop is how much later than the kernel timer the Go timer is set: when the kernel timer
// wakes the pacer on time, the pacer re-arms both before the Go timer fires, so each wake-up runs
// the pacer once; when the process is too busy to poll the kernel promptly, the scheduler runs
// the Go timer at its next switch.
const backstop = 100 * time.Microsecond

// armLocked sets both timers for t (they replace their earlier settings).
func (p *pacer) armLocked(t time.Time) {
	p.armed = t
	if p.run == nil {
		return // released: the clock's wait ends with its Stop
	}
	d := max(time.Until(t), time.Microsecond)
	if p.run.kernel != nil {
		p.run.kernel.set(d)
		d += backstop
	}
	p.run.timer.Reset(d)
}

// kernelTimer is a one-shot kernel timer whose expiry wakes the Go runtime's poller on time.
type kernelTimer interface {
	set(d time.Duration) // fire once, d from now (re-arming replaces an earlier setting)
	wait() error         // block until it fires; an error once closed
	close()
}
