package study

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/task"
)

// suite returns d synthetic tasks with varied strata and the first a of them (spread) as anchors.
func suite(d, a int, rng *rand.Rand) ([]TaskInfo, []string) {
	risks := []string{"low", "medium", "high"}
	burdens := []string{"light", "moderate"}
	tasks := make([]TaskInfo, d)
	for i := range tasks {
		tasks[i] = TaskInfo{ID: fmt.Sprintf("task-%02d", i), RiskTier: risks[rng.IntN(3)],
			RequiredFields: 4 + rng.IntN(12), ToolBurden: burdens[rng.IntN(2)]}
	}
	var anchors []string
	for _, i := range rng.Perm(d)[:a] {
		anchors = append(anchors, tasks[i].ID)
	}
	return tasks, anchors
}

func labels(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("sys-%c", 'a'+i)
	}
	return out
}

// expectedFailure is the first counting condition a request breaks, computed independently of
// the planner: "" when the request is feasible.
func expectedFailure(n, d, a, k int) string {
	total := n * (d + a)
	switch {
	case k > d:
		return ConstraintDistinctTasks
	case total%k != 0:
		return ConstraintEqualLoad
	case a > 0 && total/k < 2*n:
		return ConstraintAnchorRepeat
	case total/k < n:
		return ConstraintCellParticipants
	}
	return ""
}

// checkPlan asserts every constraint of the design on a built plan.
func checkPlan(t *testing.T, req Request, p *Plan) {
	t.Helper()
	n, d, a, k := len(req.Systems), len(req.Tasks), len(req.Anchors), req.SessionsPerParticipant
	total := n * (d + a)
	if len(p.Sessions) != total {
		t.Fatalf("%d sessions, want %d", len(p.Sessions), total)
	}
	if len(p.Participants) != total/k {
		t.Fatalf("%d participants, want %d", len(p.Participants), total/k)
	}
	if problems := Verify(p.Sessions); len(problems) > 0 {
		t.Fatalf("plan breaks constraints:\n%s", strings.Join(problems, "\n"))
	}
	// Verify derives the task, system and anchor sets from the plan; check they are the requested ones.
	anchorSet := map[string]bool{}
	for _, x := range req.Anchors {
		anchorSet[x] = true
	}
	firsts := map[string]int{}
	for _, s := range p.Sessions {
		if !slices.Contains(req.Systems, s.System) {
			t.Fatalf("unknown system %q in plan", s.System)
		}
		if s.Repeat == 2 && !anchorSet[s.Task] {
			t.Fatalf("task %s is repeated but is not an anchor", s.Task)
		}
		if s.Repeat == 1 {
			firsts[s.Task]++
		}
	}
	for _, task := range req.Tasks {
		if firsts[task.ID] != n {
			t.Fatalf("task %s has %d first runs, want %d", task.ID, firsts[task.ID], n)
		}
	}
	b := p.Balance()
	if b.MaxSameSystem > ceilDiv(k, n) {
		t.Fatalf("a participant meets one system %d times, cap %d", b.MaxSameSystem, ceilDiv(k, n))
	}
	if b.LoadMin != k || b.LoadMax != k {
		t.Fatalf("load %d–%d, want %d", b.LoadMin, b.LoadMax, k)
	}
	if n > 1 && b.SelfCarry != 0 {
		t.Fatalf("a system follows itself %d times", b.SelfCarry)
	}
	des := p.Design
	if des.Partial == 0 && !b.PositionsEqual {
		t.Fatalf("complete groups only, but position counts differ: %v", b.Positions)
	}
	if des.Partial > 0 {
		for pos := range b.Positions[0] {
			lo, hi := total, 0
			for x := range b.Positions {
				lo, hi = min(lo, b.Positions[x][pos]), max(hi, b.Positions[x][pos])
			}
			if hi-lo > des.Partial {
				t.Fatalf("position %d counts spread %d–%d with only %d participants outside complete groups", pos+1, lo, hi, des.Partial)
			}
		}
	}
	if des.ExactCarryOver && des.FullCycles && des.Partial == 0 && b.CarryMin != b.CarryMax {
		t.Fatalf("design claims exact carry-over but pairs range %d–%d", b.CarryMin, b.CarryMax)
	}
	if k == n && n%2 == 0 && des.Partial == 0 && b.CarryMin != b.CarryMax {
		t.Fatalf("even Williams square but carry-over %d–%d", b.CarryMin, b.CarryMax)
	}
	if des.Partial == 0 && des.LockedGroups == des.Groups && !b.SameTaskPositions {
		t.Fatalf("every group holds tasks to positions, but systems meet tasks at different positions")
	}
}

