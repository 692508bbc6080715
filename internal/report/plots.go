package report

import (
	"bytes"
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"codeberg.org/go-pdf/fpdf"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Figure is one rendered figure of the report, drawn with gonum/plot in three formats.
type Figure struct {
	Name    string // file stem: figures/<Name>.svg, .png and .pdf
	Title   string
	Caption string
	// Missing says, for a figure without the data it plots, what is missing and the command that
	// fills it (the figure then shows the same sentence); "" when the figure is drawn from data.
	Missing string
	SVG     []byte
	PNG     []byte
	PDF     []byte
}

// PDFDate is the creation and modification date written into every figure's PDF: a fixed date,
// so that the same input gives the same bytes (fpdf otherwise writes the time of rendering).
var PDFDate = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// pdfDefaults sets, once before the first PDF, what fpdf reads when vgpdf makes a document: the
// fixed date, and sorted catalogs that keep the order of its fonts and images (map iterations)
// the same from run to run.
var pdfDefaults = sync.OnceFunc(func() {
	fpdf.SetDefaultCatalogSort(true)
	fpdf.SetDefaultCreationDate(PDFDate)
	fpdf.SetDefaultModificationDate(PDFDate)
})

// figureMetrics are the proportion-scale metrics of the forest plot.
var figureMetrics = []Metric{MetricWS, MetricTS, MetricPV, MetricAC, MetricAV, MetricAFA}

var metricLabel = map[Metric]string{MetricWS: "WS", MetricTS: "TS", MetricPV: "PV", MetricAC: "AC", MetricAV: "AV",
	MetricAFA: "AFA", MetricTTR: "TTR (s)"}

// The figures' palette and font.
var (
	colHuman = color.RGBA{0x1f, 0x5f, 0xa8, 0xff}
	colSynth = color.RGBA{0xe0, 0x7b, 0x10, 0xff}
	colInk   = color.RGBA{0x22, 0x22, 0x22, 0xff}
	colFaint = color.RGBA{0x66, 0x66, 0x66, 0xff}
	sans     = font.Font{Typeface: "Liberation", Variant: "Sans"}
)

func modeColor(m Mode) color.Color {
	if m == Synthetic {
		return colSynth
	}
	return colHuman
}

// figureSpec is a figure before rendering.
type figureSpec struct {
	name, title, caption string
	missing              string
	plot                 *plot.Plot
	w, h                 vg.Length
}

// Figures draws the report's figures. A figure without data is still drawn, saying what is
// missing and the command that fills it.
func Figures(r *Report) ([]Figure, error) {
	pdfDefaults()
	av := availability(r)
	specs := []figureSpec{
		forestPlot(r, av),
		gateBars(r, av),
		ttrScatter(r, av),
		completionScatter(r, av, "ws_latency", "Completion against response latency",
			"Workflow Success (with its Wilson interval) against the median response latency per system and mode.",
			"median response latency (ms)", func(x ModeResult) float64 { return float64(x.Latency.MedianMS) }, av.latency),
		completionScatter(r, av, "ws_cost", "Completion against cost",
			"Workflow Success (with its Wilson interval) against the mean cost per call per system and mode (priced usage).",
			"mean cost per call (USD)", func(x ModeResult) float64 { return float64(x.Cost.USDPerCall) }, av.cost),
	}
	for _, extra := range []func(*Report) (figureSpec, bool){conditionFigure, transferFigure} {
		if s, ok := extra(r); ok {
			specs = append(specs, s)
		}
	}
	out := make([]Figure, 0, len(specs))
	for _, s := range specs {
		f := Figure{Name: s.name, Title: s.title, Caption: s.caption, Missing: s.missing}
		for _, format := range []struct {
			ext string
			dst *[]byte
		}{{"svg", &f.SVG}, {"png", &f.PNG}, {"pdf", &f.PDF}} {
			wt, err := s.plot.WriterTo(s.w, s.h, format.ext)
			if err != nil {
				return nil, fmt.Errorf("figure %s (%s): %w", s.name, format.ext, err)
			}
			var b bytes.Buffer
			if _, err := wt.WriteTo(&b); err != nil {
				return nil, fmt.Errorf("figure %s (%s): %w", s.name, format.ext, err)
			}
			*format.dst = b.Bytes()
		}
		out = append(out, f)
	}
	return out, nil
}

// available says which data the report has, and for what is missing, the command that fills it.
type available struct {
	human, synthetic, paired bool
	latency, cost            string // "" when present, else what is missing and how to fill it
	noHuman, noSynthetic     string
}

func availability(r *Report) available {
	var a available
	var lat, usage, priced bool
	var synthLabel string
	for _, sr := range r.Systems {
		a.human = a.human || sr.Human.Sessions > 0
		a.synthetic = a.synthetic || sr.Synthetic.Sessions > 0
		if sr.Synthetic.Sessions == 0 && synthLabel == "" {
			synthLabel = sr.System.Label
		}
		for _, x := range []ModeResult{sr.Human, sr.Synthetic} {
			lat = lat || !x.Latency.MedianMS.IsNaN()
			usage = usage || x.Cost.CallsWithUsage > 0
			priced = priced || !x.Cost.USDPerCall.IsNaN()
		}
	}
	for _, d := range r.Deltas {
		a.paired = a.paired || !d.Diff.Estimate.IsNaN()
	}
	if synthLabel == "" {
		synthLabel = "LABEL"
	}
	a.noSynthetic = fmt.Sprintf("no synthetic runs yet: audit synth --system %s --tasks audit24", synthLabel)
	a.noHuman = fmt.Sprintf("no human sessions yet: run study %s with audit serve and give participants their links (audit study extend --study %s --participants N issues more)", r.Study.ID, r.Study.ID)
	switch {
	case !a.human && !a.synthetic:
		a.latency = a.noSynthetic
	case !lat:
		a.latency = "no response latency measured yet (no call had caller speech followed by agent speech)"
	}
	switch {
	case !a.human && !a.synthetic:
		a.cost = a.noSynthetic
	case !usage:
		a.cost = "no provider reported usage yet, so no call can be priced (the reference agent reports none)"
	case !priced:
		a.cost = fmt.Sprintf("no prices given: audit report --study %s --prices prices.json", r.Study.ID)
	}
	return a
}

// newPlot makes a plot in the report's font and sizes.
func newPlot(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	for _, s := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle, &p.X.Tick.Label, &p.Y.Tick.Label, &p.Legend.TextStyle} {
		s.Font.Typeface, s.Font.Variant = sans.Typeface, sans.Variant
		s.Color = colInk
	}
	p.Title.TextStyle.Font.Size = vg.Points(12)
	p.X.Label.TextStyle.Font.Size, p.Y.Label.TextStyle.Font.Size = vg.Points(10), vg.Points(10)
	p.X.Tick.Label.Font.Size, p.Y.Tick.Label.Font.Size = vg.Points(9), vg.Points(9)
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Legend.Top = true
	return p
}

