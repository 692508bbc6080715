package power

import (
	"math"

	"github.com/voicebench/humanaudit/internal/report"
	"github.com/voicebench/humanaudit/internal/stats"
)

// closedForm is the closed-form variance of a row's delta at a true delta, from the model's
// exact second moments (docs/analysis.md, "Power by simulating the plan"):
//
//	Var(Δ) = Σ_i w_i²·σ²_i/(1 − e) + Σ_p Σ_{i≠j ∈ p} w_i·w_j·Cov(y_i, y_j) + Σ_c w_c²·σ²_s,c/k
//
// over the planned human sessions i (weight w_i = w_c/n_c in their cell c, the cell's weight w_c
// = 1/(T·S_t)), the pairs of sessions of one participant p (who share the participant effect),
// and the synthetic runs of each cell. The factor 1/(1 − e) is the first-order effect of an
// exclusion rate e on the human sessions. It returns the variance and the number of tasks.
func (s *Simulator) closedForm(row string, k metricKind, delta float64) (float64, int, bool) {
	var systems []int
	if row == report.AllSystems {
		for j := range s.systems {
			systems = append(systems, j)
		}
	} else {
		for j, sys := range s.systems {
			if sys == row {
				systems = append(systems, j)
			}
		}
	}
	// Cells: planned human sessions per (system, task), in system and task order so that the
	// sums below run in a fixed order.
	type cellKey struct{ sys, task int }
	n := map[cellKey]int{}
	var cells []cellKey
	perTask := map[int]int{}
	for _, j := range systems {
		for _, h := range s.humans[j] {
			c := cellKey{j, h.task}
			if n[c] == 0 {
				perTask[h.task]++
				cells = append(cells, c)
			}
			n[c]++
		}
	}
	tasks := float64(len(perTask))
	weight := func(c cellKey) float64 { return 1 / (tasks * float64(perTask[c.task])) }
	m := s.model
	lam := make([]float64, len(s.systems))
	for _, j := range systems {
		l, ok := s.shift(j, k, delta)
		if !ok {
			return math.NaN(), len(perTask), false
		}
		lam[j] = l
	}
	var v float64
	// Synthetic runs.
	for _, c := range cells {
		cell := s.cal[c.sys].cells[c.task]
		var sv float64
		if k == metricWS {
			sv = cell.WS * (1 - cell.WS)
		} else {
			sv = afaVariance(s.cal[c.sys].afaC[c.task], m.SessionSD, 0, cell.Fields)
		}
		w := weight(c)
		v += w * w * sv / float64(s.design.SyntheticRuns)
	}
	// Human sessions: variances, and each one's conditional mean given the participant effect
	// on the quadrature grid for the covariances.
	type session struct {
		w       float64
		j, task int
		g       []float64 // E[y | u = ParticipantSD·z_q]
		m       float64   // E[y]
	}
	byParticipant := make([][]session, len(s.slots))
	for _, j := range systems {
		cal := s.cal[j]
		for _, h := range s.humans[j] {
			c := cellKey{j, h.task}
			w := weight(c) / float64(n[c])
			cell := cal.cells[h.task]
			var hv float64
			if k == metricWS {
				p := meanLogistic(logit(cell.WS)+lam[j], m.ParticipantSD)
				hv = p * (1 - p)
			} else {
				hv = afaVariance(cal.afaC[h.task]+lam[j], m.SessionSD, m.ParticipantSD, cell.Fields)
			}
			v += w * w * hv / (1 - s.design.Exclusion)
			byParticipant[h.participant] = append(byParticipant[h.participant], session{w: w, j: j, task: h.task})
		}
	}
	if m.ParticipantSD > 0 {
		for _, ss := range byParticipant {
			if len(ss) < 2 {
				continue
			}
			for a := range ss {
				ss[a].g, ss[a].m = s.conditionalMeans(ss[a].j, ss[a].task, k, lam[ss[a].j])
			}
			for a := range ss {
				for b := range ss {
					if a == b {
						continue
					}
					var cov float64
					for q, wq := range gauss.w {
						cov += wq * ss[a].g[q] * ss[b].g[q]
					}
					cov -= ss[a].m * ss[b].m
					v += ss[a].w * ss[b].w * cov
				}
			}
		}
	}
	return v, len(perTask), true
}

// conditionalMeans returns a human session's expected outcome given the participant effect at each
// quadrature node, u = ParticipantSD·z_q, and its overall expectation.
func (s *Simulator) conditionalMeans(j, task int, k metricKind, lam float64) ([]float64, float64) {
	m, cal := s.model, s.cal[j]
	g := make([]float64, len(gauss.z))
	var mean float64
	for q, z := range gauss.z {
		u := m.ParticipantSD * z
		if k == metricWS {
			g[q] = logistic(logit(cal.cells[task].WS) + lam + u)
		} else {
			g[q] = meanLogistic(cal.afaC[task]+lam+u, m.SessionSD)
		}
		mean += gauss.w[q] * g[q]
	}
	return g, mean
}

// closedDetectable solves the closed-form detectable delta d = sign·M·√Var(Δ at d), M = t_{1−α/2}
// + t_{target} on tasks − 1 degrees of freedom, by fixed-point iteration (the variance depends on
// the delta through the human outcomes' rates). NaN when it is out of reach.
func (s *Simulator) closedDetectable(row string, k metricKind, sign, alpha, target float64) float64 {
	v, tasks, ok := s.closedForm(row, k, sign*1e-9)
	if !ok || tasks < 2 {
		return math.NaN()
	}
	mult, err := stats.DetectableDelta(1, tasks-1, alpha, target)
	if err != nil {
		return math.NaN()
	}
	d := mult * math.Sqrt(v)
	for range 50 {
		v, _, ok = s.closedForm(row, k, sign*d)
		if !ok {
			return math.NaN()
		}
		next := mult * math.Sqrt(v)
		if math.Abs(next-d) < 1e-7 {
			return next
		}
		d = next
	}
	return d
}

// closedPower is the power the closed form gives at a delta whose estimate has standard error se:
// P(T > |δ|/se − t_{1−α/2}) on tasks − 1 degrees of freedom (the far tail left out).
func closedPower(delta, se float64, tasks int, alpha float64) float64 {
	if tasks < 2 || !(se > 0) {
		return math.NaN()
	}
	df := float64(tasks - 1)
	return stats.StudentTCDF(math.Abs(delta)/se-stats.StudentTQuantile(1-alpha/2, df), df)
}
