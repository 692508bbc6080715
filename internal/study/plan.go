// Package study plans counterbalanced live-audit studies: which participant runs which task with
// which system, in what order. Every task × system cell is run by one participant, the anchor
// cells by a second, different one; nobody meets a task twice or a system more than ⌈K/n⌉ times;
// system order is counterbalanced with Williams-style Latin squares and tasks are stratified by
// difficulty so that every system meets the same tasks at the same positions. The planner reports
// the design's balance and refuses impossible requests naming the failing constraint and the
// smallest change that fixes it. Plans are deterministic for a seed.
package study

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/voicebench/humanaudit/internal/rng"
	"github.com/voicebench/humanaudit/internal/task"
)

// The constraints a request can fail, as InfeasibleError.Constraint names them.
const (
	ConstraintDistinctTasks    = "no participant meets the same task twice"
	ConstraintEqualLoad        = "every participant runs the same number of sessions"
	ConstraintAnchorRepeat     = "every anchor cell is run again by a second, different participant"
	ConstraintCellParticipants = "the cells of a task (one per system) are run by different participants"
)

// TaskInfo is what the planner knows of a task: its ID and the strata used to spread difficulty.
type TaskInfo struct {
	ID             string
	RiskTier       string // low, medium or high
	RequiredFields int    // required artifact fields (about 4 to 15)
	ToolBurden     string // light or moderate
}

// Describe returns the planner's view of a task.
func Describe(t *task.Task) TaskInfo {
	return TaskInfo{ID: t.ID, RiskTier: t.RiskTier, RequiredFields: len(t.RequiredFields()), ToolBurden: t.ToolBurden}
}

// Stratum names a task's difficulty stratum in plan.csv ("high/12": risk tier / required fields).
func (t TaskInfo) Stratum() string {
	risk := t.RiskTier
	if risk == "" {
		risk = "unknown"
	}
	return risk + "/" + strconv.Itoa(t.RequiredFields)
}

// riskRank orders risk tiers; an unknown tier counts as medium.
func riskRank(tier string) int {
	switch tier {
	case "low":
		return 0
	case "high":
		return 2
	default:
		return 1
	}
}

// Request is what a study plan is built from.
type Request struct {
	Tasks   []TaskInfo // every task × system cell is run once
	Anchors []string   // IDs among Tasks whose cells are run a second time by another participant
	Systems []string   // system labels
	// SessionsPerParticipant is K, the number of sessions every participant runs.
	SessionsPerParticipant int
	Seed                   int64
	// SlotPrefix starts the participant slot labels ("P" gives P01, P02, …); a different prefix
	// keeps the slots of an extension plan apart from the first plan's.
	SlotPrefix string
	// Conditions, when given, make the listening condition a second factor: every task × system
	// × condition cell is run once (anchors twice), and the design balances the system ×
	// condition arms over participants and positions as it balances systems alone.
	Conditions []string
}

// Session is one planned session: one row of plan.csv.
type Session struct {
	Participant string // plan slot label; a real participant is bound to it when they start
	Position    int    // 1-based order within the participant's sessions
	Task        string
	System      string // label
	Condition   string // listening condition ("" when the plan has no condition factor)
	Repeat      int    // 1 for the first run of a cell, 2 for the anchor repeat
	Group       int    // the Latin-square group of participants the slot belongs to (1-based)
	Stratum     string // the task's difficulty stratum
}

// Plan is a complete study plan.
type Plan struct {
	Request      Request
	Participants []string  // slot labels in hand-out order: complete groups first
	Sessions     []Session // by participant in hand-out order, then position
	Design       Design
}

// Design describes how a plan was constructed, for the balance report.
type Design struct {
	Systems, Tasks, Anchors, K int
	Sessions, Participants     int
	Groups                     int     // complete groups of n participants (one Latin rectangle each)
	Partial                    int     // participants in the incomplete last group
	LockedGroups               int     // groups whose tasks are held to one position for every system
	Bases                      [][]int // the base sequences (systems numbered in Order)
	Order                      []string
	ExactCarryOver             bool // the bases balance carry-over exactly over a full cycle
	FullCycles                 bool // the complete groups use every base equally often
	Method                     string
	// Conditions is the number of listening conditions (0: no condition factor); the design's
	// arms are then the Systems × Conditions pairs, and Bases and Order number arms.
	Conditions int
}

