package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Figure is one rendered figure of the report.
type Figure struct {
	Name    string // file stem: figures/<Name>.svg and .png
	Title   string
	Caption string
	SVG     []byte
	PNG     []byte
}

// figureMetrics are the proportion-scale metrics of the forest plot and the gate bars.
var figureMetrics = []Metric{MetricWS, MetricTS, MetricPV, MetricAC, MetricAV, MetricAFA}

var metricLabel = map[Metric]string{MetricWS: "WS", MetricTS: "TS", MetricPV: "PV", MetricAC: "AC", MetricAV: "AV",
	MetricAFA: "AFA", MetricTTR: "TTR (s)"}

// Figures draws the report's figures.
func Figures(r *Report) ([]Figure, error) {
	cs := []struct {
		name, caption string
		c             *canvas
	}{
		{"forest", "Human minus synthetic per system and metric, paired by task, with task-level bootstrap intervals.", forestPlot(r)},
		{"gates", "Pass rate of each gate and of Workflow Success per system, human (dark) and synthetic (light), with Wilson intervals.", gateBars(r)},
		{"ttr_reliability", "Median time-to-resolution against Workflow Success per system and mode; ringed points with the dashed line form each mode's Pareto front (faster and more reliable than every other point of that mode).", ttrScatter(r)},
	}
	out := make([]Figure, 0, len(cs))
	for _, c := range cs {
		p, err := c.c.png()
		if err != nil {
			return nil, fmt.Errorf("figure %s: %w", c.name, err)
		}
		out = append(out, Figure{Name: c.name, Title: c.c.title, Caption: c.caption, SVG: c.c.svg(), PNG: p})
	}
	return out, nil
}

// niceStep rounds a raw tick step up to 1, 2, 2.5 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

func tickLabel(v, step float64) string {
	d := 0
	for s := step; s < 1-1e-9 && d < 4; s *= 10 {
		d++
	}
	if step == 2.5*math.Pow(10, math.Floor(math.Log10(step))) && step < 10 {
		d++
	}
	return Num(v).fixed(d)
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "~"
}

// forestPlot draws the deltas with their intervals, grouped by system.
func forestPlot(r *Report) *canvas {
	type row struct {
		header bool
		label  string
		d      Delta
	}
	var rows []row
	var prev string
	maxAbs := 0.1
	for _, d := range r.Deltas {
		if !slices.Contains(figureMetrics, d.Metric) {
			continue
		}
		if d.System != prev {
			rows = append(rows, row{header: true, label: d.System})
			prev = d.System
		}
		rows = append(rows, row{label: metricLabel[d.Metric], d: d})
		for _, v := range []Num{d.Diff.Low, d.Diff.High, d.Diff.Estimate} {
			if !v.IsNaN() {
				maxAbs = math.Max(maxAbs, math.Abs(float64(v)))
			}
		}
	}
	step := niceStep(maxAbs / 2)
	lim := math.Min(math.Ceil(maxAbs/step-1e-9)*step, 1)
	if lim < maxAbs {
		lim = maxAbs
	}
	const (
		top, rowH, left, plotL, plotR, width = 44.0, 15.0, 12.0, 200.0, 520.0, 780.0
	)
	height := top + float64(len(rows))*rowH + 40
	c := newCanvas(width, height, "Human minus synthetic, paired by task")
	c.text(left, 18, fmt.Sprintf("Human minus synthetic, paired by task (%.0f%% task-level bootstrap CI)", 100*r.Level), anchorStart, colInk)
	xOf := func(v float64) float64 { return plotL + (v+lim)/(2*lim)*(plotR-plotL) }
	bottom := top + float64(len(rows))*rowH
	for v := -lim; v <= lim+1e-9; v += step {
		x := xOf(v)
		c.line(x, top-6, x, bottom, 1, colGrid, false)
		c.text(x, bottom+14, tickLabel(v, step), anchorMiddle, colAxis)
	}
	c.line(xOf(0), top-6, xOf(0), bottom, 1.2, colAxis, false)
	c.text((plotL+plotR)/2, bottom+30, "delta (human - synthetic)", anchorMiddle, colAxis)
	c.text(plotR+16, top-10, "delta [CI]  tasks", anchorStart, colAxis)
	for i, rw := range rows {
		y := top + float64(i)*rowH + rowH/2
		if rw.header {
			c.text(left, y+4, clip(rw.label, 30), anchorStart, colInk)
			continue
		}
		c.text(left+14, y+4, rw.label, anchorStart, colAxis)
		d := rw.d.Diff
		if d.Estimate.IsNaN() {
			c.text(plotR+16, y+4, "n/a", anchorStart, colFaint)
			continue
		}
		if !d.Low.IsNaN() && !d.High.IsNaN() {
			c.line(xOf(float64(d.Low)), y, xOf(float64(d.High)), y, 1.5, colHuman, false)
			c.line(xOf(float64(d.Low)), y-3, xOf(float64(d.Low)), y+3, 1.5, colHuman, false)
			c.line(xOf(float64(d.High)), y-3, xOf(float64(d.High)), y+3, 1.5, colHuman, false)
		}
		c.rect(xOf(float64(d.Estimate))-3, y-3, 6, 6, colHuman, nil)
		c.text(plotR+16, y+4, fmt.Sprintf("%s [%s, %s]  %d", d.Estimate.signed(3), d.Low.signed(3), d.High.signed(3), d.Clusters), anchorStart, colInk)
	}
	return c
}

