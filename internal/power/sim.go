// Package power estimates the power of a planned audit study by simulating the plan itself: the
// counterbalanced sessions the planner produced (systems × tasks × participants, anchor repeats),
// exclusions at a stated rate, synthetic runs per task, outcomes drawn per system and task from
// pilot data or stated rates with a participant effect of stated size, and every simulated study
// analysed with the report's own delta code (report.BuildDeltas). It reports, per system and
// metric, the power to detect a given delta and the delta detectable at a target power, beside
// the closed-form figures. Results are deterministic for a seed, whatever the number of workers.
package power

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"

	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/report"
	"github.com/voicebench/humanaudit/internal/rng"
	"github.com/voicebench/humanaudit/internal/study"
)

// Errors a simulation can refuse with.
var (
	// ErrInvalidModel means the outcome model is incomplete or out of range.
	ErrInvalidModel = errors.New("invalid power model")
	// ErrInvalidDesign means the design or the options cannot be simulated.
	ErrInvalidDesign = errors.New("invalid power design")
)

// Design is the study simulated.
type Design struct {
	// Plan is the planner's plan: every planned human session with its participant slot.
	Plan []study.Session
	// SyntheticRuns is the number of synthetic runs (seeds) per system and task.
	SyntheticRuns int
	// Exclusion is the probability that a planned human session is excluded and lost (its cell is
	// not run again).
	Exclusion float64
}

// Options configure a simulation.
type Options struct {
	Studies int     // simulated studies (default 2000)
	Delta   float64 // the true human − synthetic delta (mean over tasks) whose power is wanted
	Alpha   float64 // two-sided significance (default 0.05): the report's interval at level 1 − Alpha
	Target  float64 // power at which the detectable delta is found (default 0.8)
	// Resamples per bootstrap interval of each simulated study (default 2000).
	Resamples int
	Seed      uint64
	Workers   int // default GOMAXPROCS; the result does not depend on it
	// Metrics default to WS and AFA.
	Metrics []report.Metric
	// Rows are the systems (report.AllSystems for the pooled row) to simulate; nil for every system
	// and the pooled row.
	Rows []string
	// Progress, if set, is called as the work advances (from one goroutine at a time).
	Progress func(Progress)
}

// Progress says how far a simulation is: Done of Total units of the current phase (studies
// analysed, then rows whose detectable delta is found); Label names the row at work.
type Progress struct {
	Phase, Label string
	Done, Total  int
}

// DefaultStudies and DefaultResamples are the simulation's defaults. 2,000 resamples put the
// Monte Carlo noise of an interval's bound at about 0.06 of the estimate's standard error, small
// beside its sampling noise; 2,000 studies estimate a power near 80% to ±0.9 points.
const (
	DefaultStudies   = 2000
	DefaultResamples = 2000
)

// Row is the result for one system (or the pooled row) and metric.
type Row struct {
	System string        `json:"system"`
	Metric report.Metric `json:"metric"`
	Tasks  int           `json:"tasks"`
	// Sessions are the planned human sessions of the row.
	Sessions int `json:"human_sessions"`
	// Power is the share of simulated studies whose interval excluded 0 at Delta; PowerSE its
	// Monte Carlo standard error.
	Power   float64 `json:"power"`
	PowerSE float64 `json:"power_se"`
	// MeanEstimate and SDEstimate describe the simulated deltas at Delta (the truth is Delta).
	MeanEstimate float64 `json:"mean_estimate"`
	SDEstimate   float64 `json:"sd_estimate"`
	// Detectable is the smallest |delta| (in Delta's direction) that the simulated studies detect
	// with the target power, between DetectableLow and DetectableHigh; NaN when out of reach.
	Detectable     float64 `json:"detectable_delta"`
	DetectableLow  float64 `json:"detectable_low"`
	DetectableHigh float64 `json:"detectable_high"`
	// ClosedSE is the closed-form standard error of the delta at Delta; ClosedPower the power it
	// implies; ClosedDetectable the closed-form detectable delta (see docs/analysis.md).
	ClosedSE         float64 `json:"closed_form_se"`
	ClosedPower      float64 `json:"closed_form_power"`
	ClosedDetectable float64 `json:"closed_form_detectable_delta"`
	Note             string  `json:"note,omitempty"`
}

// Result is a simulation's outcome.
type Result struct {
	Studies, Resamples     int
	Delta, Alpha, Target   float64
	Exclusion              float64
	ParticipantSD          float64
	SessionSD              float64
	SyntheticRuns          int
	Participants, Sessions int
	Seed                   uint64
	Rows                   []Row
	// Analyses counts the simulated studies analysed (a study analysed again at another delta
	// counts again): Studies for the power, then what the searches needed.
	Analyses int
}