// input is a checked request.
type input struct {
	req        Request
	tasks      []TaskInfo
	anchors    []int    // indexes into tasks
	systems    []string // the design's arms: systems, or system × condition pairs (armKey)
	labels     []string // the system labels
	conditions []string
	k          int
}

// armKey names one system × condition arm inside the planner.
func armKey(system, condition string) string {
	if condition == "" {
		return system
	}
	return system + "\t" + condition
}

func splitArm(arm string) (system, condition string) {
	system, condition, _ = strings.Cut(arm, "\t")
	return system, condition
}

// ArmLabel is how reports name a session's arm: its system, and its condition when the plan has
// a condition factor ("gpt-realtime · background_tv@10").
func ArmLabel(system, condition string) string {
	if condition == "" {
		return system
	}
	return system + " · " + condition
}

// Arm is ArmLabel of the session.
func (s Session) Arm() string { return ArmLabel(s.System, s.Condition) }

// arm names one unit of the design, for messages.
func (in input) arm() string {
	if len(in.conditions) > 0 {
		return "system × condition arm"
	}
	return "system"
}

// arms names what the design balances, for messages: "5 systems" or "10 system × condition arms".
func (in input) arms() string {
	if len(in.conditions) > 0 {
		return fmt.Sprintf("%d system × condition arms", len(in.systems))
	}
	return fmt.Sprintf("%d systems", len(in.systems))
}

// Build plans a study. An impossible request is an *InfeasibleError naming the constraint and the
// smallest change that fixes it; a malformed one wraps ErrInvalidRequest.
func Build(req Request) (*Plan, error) {
	in, err := normalise(req)
	if err != nil {
		return nil, err
	}
	p, err := build(in)
	if err == nil {
		return p, nil
	}
	if ie, ok := err.(*InfeasibleError); ok && ie.Fix == "" {
		ie.SuggestedK = nearestK(in)
		switch len(ie.SuggestedK) {
		case 0:
			ie.Fix = "add tasks or drop anchors (no number of sessions per participant works)"
		case 1:
			ie.Fix = fmt.Sprintf("use %d sessions per participant instead of %d", ie.SuggestedK[0], in.k)
		default:
			ie.Fix = fmt.Sprintf("use %d or %d sessions per participant instead of %d", ie.SuggestedK[0], ie.SuggestedK[1], in.k)
		}
	}
	return nil, err
}

// distinct trims each name of a request's list and refuses an empty or repeated one; empty names
// the blank kind in the error ("system label"), noun a repeated one's ("system").
func distinct(names []string, empty, noun string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, s := range names {
		s = strings.TrimSpace(s)
		switch {
		case s == "":
			return nil, invalid("empty %s", empty)
		case seen[s]:
			return nil, invalid("%s %q is listed twice", noun, s)
		}
		seen[s] = true
		out = append(out, s)
	}
	return out, nil
}

func normalise(req Request) (input, error) {
	in := input{req: req, k: req.SessionsPerParticipant}
	if in.req.SlotPrefix == "" {
		in.req.SlotPrefix = "P"
	}
	if len(req.Systems) == 0 {
		return in, invalid("no systems: give at least one system label")
	}
	if len(req.Tasks) == 0 {
		return in, invalid("no tasks: give at least one task")
	}
	if in.k < 1 {
		return in, invalid("sessions per participant %d: want at least 1", in.k)
	}
	var err error
	if in.labels, err = distinct(req.Systems, "system label", "system"); err != nil {
		return in, err
	}
	if in.conditions, err = distinct(req.Conditions, "condition", "condition"); err != nil {
		return in, err
	}
	if len(in.conditions) == 0 {
		in.systems = in.labels
	} else {
		// Arms interleave conditions (arm x has condition x mod C), so every Williams row, a run of
		// consecutive base entries, meets the conditions as evenly as its length allows.
		for _, sys := range in.labels {
			for _, c := range in.conditions {
				in.systems = append(in.systems, armKey(sys, c))
			}
		}
	}
	index := map[string]int{}
	for _, t := range req.Tasks {
		if t.ID == "" {
			return in, invalid("a task has an empty id")
		}
		if _, dup := index[t.ID]; dup {
			return in, invalid("task %q is listed twice", t.ID)
		}
		index[t.ID] = len(in.tasks)
		in.tasks = append(in.tasks, t)
	}
	seenAnchor := map[string]bool{}
	for _, a := range req.Anchors {
		i, ok := index[a]
		if !ok {
			return in, invalid("anchor task %q is not among the study's tasks: add it to the tasks or drop it from the anchors", a)
		}
		if seenAnchor[a] {
			return in, invalid("anchor task %q is listed twice", a)
		}
		seenAnchor[a] = true
		in.anchors = append(in.anchors, i)
	}
	return in, nil
}