// missingPlot is a figure without data: its title and, in the middle, what is missing.
func missingPlot(name, title, caption, missing string) figureSpec {
	p := newPlot(title)
	p.HideAxes()
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	l, _ := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: 0.5, Y: 0.5}}, Labels: []string{wrap(missing, 70)}})
	st := &l.TextStyle[0]
	st.Font = sans
	st.Font.Size = vg.Points(10)
	st.Color = colFaint
	st.XAlign, st.YAlign = draw.XCenter, draw.YCenter
	p.Add(l)
	return figureSpec{name: name, title: title, caption: caption, missing: missing, plot: p, w: 7 * vg.Inch, h: 2.5 * vg.Inch}
}

// wrap breaks s into lines of at most n runes at spaces.
func wrap(s string, n int) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len([]rune(line))+1+len([]rune(w)) > n {
			lines = append(lines, line)
			line = w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return strings.Join(append(lines, line), "\n")
}

// labels places names beside points.
func labels(xys plotter.XYs, names []string) *plotter.Labels {
	l, _ := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: names})
	for i := range l.TextStyle {
		l.TextStyle[i].Font = sans
		l.TextStyle[i].Font.Size = vg.Points(8)
		l.TextStyle[i].Color = colInk
	}
	l.Offset = vg.Point{X: vg.Points(6), Y: vg.Points(2)}
	return l
}