// lighten mixes a colour with white.
func lighten(c rgb, f float64) rgb {
	m := func(v uint8) uint8 { return uint8(float64(v) + (255-float64(v))*f + 0.5) }
	return rgb{m(c.R), m(c.G), m(c.B)}
}

// gateBars draws each gate's pass rate and WS per system, human beside synthetic.
func gateBars(r *Report) *canvas {
	gates := []Metric{MetricTS, MetricPV, MetricAC, MetricAV, MetricWS}
	const (
		left, top, plotH, barW, clusterGap, groupGap = 56.0, 48.0, 220.0, 10.0, 6.0, 24.0
	)
	clusterW := 2*barW + clusterGap
	groupW := float64(len(gates))*clusterW + groupGap
	width := math.Max(left+float64(max(len(r.Systems), 1))*groupW+20, 420)
	height := top + plotH + 56
	c := newCanvas(width, height, "Gate decomposition")
	c.text(12, 18, fmt.Sprintf("Gate pass rates and Workflow Success (%.0f%% Wilson CI)", 100*r.Level), anchorStart, colInk)
	// Legend.
	lx := width - 190
	c.rect(lx, 26, 10, 10, colHuman, nil)
	c.text(lx+14, 35, "human", anchorStart, colInk)
	c.rect(lx+70, 26, 10, 10, lighten(colSynth, 0.1), nil)
	c.text(lx+84, 35, "synthetic", anchorStart, colInk)
	yOf := func(p float64) float64 { return top + plotH - p*plotH }
	for v := 0.0; v <= 1+1e-9; v += 0.2 {
		c.line(left, yOf(v), width-10, yOf(v), 1, colGrid, false)
		c.text(left-6, yOf(v)+3, Num(v).fixed(1), anchorEnd, colAxis)
	}
	c.vtext(18, top+plotH/2, "pass rate", colAxis)
	for i, sr := range r.Systems {
		gx := left + 10 + float64(i)*groupW
		for j, g := range gates {
			cx := gx + float64(j)*clusterW
			for k, p := range []Proportion{proportionOf(sr.Human, g), proportionOf(sr.Synthetic, g)} {
				col := colHuman
				if k == 1 {
					col = lighten(colSynth, 0.1)
				}
				x := cx + float64(k)*barW
				if p.P.IsNaN() {
					continue
				}
				c.rect(x, yOf(float64(p.P)), barW-1, float64(p.P)*plotH, col, nil)
				if !p.Low.IsNaN() {
					mx := x + (barW-1)/2
					c.line(mx, yOf(float64(p.Low)), mx, yOf(float64(p.High)), 1, colInk, false)
				}
			}
			c.text(cx+barW, top+plotH+12, metricLabel[g], anchorMiddle, colAxis)
		}
		c.text(gx+float64(len(gates))*clusterW/2, top+plotH+30, clip(sr.System.Label, int(groupW/6)-1), anchorMiddle, colInk)
	}
	c.line(left, yOf(0), width-10, yOf(0), 1, colAxis, false)
	return c
}

func proportionOf(m ModeResult, g Metric) Proportion {
	switch g {
	case MetricTS:
		return m.TS
	case MetricPV:
		return m.PV
	case MetricAC:
		return m.AC
	case MetricAV:
		return m.AV
	}
	return m.WS
}

// TradeoffPoint is one (system, mode) of the time-to-resolution against reliability figure.
type TradeoffPoint struct {
	System string
	Mode   Mode
	TTR    float64 // median seconds
	WS     float64
	Front  bool
}

// paretoFront marks, within each mode, the points no other point of the mode beats on both
// time-to-resolution (lower) and reliability (higher).
func paretoFront(pts []TradeoffPoint) {
	for i := range pts {
		pts[i].Front = true
		for j := range pts {
			if i == j || pts[i].Mode != pts[j].Mode {
				continue
			}
			a, b := pts[j], pts[i]
			if a.TTR <= b.TTR && a.WS >= b.WS && (a.TTR < b.TTR || a.WS > b.WS) {
				pts[i].Front = false
				break
			}
		}
	}
}