// feasible checks the counting conditions every design must meet.
func feasible(in input) error {
	n, d, a, k := len(in.systems), len(in.tasks), len(in.anchors), in.k
	total := n * (d + a)
	if k > d {
		return &InfeasibleError{Constraint: ConstraintDistinctTasks,
			Reason: fmt.Sprintf("%d sessions per participant but only %d distinct tasks", k, d)}
	}
	if total%k != 0 {
		return &InfeasibleError{Constraint: ConstraintEqualLoad,
			Reason: fmt.Sprintf("%d sessions (%s × (%d tasks + %d anchor repeats)) do not split into participants of %d", total, in.arms(), d, a, k)}
	}
	p := total / k
	if a > 0 && p < 2*n {
		return &InfeasibleError{Constraint: ConstraintAnchorRepeat,
			Reason: fmt.Sprintf("each anchor task is run %d times (twice per %s), each time by a different participant, but %d sessions per participant leave only %d participants", 2*n, in.arm(), k, p)}
	}
	if p < n {
		return &InfeasibleError{Constraint: ConstraintCellParticipants,
			Reason: fmt.Sprintf("each task is run by %d different participants (one per %s), but %d sessions per participant leave only %d", n, in.arm(), k, p)}
	}
	return nil
}

// nearestK returns the sessions-per-participant values nearest the requested one that give a
// plan: one value, or the two at the same distance (the larger first).
func nearestK(in input) []int {
	for dist := 1; dist < in.k+len(in.tasks); dist++ {
		var best []int
		for _, k := range []int{in.k + dist, in.k - dist} {
			if k < 1 || k > len(in.tasks) {
				continue
			}
			try := in
			try.k = k
			if _, err := build(try); err == nil {
				best = append(best, k)
			}
		}
		if len(best) > 0 {
			return best
		}
	}
	return nil
}

// unit is one run of every system on a task: the first run (repeat 1) or the anchor repeat.
type unit struct {
	task   int
	repeat int
	tie    uint64
}

