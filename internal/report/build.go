package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"sort"
	"strconv"

	"github.com/voicebench/humanaudit/internal/parallel"
	"github.com/voicebench/humanaudit/internal/stats"
)

// Options configure a report.
type Options struct {
	// Seed seeds every bootstrap interval (each interval restarts from it).
	Seed uint64
	// Resamples per bootstrap interval (default 10000).
	Resamples int
	// Level is the confidence level of every interval (default 0.95).
	Level float64
	// Prices price the usage of systems by label (optional).
	Prices map[string]Price
	// Planning, when set, adds the minimum detectable delta for a planned study size.
	Planning *PlanningOptions
	// Workers is the number of goroutines computing bootstrap intervals (default GOMAXPROCS). The
	// result does not depend on it.
	Workers int
	// SkipBCa leaves the BCa bounds undefined: for simulations that decide on the percentile
	// interval only and need not pay for the jackknife.
	SkipBCa bool
}

// PlanningOptions describe a planned study for planning mode.
type PlanningOptions struct {
	Participants int
	// SessionsPerParticipant defaults to the study plan's (Input.SessionsPerParticipant).
	SessionsPerParticipant int
	Alpha                  float64 // two-sided significance, default 0.05
	Power                  float64 // default 0.8
}

// DefaultResamples is the number of bootstrap resamples per interval unless told otherwise.
const DefaultResamples = 10000

// builder holds the indexes and the pending bootstrap work of one Build.
type builder struct {
	in    Input
	opts  Options
	tasks map[string]TaskInfo
	jobs  []job
	rep   *Report
	// groups[system][mode] are the included sessions of a system in a mode.
	groups map[string]map[Mode]*group
}

// group is the included sessions of one system in one mode, by task.
type group struct {
	all    []*Session
	byTask map[string][]*Session
	tasks  []string // sorted
}

// job is one bootstrap interval to compute.
type job struct {
	run func(bs *stats.ClusterBootstrap) (stats.Interval, error)
	// dst is resolved when the job runs, after every row exists (rows of growing slices move).
	dst func() *Interval
}

// Build computes the report of in. It is deterministic: the same input (in any session order) and
// options give the same report.
func Build(in Input, opts Options) (*Report, error) {
	b, err := newBuilder(in, opts)
	if err != nil {
		return nil, err
	}
	b.rep = &Report{Study: in.Study, Seed: b.opts.Seed, Resamples: b.opts.Resamples, Level: b.opts.Level, IntervalMethod: IntervalExpandedPercentile}
	b.counts()
	b.systems()
	b.deltas(b.deltaSystems(), Metrics)
	b.participants()
	b.anchor()
	b.annotators()
	b.slices()
	b.conditionSlices()
	b.soundAlike()
	b.transfers()
	b.fieldMisses()
	b.exclusions()
	b.rep.Delivery = b.deliveryRows()
	if err := b.planning(); err != nil {
		return nil, err
	}
	if err := b.runJobs(); err != nil {
		return nil, err
	}
	b.finishParticipants()
	b.notes()
	return b.rep, nil
}

// BuildDeltas computes only the report's human-minus-synthetic deltas, with the code and options
// of Build: for each system listed (AllSystems for the pooled row; nil for every system and the
// pooled row, as in the report) and each metric, in that order. It is for simulations that
// analyse many studies the way the report would.
func BuildDeltas(in Input, opts Options, systems []string, metrics []Metric) ([]Delta, error) {
	b, err := newBuilder(in, opts)
	if err != nil {
		return nil, err
	}
	b.rep = &Report{}
	if systems == nil {
		systems = b.deltaSystems()
	}
	b.deltas(systems, metrics)
	if err := b.runJobs(); err != nil {
		return nil, err
	}
	return b.rep.Deltas, nil
}

