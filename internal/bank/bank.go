// Package bank is the frozen synthetic caller bank: the natural-language variants a task stores
// for each user plan its flow engine can reach, the deterministic selector that picks one variant
// per (task, seed, plan), the quality control that rejects variants which leak, contradict or fail
// to express their plan, the Flite rendering of every variant to 24 kHz audio (or the import of
// audio rendered elsewhere), and the annotators' rating set of frozen utterances.
package bank

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"

	"github.com/voicebench/humanaudit/internal/flow"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/textcall"
	"github.com/voicebench/humanaudit/internal/trace"
)

// Variants per plan the bank must hold.
const (
	MinVariants = 2
	MaxVariants = 5
)

// Variant is one frozen utterance of a task's caller bank.
type Variant struct {
	Task    string `json:"task"`
	Plan    string `json:"plan"`
	Variant int    `json:"variant"` // 1-based position in the plan's list
	Text    string `json:"text"`
}

// Variants lists every variant of a task's bank: plans in the flow engine's reachable order, then
// any plan IDs the task holds that no longer reach (Check reports those).
func Variants(t *task.Task) []Variant {
	var out []Variant
	seen := map[string]bool{}
	for _, p := range flow.ReachablePlans(t) {
		seen[p.ID] = true
		for i, s := range t.Bank[p.ID] {
			out = append(out, Variant{Task: t.ID, Plan: p.ID, Variant: i + 1, Text: s})
		}
	}
	var extra []string
	for id := range t.Bank {
		if !seen[id] {
			extra = append(extra, id)
		}
	}
	sort.Strings(extra)
	for _, id := range extra {
		for i, s := range t.Bank[id] {
			out = append(out, Variant{Task: t.ID, Plan: id, Variant: i + 1, Text: s})
		}
	}
	return out
}

// Select maps (task, simulator seed, plan) to one of n variants (0-based). It hashes the three
// with FNV-1a, so the choice is stable across runs, machines and Go versions, and different seeds
// spread over the variants.
func Select(taskID string, seed int64, planID string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(taskID))
	h.Write([]byte{0})
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(seed))
	h.Write(b[:])
	h.Write([]byte{0})
	h.Write([]byte(planID))
	// Fold the high bits in: FNV's low bits alone spread poorly over small moduli.
	x := h.Sum64()
	x ^= x >> 29
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 32
	return int(x % uint64(n))
}

// Speaker returns the synthetic caller's voice for one call of task t with a simulator seed: each
// plan is said with its selected variant, and a plan said again in the same call (an
// acknowledgement, a second "yes") moves on to the next variant so that repeats do not sound
// canned. A plan the bank lacks falls back to the template rendering; Check makes sure a shipped
// bank never lacks one.
func Speaker(t *task.Task, seed int64) textcall.Speaker {
	uses := map[string]int{}
	return func(p trace.Plan) string {
		vs := t.Bank[p.ID]
		if len(vs) == 0 {
			return textcall.RenderPlan(t, p)
		}
		i := (Select(t.ID, seed, p.ID, len(vs)) + uses[p.ID]) % len(vs)
		uses[p.ID]++
		return vs[i]
	}
}

// FileName is the audio file of a variant under the bank directory: task/plan.N.wav, with the
// plan ID's ':' and '@' made file-safe ("answer_callback_phone.v2.1.wav" for the first variant
// of answer:callback_phone@v2).
func FileName(v Variant) string {
	plan := strings.NewReplacer(":", "_", "@", ".", "/", "_").Replace(v.Plan)
	return fmt.Sprintf("%s/%s.%d.wav", v.Task, plan, v.Variant)
}
