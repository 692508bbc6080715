package study

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

// Balance is a plan's balance: how often each system sits at each position, which system follows
// which (first-order carry-over), the load per participant, coverage of the cells, and how task
// difficulty falls on each system early and late in the participants' sequences.
type Balance struct {
	Systems      []string // sorted
	K            int      // sessions per participant (the first participant's count)
	Participants int
	Sessions     int

	Positions      [][]int // [system][position−1] sessions
	PositionsEqual bool    // every system has the same count at every position

	CarryOver          [][]int // [previous system][next system] transitions
	CarryMin, CarryMax int     // over ordered pairs of different systems
	SelfCarry          int     // transitions from a system to itself

	LoadMin, LoadMax     int // sessions per participant
	MinDistinctTasks     int // fewest distinct tasks any participant meets
	MaxSameSystem        int // most sessions any participant has with one system
	SystemCap            int // ⌈K/n⌉
	FirstRuns, Anchors   int // first-run and anchor-repeat sessions
	AnchorTasks          int
	Difficulty           []SystemDifficulty
	SameTaskPositions    bool // every system meets the same tasks at the same positions
	EarlyFrom, EarlyTo   int  // positions counted as early
	LateFrom, LateTo     int  // positions counted as late
	DifficultySpreadHigh int  // largest difference between systems in early-minus-late high-risk sessions

	// With a listening-condition factor, Systems are the system × condition arms (ArmLabel) and
	// these give each factor's own balance.
	Conditions []Factor // by condition, sorted
	BySystem   []Factor // by system, sorted (only with conditions)
}

// Factor is the balance of one level of a factor (a condition, or a system across conditions).
type Factor struct {
	Name      string
	Sessions  int
	Positions []int // sessions at each position
	// PerParticipantMin and Max are the fewest and most sessions of this level any participant
	// has; Cells counts its distinct task cells (first runs), each of which must be run once.
	PerParticipantMin, PerParticipantMax int
	Cells                                int
}

// SystemDifficulty is the difficulty one system meets early and late in participants' sequences.
type SystemDifficulty struct {
	System                  string
	Sessions                int
	EarlyFields, LateFields float64 // mean required fields of its early and late sessions
	EarlyHigh, LateHigh     int     // its high-risk sessions early and late
	MeanFields              float64
}

// Balance computes the plan's balance.
func (p *Plan) Balance() Balance { return BalanceOf(p.Sessions, p.Request.Tasks) }