type xErrPoints struct {
	plotter.XYs
	plotter.XErrors
}

type yErrPoints struct {
	plotter.XYs
	plotter.YErrors
}

// forestPlot draws the human-minus-synthetic deltas with their intervals, one row per system and
// metric.
func forestPlot(r *Report, av available) figureSpec {
	const name, title = "forest", "Human minus synthetic, paired by task"
	caption := fmt.Sprintf("Human minus synthetic per system and metric, paired by task, with %.0f%% task-level bootstrap intervals.", 100*r.Level)
	var rows []Delta
	for _, d := range r.Deltas {
		if slices.Contains(figureMetrics, d.Metric) && !d.Diff.Estimate.IsNaN() {
			rows = append(rows, d)
		}
	}
	if len(rows) == 0 {
		missing := "no system has human and synthetic sessions of the same task yet"
		switch {
		case !av.synthetic:
			missing = av.noSynthetic
		case !av.human:
			missing = av.noHuman
		}
		return missingPlot(name, title, caption, missing)
	}
	p := newPlot(title)
	n := len(rows)
	pts := xErrPoints{XYs: make(plotter.XYs, n), XErrors: make(plotter.XErrors, n)}
	names := make([]string, n)
	for i, d := range rows {
		y := float64(n - 1 - i) // first row on top
		pts.XYs[i] = plotter.XY{X: float64(d.Diff.Estimate), Y: y}
		lo, hi := float64(d.Diff.Low), float64(d.Diff.High)
		if math.IsNaN(lo) || math.IsNaN(hi) {
			lo, hi = float64(d.Diff.Estimate), float64(d.Diff.Estimate)
		}
		pts.XErrors[i].Low, pts.XErrors[i].High = float64(d.Diff.Estimate)-lo, hi-float64(d.Diff.Estimate)
		names[n-1-i] = fmt.Sprintf("%s  %s (%s)", clip(d.System, 24), metricLabel[d.Metric], plural(d.Diff.Clusters, "task", "tasks"))
	}
	zero, _ := plotter.NewLine(plotter.XYs{{X: 0, Y: -0.5}, {X: 0, Y: float64(n) - 0.5}})
	zero.Color, zero.Dashes = colFaint, []vg.Length{vg.Points(3), vg.Points(2)}
	bars, _ := plotter.NewXErrorBars(pts)
	bars.Color, bars.Width = colHuman, vg.Points(1.4)
	dots, _ := plotter.NewScatter(pts.XYs)
	dots.GlyphStyle = draw.GlyphStyle{Color: colHuman, Radius: vg.Points(3), Shape: draw.BoxGlyph{}}
	p.Add(plotter.NewGrid(), zero, bars, dots)
	p.NominalY(names...)
	p.X.Label.Text = "delta (human - synthetic)"
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = -1, 1, -0.6, float64(n)-0.4
	return figureSpec{name: name, title: title, caption: caption, plot: p, w: 7 * vg.Inch, h: vg.Length(1.2+0.22*float64(n)) * vg.Inch}
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "~"
}

