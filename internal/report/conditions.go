package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/voicebench/humanaudit/internal/stats"
	"github.com/voicebench/humanaudit/internal/task"
)

// ConditionRow is completion (Workflow Success) of one system, or all, under one listening
// condition, human and synthetic with Wilson intervals, and the human-minus-synthetic delta
// paired by task (the tasks called in both modes under the condition).
type ConditionRow struct {
	Condition string     `json:"condition"`
	System    string     `json:"system"`
	Tasks     int        `json:"tasks"`        // tasks with an included session under the condition
	Paired    int        `json:"paired_tasks"` // of them, with both human and synthetic sessions
	Human     Proportion `json:"human_ws"`
	Synthetic Proportion `json:"synthetic_ws"`
	Delta     Interval   `json:"ws_delta"`
	// HumanAFA and SynthAFA are mean Artifact Field Accuracy over the sessions, as in the slices.
	HumanAFA Num `json:"human_afa"`
	SynthAFA Num `json:"synthetic_afa"`
}

// SoundAlikeRow counts one system's passes in one mode and how many of them were verified only
// through a sound-alike (phonetic) match, over the tasks that verify by sound.
type SoundAlikeRow struct {
	System   string `json:"system"`
	Mode     Mode   `json:"mode"`
	Sessions int    `json:"sessions"`
	Passes   int    `json:"passes"`
	// SoundAlikeOnly is the share of the passes verified only by sound.
	SoundAlikeOnly Proportion `json:"sound_alike_only"`
	// SoundAlikeAll counts every session (pass or not) verified only by sound.
	SoundAlikeAll int `json:"sound_alike_sessions"`
}

// TransferRow counts hand-overs to a human of one system in one mode on tasks of one behaviour
// profile: the share of calls transferred, the transfers the task forbade, and the required
// transfers that did not happen.
type TransferRow struct {
	Mode      Mode       `json:"mode"`
	System    string     `json:"system"`
	Behavior  string     `json:"behavior_profile"`
	Sessions  int        `json:"sessions"`
	Transfers Proportion `json:"transfers"`
	Wrong     int        `json:"forbidden_transfers"`
	Missed    int        `json:"missed_required_transfers"`
}

// conditionOf is a session's condition, quiet when it ran without one.
func conditionOf(s *Session) string {
	if s.Measures.Condition == "" {
		return "quiet"
	}
	return s.Measures.Condition
}

// conditionSlices fills Conditions when any session ran under a listening condition.
func (b *builder) conditionSlices() {
	conditioned := false
	conds := map[string]bool{}
	for i := range b.in.Sessions {
		s := &b.in.Sessions[i]
		conditioned = conditioned || s.Measures.Condition != ""
		if included(s) {
			conds[conditionOf(s)] = true
		}
	}
	if !conditioned {
		return
	}
	order := slices.Sorted(maps.Keys(conds))
	slices.SortStableFunc(order, func(a, c string) int { return cmp.Compare(b2i(c == "quiet"), b2i(a == "quiet")) })
	for _, c := range order {
		pooledH, pooledS := map[string][]float64{}, map[string][]float64{}
		var allH, allS []*Session
		allTasks := map[string]bool{}
		for _, sys := range b.in.Systems {
			hs := b.inCondition(b.group(sys.Label, Human).all, c)
			ss := b.inCondition(b.group(sys.Label, Synthetic).all, c)
			if len(hs) == 0 && len(ss) == 0 {
				continue
			}
			tasks, h, s := pairedByTask(hs, ss)
			for i, t := range tasks {
				pooledH[t] = append(pooledH[t], h[i])
				pooledS[t] = append(pooledS[t], s[i])
			}
			taskSet := map[string]bool{}
			for _, x := range append(slices.Clone(hs), ss...) {
				taskSet[x.Task], allTasks[x.Task] = true, true
			}
			allH, allS = append(allH, hs...), append(allS, ss...)
			b.addConditionRow(ConditionRow{Condition: c, System: sys.Label, Tasks: len(taskSet), Paired: len(tasks),
				Human: b.count(hs, MetricWS), Synthetic: b.count(ss, MetricWS), HumanAFA: Num(meanOf(hs, MetricAFA)), SynthAFA: Num(meanOf(ss, MetricAFA))}, h, s)
		}
		if len(b.in.Systems) > 1 && (len(allH) > 0 || len(allS) > 0) {
			var h, s []float64
			for _, t := range slices.Sorted(maps.Keys(pooledH)) {
				h, s = append(h, stats.Mean(pooledH[t])), append(s, stats.Mean(pooledS[t]))
			}
			b.addConditionRow(ConditionRow{Condition: c, System: AllSystems, Tasks: len(allTasks), Paired: len(h),
				Human: b.count(allH, MetricWS), Synthetic: b.count(allS, MetricWS), HumanAFA: Num(meanOf(allH, MetricAFA)), SynthAFA: Num(meanOf(allS, MetricAFA))}, h, s)
		}
	}
}