type metricKind int

const (
	metricWS metricKind = iota
	metricAFA
)

func kindOf(m report.Metric) (metricKind, error) {
	switch m {
	case report.MetricWS:
		return metricWS, nil
	case report.MetricAFA:
		return metricAFA, nil
	}
	return 0, fmt.Errorf("metric %q: the simulation draws ws and afa only: %w", m, ErrInvalidDesign)
}

// Simulator draws and analyses simulated studies of one design under one model.
type Simulator struct {
	design  Design
	model   Model
	systems []string // sorted
	tasks   []string // sorted
	cal     []calibrated
	slots   []string // participants, sorted
	// humans[j] are the plan sessions of system j with their participant index, by task and repeat
	// (the order of the session layout below; draws follow it).
	humans [][]planned
	// A study's sessions are laid out in the report's canonical order (mode, system, task,
	// repeat or seed, id), so that its sort finds them sorted: every system's human sessions,
	// then every system's synthetic runs. hStart[j] and sStart[j] are where system j's begin;
	// hStart[len(systems)] = sStart[0], sStart[len(systems)] is the total.
	hStart, sStart []int
	ids            []string

	mu      sync.Mutex
	shifts  map[shiftKey]shiftVal
	workers sync.Pool
}

type planned struct {
	task        int // index into tasks
	participant int
	repeat      int
}

type shiftKey struct {
	system int
	metric metricKind
	delta  float64
}

type shiftVal struct {
	lam float64
	ok  bool
}

// NewSimulator checks the design and the model and prepares the simulation.
func NewSimulator(d Design, m Model) (*Simulator, error) {
	if len(d.Plan) == 0 {
		return nil, fmt.Errorf("power: the plan has no sessions: %w", ErrInvalidDesign)
	}
	if d.SyntheticRuns < 1 {
		return nil, fmt.Errorf("power: %d synthetic runs per task: want at least 1: %w", d.SyntheticRuns, ErrInvalidDesign)
	}
	if !(d.Exclusion >= 0 && d.Exclusion < 1) {
		return nil, fmt.Errorf("power: exclusion rate %v: want at least 0 and below 1: %w", d.Exclusion, ErrInvalidDesign)
	}
	sysSet, taskSet, slotSet := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, s := range d.Plan {
		if s.System == "" || s.Task == "" || s.Participant == "" {
			return nil, fmt.Errorf("power: plan session %+v lacks a system, task or participant: %w", s, ErrInvalidDesign)
		}
		sysSet[s.System], taskSet[s.Task], slotSet[s.Participant] = true, true, true
	}
	sim := &Simulator{design: d, model: m, systems: sortedSet(sysSet), tasks: sortedSet(taskSet), slots: sortedSet(slotSet),
		shifts: map[shiftKey]shiftVal{}}
	if err := m.Validate(sim.systems, sim.tasks); err != nil {
		return nil, err
	}
	sysIdx, taskIdx, slotIdx := index(sim.systems), index(sim.tasks), index(sim.slots)
	sim.humans = make([][]planned, len(sim.systems))
	for _, s := range d.Plan {
		j := sysIdx[s.System]
		sim.humans[j] = append(sim.humans[j], planned{task: taskIdx[s.Task], participant: slotIdx[s.Participant], repeat: s.Repeat})
	}
	for j, sys := range sim.systems {
		hs := sim.humans[j]
		sort.SliceStable(hs, func(a, b int) bool {
			if hs[a].task != hs[b].task {
				return hs[a].task < hs[b].task
			}
			return hs[a].repeat < hs[b].repeat
		})
		sim.cal = append(sim.cal, calibrate(m, sys, sim.tasks))
		sim.hStart = append(sim.hStart, len(sim.ids))
		for range hs {
			sim.ids = append(sim.ids, fmt.Sprintf("h%06d", len(sim.ids)))
		}
	}
	for range sim.systems {
		sim.sStart = append(sim.sStart, len(sim.ids))
		for range len(sim.tasks) * d.SyntheticRuns {
			sim.ids = append(sim.ids, fmt.Sprintf("s%06d", len(sim.ids)))
		}
	}
	sim.hStart = append(sim.hStart, sim.sStart[0])
	sim.sStart = append(sim.sStart, len(sim.ids))
	sim.workers.New = func() any { return sim.newWorker() }
	return sim, nil
}