// TestBuildPropertiesOverSeedsAndSizes draws random requests (1–8 systems, 1–30 tasks, 0–8
// anchors, 1–32 sessions per participant, random seeds): a feasible one must give a plan meeting
// every constraint, an impossible one must be refused naming the constraint, with a fix that works
// and no nearer one. STUDY_STRESS=1 draws 20 000 requests instead of 600.
func TestBuildPropertiesOverSeedsAndSizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	feasible, refused := 0, 0
	cases := 600
	if os.Getenv("STUDY_STRESS") != "" {
		cases = 20000
		rng = rand.New(rand.NewPCG(99, 1))
	}
	if testing.Short() {
		cases = 120
	}
	for i := 0; i < cases; i++ {
		n := 1 + rng.IntN(8)
		d := 1 + rng.IntN(30)
		a := rng.IntN(min(d, 8) + 1)
		k := 1 + rng.IntN(d+2)
		tasks, anchors := suite(d, a, rng)
		req := Request{Tasks: tasks, Anchors: anchors, Systems: labels(n), SessionsPerParticipant: k, Seed: rng.Int64()}
		name := fmt.Sprintf("n%d_d%d_a%d_k%d_seed%d", n, d, a, k, req.Seed)
		p, err := Build(req)
		want := expectedFailure(n, d, a, k)
		if want == "" {
			if err != nil {
				t.Fatalf("%s: feasible request refused: %v", name, err)
			}
			t.Run(name, func(t *testing.T) { checkPlan(t, req, p) })
			feasible++
			continue
		}
		refused++
		var ie *InfeasibleError
		if !errors.As(err, &ie) || !errors.Is(err, ErrInfeasible) {
			t.Fatalf("%s: want an InfeasibleError for %q, got %v", name, want, err)
		}
		if ie.Constraint != want || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: refused for %q, want %q: %v", name, ie.Constraint, want, err)
		}
		if len(ie.SuggestedK) == 0 || !strings.Contains(ie.Fix, fmt.Sprint(ie.SuggestedK[0])) {
			t.Fatalf("%s: no usable fix in %v", name, err)
		}
		// The fix works, and nothing nearer does.
		dist := abs(ie.SuggestedK[0] - k)
		for _, sk := range ie.SuggestedK {
			if abs(sk-k) != dist {
				t.Fatalf("%s: suggestions %v are not equally near %d", name, ie.SuggestedK, k)
			}
			fixed := req
			fixed.SessionsPerParticipant = sk
			fp, err := Build(fixed)
			if err != nil {
				t.Fatalf("%s: suggested K=%d fails too: %v", name, sk, err)
			}
			checkPlan(t, fixed, fp)
		}
		for kk := max(1, k-dist+1); kk < k+dist; kk++ {
			if expectedFailure(n, d, a, kk) == "" {
				t.Fatalf("%s: K=%d is feasible and nearer than the suggested %v", name, kk, ie.SuggestedK)
			}
		}
	}
	t.Logf("%d feasible plans checked, %d impossible requests refused", feasible, refused)
	if feasible < cases/5 || refused < cases/10 {
		t.Fatalf("the generator covers too few of one kind: %d feasible, %d refused", feasible, refused)
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// acceptance is the study the issue names: 5 systems, 24 tasks, 6 anchors, 5 sessions each.
func acceptance(seed int64) Request {
	tasks, anchors := suite(24, 6, rand.New(rand.NewPCG(1, 2)))
	return Request{Tasks: tasks, Anchors: anchors, Systems: labels(5), SessionsPerParticipant: 5, Seed: seed}
}

func TestAcceptanceStudyIsExactlyBalanced(t *testing.T) {
	for seed := int64(0); seed < 20; seed++ {
		req := acceptance(seed)
		p, err := Build(req)
		if err != nil {
			t.Fatal(err)
		}
		checkPlan(t, req, p)
		b := p.Balance()
		if len(p.Sessions) != 150 || len(p.Participants) != 30 {
			t.Fatalf("seed %d: %d sessions, %d participants; want 150, 30", seed, len(p.Sessions), len(p.Participants))
		}
		for x := range b.Positions {
			for pos, c := range b.Positions[x] {
				if c != 6 {
					t.Fatalf("seed %d: %s at position %d: %d sessions, want 6", seed, b.Systems[x], pos+1, c)
				}
			}
		}
		if b.CarryMin != 6 || b.CarryMax != 6 {
			t.Fatalf("seed %d: carry-over %d–%d, want 6 for every ordered pair", seed, b.CarryMin, b.CarryMax)
		}
		if !b.SameTaskPositions {
			t.Fatalf("seed %d: systems meet tasks at different positions", seed)
		}
	}
}

func TestBuildIsDeterministicForASeed(t *testing.T) {
	req := acceptance(42)
	a, err := Build(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Build(req)
	if !reflect.DeepEqual(a.Sessions, b.Sessions) {
		t.Fatal("two builds with one seed differ")
	}
	var csvA, csvB bytes.Buffer
	WriteCSV(&csvA, a.Sessions)
	WriteCSV(&csvB, b.Sessions)
	if !bytes.Equal(csvA.Bytes(), csvB.Bytes()) {
		t.Fatal("plan.csv differs between two builds with one seed")
	}
	other := req
	other.Seed = 43
	c, _ := Build(other)
	if reflect.DeepEqual(a.Sessions, c.Sessions) {
		t.Fatal("seeds 42 and 43 give the same plan")
	}
}

func TestBuildRejectsMalformedRequests(t *testing.T) {
	tasks, _ := suite(4, 0, rand.New(rand.NewPCG(3, 4)))
	base := Request{Tasks: tasks, Systems: []string{"x", "y"}, SessionsPerParticipant: 2}
	for name, tc := range map[string]struct {
		mutate func(*Request)
		want   string
	}{
		"unknown anchor":   {func(r *Request) { r.Anchors = []string{"nope"} }, `anchor task "nope" is not among the study's tasks`},
		"duplicate system": {func(r *Request) { r.Systems = []string{"x", "x"} }, `system "x" is listed twice`},
		"no systems":       {func(r *Request) { r.Systems = nil }, "no systems"},
		"no tasks":         {func(r *Request) { r.Tasks = nil }, "no tasks"},
		"zero sessions":    {func(r *Request) { r.SessionsPerParticipant = 0 }, "sessions per participant 0"},
		"duplicate task":   {func(r *Request) { r.Tasks = append(r.Tasks, r.Tasks[0]) }, "listed twice"},
	} {
		t.Run(name, func(t *testing.T) {
			req := base
			req.Tasks = slices.Clone(base.Tasks)
			tc.mutate(&req)
			_, err := Build(req)
			if !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an invalid-request error containing %q", err, tc.want)
			}
		})
	}
}

func TestRefusalNamesConstraintAndFix(t *testing.T) {
	req := acceptance(1)
	req.SessionsPerParticipant = 4
	_, err := Build(req)
	want := "cannot plan this study: every participant runs the same number of sessions: 150 sessions (5 systems × (24 tasks + 6 anchor repeats)) do not split into participants of 4; fix: use 5 or 3 sessions per participant instead of 4"
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	req.SessionsPerParticipant = 25
	_, err = Build(req)
	if err == nil || !strings.Contains(err.Error(), ConstraintDistinctTasks+": 25 sessions per participant but only 24 distinct tasks") ||
		!strings.Contains(err.Error(), "use 15 sessions per participant") {
		t.Fatalf("got %v", err)
	}
	// 30 sessions each would leave 5 participants, too few to repeat an anchor with a new person.
	tasks, anchors := suite(30, 10, rand.New(rand.NewPCG(5, 6)))
	_, err = Build(Request{Tasks: tasks, Anchors: anchors, Systems: labels(5), SessionsPerParticipant: 25})
	if err == nil || !strings.Contains(err.Error(), ConstraintAnchorRepeat) || !strings.Contains(err.Error(), "use 20 sessions per participant instead of 25") {
		t.Fatalf("got %v", err)
	}
}

func TestCSVRoundTrip(t *testing.T) {
	p, err := Build(acceptance(3))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, p.Sessions); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "participant,position,task,system,repeat,group,stratum\n") {
		t.Fatalf("header: %q", strings.SplitN(buf.String(), "\n", 2)[0])
	}
	back, err := ReadCSV("plan.csv", &buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, p.Sessions) {
		t.Fatal("plan.csv does not read back to the same sessions")
	}
}