func (b *builder) addConditionRow(row ConditionRow, h, s []float64) {
	row.Delta = undefined()
	b.rep.Conditions = append(b.rep.Conditions, row)
	if len(h) == 0 {
		return
	}
	idx := len(b.rep.Conditions) - 1
	b.jobs = append(b.jobs, job{dst: func() *Interval { return &b.rep.Conditions[idx].Delta },
		run: func(bs *stats.ClusterBootstrap) (stats.Interval, error) { return bs.PairedDifference(h, s) }})
}

func (b *builder) inCondition(ss []*Session, c string) []*Session {
	var out []*Session
	for _, s := range ss {
		if conditionOf(s) == c {
			out = append(out, s)
		}
	}
	return out
}

// pairedByTask is, for the tasks both modes have, the human and synthetic task means of WS.
func pairedByTask(hs, ss []*Session) (tasks []string, h, s []float64) {
	byH, byS := map[string][]*Session{}, map[string][]*Session{}
	for _, x := range hs {
		byH[x.Task] = append(byH[x.Task], x)
	}
	for _, x := range ss {
		byS[x.Task] = append(byS[x.Task], x)
	}
	for _, t := range slices.Sorted(maps.Keys(byH)) {
		if len(byS[t]) == 0 {
			continue
		}
		hv, sv := meanOf(byH[t], MetricWS), meanOf(byS[t], MetricWS)
		if math.IsNaN(hv) || math.IsNaN(sv) {
			continue
		}
		tasks, h, s = append(tasks, t), append(h, hv), append(s, sv)
	}
	return tasks, h, s
}

// soundAlike fills SoundAlike when a task verifies callers by sound.
func (b *builder) soundAlike() {
	by := map[string]bool{}
	for _, t := range b.in.Tasks {
		if t.SoundAlike {
			by[t.ID] = true
		}
	}
	if len(by) == 0 {
		return
	}
	for _, sys := range b.in.Systems {
		for _, m := range []Mode{Human, Synthetic} {
			ss := b.inTasks(b.group(sys.Label, m).all, by)
			if len(ss) == 0 {
				continue
			}
			row := SoundAlikeRow{System: sys.Label, Mode: m, Sessions: len(ss)}
			only := 0
			for _, s := range ss {
				if s.Grade.SoundAlikeOnly {
					row.SoundAlikeAll++
				}
				if s.Grade.WS == 1 {
					row.Passes++
					if s.Grade.SoundAlikeOnly {
						only++
					}
				}
			}
			row.SoundAlikeOnly = b.proportion(only, row.Passes)
			b.rep.SoundAlike = append(b.rep.SoundAlike, row)
		}
	}
}

// transfers fills Transfers when a task has a transfer rule or a call transferred.
func (b *builder) transfers() {
	relevant := false
	for _, t := range b.in.Tasks {
		relevant = relevant || t.TransferRule != ""
	}
	for i := range b.in.Sessions {
		if g := b.in.Sessions[i].Grade; g != nil && g.Transfer != nil {
			relevant = true
		}
	}
	if !relevant {
		return
	}
	for _, m := range []Mode{Human, Synthetic} {
		for _, sys := range b.in.Systems {
			byBehavior := map[string][]*Session{}
			for _, s := range b.group(sys.Label, m).all {
				beh := b.tasks[s.Task].Behavior
				if beh == "" {
					beh = "(none)"
				}
				byBehavior[beh] = append(byBehavior[beh], s)
			}
			for _, beh := range slices.Sorted(maps.Keys(byBehavior)) {
				ss := byBehavior[beh]
				row := TransferRow{Mode: m, System: sys.Label, Behavior: beh, Sessions: len(ss)}
				n := 0
				for _, s := range ss {
					rule := b.tasks[s.Task].TransferRule
					switch {
					case s.Grade.Transfer != nil:
						n++
						if rule == "" || rule == string(task.TransferForbidden) {
							row.Wrong++
						}
					case rule == string(task.TransferRequired):
						row.Missed++
					}
				}
				row.Transfers = b.proportion(n, len(ss))
				b.rep.Transfers = append(b.rep.Transfers, row)
			}
		}
	}
	sort.SliceStable(b.rep.Transfers, func(i, j int) bool {
		x, y := b.rep.Transfers[i], b.rep.Transfers[j]
		return cmp.Or(cmp.Compare(x.Mode, y.Mode), cmp.Compare(x.System, y.System), cmp.Compare(x.Behavior, y.Behavior)) < 0
	})
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}

// conditionNote explains the condition slice.
func conditionNote(r *Report) string {
	return fmt.Sprintf("Workflow Success under each listening condition (%s), with Wilson intervals; the delta is human minus synthetic, paired by task within the condition, with a task-level bootstrap interval. Calls without a condition count as quiet.", plural(len(r.Conditions), "row", "rows"))
}