// newBuilder checks the options and indexes the input.
func newBuilder(in Input, opts Options) (*builder, error) {
	if opts.Resamples == 0 {
		opts.Resamples = DefaultResamples
	}
	if opts.Level == 0 {
		opts.Level = 0.95
	}
	if opts.Resamples < 1 {
		return nil, fmt.Errorf("resamples %d: want at least 1: %w", opts.Resamples, ErrInvalidOption)
	}
	if !(opts.Level > 0 && opts.Level < 1) {
		return nil, fmt.Errorf("level %v: want between 0 and 1: %w", opts.Level, ErrInvalidOption)
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	b := &builder{in: in, opts: opts, tasks: map[string]TaskInfo{}, groups: map[string]map[Mode]*group{}}
	if err := b.index(); err != nil {
		return nil, err
	}
	return b, nil
}

// index checks the input, sorts it canonically and groups the included sessions.
func (b *builder) index() error {
	for _, t := range b.in.Tasks {
		if _, dup := b.tasks[t.ID]; dup {
			return fmt.Errorf("task %s listed twice: %w", t.ID, ErrInvalidInput)
		}
		b.tasks[t.ID] = t
	}
	b.in.Systems = slices.Clone(b.in.Systems)
	slices.SortFunc(b.in.Systems, func(x, y SystemInfo) int { return cmp.Compare(x.Label, y.Label) })
	known := map[string]bool{}
	for _, s := range b.in.Systems {
		if known[s.Label] {
			return fmt.Errorf("system %s listed twice: %w", s.Label, ErrInvalidInput)
		}
		known[s.Label] = true
	}
	b.in.Sessions = slices.Clone(b.in.Sessions)
	slices.SortFunc(b.in.Sessions, func(x, y Session) int {
		return cmp.Or(cmp.Compare(x.Mode, y.Mode), cmp.Compare(x.System, y.System), cmp.Compare(x.Task, y.Task),
			cmp.Compare(x.Repeat, y.Repeat), cmp.Compare(x.Seed, y.Seed), cmp.Compare(x.ID, y.ID))
	})
	ids := map[string]bool{}
	for i := range b.in.Sessions {
		s := &b.in.Sessions[i]
		if ids[s.ID] {
			return fmt.Errorf("session %s listed twice: %w", s.ID, ErrInvalidInput)
		}
		ids[s.ID] = true
		if _, ok := b.tasks[s.Task]; !ok {
			return fmt.Errorf("session %s: unknown task %q: %w", s.ID, s.Task, ErrInvalidInput)
		}
		if !known[s.System] {
			return fmt.Errorf("session %s: unknown system %q: %w", s.ID, s.System, ErrInvalidInput)
		}
		if s.Mode != Human && s.Mode != Synthetic {
			return fmt.Errorf("session %s: mode %q: want human or synthetic: %w", s.ID, s.Mode, ErrInvalidInput)
		}
		if !included(s) {
			continue
		}
		bySys := b.groups[s.System]
		if bySys == nil {
			bySys = map[Mode]*group{}
			b.groups[s.System] = bySys
		}
		g := bySys[s.Mode]
		if g == nil {
			g = &group{byTask: map[string][]*Session{}}
			bySys[s.Mode] = g
		}
		g.all = append(g.all, s)
		if len(g.byTask[s.Task]) == 0 {
			g.tasks = append(g.tasks, s.Task)
		}
		g.byTask[s.Task] = append(g.byTask[s.Task], s)
	}
	for _, bySys := range b.groups {
		for _, g := range bySys {
			sort.Strings(g.tasks)
		}
	}
	if len(b.in.Sessions) == 0 && len(b.in.Ratings) == 0 {
		return fmt.Errorf("study %s: %w", b.in.Study.ID, ErrNoSessions)
	}
	return nil
}

// included reports whether a session counts in the main numbers: it ended, was graded and was not
// excluded.
func included(s *Session) bool {
	return s.Exclusion == nil && s.Ended && s.Grade != nil
}

// group returns the included sessions of a system in a mode (empty when none).
func (b *builder) group(system string, mode Mode) *group {
	if g := b.groups[system][mode]; g != nil {
		return g
	}
	return &group{byTask: map[string][]*Session{}}
}

func (b *builder) counts() {
	for _, m := range []Mode{Human, Synthetic} {
		c := ModeCount{Mode: m}
		for i := range b.in.Sessions {
			s := &b.in.Sessions[i]
			if s.Mode != m {
				continue
			}
			c.Sessions++
			switch {
			case s.Exclusion != nil:
				c.Excluded++
			case !s.Ended:
				c.Unfinished++
			case s.Grade == nil:
				c.Ungraded++
			default:
				c.Included++
			}
		}
		b.rep.Counts = append(b.rep.Counts, c)
	}
	graders := map[string]bool{}
	for i := range b.in.Sessions {
		if s := &b.in.Sessions[i]; included(s) {
			graders[s.Grade.Grader] = true
		}
	}
	b.rep.Graders = slices.Sorted(maps.Keys(graders))
	if b.rep.Graders == nil {
		b.rep.Graders = []string{} // report.json says [] for a report without graded sessions, not null
	}
}

// value is a session's measure: 0/1 for gates, AFA in [0,1], TTR in seconds; NaN when undefined
// (no graded field, never resolved).
func value(s *Session, m Metric) float64 {
	g := s.Grade
	switch m {
	case MetricWS:
		return float64(g.WS)
	case MetricTS:
		return float64(g.TS)
	case MetricPV:
		return float64(g.PV)
	case MetricAC:
		return float64(g.AC)
	case MetricAV:
		return float64(g.AV)
	case MetricAFA:
		if g.AFA.Total == 0 {
			return math.NaN()
		}
		return g.AFA.Value
	case MetricTTR:
		if g.TTRMS == nil {
			return math.NaN()
		}
		return float64(*g.TTRMS) / 1000
	}
	return math.NaN()
}

// meanOf is the mean of a measure over sessions where it is defined; NaN when it is nowhere.
func meanOf(ss []*Session, m Metric) float64 {
	var sum float64
	n := 0
	for _, s := range ss {
		if v := value(s, m); !math.IsNaN(v) {
			sum += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// taskMeans is the measure's mean per task, over the tasks where it is defined.
func (g *group) taskMeans(m Metric) []float64 {
	var out []float64
	for _, t := range g.tasks {
		if v := meanOf(g.byTask[t], m); !math.IsNaN(v) {
			out = append(out, v)
		}
	}
	return out
}

func (b *builder) proportion(successes, n int) Proportion {
	p := Proportion{Successes: successes, N: n, P: NaN(), Low: NaN(), High: NaN()}
	if n == 0 {
		return p
	}
	w, err := stats.Wilson(successes, n, b.opts.Level)
	if err != nil {
		return p
	}
	p.P, p.Low, p.High = Num(w.P), Num(w.Low), Num(w.High)
	return p
}

func (b *builder) count(ss []*Session, m Metric) Proportion {
	c := 0
	for _, s := range ss {
		if value(s, m) == 1 {
			c++
		}
	}
	return b.proportion(c, len(ss))
}

// fixed is a job destination that does not move.
func fixed(dst *Interval) func() *Interval { return func() *Interval { return dst } }

// undefined is the interval of a statistic with no data.
func undefined() Interval {
	return Interval{Estimate: NaN(), Low: NaN(), High: NaN(), BCaLow: NaN(), BCaHigh: NaN()}
}

// mean schedules a bootstrap interval of the mean of per-task values.
func (b *builder) mean(values []float64, dst *Interval) {
	*dst = undefined()
	if len(values) == 0 {
		return
	}
	b.jobs = append(b.jobs, job{dst: fixed(dst), run: func(bs *stats.ClusterBootstrap) (stats.Interval, error) { return bs.Mean(values) }})
}

// paired schedules a bootstrap interval of the mean per-task difference h − s.
func (b *builder) paired(h, s []float64, dst *Interval) {
	*dst = undefined()
	if len(h) == 0 {
		return
	}
	b.jobs = append(b.jobs, job{dst: fixed(dst), run: func(bs *stats.ClusterBootstrap) (stats.Interval, error) {
		return bs.PairedDifference(h, s)
	}})
}

// ratio schedules a bootstrap interval of Σnum/Σden over tasks.
func (b *builder) ratio(num, den []float64, dst *Interval) {
	*dst = undefined()
	if len(num) == 0 {
		return
	}
	b.jobs = append(b.jobs, job{dst: fixed(dst), run: func(bs *stats.ClusterBootstrap) (stats.Interval, error) {
		return bs.RatioOfSums(num, den)
	}})
}

// runJobs computes the scheduled intervals, spread over workers. Every interval restarts its
// generator from the seed, so the split does not change any number.
func (b *builder) runJobs() error {
	newBootstrap := func() (*stats.ClusterBootstrap, error) {
		bs, err := stats.NewClusterBootstrap(b.opts.Resamples, b.opts.Level, b.opts.Seed)
		if err != nil {
			return nil, err
		}
		bs.Expand()
		if b.opts.SkipBCa {
			bs.SkipBCa()
		}
		return bs, nil
	}
	err := parallel.Run(b.opts.Workers, len(b.jobs), newBootstrap, nil, func(bs *stats.ClusterBootstrap, i int) error {
		j := b.jobs[i]
		iv, err := j.run(bs)
		if err != nil {
			return err
		}
		*j.dst() = Interval{Estimate: Num(iv.Estimate), Low: Num(iv.Low), High: Num(iv.High), BCaLow: Num(iv.BCaLow), BCaHigh: Num(iv.BCaHigh),
			Clusters: iv.Clusters, Undefined: iv.Undefined}
		return nil
	})
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	return nil
}

func (b *builder) systems() {
	for _, sys := range b.in.Systems {
		sr := SystemResult{System: sys}
		if p, ok := b.opts.Prices[sys.Label]; ok {
			sr.Price = &p
		}
		b.rep.Systems = append(b.rep.Systems, sr)
	}
	for i := range b.rep.Systems {
		sr := &b.rep.Systems[i]
		b.modeResult(b.group(sr.System.Label, Human), sr.Price, &sr.Human)
		b.modeResult(b.group(sr.System.Label, Synthetic), sr.Price, &sr.Synthetic)
	}
}

func (b *builder) modeResult(g *group, price *Price, r *ModeResult) {
	r.Sessions, r.Tasks = len(g.all), len(g.tasks)
	r.WS = b.count(g.all, MetricWS)
	r.TS = b.count(g.all, MetricTS)
	r.PV = b.count(g.all, MetricPV)
	r.AC = b.count(g.all, MetricAC)
	r.AV = b.count(g.all, MetricAV)
	b.mean(g.taskMeans(MetricWS), &r.PassAt1)
	r.PassK = passK(g)
	b.mean(g.taskMeans(MetricAFA), &r.AFA)

	var ttrs []float64
	for _, s := range g.all {
		if v := value(s, MetricTTR); !math.IsNaN(v) {
			ttrs = append(ttrs, v)
		}
	}
	r.TTR.Resolved = b.proportion(len(ttrs), len(g.all))
	r.TTR.MedianS = Num(stats.Median(ttrs))
	b.mean(g.taskMeans(MetricTTR), &r.TTR.MeanS)

	var lat []float64
	for _, s := range g.all {
		for _, l := range s.Measures.LatenciesMS {
			lat = append(lat, float64(l))
		}
	}
	slices.Sort(lat)
	r.Latency = Latency{Responses: len(lat), MedianMS: quantile(lat, 0.5), P25MS: quantile(lat, 0.25),
		P75MS: quantile(lat, 0.75), P90MS: quantile(lat, 0.9)}
	r.Cost = cost(g.all, price)
	var cc CueCounts
	for _, s := range g.all {
		c := s.Measures.Cues
		cc.Issued += c.Issued
		cc.Spoken += c.Spoken
		cc.Said += c.Said
		cc.SaidKnown += c.SaidKnown
		cc.Applied += c.Applied
	}
	r.Cues = CueAdherence{Issued: cc.Issued, Spoken: b.proportion(cc.Spoken, cc.Issued),
		Said: b.proportion(cc.Said, cc.SaidKnown), Applied: b.proportion(cc.Applied, cc.Issued)}
}

// passK is pass@k and pass^k where tasks have repeats: k is the smallest number of sessions of a
// task when every task has two or more, else 2 over the tasks that have two or more (an anchor
// subset). Nil when no task has a repeat.
func passK(g *group) *PassK {
	k := math.MaxInt
	repeated := 0
	for _, t := range g.tasks {
		n := len(g.byTask[t])
		k = min(k, n)
		if n >= 2 {
			repeated++
		}
	}
	if repeated == 0 {
		return nil
	}
	if k < 2 {
		k = 2
	}
	var at, hat float64
	n := 0
	for _, t := range g.tasks {
		ss := g.byTask[t]
		if len(ss) < k {
			continue
		}
		c := 0
		for _, s := range ss {
			if s.Grade.WS == 1 {
				c++
			}
		}
		a, err1 := stats.PassAtK(len(ss), c, k)
		h, err2 := stats.PassHatK(len(ss), c, k)
		if err1 != nil || err2 != nil {
			continue
		}
		at += a
		hat += h
		n++
	}
	if n == 0 {
		return nil
	}
	return &PassK{K: k, Tasks: n, PassAtK: Num(at / float64(n)), PassHatK: Num(hat / float64(n))}
}

// quantile is the linear-interpolation (type 7) quantile of sorted values; NaN when empty.
func quantile(sorted []float64, q float64) Num {
	if len(sorted) == 0 {
		return NaN()
	}
	h := q * float64(len(sorted)-1)
	lo := int(math.Floor(h))
	if lo >= len(sorted)-1 {
		return Num(sorted[len(sorted)-1])
	}
	return Num(sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo]))
}

func cost(ss []*Session, price *Price) Cost {
	c := Cost{InputTokensPerCall: NaN(), OutputTokensPerCall: NaN(), InputAudioTokensCall: NaN(),
		OutputAudioTokensCall: NaN(), AudioSecondsPerCall: NaN(), USDPerCall: NaN()}
	var in, out, ain, aout, secs, usd float64
	for _, s := range ss {
		u := s.Measures.Usage
		if !u.Reported() {
			continue
		}
		c.CallsWithUsage++
		in += float64(u.InputTokens)
		out += float64(u.OutputTokens)
		ain += float64(u.InputAudioTokens)
		aout += float64(u.OutputAudioTokens)
		secs += u.InputAudioSeconds + u.OutputAudioSeconds
		if price != nil {
			usd += (float64(u.InputTokens-u.InputAudioTokens)*price.InputText + float64(u.InputAudioTokens)*price.InputAudio +
				float64(u.OutputTokens-u.OutputAudioTokens)*price.OutputText + float64(u.OutputAudioTokens)*price.OutputAudio) / 1e6
		}
	}
	if c.CallsWithUsage == 0 {
		return c
	}
	n := float64(c.CallsWithUsage)
	c.InputTokensPerCall, c.OutputTokensPerCall = Num(in/n), Num(out/n)
	c.InputAudioTokensCall, c.OutputAudioTokensCall = Num(ain/n), Num(aout/n)
	c.AudioSecondsPerCall = Num(secs / n)
	if price != nil {
		c.USDPerCall = Num(usd / n)
	}
	return c
}

// pairedTasks lists, for a system and metric, the tasks where both modes have the measure, with
// the human and synthetic task means.
func (b *builder) pairedTasks(system string, m Metric, only map[string]bool) (tasks []string, h, s []float64) {
	hg, sg := b.group(system, Human), b.group(system, Synthetic)
	for _, t := range hg.tasks {
		if only != nil && !only[t] {
			continue
		}
		hv, sv := meanOf(hg.byTask[t], m), meanOf(sg.byTask[t], m)
		if math.IsNaN(hv) || math.IsNaN(sv) {
			continue
		}
		tasks = append(tasks, t)
		h = append(h, hv)
		s = append(s, sv)
	}
	return tasks, h, s
}

// pooledPairs pools systems: per task, the mean over systems of the human and of the synthetic
// task means, over the systems where both exist (so their difference is the mean of the systems'
// paired differences).
func (b *builder) pooledPairs(m Metric, only map[string]bool) (h, s []float64) {
	type acc struct {
		h, s float64
		n    int
	}
	per := map[string]*acc{}
	for _, sys := range b.in.Systems {
		tasks, hv, sv := b.pairedTasks(sys.Label, m, only)
		for i, t := range tasks {
			a := per[t]
			if a == nil {
				a = &acc{}
				per[t] = a
			}
			a.h += hv[i]
			a.s += sv[i]
			a.n++
		}
	}
	for _, t := range slices.Sorted(maps.Keys(per)) {
		a := per[t]
		h = append(h, a.h/float64(a.n))
		s = append(s, a.s/float64(a.n))
	}
	return h, s
}

// deltaSystems lists the rows of the delta table: every system, then the pooled row when there
// are several.
func (b *builder) deltaSystems() []string {
	systems := make([]string, 0, len(b.in.Systems)+1)
	for _, s := range b.in.Systems {
		systems = append(systems, s.Label)
	}
	if len(systems) > 1 {
		systems = append(systems, AllSystems)
	}
	return systems
}

func (b *builder) deltas(systems []string, metrics []Metric) {
	b.rep.Deltas = make([]Delta, 0, len(systems)*len(metrics))
	for _, sys := range systems {
		for _, m := range metrics {
			var h, s []float64
			if sys == AllSystems {
				h, s = b.pooledPairs(m, nil)
			} else {
				_, h, s = b.pairedTasks(sys, m, nil)
			}
			b.rep.Deltas = append(b.rep.Deltas, Delta{System: sys, Metric: m, Human: Num(stats.Mean(h)), Synthetic: Num(stats.Mean(s))})
			b.paired(h, s, &b.rep.Deltas[len(b.rep.Deltas)-1].Diff)
		}
	}
}

// anchor pairs each anchor cell's first run (repeat 1) with its planned repeat (repeat 2) by
// another participant. A study whose plan has no anchor repeats has no pairs: two sessions of the
// same task are not a repeat unless the plan made one.
func (b *builder) anchor() {
	b.rep.AnchorRepeats = b.in.AnchorRepeats
	if b.rep.AnchorRepeats == 0 {
		for _, s := range b.in.Sessions {
			if s.Mode == Human && s.Repeat == 2 {
				b.rep.AnchorRepeats++ // an Input made without a plan: its sessions say
			}
		}
	}
	if b.rep.AnchorRepeats == 0 {
		return
	}
	for _, sys := range b.in.Systems {
		g := b.group(sys.Label, Human)
		ar := AnchorResult{System: sys.Label, WSAlpha: NaN(), AFAAlpha: NaN(), AFAMeanAbsDiff: NaN()}
		var wsR, afaR []stats.Rating
		agree := 0
		var absSum float64
		absN := 0
		for _, t := range g.tasks {
			if !b.tasks[t].Anchor {
				continue
			}
			ss := slices.Clone(g.byTask[t])
			slices.SortStableFunc(ss, func(x, y *Session) int { return cmp.Or(cmp.Compare(x.Repeat, y.Repeat), cmp.Compare(x.ID, y.ID)) })
			var first, second *Session
			for _, s := range ss {
				if s.Repeat == 1 && first == nil {
					first = s
				}
			}
			for _, s := range ss {
				if first != nil && s.Repeat == 2 && (s.Participant != first.Participant || s.Participant == "") {
					second = s
					break
				}
			}
			if first == nil || second == nil {
				continue
			}
			p := AnchorPair{Task: t, Sessions: [2]string{first.ID, second.ID}, WS: [2]int{first.Grade.WS, second.Grade.WS},
				AFA: [2]Num{Num(value(first, MetricAFA)), Num(value(second, MetricAFA))}}
			ar.Tasks = append(ar.Tasks, p)
			if p.WS[0] == p.WS[1] {
				agree++
			}
			for k, s := range []*Session{first, second} {
				rater := "call" + strconv.Itoa(k+1)
				wsR = append(wsR, stats.Rating{Unit: t, Rater: rater, Value: strconv.Itoa(s.Grade.WS)})
				if v := value(s, MetricAFA); !math.IsNaN(v) {
					afaR = append(afaR, stats.Rating{Unit: t, Rater: rater, Value: strconv.FormatFloat(v, 'g', -1, 64)})
				}
			}
			if a, c := value(first, MetricAFA), value(second, MetricAFA); !math.IsNaN(a) && !math.IsNaN(c) {
				absSum += math.Abs(a - c)
				absN++
			}
		}
		ar.Pairs = len(ar.Tasks)
		if ar.Pairs == 0 {
			continue
		}
		ar.WSAgree = b.proportion(agree, ar.Pairs)
		ar.WSAlpha, ar.WSNote = alphaOf(wsR, stats.LevelNominal)
		ar.AFAAlpha, ar.AFANote = alphaOf(afaR, stats.LevelInterval)
		if absN > 0 {
			ar.AFAMeanAbsDiff = Num(absSum / float64(absN))
		}
		b.rep.Anchor = append(b.rep.Anchor, ar)
	}
}

// alphaOf is Krippendorff's alpha, NaN with the reason when it cannot be computed.
func alphaOf(r []stats.Rating, level stats.Level) (Num, string) {
	res, err := stats.Alpha(r, level)
	if err != nil {
		return NaN(), "not computed: " + err.Error()
	}
	return Num(res.Alpha), res.Note
}

func (b *builder) annotators() {
	if len(b.in.Ratings) == 0 {
		return
	}
	rs := slices.Clone(b.in.Ratings)
	slices.SortFunc(rs, func(x, y Rating) int {
		return cmp.Or(cmp.Compare(x.Item, y.Item), cmp.Compare(x.Annotator, y.Annotator))
	})
	ar := &AnnotatorResult{Ratings: len(rs)}
	b.rep.Annotators = ar
	type taskSums struct{ fid, nat, leak, n float64 }
	perTask := map[string]*taskSums{}
	annot := map[string]bool{}
	var items []ItemRating
	var fidR, natR []stats.Rating
	for _, r := range rs {
		annot[r.Annotator] = true
		ts := perTask[r.Task]
		if ts == nil {
			ts = &taskSums{}
			perTask[r.Task] = ts
		}
		ts.fid += float64(r.Fidelity)
		ts.nat += float64(r.Naturalness)
		ts.n++
		if len(items) == 0 || items[len(items)-1].Item != r.Item {
			items = append(items, ItemRating{Item: r.Item, Task: r.Task, Plan: r.Plan})
		}
		it := &items[len(items)-1]
		it.Ratings++
		it.Fidelity += Num(r.Fidelity)
		it.Naturalness += Num(r.Naturalness)
		if r.Leakage {
			ts.leak++
			it.LeakVotes++
			ar.LeakRatings++
		}
		fidR = append(fidR, stats.Rating{Unit: r.Item, Rater: r.Annotator, Value: strconv.Itoa(r.Fidelity)})
		natR = append(natR, stats.Rating{Unit: r.Item, Rater: r.Annotator, Value: strconv.Itoa(r.Naturalness)})
	}
	for i := range items {
		it := &items[i]
		it.Fidelity /= Num(it.Ratings)
		it.Naturalness /= Num(it.Ratings)
		if 2*it.LeakVotes > it.Ratings {
			ar.LeakItems++
		}
	}
	ar.PerItem = items
	ar.Items, ar.Annotators, ar.Tasks = len(items), len(annot), len(perTask)
	var fid, nat, leak, den []float64
	for _, t := range slices.Sorted(maps.Keys(perTask)) {
		ts := perTask[t]
		fid = append(fid, ts.fid)
		nat = append(nat, ts.nat)
		leak = append(leak, ts.leak)
		den = append(den, ts.n)
	}
	b.ratio(fid, den, &ar.Fidelity)
	b.ratio(nat, den, &ar.Naturalness)
	b.ratio(leak, den, &ar.Leakage)
	b.alpha(fidR, &ar.FidelityAlpha)
	b.alpha(natR, &ar.NaturalnessAlpha)
	ar.LeakageKappa = leakageKappa(items, rs)
}

// alpha computes ordinal alpha now and schedules its bootstrap over items.
func (b *builder) alpha(r []stats.Rating, dst *AlphaResult) {
	*dst = AlphaResult{Alpha: NaN(), Interval: undefined()}
	d, err := stats.NewReliabilityData(r, stats.LevelOrdinal)
	if err != nil {
		dst.Note = "not computed: " + err.Error()
		return
	}
	res := d.Alpha()
	dst.Alpha, dst.Units, dst.Values, dst.Note = Num(res.Alpha), res.Units, res.PairableValues, res.Note
	b.jobs = append(b.jobs, job{dst: fixed(&dst.Interval), run: func(bs *stats.ClusterBootstrap) (stats.Interval, error) {
		return d.BootstrapAlpha(bs)
	}})
}

// leakageKappa is Fleiss' kappa of the yes/no leakage judgements over the items rated by the most
// common number of annotators (kappa needs the same number of ratings per item).
func leakageKappa(items []ItemRating, rs []Rating) KappaResult {
	k := KappaResult{Kappa: NaN(), Z: NaN(), PValue: NaN()}
	freq := map[int]int{}
	for _, it := range items {
		freq[it.Ratings]++
	}
	m := 0
	for n, f := range freq {
		if n >= 2 && (m == 0 || f > freq[m] || f == freq[m] && n > m) {
			m = n
		}
	}
	if m == 0 {
		k.Note = "not computed: no item has two ratings"
		return k
	}
	tbl := stats.CountTable{Categories: []string{"no", "yes"}}
	for _, it := range items {
		if it.Ratings != m {
			continue
		}
		tbl.Subjects = append(tbl.Subjects, it.Item)
		tbl.Counts = append(tbl.Counts, []int{it.Ratings - it.LeakVotes, it.LeakVotes})
	}
	res, err := stats.FleissKappa(tbl)
	if err != nil {
		k.Note = "not computed: " + err.Error()
		return k
	}
	k.Kappa, k.Subjects, k.Raters, k.Z, k.PValue, k.Note = Num(res.Kappa), res.Subjects, res.Raters, Num(res.Z), Num(res.PValue), res.Note
	if dropped := len(items) - len(tbl.Subjects); dropped > 0 {
		k.Note = joinNote(k.Note, fmt.Sprintf("%s without exactly %s left out", plural(dropped, "item", "items"), plural(m, "rating", "ratings")))
	}
	return k
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// sliceValue is a task's stratum on a dimension. Required-field counts are binned so that strata
// hold several tasks.
func sliceValue(t TaskInfo, dim string) string {
	switch dim {
	case "archetype":
		return t.Archetype
	case "industry":
		return t.Industry
	case "authorization":
		return t.Authorization
	case "tool_burden":
		return t.ToolBurden
	case "behavior_profile":
		return t.Behavior
	case "risk_tier":
		return t.RiskTier
	case "required_fields":
		switch n := t.RequiredFields; {
		case n <= 6:
			return "01-06"
		case n <= 9:
			return "07-09"
		case n <= 12:
			return "10-12"
		default:
			return "13+"
		}
	}
	return ""
}

func (b *builder) slices() {
	var taskIDs []string
	for _, t := range b.in.Tasks {
		taskIDs = append(taskIDs, t.ID)
	}
	sort.Strings(taskIDs)
	for _, dim := range SliceDimensions {
		strata := map[string]map[string]bool{}
		for _, id := range taskIDs {
			v := sliceValue(b.tasks[id], dim)
			if v == "" {
				v = "(none)"
			}
			if strata[v] == nil {
				strata[v] = map[string]bool{}
			}
			strata[v][id] = true
		}
		for _, v := range slices.Sorted(maps.Keys(strata)) {
			only := strata[v]
			for _, sys := range b.in.Systems {
				hs, ss := b.inTasks(b.group(sys.Label, Human).all, only), b.inTasks(b.group(sys.Label, Synthetic).all, only)
				if len(hs) == 0 && len(ss) == 0 {
					continue
				}
				_, h, s := b.pairedTasks(sys.Label, MetricWS, only)
				b.addSlice(dim, v, sys.Label, len(only), hs, ss, h, s)
			}
			if len(b.in.Systems) > 1 {
				var hs, ss []*Session
				for _, sys := range b.in.Systems {
					hs = append(hs, b.inTasks(b.group(sys.Label, Human).all, only)...)
					ss = append(ss, b.inTasks(b.group(sys.Label, Synthetic).all, only)...)
				}
				if len(hs) == 0 && len(ss) == 0 {
					continue
				}
				h, s := b.pooledPairs(MetricWS, only)
				b.addSlice(dim, v, AllSystems, len(only), hs, ss, h, s)
			}
		}
	}
}

func (b *builder) inTasks(ss []*Session, only map[string]bool) []*Session {
	var out []*Session
	for _, s := range ss {
		if only[s.Task] {
			out = append(out, s)
		}
	}
	return out
}

func (b *builder) addSlice(dim, v, sys string, tasks int, hs, ss []*Session, h, s []float64) {
	b.rep.Slices = append(b.rep.Slices, SliceRow{Dimension: dim, Value: v, System: sys, Tasks: tasks,
		Human: b.count(hs, MetricWS), Synthetic: b.count(ss, MetricWS),
		HumanAFA: Num(meanOf(hs, MetricAFA)), SynthAFA: Num(meanOf(ss, MetricAFA))})
	idx := len(b.rep.Slices) - 1
	b.rep.Slices[idx].Delta = undefined()
	if len(h) == 0 {
		return
	}
	b.jobs = append(b.jobs, job{dst: func() *Interval { return &b.rep.Slices[idx].Delta },
		run: func(bs *stats.ClusterBootstrap) (stats.Interval, error) { return bs.PairedDifference(h, s) }})
}
