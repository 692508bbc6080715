package study

import (
	"fmt"
	"strings"

	"github.com/voicebench/humanaudit/internal/task"
)

// SelectTasks picks tasks by a spec: comma-separated subset flags ("audit24", "anchor") and task
// IDs, in the order given, each task once. An empty spec selects nothing. what names the flag or
// field in messages ("--tasks").
func SelectTasks(all []*task.Task, spec, what string) ([]*task.Task, error) {
	byID := map[string]*task.Task{}
	for _, t := range all {
		byID[t.ID] = t
	}
	var out []*task.Task
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		var picked []*task.Task
		for _, t := range all {
			if t.InSubset(part) {
				picked = append(picked, t)
			}
		}
		if len(picked) == 0 {
			t, ok := byID[part]
			if !ok {
				return nil, fmt.Errorf("%w: %s: %q is neither a task id nor a subset flag of any of the %d valid tasks", ErrInvalidRequest, what, part, len(all))
			}
			picked = []*task.Task{t}
		}
		for _, t := range picked {
			if !seen[t.ID] {
				seen[t.ID] = true
				out = append(out, t)
			}
		}
	}
	return out, nil
}