func build(in input) (*Plan, error) {
	if err := feasible(in); err != nil {
		return nil, err
	}
	n, k := len(in.systems), in.k
	m := len(in.tasks) + len(in.anchors)
	total := n * m
	np := total / k
	g, r := np/n, np%n

	fam := buildFamily(n, k, g)
	seed := in.req.Seed
	rowRNG := rng.New(seed, "rows")
	var rows [][]int
	var groupOf []int
	for j := 0; j < g; j++ {
		base := fam.bases[j%len(fam.bases)]
		for _, s := range rowRNG.Perm(n) {
			rows = append(rows, shifted(base, s, n))
			groupOf = append(groupOf, j)
		}
	}
	for _, row := range partialRows(fam, n, k, r, rows, rowRNG) {
		rows = append(rows, row)
		groupOf = append(groupOf, g)
	}
	order := make([]string, n)
	if c := len(in.conditions); c > 0 {
		// Systems and conditions are each put in a random order, keeping the interleaving.
		sp, cp := rng.New(seed, "systems").Perm(len(in.labels)), rng.New(seed, "conditions").Perm(c)
		for x := range order {
			order[x] = armKey(in.labels[sp[x/c]], in.conditions[cp[x%c]])
		}
	} else {
		for x, i := range rng.New(seed, "systems").Perm(n) {
			order[x] = in.systems[i]
		}
	}

	// Units, hardest first: risk tier, then required fields, then tool burden; ties at random.
	tieRNG := rng.New(seed, "ties")
	units := make([]unit, 0, m)
	for i := range in.tasks {
		units = append(units, unit{task: i, repeat: 1, tie: tieRNG.Uint64()})
	}
	for _, i := range in.anchors {
		units = append(units, unit{task: i, repeat: 2, tie: tieRNG.Uint64()})
	}
	sort.SliceStable(units, func(a, b int) bool {
		ta, tb := in.tasks[units[a].task], in.tasks[units[b].task]
		if x, y := riskRank(ta.RiskTier), riskRank(tb.RiskTier); x != y {
			return x > y
		}
		if ta.RequiredFields != tb.RequiredFields {
			return ta.RequiredFields > tb.RequiredFields
		}
		if x, y := burdenRank(ta.ToolBurden), burdenRank(tb.ToolBurden); x != y {
			return x > y
		}
		return units[a].tie < units[b].tie
	})

	// Containers: each locked group holds K units, one per position, each run by all n of its
	// participants. The rest (at least the incomplete group with one complete group, so each of its
	// units can reach n different participants) form one mixed container whose units are matched
	// to sessions system by system. Fewer locked groups are tried when that fails.
	firstLocked := g
	if r > 0 {
		firstLocked = g - 1
	}
	var slot [][]int
	locked := firstLocked
	for ; locked >= 0; locked-- {
		if slot = placeUnits(rows, units, locked, n, k, seed); slot != nil {
			break
		}
	}
	if slot == nil {
		return nil, &InfeasibleError{Constraint: ConstraintDistinctTasks,
			Reason: fmt.Sprintf("no assignment of %d tasks (%d anchor repeats) to %d participants of %d sessions gives each participant distinct tasks", len(in.tasks), len(in.anchors), np, k)}
	}

	width := max(2, len(strconv.Itoa(np)))
	plan := &Plan{Request: in.req, Design: Design{
		Systems: len(in.labels), Conditions: len(in.conditions), Tasks: len(in.tasks), Anchors: len(in.anchors), K: k, Sessions: total, Participants: np,
		Groups: g, Partial: r, LockedGroups: locked, Bases: fam.bases, Order: order,
		ExactCarryOver: fam.exact, FullCycles: g%len(fam.bases) == 0, Method: fam.method,
	}}
	for q, row := range rows {
		label := fmt.Sprintf("%s%0*d", in.req.SlotPrefix, width, q+1)
		plan.Participants = append(plan.Participants, label)
		for p, x := range row {
			u := units[slot[q][p]]
			t := in.tasks[u.task]
			sys, cond := splitArm(order[x])
			plan.Sessions = append(plan.Sessions, Session{Participant: label, Position: p + 1, Task: t.ID,
				System: sys, Condition: cond, Repeat: u.repeat, Group: groupOf[q] + 1, Stratum: t.Stratum()})
		}
	}
	if len(in.conditions) > 0 {
		plan.Design.Order = make([]string, len(order))
		for i, a := range order {
			plan.Design.Order[i] = ArmLabel(splitArm(a))
		}
	}
	if problems := Verify(plan.Sessions); len(problems) > 0 {
		return nil, fmt.Errorf("study planner bug: the plan breaks its own constraints: %s", strings.Join(problems, "; "))
	}
	return plan, nil
}

func burdenRank(b string) int {
	if b == "moderate" || b == "heavy" {
		return 1
	}
	return 0
}

// placeUnits assigns units to every participant's sessions with the first locked groups holding
// their tasks to positions, or returns nil when it finds no assignment.
func placeUnits(rows [][]int, units []unit, locked, n, k int, seed int64) [][]int {
	var caps, limits []int
	for j := 0; j < locked; j++ {
		caps, limits = append(caps, k), append(limits, 1)
	}
	mixedRows := rows[locked*n:]
	if len(mixedRows) > 0 {
		// A task can appear in the mixed container once for every n of its participants.
		caps, limits = append(caps, len(mixedRows)*k/n), append(limits, len(mixedRows)/n)
	}
	alloc, ok := allocate(units, caps, limits, rng.New(seed, fmt.Sprintf("allocate/%d", locked)))
	if !ok {
		return nil
	}
	slot := make([][]int, len(rows))
	for q := range slot {
		slot[q] = make([]int, k)
	}
	// Group j starts its hardest task at a position spread evenly over 1..K (in a random order of
	// groups), so every position gets its share of hard tasks.
	offsets := rng.New(seed, "offsets").Perm(max(locked, 1))
	for j := 0; j < locked; j++ {
		off := offsets[j] * k / max(locked, 1)
		for i, u := range alloc[j] {
			p := (i + off) % k
			for q := j * n; q < (j+1)*n; q++ {
				slot[q][p] = u
			}
		}
	}
	if len(mixedRows) > 0 {
		assigned, ok := assignMixed(mixedRows, alloc[len(alloc)-1], units, n, rng.New(seed, fmt.Sprintf("mixed/%d", locked)))
		if !ok {
			return nil
		}
		copy(slot[locked*n:], assigned)
	}
	return slot
}