// BalanceOf computes the balance of sessions; tasks supplies the strata (tasks it does not list
// count as medium risk with 0 required fields).
func BalanceOf(sessions []Session, tasks []TaskInfo) Balance {
	info := map[string]TaskInfo{}
	for _, t := range tasks {
		info[t.ID] = t
	}
	var b Balance
	sysIndex := map[string]int{}
	byParticipant := map[string][]Session{}
	var order []string
	for _, s := range sessions {
		if _, ok := sysIndex[s.Arm()]; !ok {
			sysIndex[s.Arm()] = 0
			b.Systems = append(b.Systems, s.Arm())
		}
		if _, ok := byParticipant[s.Participant]; !ok {
			order = append(order, s.Participant)
		}
		byParticipant[s.Participant] = append(byParticipant[s.Participant], s)
		if s.Repeat == 2 {
			b.Anchors++
		} else {
			b.FirstRuns++
		}
	}
	sort.Strings(b.Systems)
	for i, s := range b.Systems {
		sysIndex[s] = i
	}
	n := len(b.Systems)
	b.Sessions, b.Participants = len(sessions), len(order)
	if b.Participants == 0 {
		return b
	}
	b.K = len(byParticipant[order[0]])
	b.SystemCap = ceilDiv(b.K, max(n, 1))
	maxPos := 0
	for _, s := range sessions {
		maxPos = max(maxPos, s.Position)
	}
	b.Positions = make([][]int, n)
	b.CarryOver = make([][]int, n)
	for i := range b.Positions {
		b.Positions[i] = make([]int, maxPos)
		b.CarryOver[i] = make([]int, n)
	}
	b.LoadMin, b.MinDistinctTasks = len(sessions)+1, len(sessions)+1
	anchorTasks := map[string]bool{}
	half := b.K / 2
	b.EarlyFrom, b.EarlyTo, b.LateFrom, b.LateTo = 1, half, b.K-half+1, b.K
	b.Difficulty = make([]SystemDifficulty, n)
	earlyN, lateN := make([]int, n), make([]int, n)
	profile := make([][]string, n) // "task@position" per system
	for _, p := range order {
		ss := slices.Clone(byParticipant[p])
		sort.Slice(ss, func(i, j int) bool { return ss[i].Position < ss[j].Position })
		b.LoadMin, b.LoadMax = min(b.LoadMin, len(ss)), max(b.LoadMax, len(ss))
		tasks, perSystem := map[string]bool{}, map[string]int{}
		for i, s := range ss {
			x := sysIndex[s.Arm()]
			b.Positions[x][s.Position-1]++
			if i > 0 {
				b.CarryOver[sysIndex[ss[i-1].Arm()]][x]++
			}
			tasks[s.Task] = true
			perSystem[s.Arm()]++
			if s.Repeat == 2 {
				anchorTasks[s.Task] = true
			}
			t := info[s.Task]
			d := &b.Difficulty[x]
			d.Sessions++
			d.MeanFields += float64(t.RequiredFields)
			high := t.RiskTier == "high"
			if s.Position <= b.EarlyTo {
				d.EarlyFields += float64(t.RequiredFields)
				earlyN[x]++
				if high {
					d.EarlyHigh++
				}
			}
			if s.Position >= b.LateFrom && half > 0 {
				d.LateFields += float64(t.RequiredFields)
				lateN[x]++
				if high {
					d.LateHigh++
				}
			}
			profile[x] = append(profile[x], fmt.Sprintf("%s#%d@%d", s.Task, s.Repeat, s.Position))
		}
		b.MinDistinctTasks = min(b.MinDistinctTasks, len(tasks))
		for _, c := range perSystem {
			b.MaxSameSystem = max(b.MaxSameSystem, c)
		}
	}
	b.AnchorTasks = len(anchorTasks)
	b.PositionsEqual = true
	for pos := 0; pos < maxPos; pos++ {
		for x := 1; x < n; x++ {
			if b.Positions[x][pos] != b.Positions[0][pos] {
				b.PositionsEqual = false
			}
		}
	}
	b.CarryMin = -1
	for i := range b.CarryOver {
		for j, c := range b.CarryOver[i] {
			if i == j {
				b.SelfCarry += c
				continue
			}
			if b.CarryMin < 0 || c < b.CarryMin {
				b.CarryMin = c
			}
			b.CarryMax = max(b.CarryMax, c)
		}
	}
	if b.CarryMin < 0 {
		b.CarryMin = 0
	}
	b.SameTaskPositions = true
	lo, hi := 0, 0
	for x := range b.Difficulty {
		d := &b.Difficulty[x]
		d.System = b.Systems[x]
		if d.Sessions > 0 {
			d.MeanFields /= float64(d.Sessions)
		}
		if earlyN[x] > 0 {
			d.EarlyFields /= float64(earlyN[x])
		}
		if lateN[x] > 0 {
			d.LateFields /= float64(lateN[x])
		}
		slices.Sort(profile[x])
		if x > 0 && !slices.Equal(profile[x], profile[0]) {
			b.SameTaskPositions = false
		}
		diff := d.EarlyHigh - d.LateHigh
		if x == 0 || diff < lo {
			lo = diff
		}
		if x == 0 || diff > hi {
			hi = diff
		}
	}
	b.DifficultySpreadHigh = hi - lo
	hasCondition := false
	for _, s := range sessions {
		hasCondition = hasCondition || s.Condition != ""
	}
	if hasCondition {
		b.Conditions = factorBalance(sessions, order, maxPos, func(s Session) string { return s.Condition })
		b.BySystem = factorBalance(sessions, order, maxPos, func(s Session) string { return s.System })
	}
	return b
}

