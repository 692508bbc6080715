package study

import (
	"fmt"
	"maps"
	"slices"
)

// Verify checks a plan (its sessions alone, as read back from plan.csv) against the study's
// constraints and returns one line per violation; none means the plan is sound. The task and
// system sets are those the plan mentions; anchors are the tasks with repeat-2 sessions. With a
// condition factor the cells and the per-participant cap are those of system × condition arms.
func Verify(sessions []Session) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	byParticipant := map[string][]Session{}
	var participants []string
	systems, tasks, anchors := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i, s := range sessions {
		if s.Participant == "" || s.Task == "" || s.System == "" {
			add("row %d: participant, task and system are required", i+1)
			continue
		}
		if s.Repeat != 1 && s.Repeat != 2 {
			add("row %d (%s position %d): repeat %d, want 1 or 2", i+1, s.Participant, s.Position, s.Repeat)
		}
		if _, ok := byParticipant[s.Participant]; !ok {
			participants = append(participants, s.Participant)
		}
		byParticipant[s.Participant] = append(byParticipant[s.Participant], s)
		systems[s.Arm()], tasks[s.Task] = true, true
		if s.Repeat == 2 {
			anchors[s.Task] = true
		}
	}
	if len(participants) == 0 {
		return append(problems, "the plan has no sessions")
	}
	k := len(byParticipant[participants[0]])
	limit := ceilDiv(k, len(systems))
	type cell struct {
		task, system string
		repeat       int
	}
	runs := map[cell][]string{}
	for _, p := range participants {
		ss := byParticipant[p]
		if len(ss) != k {
			add("%s runs %d sessions, %s runs %d: %s", p, len(ss), participants[0], k, ConstraintEqualLoad)
		}
		positions := map[int]bool{}
		met := map[string]int{}
		perSystem := map[string]int{}
		for _, s := range ss {
			if s.Position < 1 || s.Position > len(ss) || positions[s.Position] {
				add("%s: position %d is out of 1–%d or repeated", p, s.Position, len(ss))
			}
			positions[s.Position] = true
			if prev, ok := met[s.Task]; ok {
				add("%s meets task %s at positions %d and %d: %s", p, s.Task, prev, s.Position, ConstraintDistinctTasks)
			}
			met[s.Task] = s.Position
			perSystem[s.Arm()]++
			runs[cell{s.Task, s.Arm(), s.Repeat}] = append(runs[cell{s.Task, s.Arm(), s.Repeat}], p)
		}
		for _, sys := range sortedKeys(perSystem) {
			if perSystem[sys] > limit {
				add("%s meets system %s %d times, more than ⌈%d/%d⌉ = %d", p, sys, perSystem[sys], k, len(systems), limit)
			}
		}
	}
	for _, t := range sortedKeys(tasks) {
		for _, sys := range sortedKeys(systems) {
			first := runs[cell{t, sys, 1}]
			if len(first) != 1 {
				add("cell %s × %s is run %d times as a first run, want exactly once", t, sys, len(first))
			}
			if !anchors[t] {
				continue
			}
			second := runs[cell{t, sys, 2}]
			if len(second) != 1 {
				add("anchor cell %s × %s is repeated %d times, want exactly once", t, sys, len(second))
				continue
			}
			if len(first) == 1 && first[0] == second[0] {
				add("anchor cell %s × %s is repeated by %s, who ran its first run: %s", t, sys, first[0], ConstraintAnchorRepeat)
			}
		}
	}
	return problems
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
