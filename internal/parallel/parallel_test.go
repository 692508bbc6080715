package parallel

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestRunDoesEveryItemOnceWithItsGoroutinesState(t *testing.T) {
	for _, workers := range []int{0, 1, 3, 100} {
		const n = 50
		var hits [n]atomic.Int32
		var started, stopped atomic.Int32
		var mu sync.Mutex
		owner := map[int]*int{} // item → the state that did it
		err := Run(workers, n, func() (*int, error) {
			started.Add(1)
			return new(int), nil
		}, func(s *int) { stopped.Add(1) }, func(s *int, i int) error {
			hits[i].Add(1)
			*s++
			mu.Lock()
			owner[i] = s
			mu.Unlock()
			return nil
		})
		if err != nil {
			t.Fatalf("workers %d: %v", workers, err)
		}
		for i := range hits {
			if h := hits[i].Load(); h != 1 {
				t.Errorf("workers %d: item %d done %d times", workers, i, h)
			}
		}
		want := int32(max(1, min(workers, n)))
		if started.Load() != want || stopped.Load() != want {
			t.Errorf("workers %d: %d states started, %d stopped, want %d", workers, started.Load(), stopped.Load(), want)
		}
		total := 0
		seen := map[*int]bool{}
		for _, s := range owner {
			if !seen[s] {
				seen[s] = true
				total += *s
			}
		}
		if total != n {
			t.Errorf("workers %d: the states counted %d items, want %d", workers, total, n)
		}
	}
}

func TestRunReturnsAnItemsError(t *testing.T) {
	bad := errors.New("item 7 failed")
	err := Run(4, 100, func() (struct{}, error) { return struct{}{}, nil }, nil, func(_ struct{}, i int) error {
		if i == 7 {
			return bad
		}
		return nil
	})
	if !errors.Is(err, bad) {
		t.Fatalf("Run: %v, want %v", err, bad)
	}
}

func TestRunReturnsAStartError(t *testing.T) {
	bad := errors.New("no state")
	called := false
	err := Run(2, 10, func() (int, error) { return 0, bad }, nil, func(int, int) error { called = true; return nil })
	if !errors.Is(err, bad) || called {
		t.Fatalf("Run: %v (items done: %v), want %v and no item done", err, called, bad)
	}
}

func TestRunWithNoItemsStartsNothing(t *testing.T) {
	err := Run(4, 0, func() (int, error) { t.Fatal("state started for no items"); return 0, nil }, nil, func(int, int) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
}