// factorBalance is the balance of each level of one factor of the sessions.
func factorBalance(sessions []Session, participants []string, maxPos int, level func(Session) string) []Factor {
	idx := map[string]int{}
	var names []string
	for _, s := range sessions {
		if _, ok := idx[level(s)]; !ok {
			idx[level(s)] = 0
			names = append(names, level(s))
		}
	}
	sort.Strings(names)
	out := make([]Factor, len(names))
	for i, n := range names {
		idx[n] = i
		out[i] = Factor{Name: n, Positions: make([]int, maxPos), PerParticipantMin: len(sessions) + 1}
	}
	per := map[string][]int{}
	cells := make([]map[string]bool, len(names))
	for i := range cells {
		cells[i] = map[string]bool{}
	}
	for _, s := range sessions {
		i := idx[level(s)]
		out[i].Sessions++
		out[i].Positions[s.Position-1]++
		if per[s.Participant] == nil {
			per[s.Participant] = make([]int, len(names))
		}
		per[s.Participant][i]++
		if s.Repeat == 1 {
			cells[i][s.Task+"\x00"+s.Arm()] = true
		}
	}
	for i := range out {
		out[i].Cells = len(cells[i])
		for _, p := range participants {
			c := per[p][i]
			out[i].PerParticipantMin, out[i].PerParticipantMax = min(out[i].PerParticipantMin, c), max(out[i].PerParticipantMax, c)
		}
	}
	return out
}

// FactorsEqual reports whether every level of a factor has the same count at every position.
func FactorsEqual(fs []Factor) bool {
	for _, f := range fs[1:] {
		if !slices.Equal(f.Positions, fs[0].Positions) {
			return false
		}
	}
	return true
}

// WriteReport writes the plan's design and balance for people (the planner's report).
func (p *Plan) WriteReport(w io.Writer) error {
	d := p.Design
	arms, unit := d.Systems, "system"
	if d.Conditions > 0 {
		arms, unit = d.Systems*d.Conditions, "system × condition arm"
		fmt.Fprintf(w, "Study plan: %d systems × %d listening conditions (%s) = %d arms × (%d tasks + %d anchor repeats) = %d sessions; %d per participant → %d participants (seed %d)\n",
			d.Systems, d.Conditions, strings.Join(p.Request.Conditions, ", "), arms, d.Tasks, d.Anchors, d.Sessions, d.K, d.Participants, p.Request.Seed)
	} else {
		fmt.Fprintf(w, "Study plan: %d systems × (%d tasks + %d anchor repeats) = %d sessions; %d per participant → %d participants (seed %d)\n",
			d.Systems, d.Tasks, d.Anchors, d.Sessions, d.K, d.Participants, p.Request.Seed)
	}
	fmt.Fprintf(w, "Design: %s.\n", d.Method)
	fmt.Fprintf(w, "  %d complete group(s) of %d participants, each running one base shifted through every %s (a Latin rectangle)", d.Groups, arms, unit)
	if d.Partial > 0 {
		fmt.Fprintf(w, ", and an incomplete group of %d whose rows have equal system totals", d.Partial)
	}
	fmt.Fprintln(w, ".")
	if len(d.Bases) > 1 && !d.FullCycles {
		fmt.Fprintf(w, "  The %d complete groups do not cycle the %d bases evenly, so carry-over is balanced only as far as the numbers allow.\n", d.Groups, len(d.Bases))
	}
	fmt.Fprintf(w, "  Tasks: ordered by difficulty (risk tier, then required fields, then tool burden) and dealt so every group gets a spread;\n")
	fmt.Fprintf(w, "  in %d group(s) each task is held to one position for all %d %ss, the position rotating between groups", d.LockedGroups, arms, unit)
	if d.LockedGroups < d.Groups+min(d.Partial, 1) {
		fmt.Fprintf(w, "; the last %d participants' tasks are matched to their sessions %s by %s", (d.Groups-d.LockedGroups)*arms+d.Partial, unit, unit)
	}
	fmt.Fprintln(w, ".")
	fmt.Fprintln(w)
	return p.Balance().Write(w)
}