func TestReadCSVNamesLineAndColumn(t *testing.T) {
	for in, want := range map[string]string{
		"participant,position,task,system\nP1,1,t,s\n":          `plan.csv: line 1: no "repeat" column`,
		"participant,position,task,system,repeat\nP1,x,t,s,1\n": `plan.csv: line 2: column position: "x" is not a whole number`,
		"participant,position,task,system,repeat\nP1,1,t,s,3\n": "plan.csv: line 2: column repeat: 3, want 1 (first run) or 2 (anchor repeat)",
		"participant,position,task,system,repeat\nP1,1,,s,1\n":  "plan.csv: line 2: column task is empty",
		"": "plan.csv: empty file",
	} {
		_, err := ReadCSV("plan.csv", strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", in, err, want)
		}
	}
}

func TestVerifyCatchesBrokenPlans(t *testing.T) {
	p, err := Build(acceptance(5))
	if err != nil {
		t.Fatal(err)
	}
	// Give participant 1's second session the task of their first.
	broken := slices.Clone(p.Sessions)
	broken[1].Task = broken[0].Task
	got := strings.Join(Verify(broken), "\n")
	if !strings.Contains(got, ConstraintDistinctTasks) || !strings.Contains(got, "is run 0 times as a first run") {
		t.Fatalf("Verify missed a repeated task:\n%s", got)
	}
	// Drop one session: an uneven load and an uncovered cell.
	got = strings.Join(Verify(p.Sessions[1:]), "\n")
	if !strings.Contains(got, ConstraintEqualLoad) {
		t.Fatalf("Verify missed an uneven load:\n%s", got)
	}
	// An anchor repeat given to the first run's participant.
	moved := slices.Clone(p.Sessions)
	for i, s := range moved {
		if s.Repeat != 2 {
			continue
		}
		for _, f := range moved {
			if f.Task == s.Task && f.System == s.System && f.Repeat == 1 {
				moved[i].Participant = f.Participant
			}
		}
		break
	}
	got = strings.Join(Verify(moved), "\n")
	if !strings.Contains(got, ConstraintAnchorRepeat) {
		t.Fatalf("Verify missed an anchor repeated by its first participant:\n%s", got)
	}
}

func BenchmarkBuildAcceptance(b *testing.B) {
	req := acceptance(1)
	for b.Loop() {
		if _, err := Build(req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/plan")
}

func TestSelectTasksBySubsetAndID(t *testing.T) {
	all := []*task.Task{
		{ID: "a", Subsets: []string{"audit24", "anchor"}},
		{ID: "b", Subsets: []string{"audit24"}},
		{ID: "c"},
	}
	ids := func(ts []*task.Task) string {
		var out []string
		for _, x := range ts {
			out = append(out, x.ID)
		}
		return strings.Join(out, ",")
	}
	for spec, want := range map[string]string{"audit24": "a,b", "anchor": "a", "c,audit24": "c,a,b", "b, a ,b": "b,a", "": ""} {
		got, err := SelectTasks(all, spec, "--tasks")
		if err != nil || ids(got) != want {
			t.Errorf("%q: got %q, %v; want %q", spec, ids(got), err, want)
		}
	}
	_, err := SelectTasks(all, "audit24,zzz", "--anchor")
	if !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), `--anchor: "zzz" is neither a task id nor a subset flag`) {
		t.Fatalf("got %v", err)
	}
}