// gateBars draws each gate's pass rate and WS per system, human beside synthetic, with Wilson
// intervals; every value has a dot, so a rate of zero shows as a dot on the axis, not as nothing.
func gateBars(r *Report, av available) figureSpec {
	const name, title = "gates", "Gate pass rates and Workflow Success"
	caption := fmt.Sprintf("Pass rate of each gate and of Workflow Success per system, human and synthetic, with %.0f%% Wilson intervals; a dot marks each rate.", 100*r.Level)
	if !av.human && !av.synthetic {
		return missingPlot(name, title, caption, av.noSynthetic)
	}
	gates := []Metric{MetricTS, MetricPV, MetricAC, MetricAV, MetricWS}
	p := newPlot(title)
	const barW = 0.38
	var ticks []plot.Tick
	for mi, m := range []Mode{Human, Synthetic} {
		vals := plotter.XYs{}
		errs := yErrPoints{}
		var legend plot.Thumbnailer
		for si, sr := range r.Systems {
			res := sr.Human
			if m == Synthetic {
				res = sr.Synthetic
			}
			if res.Sessions == 0 {
				continue
			}
			base := float64(si * (len(gates) + 1))
			fill := modeColor(m)
			if m == Synthetic {
				fill = color.RGBA{0xf0, 0xb0, 0x70, 0xff}
			}
			for gi, g := range gates {
				pr := proportionOf(res, g)
				x := base + float64(gi) + (float64(mi)-0.5)*barW
				if !pr.P.IsNaN() {
					// The bar in data units, so that it sits under its dot and whisker.
					bar, _ := plotter.NewPolygon(plotter.XYs{{X: x - barW/2, Y: 0}, {X: x + barW/2, Y: 0}, {X: x + barW/2, Y: float64(pr.P)}, {X: x - barW/2, Y: float64(pr.P)}})
					bar.Color, bar.LineStyle.Width = fill, 0
					p.Add(bar)
					legend = bar
				}
				vals = append(vals, plotter.XY{X: x, Y: float64(pr.P)})
				lo, hi := float64(pr.P)-float64(pr.Low), float64(pr.High)-float64(pr.P)
				if math.IsNaN(lo) || math.IsNaN(hi) {
					lo, hi = 0, 0
				}
				errs.XYs = append(errs.XYs, plotter.XY{X: x, Y: float64(pr.P)})
				errs.YErrors = append(errs.YErrors, struct{ Low, High float64 }{lo, hi})
			}
		}
		if legend == nil {
			continue
		}
		p.Legend.Add(string(m), legend)
		eb, _ := plotter.NewYErrorBars(errs)
		eb.Color, eb.Width = colInk, vg.Points(0.8)
		dots, _ := plotter.NewScatter(vals)
		dots.GlyphStyle = draw.GlyphStyle{Color: modeColor(m), Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
		p.Add(eb, dots)
	}
	for si, sr := range r.Systems {
		base := float64(si * (len(gates) + 1))
		for gi, g := range gates {
			label := metricLabel[g]
			if gi == len(gates)/2 {
				label += "\n" + clip(sr.System.Label, 20)
			}
			ticks = append(ticks, plot.Tick{Value: base + float64(gi), Label: label})
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = -0.7, float64(len(r.Systems)*(len(gates)+1))-1.3
	p.Y.Min, p.Y.Max = 0, 1.2 // room for the legend above the bars
	p.Y.Label.Text = "pass rate"
	p.Add(plotter.NewGrid())
	w := math.Max(7, 1.6+1.3*float64(len(r.Systems)))
	return figureSpec{name: name, title: title, caption: caption, plot: p, w: vg.Length(w) * vg.Inch, h: 3.6 * vg.Inch}
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
		for mode, res := range sr.ByMode() {
			if res.TTR.MedianS.IsNaN() || res.WS.P.IsNaN() {
				continue
			}
			pts = append(pts, TradeoffPoint{System: sr.System.Label, Mode: mode, TTR: float64(res.TTR.MedianS), WS: float64(res.WS.P)})
		}
	}
	paretoFront(pts)
	return pts
}

func ttrScatter(r *Report, av available) figureSpec {
	const name, title = "ttr_reliability", "Time-to-resolution against reliability"
	caption := "Median time-to-resolution against Workflow Success per system and mode; the dashed line joins each mode's Pareto front (faster and more reliable than every other point of that mode), whose points are ringed."
	pts := TradeoffPoints(r)
	if len(pts) == 0 {
		missing := "no call reached its target state yet, so no time-to-resolution"
		if !av.human && !av.synthetic {
			missing = av.noSynthetic
		}
		return missingPlot(name, title, caption, missing)
	}
	p := newPlot(title)
	p.Add(plotter.NewGrid())
	maxX := 1.0
	for _, mode := range []Mode{Human, Synthetic} {
		var xys, front plotter.XYs
		var names []string
		for _, pt := range pts {
			if pt.Mode != mode {
				continue
			}
			maxX = math.Max(maxX, pt.TTR)
			xys = append(xys, plotter.XY{X: pt.TTR, Y: pt.WS})
			names = append(names, clip(pt.System, 20))
			if pt.Front {
				front = append(front, plotter.XY{X: pt.TTR, Y: pt.WS})
			}
		}
		if len(xys) == 0 {
			continue
		}
		slices.SortFunc(front, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
		var steps plotter.XYs
		for i, f := range front {
			if i > 0 {
				steps = append(steps, plotter.XY{X: f.X, Y: front[i-1].Y})
			}
			steps = append(steps, f)
		}
		if len(steps) > 1 {
			l, _ := plotter.NewLine(steps)
			l.Color, l.Dashes = modeColor(mode), []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(l)
		}
		s, _ := plotter.NewScatter(xys)
		s.GlyphStyle = draw.GlyphStyle{Color: modeColor(mode), Radius: vg.Points(4), Shape: modeGlyph(mode)}
		ring, _ := plotter.NewScatter(front)
		ring.GlyphStyle = draw.GlyphStyle{Color: colInk, Radius: vg.Points(7), Shape: draw.RingGlyph{}}
		p.Add(s, ring, labels(xys, names))
		p.Legend.Add(string(mode), s)
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, maxX*1.15, 0, 1.05
	p.X.Label.Text, p.Y.Label.Text = "median time-to-resolution (s)", "Workflow Success"
	return figureSpec{name: name, title: title, caption: caption, plot: p, w: 7 * vg.Inch, h: 4 * vg.Inch}
}

func modeGlyph(m Mode) draw.GlyphDrawer {
	if m == Synthetic {
		return draw.BoxGlyph{}
	}
	return draw.CircleGlyph{}
}

// completionScatter draws WS with its Wilson interval against a per-call measure (latency or
// cost), one point per system and mode.
func completionScatter(r *Report, av available, name, title, caption, xLabel string, x func(ModeResult) float64, missing string) figureSpec {
	if missing != "" {
		return missingPlot(name, title, caption, missing)
	}
	p := newPlot(title)
	p.Add(plotter.NewGrid())
	maxX := 0.0
	drawn := false
	for _, mode := range []Mode{Human, Synthetic} {
		pts := yErrPoints{}
		var names []string
		for _, sr := range r.Systems {
			res := sr.Human
			if mode == Synthetic {
				res = sr.Synthetic
			}
			xv, ws := x(res), float64(res.WS.P)
			if math.IsNaN(xv) || math.IsNaN(ws) {
				continue
			}
			maxX = math.Max(maxX, xv)
			pts.XYs = append(pts.XYs, plotter.XY{X: xv, Y: ws})
			lo, hi := ws-float64(res.WS.Low), float64(res.WS.High)-ws
			if math.IsNaN(lo) || math.IsNaN(hi) {
				lo, hi = 0, 0
			}
			pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{lo, hi})
			names = append(names, clip(sr.System.Label, 20))
		}
		if len(pts.XYs) == 0 {
			continue
		}
		drawn = true
		eb, _ := plotter.NewYErrorBars(pts)
		eb.Color, eb.Width = modeColor(mode), vg.Points(1)
		s, _ := plotter.NewScatter(pts.XYs)
		s.GlyphStyle = draw.GlyphStyle{Color: modeColor(mode), Radius: vg.Points(4), Shape: modeGlyph(mode)}
		p.Add(eb, s, labels(pts.XYs, names))
		p.Legend.Add(string(mode), s)
	}
	if !drawn {
		return missingPlot(name, title, caption, "no system has both a completion rate and this measure yet")
	}
	if maxX <= 0 {
		maxX = 1
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, maxX*1.2, 0, 1.05
	p.X.Label.Text, p.Y.Label.Text = xLabel, "Workflow Success"
	return figureSpec{name: name, title: title, caption: caption, plot: p, w: 7 * vg.Inch, h: 4 * vg.Inch}
}

// HeadlineRow is one (system, mode) of the headline table: completion with its Wilson interval
// and the sessions counted, median response latency and mean cost per call.
type HeadlineRow struct {
	System     string
	Mode       Mode
	WS         Proportion
	LatencyMS  Num
	USDPerCall Num
}

// Headline lists the headline table's rows: every system and mode with sessions counted.
func Headline(r *Report) []HeadlineRow {
	var out []HeadlineRow
	for _, sr := range r.Systems {
		for mode, res := range sr.ByMode() {
			if res.WS.N == 0 {
				continue
			}
			out = append(out, HeadlineRow{System: sr.System.Label, Mode: mode, WS: res.WS, LatencyMS: res.Latency.MedianMS, USDPerCall: res.Cost.USDPerCall})
		}
	}
	return out
}

// rateRow is one row of a rate figure: a label and its human and synthetic proportions.
type rateRow struct {
	label            string
	human, synthetic Proportion
}

// rateRows draws proportions with their Wilson intervals, one row per label, human above
// synthetic (VAmoS's Figures 2a and 2b: completion by listening condition, transfers by behaviour
// profile).
func rateRows(name, title, caption, xLabel string, rows []rateRow) figureSpec {
	p := newPlot(title)
	p.Add(plotter.NewGrid())
	n := len(rows)
	names := make([]string, n)
	for i, rw := range rows {
		names[n-1-i] = clip(rw.label, 40)
	}
	for mi, mode := range []Mode{Human, Synthetic} {
		pts := xErrPoints{}
		for i, rw := range rows {
			pr := rw.human
			if mode == Synthetic {
				pr = rw.synthetic
			}
			if pr.N == 0 || pr.P.IsNaN() {
				continue
			}
			y := float64(n-1-i) + 0.15 - 0.3*float64(mi)
			pts.XYs = append(pts.XYs, plotter.XY{X: float64(pr.P), Y: y})
			pts.XErrors = append(pts.XErrors, struct{ Low, High float64 }{float64(pr.P) - float64(pr.Low), float64(pr.High) - float64(pr.P)})
		}
		if len(pts.XYs) == 0 {
			continue
		}
		eb, _ := plotter.NewXErrorBars(pts)
		eb.Color, eb.Width = modeColor(mode), vg.Points(1.2)
		s, _ := plotter.NewScatter(pts.XYs)
		s.GlyphStyle = draw.GlyphStyle{Color: modeColor(mode), Radius: vg.Points(3.5), Shape: modeGlyph(mode)}
		p.Add(eb, s)
		p.Legend.Add(string(mode), s)
	}
	p.NominalY(names...)
	// Every row inside the axis, and room above the top row for the legend.
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, -0.6, float64(n)-0.4+0.5
	p.X.Label.Text = xLabel
	return figureSpec{name: name, title: title, caption: caption, plot: p, w: 7 * vg.Inch, h: vg.Length(1.6+0.4*float64(n)) * vg.Inch}
}

// conditionFigure is completion by listening condition and system (present with conditions).
func conditionFigure(r *Report) (figureSpec, bool) {
	if len(r.Conditions) == 0 {
		return figureSpec{}, false
	}
	var rows []rateRow
	for _, c := range r.Conditions {
		rows = append(rows, rateRow{label: c.Condition + "  " + c.System, human: c.Human, synthetic: c.Synthetic})
	}
	return rateRows("conditions", "Completion by listening condition",
		fmt.Sprintf("Workflow Success per listening condition and system, human and synthetic, with %.0f%% Wilson intervals.", 100*r.Level),
		"Workflow Success", rows), true
}

// transferFigure is the transfer rate by system and behaviour profile (present with transfers).
func transferFigure(r *Report) (figureSpec, bool) {
	if len(r.Transfers) == 0 {
		return figureSpec{}, false
	}
	var rows []rateRow
	at := map[string]int{}
	for _, x := range r.Transfers {
		key := x.System + "  " + x.Behavior
		i, ok := at[key]
		if !ok {
			i, at[key] = len(rows), len(rows)
			rows = append(rows, rateRow{label: key})
		}
		if x.Mode == Synthetic {
			rows[i].synthetic = x.Transfers
		} else {
			rows[i].human = x.Transfers
		}
	}
	return rateRows("transfers", "Transfers to a human by behaviour profile",
		fmt.Sprintf("Share of calls the agent handed to a person per system and behaviour profile, human and synthetic, with %.0f%% Wilson intervals.", 100*r.Level),
		"transfer rate", rows), true
}