// Write writes the balance tables.
func (b Balance) Write(w io.Writer) error {
	n := len(b.Systems)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	verdict := "no"
	if b.PositionsEqual && len(b.Positions) > 0 {
		verdict = fmt.Sprintf("yes, %d each", b.Positions[0][0])
	}
	unit := "system"
	if len(b.Conditions) > 0 {
		unit = "system × condition arm"
	}
	fmt.Fprintf(w, "Sessions per %s at each position (equal: %s):\n", unit, verdict)
	head := []string{strings.Fields(unit)[len(strings.Fields(unit))-1]}
	for pos := range b.Positions[0] {
		head = append(head, fmt.Sprint(pos+1))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for x, s := range b.Systems {
		row := []string{s}
		for _, c := range b.Positions[x] {
			row = append(row, fmt.Sprint(c))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
	fmt.Fprintln(w)
	transitions := 0
	for i := range b.CarryOver {
		for _, c := range b.CarryOver[i] {
			transitions += c
		}
	}
	fmt.Fprintf(w, "First-order carry-over (row: %s at position p, column: %s at p+1; %d transitions):\n", unit, unit, transitions)
	head = []string{"from \\ to"}
	head = append(head, b.Systems...)
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for i, s := range b.Systems {
		row := []string{s}
		for j, c := range b.CarryOver[i] {
			if i == j && c == 0 {
				row = append(row, "-")
			} else {
				row = append(row, fmt.Sprint(c))
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
	if n > 1 {
		state := "balanced"
		if b.CarryMax != b.CarryMin {
			state = "not equal"
		}
		fmt.Fprintf(w, "  ordered pairs of different %ss: min %d, max %d (%s); a %s followed by itself: %d\n", unit, b.CarryMin, b.CarryMax, state, unit, b.SelfCarry)
	}
	fmt.Fprintln(w)
	load := fmt.Sprintf("%d sessions each", b.LoadMin)
	if b.LoadMin != b.LoadMax {
		load = fmt.Sprintf("%d–%d sessions", b.LoadMin, b.LoadMax)
	}
	fmt.Fprintf(w, "Cells per participant: %s (%d participants); at least %d distinct tasks each; at most %d session(s) with any one system (cap ⌈%d/%d⌉ = %d)\n",
		load, b.Participants, b.MinDistinctTasks, b.MaxSameSystem, b.K, n, b.SystemCap)
	fmt.Fprintf(w, "Coverage: %d first-run sessions over %d systems; %d anchor repeats of %d anchor tasks, each by a participant other than the first run's\n",
		b.FirstRuns, n, b.Anchors, b.AnchorTasks)
	fmt.Fprintln(w)
	if len(b.Conditions) > 0 {
		b.writeFactors(w, tw, "condition", b.Conditions)
		b.writeFactors(w, tw, "system", b.BySystem)
	}
	if b.EarlyTo < 1 {
		return nil
	}
	fmt.Fprintf(w, "Task difficulty by system (early: positions %d–%d, late: positions %d–%d):\n", b.EarlyFrom, b.EarlyTo, b.LateFrom, b.LateTo)
	fmt.Fprintln(tw, "system\tsessions\tmean req. fields\tearly\tlate\thigh-risk early\tlate\t")
	for _, d := range b.Difficulty {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.2f\t%d\t%d\t\n", d.System, d.Sessions, d.MeanFields, d.EarlyFields, d.LateFields, d.EarlyHigh, d.LateHigh)
	}
	tw.Flush()
	if b.SameTaskPositions {
		fmt.Fprintln(w, "  every system meets the same tasks at the same positions, so no system is paired with an easier half")
	} else {
		fmt.Fprintf(w, "  systems' early-minus-late high-risk sessions differ by at most %d\n", b.DifficultySpreadHigh)
	}
	return nil
}

// writeFactors writes one factor's balance: sessions at each position and per participant.
func (b Balance) writeFactors(w io.Writer, tw *tabwriter.Writer, name string, fs []Factor) {
	verdict := "no"
	if FactorsEqual(fs) {
		verdict = fmt.Sprintf("yes, %d each", fs[0].Positions[0])
	}
	fmt.Fprintf(w, "Sessions per %s at each position (equal: %s):\n", name, verdict)
	head := []string{name}
	for pos := range fs[0].Positions {
		head = append(head, fmt.Sprint(pos+1))
	}
	head = append(head, "sessions", "per participant", "first-run cells")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, f := range fs {
		row := []string{f.Name}
		for _, c := range f.Positions {
			row = append(row, fmt.Sprint(c))
		}
		per := fmt.Sprint(f.PerParticipantMin)
		if f.PerParticipantMax != f.PerParticipantMin {
			per = fmt.Sprintf("%d–%d", f.PerParticipantMin, f.PerParticipantMax)
		}
		row = append(row, fmt.Sprint(f.Sessions), per, fmt.Sprint(f.Cells))
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
	fmt.Fprintln(w)
}