// Analyse draws simulated study i of a simulation seeded with seed, at a true delta, and returns
// the report's deltas for the rows asked (system labels, report.AllSystems for the pooled row; nil
// for every system and the pooled row) and metrics, from intervals at level with resamples
// resamples, BCa bounds included. The same arguments give the same deltas.
func (s *Simulator) Analyse(seed uint64, i int, delta float64, rows []string, metrics []report.Metric, resamples int, level float64) ([]report.Delta, error) {
	w := s.workers.Get().(*worker)
	defer s.workers.Put(w)
	if rows == nil {
		rows = append([]string(nil), s.systems...)
		if len(s.systems) > 1 {
			rows = append(rows, report.AllSystems)
		}
	}
	w.bca = true
	defer func() { w.bca = false }()
	return w.analyse(seed, i, delta, rows, metrics, resamples, level)
}

func index(xs []string) map[string]int {
	m := make(map[string]int, len(xs))
	for i, x := range xs {
		m[x] = i
	}
	return m
}

// Systems returns the design's systems, sorted.
func (s *Simulator) Systems() []string { return s.systems }

// Tasks returns the design's tasks, sorted.
func (s *Simulator) Tasks() []string { return s.tasks }

// shift returns λ for a system and metric at a true delta (cached).
func (s *Simulator) shift(j int, k metricKind, delta float64) (float64, bool) {
	key := shiftKey{j, k, delta}
	s.mu.Lock()
	v, hit := s.shifts[key]
	s.mu.Unlock()
	if hit {
		return v.lam, v.ok
	}
	lam, ok := s.cal[j].shift(s.model, k, delta)
	s.mu.Lock()
	s.shifts[key] = shiftVal{lam, ok}
	s.mu.Unlock()
	return lam, ok
}

// studySeed derives study i's seed from the simulation seed.
func studySeed(seed uint64, i int) uint64 { return rng.Derive(seed, i) }

// worker holds the buffers one goroutine draws studies into.
type worker struct {
	sim      *Simulator
	u        []float64
	sessions []report.Session
	grades   []grade.Result
	excluded report.Exclusion
	pcg      rand.PCG
	rng      *rand.Rand
	bca      bool // compute the BCa bounds too (the coverage check wants them; the power search does not)
}

func (s *Simulator) newWorker() *worker {
	w := &worker{sim: s, u: make([]float64, len(s.slots)), sessions: make([]report.Session, len(s.ids)),
		grades: make([]grade.Result, len(s.ids)), excluded: report.Exclusion{Reason: "simulated", By: "power"}}
	w.rng = rand.New(&w.pcg)
	for j, sys := range s.systems {
		i := s.hStart[j]
		for _, h := range s.humans[j] {
			w.sessions[i] = report.Session{ID: s.ids[i], Task: s.tasks[h.task], System: sys, Mode: report.Human,
				Participant: s.slots[h.participant], Repeat: h.repeat, Ended: true, Grade: &w.grades[i]}
			i++
		}
		i = s.sStart[j]
		for t := range s.tasks {
			for r := range s.design.SyntheticRuns {
				w.sessions[i] = report.Session{ID: s.ids[i], Task: s.tasks[t], System: sys, Mode: report.Synthetic,
					Seed: int64(r + 1), Ended: true, Grade: &w.grades[i]}
				i++
			}
		}
	}
	return w
}

// draw fills the sessions of the given systems for study i at the shifts lam (per system: WS,
// AFA). Every draw is made whatever the shifts, in a fixed order, so that two deltas see the
// same random numbers (common random numbers): an outcome moves only because its probability did.
func (w *worker) draw(simSeed uint64, i int, systems []int, lam [][2]float64) {
	s := w.sim
	seed := studySeed(simSeed, i)
	w.pcg.Seed(seed, 0)
	for p := range w.u {
		w.u[p] = s.model.ParticipantSD * w.rng.NormFloat64()
	}
	sd := s.model.SessionSD
	for _, j := range systems {
		w.pcg.Seed(seed, uint64(j)+1)
		cal := s.cal[j]
		k := s.hStart[j]
		for _, h := range s.humans[j] {
			sess, g := &w.sessions[k], &w.grades[k]
			k++
			sess.Exclusion = nil
			if w.rng.Float64() < s.design.Exclusion {
				sess.Exclusion = &w.excluded
			}
			cell := cal.cells[h.task]
			u := w.u[h.participant]
			g.WS = bernoulli(w.rng.Float64(), logistic(logit(cell.WS)+lam[j][0]+u))
			pf := logistic(cal.afaC[h.task] + lam[j][1] + u + sd*w.rng.NormFloat64())
			w.fields(g, cell.Fields, pf)
		}
		k = s.sStart[j]
		for t := range s.tasks {
			cell := cal.cells[t]
			for range s.design.SyntheticRuns {
				g := &w.grades[k]
				k++
				g.WS = bernoulli(w.rng.Float64(), cell.WS)
				pf := logistic(cal.afaC[t] + sd*w.rng.NormFloat64())
				w.fields(g, cell.Fields, pf)
			}
		}
	}
}

