package stats

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// bruteForcePassK enumerates every k-subset of n trials whose first c succeed and returns the
// fraction with at least one success (pass@k) and with only successes (pass^k).
func bruteForcePassK(n, c, k int) (atK, hatK float64) {
	var subsets, any, all int
	var rec func(start, left, succ int)
	rec = func(start, left, succ int) {
		if left == 0 {
			subsets++
			if succ > 0 {
				any++
			}
			if succ == k {
				all++
			}
			return
		}
		for i := start; i <= n-left; i++ {
			s := succ
			if i < c {
				s++
			}
			rec(i+1, left-1, s)
		}
	}
	rec(0, k, 0)
	return float64(any) / float64(subsets), float64(all) / float64(subsets)
}

func TestPassKMatchesBruteForce(t *testing.T) {
	for n := 1; n <= 10; n++ {
		for c := 0; c <= n; c++ {
			for k := 1; k <= n; k++ {
				wantAt, wantHat := bruteForcePassK(n, c, k)
				at, err := PassAtK(n, c, k)
				if err != nil {
					t.Fatal(err)
				}
				hat, err := PassHatK(n, c, k)
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(at-wantAt) > 1e-12 || math.Abs(hat-wantHat) > 1e-12 {
					t.Errorf("n=%d c=%d k=%d: pass@k %v pass^k %v, enumeration %v %v", n, c, k, at, hat, wantAt, wantHat)
				}
			}
		}
	}
}

func TestPassAtKIsStableForLargeN(t *testing.T) {
	// Chen et al. (2021) compute 1 − Π_{i=n−c+1}^{n} (1 − k/i) for stability; C(n,k) itself would
	// overflow float64 here. With one success, pass@k is exactly k/n.
	got, err := PassAtK(2000, 1, 1000)
	if err != nil {
		t.Fatal(err)
	}
	assertNear(t, "pass@1000 of 2000 with 1 success", got, 0.5, 12)
	chen := 1.0
	for i := 2000 - 37 + 1; i <= 2000; i++ {
		chen *= 1 - 700.0/float64(i)
	}
	got, _ = PassAtK(2000, 37, 700)
	assertNear(t, "pass@700 vs Chen et al. product", got, 1-chen, 12)
	hat, _ := PassHatK(2000, 1990, 500)
	if !(hat > 0 && hat < 1) || math.IsNaN(hat) {
		t.Errorf("pass^500 of 1990/2000 = %v, want a finite probability", hat)
	}
}

func TestPassK(t *testing.T) {
	var trials []Trial
	add := func(task string, outcomes ...bool) {
		for i, s := range outcomes {
			trials = append(trials, Trial{Task: task, Trial: fmt.Sprint(i), Success: s})
		}
	}
	add("a", true, true, true)    // pass@2 1, pass^2 1
	add("b", true, false, false)  // pass@2 2/3, pass^2 0
	add("c", true, true, false)   // pass@2 1, pass^2 1/3
	add("d", false, false, false) // 0, 0
	t.Run("averages over tasks", func(t *testing.T) {
		res, err := PassK(trials, 2)
		if err != nil {
			t.Fatal(err)
		}
		assertNear(t, "pass@2", res.PassAtK, (1+2.0/3+1+0)/4, 12)
		assertNear(t, "pass^2", res.PassHatK, (1+0+1.0/3+0)/4, 12)
		if len(res.PerTask) != 4 || res.PerTask[1].Task != "b" || res.PerTask[1].Successes != 1 || res.PerTask[1].Trials != 3 {
			t.Errorf("per task %+v", res.PerTask)
		}
	})
	t.Run("k of 1 is the success rate", func(t *testing.T) {
		res, err := PassK(trials, 1)
		if err != nil {
			t.Fatal(err)
		}
		if res.PassAtK != res.PassHatK || !near(res.PassAtK, 6.0/12, 12) {
			t.Errorf("pass@1 %v pass^1 %v, want both 0.5", res.PassAtK, res.PassHatK)
		}
	})
	t.Run("too few trials names the task", func(t *testing.T) {
		short := append(trials[:len(trials):len(trials)], Trial{Task: "e", Trial: "0", Success: true})
		_, err := PassK(short, 2)
		if !errors.Is(err, ErrTooFewTrials) || !strings.Contains(err.Error(), `task "e" has 1 trial`) {
			t.Errorf("err = %v, want ErrTooFewTrials naming task e", err)
		}
	})
	t.Run("repeated trial is ErrDuplicate", func(t *testing.T) {
		dup := append(trials[:len(trials):len(trials)], Trial{Task: "a", Trial: "1", Success: false, Line: 14})
		if _, err := PassK(dup, 1); !errors.Is(err, ErrDuplicate) || !strings.Contains(err.Error(), "line 14") {
			t.Errorf("err = %v, want ErrDuplicate at line 14", err)
		}
	})
	t.Run("bad arguments are rejected", func(t *testing.T) {
		if _, err := PassK(trials, 0); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("k=0: err = %v", err)
		}
		if _, err := PassK(nil, 1); !errors.Is(err, ErrNoData) {
			t.Errorf("no trials: err = %v", err)
		}
		if _, err := PassAtK(3, 4, 1); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("c > n: err = %v", err)
		}
		if _, err := PassHatK(2, 1, 3); !errors.Is(err, ErrTooFewTrials) {
			t.Errorf("n < k: err = %v", err)
		}
	})
}
