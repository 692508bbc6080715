package stats

import (
	"fmt"
)

// Trial is one attempt at a task: a row of long-format repeated-trial data.
type Trial struct {
	Task    string
	Trial   string // trial id within the task (e.g. a seed); repeats are an error
	Success bool
	Line    int // 1-based source line, 0 when built in memory
}

// PassAtK is the unbiased estimator of pass@k from n trials with c successes (Chen et al. 2021,
// "Evaluating Large Language Models Trained on Code"): the probability that at least one of k
// trials drawn without replacement succeeds, 1 − C(n−c, k)/C(n, k). It is computed as a product
// of ratios, never forming binomial coefficients, so it is exact in float64 for any n.
func PassAtK(n, c, k int) (float64, error) {
	if err := checkNCK(n, c, k); err != nil {
		return 0, err
	}
	if n-c < k {
		return 1, nil // every k-subset contains a success
	}
	// C(n−c,k)/C(n,k) = Π_{i=0}^{k−1} (n−c−i)/(n−i)
	q := 1.0
	for i := range k {
		q *= float64(n-c-i) / float64(n-i)
	}
	return 1 - q, nil
}

// PassHatK is pass^k (Yao et al. 2024, τ-bench): the probability that all k trials drawn without
// replacement from n with c successes succeed, C(c, k)/C(n, k), computed as a product of ratios.
func PassHatK(n, c, k int) (float64, error) {
	if err := checkNCK(n, c, k); err != nil {
		return 0, err
	}
	if c < k {
		return 0, nil
	}
	p := 1.0
	for i := range k {
		p *= float64(c-i) / float64(n-i)
	}
	return p, nil
}

func checkNCK(n, c, k int) error {
	switch {
	case k < 1:
		return fmt.Errorf("pass@k: k = %d: want at least 1: %w", k, ErrInvalidArgument)
	case n < k:
		return fmt.Errorf("pass@k: %d trials, fewer than k = %d: %w", n, k, ErrTooFewTrials)
	case c < 0 || c > n:
		return fmt.Errorf("pass@k: %d successes out of %d trials: %w", c, n, ErrInvalidArgument)
	}
	return nil
}

// TaskPassK is pass@k and pass^k for one task.
type TaskPassK struct {
	Task      string
	Trials    int
	Successes int
	PassAtK   float64
	PassHatK  float64
}

// PassKResult is pass@k and pass^k averaged over tasks (each task weighted equally).
type PassKResult struct {
	K        int
	PassAtK  float64
	PassHatK float64
	PerTask  []TaskPassK // in order of each task's first trial
}

// PassK computes per-task and task-averaged pass@k and pass^k from trials. A task with fewer than
// k trials is an error naming it (ErrTooFewTrials); a repeated (task, trial) pair is ErrDuplicate.
func PassK(trials []Trial, k int) (PassKResult, error) {
	if k < 1 {
		return PassKResult{}, fmt.Errorf("pass@k: k = %d: want at least 1: %w", k, ErrInvalidArgument)
	}
	if len(trials) == 0 {
		return PassKResult{}, fmt.Errorf("pass@k: no trials: %w", ErrNoData)
	}
	type key struct{ task, trial string }
	seen := make(map[key]int, len(trials))
	pos := map[string]int{}
	res := PassKResult{K: k}
	for i, t := range trials {
		if j, dup := seen[key{t.Task, t.Trial}]; dup {
			return PassKResult{}, fmt.Errorf("%s: task %q trial %q appears twice (also %s): %w",
				t.where(), t.Task, t.Trial, trials[j].where(), ErrDuplicate)
		}
		seen[key{t.Task, t.Trial}] = i
		ti, ok := pos[t.Task]
		if !ok {
			ti = len(res.PerTask)
			pos[t.Task] = ti
			res.PerTask = append(res.PerTask, TaskPassK{Task: t.Task})
		}
		res.PerTask[ti].Trials++
		if t.Success {
			res.PerTask[ti].Successes++
		}
	}
	for i := range res.PerTask {
		tp := &res.PerTask[i]
		if tp.Trials < k {
			return PassKResult{}, fmt.Errorf("pass@k: task %q has %d trial(s), fewer than k = %d: %w", tp.Task, tp.Trials, k, ErrTooFewTrials)
		}
		tp.PassAtK, _ = PassAtK(tp.Trials, tp.Successes, k)
		tp.PassHatK, _ = PassHatK(tp.Trials, tp.Successes, k)
		res.PassAtK += tp.PassAtK
		res.PassHatK += tp.PassHatK
	}
	res.PassAtK /= float64(len(res.PerTask))
	res.PassHatK /= float64(len(res.PerTask))
	return res, nil
}

func (t Trial) where() string {
	if t.Line > 0 {
		return fmt.Sprintf("line %d", t.Line)
	}
	return fmt.Sprintf("task %q trial %q", t.Task, t.Trial)
}
