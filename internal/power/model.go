package power

import (
	"fmt"
	"math"
	"sort"
)

// Cell is the synthetic caller's outcome model for one system on one task.
type Cell struct {
	// WS is the probability that a synthetic run succeeds, strictly between 0 and 1.
	WS float64
	// AFA is the expected Artifact Field Accuracy of a synthetic run, strictly between 0 and 1.
	AFA float64
	// Fields is the number of graded fields AFA is the share of (at least 1).
	Fields int
}

// Model says how outcomes are drawn. A synthetic run of a cell succeeds with probability WS, and
// gets each of its Fields right with probability logistic(c + SessionSD·e), e ~ N(0, 1) drawn once
// per run, with c chosen so that the expected AFA is the cell's. A human session adds the
// participant's effect u ~ N(0, ParticipantSD²), drawn once per participant, and a shift λ on the
// same logit scale, for WS: logistic(logit(WS) + λ + u); for each field:
// logistic(c + λ + u + SessionSD·e). λ is solved per system and metric so that the mean over the
// tasks of (expected human outcome − expected synthetic outcome) is the delta simulated.
type Model struct {
	Cells map[string]map[string]Cell // system label → task id → cell
	// ParticipantSD is the standard deviation of a participant's effect on the logit scale (0.5
	// gives a latent intra-class correlation of 0.25/(0.25 + π²/3) = 0.07).
	ParticipantSD float64
	// SessionSD is the standard deviation of a session's effect on the logit of its fields'
	// accuracy: it makes a session's fields succeed or fail together, as real calls do.
	SessionSD float64
}

// Validate checks the model covers the systems and tasks and that every value is in range.
func (m Model) Validate(systems, tasks []string) error {
	if !(m.ParticipantSD >= 0 && m.ParticipantSD <= 5) {
		return fmt.Errorf("power model: participant SD %v: want 0 to 5 (logit scale): %w", m.ParticipantSD, ErrInvalidModel)
	}
	if !(m.SessionSD >= 0 && m.SessionSD <= 5) {
		return fmt.Errorf("power model: session SD %v: want 0 to 5 (logit scale): %w", m.SessionSD, ErrInvalidModel)
	}
	for _, s := range systems {
		for _, t := range tasks {
			c, ok := m.Cells[s][t]
			switch {
			case !ok:
				return fmt.Errorf("power model: no rates for system %s on task %s: %w", s, t, ErrInvalidModel)
			case !(c.WS > 0 && c.WS < 1):
				return fmt.Errorf("power model: system %s task %s: ws %v: want strictly between 0 and 1: %w", s, t, c.WS, ErrInvalidModel)
			case !(c.AFA > 0 && c.AFA < 1):
				return fmt.Errorf("power model: system %s task %s: afa %v: want strictly between 0 and 1: %w", s, t, c.AFA, ErrInvalidModel)
			case c.Fields < 1:
				return fmt.Errorf("power model: system %s task %s: %d graded fields: want at least 1: %w", s, t, c.Fields, ErrInvalidModel)
			}
		}
	}
	return nil
}

// quadrature integrates against the standard normal density: Σ w_k f(z_k) ≈ E f(Z). The nodes
// are an even grid on [−8, 8]; for the smooth integrands here (logistic functions of a normal)
// the trapezoid rule converges geometrically, to about 1e-12 with 81 nodes.
type quadrature struct{ z, w []float64 }

func newQuadrature() quadrature {
	const n = 81
	q := quadrature{z: make([]float64, n), w: make([]float64, n)}
	var sum float64
	for k := range n {
		z := -8 + 16*float64(k)/(n-1)
		q.z[k] = z
		q.w[k] = math.Exp(-z * z / 2)
		sum += q.w[k]
	}
	for k := range q.w {
		q.w[k] /= sum
	}
	return q
}

var gauss = newQuadrature()