func bernoulli(u, p float64) int {
	if u < p {
		return 1
	}
	return 0
}

// fields draws m fields right with probability p each and sets the grade's AFA.
func (w *worker) fields(g *grade.Result, m int, p float64) {
	c := 0
	for range m {
		if w.rng.Float64() < p {
			c++
		}
	}
	g.AFA = grade.AFA{Correct: c, Total: m, Value: float64(c) / float64(m)}
}

// analyse draws study i and computes the report's deltas of the given rows (systems in the
// order asked, AllSystems for the pooled row) for one or more metrics.
func (w *worker) analyse(seed uint64, i int, delta float64, rowSystems []string, metrics []report.Metric, resamples int, level float64) ([]report.Delta, error) {
	s := w.sim
	var need []int
	pooled := false
	for _, r := range rowSystems {
		if r == report.AllSystems {
			pooled = true
		}
	}
	if pooled {
		need = make([]int, len(s.systems))
		for j := range need {
			need[j] = j
		}
	} else {
		for _, r := range rowSystems {
			j := sort.SearchStrings(s.systems, r)
			if j == len(s.systems) || s.systems[j] != r {
				return nil, fmt.Errorf("power: no system %q in the plan: %w", r, ErrInvalidDesign)
			}
			need = append(need, j)
		}
		sort.Ints(need)
	}
	lam := make([][2]float64, len(s.systems))
	for _, j := range need {
		for _, m := range metrics {
			k, _ := kindOf(m)
			l, ok := s.shift(j, k, delta)
			if !ok {
				return nil, fmt.Errorf("power: a delta of %v is out of reach for system %s %s: %w", delta, s.systems[j], m, ErrInvalidDesign)
			}
			lam[j][k] = l
		}
	}
	w.draw(seed, i, need, lam)
	in := report.Input{Study: report.StudyInfo{ID: "simulated"}}
	for _, j := range need {
		in.Systems = append(in.Systems, report.SystemInfo{Label: s.systems[j]})
	}
	for _, t := range s.tasks {
		in.Tasks = append(in.Tasks, report.TaskInfo{ID: t})
	}
	if pooled {
		in.Sessions = w.sessions
	} else {
		for _, j := range need {
			in.Sessions = append(in.Sessions, w.sessions[s.hStart[j]:s.hStart[j+1]]...)
		}
		for _, j := range need {
			in.Sessions = append(in.Sessions, w.sessions[s.sStart[j]:s.sStart[j+1]]...)
		}
	}
	return report.BuildDeltas(in, report.Options{Seed: studySeed(seed, i), Resamples: resamples, Level: level, Workers: 1, SkipBCa: !w.bca}, rowSystems, metrics)
}

// defaults fills the options' defaults and checks them.
func (o *Options) defaults() error {
	if o.Studies == 0 {
		o.Studies = DefaultStudies
	}
	if o.Resamples == 0 {
		o.Resamples = DefaultResamples
	}
	if o.Alpha == 0 {
		o.Alpha = 0.05
	}
	if o.Target == 0 {
		o.Target = 0.8
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if len(o.Metrics) == 0 {
		o.Metrics = []report.Metric{report.MetricWS, report.MetricAFA}
	}
	switch {
	case o.Studies < 10:
		return fmt.Errorf("power: %d simulated studies: want at least 10: %w", o.Studies, ErrInvalidDesign)
	case o.Resamples < 100:
		return fmt.Errorf("power: %d resamples: want at least 100: %w", o.Resamples, ErrInvalidDesign)
	case !(o.Alpha > 0 && o.Alpha < 0.5):
		return fmt.Errorf("power: alpha %v: want between 0 and 0.5: %w", o.Alpha, ErrInvalidDesign)
	case !(o.Target > 0 && o.Target < 1):
		return fmt.Errorf("power: target power %v: want between 0 and 1: %w", o.Target, ErrInvalidDesign)
	case o.Delta == 0 || math.IsNaN(o.Delta) || math.Abs(o.Delta) >= 1:
		return fmt.Errorf("power: delta %v: want a nonzero difference between −1 and 1 (its sign says which way): %w", o.Delta, ErrInvalidDesign)
	}
	for _, m := range o.Metrics {
		if _, err := kindOf(m); err != nil {
			return err
		}
	}
	return nil
}
