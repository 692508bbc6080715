// Package parallel runs independent items of work on a few goroutines, each with state of its own
// (a bootstrap, a simulator's scratch space), so that batch statistics use every core.
package parallel

import (
	"sync"
	"sync/atomic"
)

// Run calls do(state, i) for every i in [0, n) on up to workers goroutines (one at least), each
// taking the next item when it finishes one. A goroutine makes its state with start before its
// first item and hands it to stop, when stop is not nil, after its last. A goroutine ends at its
// first error; Run returns, once all have ended, the error of the lowest-numbered goroutine that
// had one.
func Run[S any](workers, n int, start func() (S, error), stop func(S), do func(state S, i int) error) error {
	if n <= 0 {
		return nil
	}
	workers = max(1, min(workers, n))
	var next atomic.Int64
	take := func() int { return int(next.Add(1)) - 1 }
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			state, err := start()
			if err != nil {
				errs[k] = err
				return
			}
			if stop != nil {
				defer stop(state)
			}
			for i := take(); i < n; i = take() {
				if err := do(state, i); err != nil {
					errs[k] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