func logistic(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func logit(p float64) float64 { return math.Log(p / (1 - p)) }

// meanLogistic is E[logistic(c + sd·Z)].
func meanLogistic(c, sd float64) float64 {
	if sd == 0 {
		return logistic(c)
	}
	var s float64
	for k, z := range gauss.z {
		s += gauss.w[k] * logistic(c+sd*z)
	}
	return s
}

// momentsLogistic returns E[π], E[π²] and E[π(1−π)] for π = logistic(c + sd·Z).
func momentsLogistic(c, sd float64) (m1, m2, m1m float64) {
	if sd == 0 {
		p := logistic(c)
		return p, p * p, p * (1 - p)
	}
	for k, z := range gauss.z {
		p := logistic(c + sd*z)
		m1 += gauss.w[k] * p
		m2 += gauss.w[k] * p * p
	}
	return m1, m2, m1 - m2
}

// solveIncreasing finds x in [lo, hi] with f(x) = target for an increasing f, by bisection.
func solveIncreasing(f func(float64) float64, target, lo, hi float64) float64 {
	for range 100 {
		mid := (lo + hi) / 2
		if f(mid) < target {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo < 1e-12 {
			break
		}
	}
	return (lo + hi) / 2
}

// afaIntercept is the c with E[logistic(c + sd·Z)] = afa.
func afaIntercept(afa, sd float64) float64 {
	if sd == 0 {
		return logit(afa)
	}
	return solveIncreasing(func(c float64) float64 { return meanLogistic(c, sd) }, afa, -40, 40)
}

// afaVariance is the variance of one run's AFA with expected accuracy from intercept c, session
// SD sd (participant SD pu adds to it for a human) and m fields: E[π(1−π)]/m + Var(π).
func afaVariance(c, sd, pu float64, m int) float64 {
	m1, m2, m1m := momentsLogistic(c, math.Hypot(sd, pu))
	return m1m/float64(m) + (m2 - m1*m1)
}

// EstimateSessionSD finds the session SD under which the model's mean within-cell variance of
// AFA, over the given cells (weighted by their runs − 1), equals the observed pooled within-cell
// variance. With no more variance than the fields' binomial noise it is 0.
func EstimateSessionSD(cells []Cell, weights []float64, observed float64) float64 {
	modelVar := func(sd float64) float64 {
		var v, w float64
		for i, c := range cells {
			v += weights[i] * afaVariance(afaIntercept(c.AFA, sd), sd, 0, c.Fields)
			w += weights[i]
		}
		return v / w
	}
	if len(cells) == 0 || !(observed > modelVar(0)) {
		return 0
	}
	if observed >= modelVar(6) {
		return 6
	}
	return solveIncreasing(modelVar, observed, 0, 6)
}

// calibrated holds a system's cells in task order with the AFA intercepts.
type calibrated struct {
	tasks []string
	cells []Cell
	afaC  []float64 // intercept of each task's AFA
}

func calibrate(m Model, system string, tasks []string) calibrated {
	c := calibrated{tasks: tasks}
	for _, t := range tasks {
		cell := m.Cells[system][t]
		c.cells = append(c.cells, cell)
		c.afaC = append(c.afaC, afaIntercept(cell.AFA, m.SessionSD))
	}
	return c
}

// humanMean is the expected human outcome of task i of a calibrated system under shift lam.
func (c calibrated) humanMean(m Model, metric metricKind, i int, lam float64) float64 {
	if metric == metricWS {
		return meanLogistic(logit(c.cells[i].WS)+lam, m.ParticipantSD)
	}
	return meanLogistic(c.afaC[i]+lam, math.Hypot(m.SessionSD, m.ParticipantSD))
}

// synthMean is the expected synthetic outcome of task i.
func (c calibrated) synthMean(metric metricKind, i int) float64 {
	if metric == metricWS {
		return c.cells[i].WS
	}
	return c.cells[i].AFA
}

// meanDelta is the mean over tasks of expected human minus expected synthetic outcome at shift lam.
func (c calibrated) meanDelta(m Model, metric metricKind, lam float64) float64 {
	var d float64
	for i := range c.tasks {
		d += c.humanMean(m, metric, i, lam) - c.synthMean(metric, i)
	}
	return d / float64(len(c.tasks))
}

// shift solves λ for a true delta by safeguarded Newton steps (the mean delta increases in λ with
// derivative mean E[π(1−π)]); ok is false when the delta is out of reach (human outcomes cannot
// leave [0, 1]).
func (c calibrated) shift(m Model, metric metricKind, delta float64) (float64, bool) {
	const bound = 40.0
	lo, hi := -bound, bound
	if delta <= c.meanDelta(m, metric, lo) || delta >= c.meanDelta(m, metric, hi) {
		return 0, false
	}
	lam := 0.0
	for range 100 {
		f, slope := c.meanDeltaSlope(m, metric, lam)
		f -= delta
		if math.Abs(f) < 1e-13 {
			return lam, true
		}
		if f < 0 {
			lo = lam
		} else {
			hi = lam
		}
		next := lam - f/slope
		if !(next > lo && next < hi) || slope <= 0 {
			next = (lo + hi) / 2
		}
		if math.Abs(next-lam) < 1e-13 {
			return next, true
		}
		lam = next
	}
	return lam, true
}

// meanDeltaSlope is meanDelta and its derivative in λ.
func (c calibrated) meanDeltaSlope(m Model, metric metricKind, lam float64) (float64, float64) {
	var d, slope float64
	for i := range c.tasks {
		var m1, m1m float64
		if metric == metricWS {
			m1, _, m1m = momentsLogistic(logit(c.cells[i].WS)+lam, m.ParticipantSD)
		} else {
			m1, _, m1m = momentsLogistic(c.afaC[i]+lam, math.Hypot(m.SessionSD, m.ParticipantSD))
		}
		d += m1 - c.synthMean(metric, i)
		slope += m1m
	}
	n := float64(len(c.tasks))
	return d / n, slope / n
}

// reach is the largest |delta| in the direction of sign that a shift can produce, less a margin.
func (c calibrated) reach(m Model, metric metricKind, sign float64) float64 {
	return 0.98 * math.Abs(c.meanDelta(m, metric, 40*sign))
}

// sortedSet returns the keys of a set in order.
func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