// allocate deals the units (hardest first) to containers so that each container gets a spread of
// difficulty: each unit goes to the container that is least full relative to its capacity and
// holds fewer than its limit of units of that task. When the only containers left are at the
// limit, one earlier unit is swapped out. It returns each container's units in dealing order.
func allocate(units []unit, caps, limits []int, rs *rng.Stream) ([][]int, bool) {
	for attempt := 0; attempt < 50; attempt++ {
		out := make([][]int, len(caps))
		holds := make([]map[int]int, len(caps))
		for i := range holds {
			holds[i] = map[int]int{}
		}
		prefer := rs.Perm(len(caps))
		ok := true
		for ui, u := range units {
			best := -1
			for _, c := range prefer {
				if len(out[c]) >= caps[c] || holds[c][u.task] >= limits[c] {
					continue
				}
				if best < 0 || len(out[c])*caps[best] < len(out[best])*caps[c] {
					best = c
				}
			}
			if best >= 0 {
				out[best] = append(out[best], ui)
				holds[best][u.task]++
				continue
			}
			if !swapIn(ui, units, caps, limits, out, holds) {
				ok = false
				break
			}
		}
		if ok {
			return out, true
		}
	}
	return nil, false
}

// swapIn places unit ui when every container with room is at its limit for ui's task: it moves a
// unit v from a container z below the limit into a container x with room, and puts ui in v's place.
func swapIn(ui int, units []unit, caps, limits []int, out [][]int, holds []map[int]int) bool {
	t := units[ui].task
	for x := range out {
		if len(out[x]) >= caps[x] {
			continue
		}
		for z := range out {
			if z == x || holds[z][t] >= limits[z] {
				continue
			}
			for i, v := range out[z] {
				tv := units[v].task
				if tv == t || holds[x][tv] >= limits[x] {
					continue
				}
				out[x] = append(out[x], v)
				holds[x][tv]++
				holds[z][tv]--
				out[z][i] = ui
				holds[z][t]++
				return true
			}
		}
	}
	return false
}

// assignMixed assigns the mixed container's units to the sessions of its participants (rows): for
// each system in turn, a perfect matching of units to the sessions with that system, never giving
// a participant a task they already have. It retries with other orders when a matching fails.
func assignMixed(rows [][]int, unitIdx []int, units []unit, n int, rs *rng.Stream) ([][]int, bool) {
	type pos struct{ q, p int }
	bySystem := make([][]pos, n)
	for q, row := range rows {
		for p, x := range row {
			bySystem[x] = append(bySystem[x], pos{q, p})
		}
	}
	for attempt := 0; attempt < 200; attempt++ {
		out := make([][]int, len(rows))
		for q := range out {
			out[q] = make([]int, len(rows[q]))
		}
		has := make([]map[int]bool, len(rows))
		for q := range has {
			has[q] = map[int]bool{}
		}
		ok := true
		for _, s := range rs.Perm(n) {
			slots := slices.Clone(bySystem[s])
			rs.Shuffle(len(slots), func(i, j int) { slots[i], slots[j] = slots[j], slots[i] })
			if len(slots) != len(unitIdx) {
				return nil, false // system totals differ: cannot happen with partialRows
			}
			match := make([]int, len(slots))
			for i := range match {
				match[i] = -1
			}
			var visited []bool
			var augment func(u int) bool
			augment = func(u int) bool {
				for i, sl := range slots {
					if visited[i] || has[sl.q][units[u].task] {
						continue
					}
					visited[i] = true
					if match[i] < 0 || augment(match[i]) {
						match[i] = u
						return true
					}
				}
				return false
			}
			order := slices.Clone(unitIdx)
			rs.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			for _, u := range order {
				visited = make([]bool, len(slots))
				if !augment(u) {
					ok = false
					break
				}
			}
			if !ok {
				break
			}
			for i, sl := range slots {
				t := units[match[i]].task
				if has[sl.q][t] { // two units of one task to one participant in this round
					ok = false
					break
				}
				out[sl.q][sl.p] = match[i]
				has[sl.q][t] = true
			}
			if !ok {
				break
			}
		}
		if ok {
			return out, true
		}
	}
	return nil, false
}