// TradeoffPoints lists the points of the TTR-against-reliability figure with their Pareto flags.
func TradeoffPoints(r *Report) []TradeoffPoint {
	var pts []TradeoffPoint
	for _, sr := range r.Systems {
		for _, m := range []struct {
			mode Mode
			res  ModeResult
		}{{Human, sr.Human}, {Synthetic, sr.Synthetic}} {
			if m.res.TTR.MedianS.IsNaN() || m.res.WS.P.IsNaN() {
				continue
			}
			pts = append(pts, TradeoffPoint{System: sr.System.Label, Mode: m.mode, TTR: float64(m.res.TTR.MedianS), WS: float64(m.res.WS.P)})
		}
	}
	paretoFront(pts)
	return pts
}

func ttrScatter(r *Report) *canvas {
	pts := TradeoffPoints(r)
	const (
		left, top, plotW, plotH = 64.0, 40.0, 460.0, 300.0
	)
	width, height := left+plotW+200, top+plotH+56
	c := newCanvas(width, height, "Time-to-resolution against reliability")
	c.text(12, 18, "Median time-to-resolution against Workflow Success; Pareto front per mode", anchorStart, colInk)
	maxX := 1.0
	for _, p := range pts {
		maxX = math.Max(maxX, p.TTR)
	}
	step := niceStep(maxX / 5)
	xMax := math.Ceil(maxX*1.05/step) * step
	xOf := func(v float64) float64 { return left + v/xMax*plotW }
	yOf := func(v float64) float64 { return top + plotH - v*plotH }
	for v := 0.0; v <= xMax+1e-9; v += step {
		c.line(xOf(v), top, xOf(v), top+plotH, 1, colGrid, false)
		c.text(xOf(v), top+plotH+14, tickLabel(v, step), anchorMiddle, colAxis)
	}
	for v := 0.0; v <= 1+1e-9; v += 0.2 {
		c.line(left, yOf(v), left+plotW, yOf(v), 1, colGrid, false)
		c.text(left-6, yOf(v)+3, Num(v).fixed(1), anchorEnd, colAxis)
	}
	c.line(left, top+plotH, left+plotW, top+plotH, 1, colAxis, false)
	c.line(left, top, left, top+plotH, 1, colAxis, false)
	c.text(left+plotW/2, top+plotH+34, "median time-to-resolution (s)", anchorMiddle, colAxis)
	c.vtext(20, top+plotH/2, "Workflow Success", colAxis)
	for _, mode := range []Mode{Human, Synthetic} {
		col := colHuman
		if mode == Synthetic {
			col = colSynth
		}
		var front []TradeoffPoint
		for _, p := range pts {
			if p.Mode == mode && p.Front {
				front = append(front, p)
			}
		}
		slices.SortFunc(front, func(a, b TradeoffPoint) int { return cmp.Compare(a.TTR, b.TTR) })
		for i := 1; i < len(front); i++ {
			a, b := front[i-1], front[i]
			c.line(xOf(a.TTR), yOf(a.WS), xOf(b.TTR), yOf(a.WS), 1.2, col, true)
			c.line(xOf(b.TTR), yOf(a.WS), xOf(b.TTR), yOf(b.WS), 1.2, col, true)
		}
	}
	for _, p := range pts {
		col := colHuman
		if p.Mode == Synthetic {
			col = colSynth
		}
		x, y := xOf(p.TTR), yOf(p.WS)
		if p.Mode == Human {
			c.circle(x, y, 4, &col, col)
		} else {
			c.rect(x-4, y-4, 8, 8, colWhite, &col)
		}
		if p.Front {
			c.circle(x, y, 7.5, nil, colInk)
		}
		c.text(x+10, y+3, clip(p.System, 20), anchorStart, colInk)
	}
	lx := left + plotW + 24
	c.circle(lx+4, top+10, 4, &colHuman, colHuman)
	c.text(lx+14, top+13, "human", anchorStart, colInk)
	c.rect(lx, top+24, 8, 8, colWhite, &colSynth)
	c.text(lx+14, top+31, "synthetic", anchorStart, colInk)
	c.circle(lx+4, top+46, 7.5, nil, colInk)
	c.text(lx+16, top+49, "Pareto front", anchorStart, colInk)
	if len(pts) == 0 {
		c.text(left+plotW/2, top+plotH/2, "no resolved sessions", anchorMiddle, colFaint)
	}
	return c
}
