package report

import (
	"maps"
	"math"
	"slices"

	"github.com/voicebench/humanaudit/internal/stats"
)

// participantMetrics are the measures whose participant share and sensitivity the report gives.
var participantMetrics = []Metric{MetricWS, MetricAFA}

// participantOf names who made a human session; a session without a participant stands alone.
func participantOf(s *Session) string {
	if s.Participant != "" {
		return s.Participant
	}
	return "session:" + s.ID
}

// participants schedules the intra-class correlations of the human sessions' residuals and the
// participant-level bootstrap of every delta. A participant typically runs one session per
// system, so the share is measured over all systems: the residual (a session's outcome minus the
// synthetic mean of its system and task) takes out what the task and the system explain.
func (b *builder) participants() {
	var humans []*Session
	for _, sys := range b.in.Systems {
		humans = append(humans, b.group(sys.Label, Human).all...)
	}
	if len(humans) == 0 {
		return
	}
	pr := &ParticipantResult{Sessions: len(humans)}
	who := map[string]bool{}
	for _, s := range humans {
		who[participantOf(s)] = true
	}
	pr.Participants = len(who)
	b.rep.Participants = pr
	for _, m := range participantMetrics {
		b.iccRow(pr, m, humans)
	}
	for _, sys := range b.deltaSystems() {
		for _, m := range participantMetrics {
			b.sensitivityRow(pr, sys, m)
		}
	}
}

// synthMean is the synthetic mean of a system's task; NaN when it has none.
func (b *builder) synthMean(system, task string, m Metric) float64 {
	return meanOf(b.group(system, Synthetic).byTask[task], m)
}

func (b *builder) iccRow(pr *ParticipantResult, m Metric, humans []*Session) {
	row := ICCRow{Metric: m, ICC: undefined(), Between: NaN(), Within: NaN(), MeanSessions: NaN()}
	res := map[string][]float64{}
	for _, s := range humans {
		v, sm := value(s, m), b.synthMean(s.System, s.Task, m)
		if math.IsNaN(v) || math.IsNaN(sm) {
			continue
		}
		p := participantOf(s)
		res[p] = append(res[p], v-sm)
		row.Sessions++
	}
	row.Participants = len(res)
	pr.ICC = append(pr.ICC, row)
	i := len(pr.ICC) - 1
	if row.Participants == 0 {
		pr.ICC[i].Note = "no human session has a synthetic mean of its system and task"
		return
	}
	groups := make([][]float64, 0, len(res))
	for _, p := range slices.Sorted(maps.Keys(res)) {
		groups = append(groups, res[p])
	}
	gv, err := stats.NewGroupedValues(groups)
	if err != nil {
		pr.ICC[i].Note = "not computed: " + err.Error()
		return
	}
	r := gv.ICC()
	pr.ICC[i].MeanSessions = Num(float64(row.Sessions) / float64(row.Participants))
	pr.ICC[i].Note = r.Note
	if math.IsNaN(r.ICC) {
		return
	}
	pr.ICC[i].Between, pr.ICC[i].Within = Num(r.Between), Num(r.Within)
	b.jobs = append(b.jobs, job{dst: func() *Interval { return &b.rep.Participants.ICC[i].ICC },
		run: func(bs *stats.ClusterBootstrap) (stats.Interval, error) { return bs.Interval(gv.Groups(), gv.ICCOf) }})
}

// sensitivityRow schedules the participant-level bootstrap of a delta. The delta is a weighted
// sum of residuals: a human session i of cell c (a system's task) has the residual r_i = y_i − s̄_c
// and the weight w_i = 1/(T·S_t·n_c) (T paired tasks, S_t paired systems on its task, n_c human
// sessions in the cell), so that Δ = Σ w_i·r_i with Σ w_i = 1. A participant-level resample draws
// participants with replacement and takes Σ w·r / Σ w over the sessions of those drawn, each as
// often as its participant was drawn: the cluster bootstrap of a ratio (RatioOfSums). The
// synthetic means s̄_c stay fixed.
func (b *builder) sensitivityRow(pr *ParticipantResult, system string, m Metric) {
	systems := []string{system}
	if system == AllSystems {
		systems = systems[:0]
		for _, s := range b.in.Systems {
			systems = append(systems, s.Label)
		}
	}
	type cell struct {
		synth    float64
		sessions []*Session
	}
	cellsByTask := map[string][]cell{}
	for _, sys := range systems {
		hg := b.group(sys, Human)
		for _, t := range hg.tasks {
			sm := b.synthMean(sys, t, m)
			if math.IsNaN(sm) {
				continue
			}
			c := cell{synth: sm}
			for _, s := range hg.byTask[t] {
				if !math.IsNaN(value(s, m)) {
					c.sessions = append(c.sessions, s)
				}
			}
			if len(c.sessions) > 0 {
				cellsByTask[t] = append(cellsByTask[t], c)
			}
		}
	}
	num, den := map[string]float64{}, map[string]float64{}
	tasks := float64(len(cellsByTask))
	for _, cs := range cellsByTask {
		for _, c := range cs {
			w := 1 / (tasks * float64(len(cs)) * float64(len(c.sessions)))
			for _, s := range c.sessions {
				p := participantOf(s)
				num[p] += w * (value(s, m) - c.synth)
				den[p] += w
			}
		}
	}
	ps := slices.Sorted(maps.Keys(num))
	pr.Sensitivity = append(pr.Sensitivity, SensitivityRow{System: system, Metric: m, Participants: len(ps), TaskLevel: undefined(), ParticipantLevel: undefined()})
	if len(ps) == 0 {
		return
	}
	a, w := make([]float64, len(ps)), make([]float64, len(ps))
	for i, p := range ps {
		a[i], w[i] = num[p], den[p]
	}
	i := len(pr.Sensitivity) - 1
	b.jobs = append(b.jobs, job{dst: func() *Interval { return &b.rep.Participants.Sensitivity[i].ParticipantLevel },
		run: func(bs *stats.ClusterBootstrap) (stats.Interval, error) { return bs.RatioOfSums(a, w) }})
}

// finishParticipants copies each delta's task-level interval beside its participant-level one.
func (b *builder) finishParticipants() {
	pr := b.rep.Participants
	if pr == nil {
		return
	}
	for i := range pr.Sensitivity {
		row := &pr.Sensitivity[i]
		if d, ok := b.rep.delta(row.System, row.Metric); ok {
			row.TaskLevel = d.Diff
		}
	}
}
