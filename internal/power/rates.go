package power

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/voicebench/humanaudit/internal/report"
)

// RateOverride states the synthetic caller's rates for one system, one task, or one system on
// one task ("*" or "" matches any); NaN leaves a rate to the less specific statements.
type RateOverride struct {
	System, Task string
	WS, AFA      float64
	Line         int // line in the rates file, for messages
}

// ReadRates reads a rates file: CSV with a header naming system, task and ws and/or afa, one
// statement a line, e.g. "*,fnol-auto-glass,0.55," or "gpt-realtime,*,0.8,0.9". An empty cell
// leaves that rate unstated. Errors name the file, line and column.
func ReadRates(name string, r io.Reader) ([]RateOverride, error) {
	cr := csv.NewReader(r)
	cr.TrimLeadingSpace = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", name, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	for _, need := range []string{"system", "task"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("%s:1: no %q column: want system,task,ws,afa: %w", name, need, ErrInvalidModel)
		}
	}
	_, hasWS := col["ws"]
	_, hasAFA := col["afa"]
	if !hasWS && !hasAFA {
		return nil, fmt.Errorf("%s:1: neither a ws nor an afa column: %w", name, ErrInvalidModel)
	}
	var out []RateOverride
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		o := RateOverride{System: cellOf(rec, col, "system"), Task: cellOf(rec, col, "task"), WS: math.NaN(), AFA: math.NaN(), Line: line}
		for _, c := range []struct {
			name string
			dst  *float64
		}{{"ws", &o.WS}, {"afa", &o.AFA}} {
			v := cellOf(rec, col, c.name)
			if v == "" {
				continue
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || !(f > 0 && f < 1) {
				return nil, fmt.Errorf("%s:%d: %s %q: want a rate strictly between 0 and 1: %w", name, line, c.name, v, ErrInvalidModel)
			}
			*c.dst = f
		}
		out = append(out, o)
	}
	return out, nil
}

func cellOf(rec []string, col map[string]int, name string) string {
	i, ok := col[name]
	if !ok || i >= len(rec) {
		return ""
	}
	v := strings.TrimSpace(rec[i])
	if v == "*" {
		return ""
	}
	return v
}

// StatedModel builds a model from stated rates: every cell starts at ws and afa; a statement for a
// task overrides them, one for a system overrides that, one for the system on the task overrides
// everything. fields gives each task's graded fields (defaultFields when it has none listed).
func StatedModel(systems, tasks []string, fields map[string]int, defaultFields int, ws, afa float64, overrides []RateOverride, participantSD, sessionSD float64) (Model, error) {
	known := map[string]bool{}
	for _, s := range systems {
		known["s:"+s] = true
	}
	for _, t := range tasks {
		known["t:"+t] = true
	}
	for _, o := range overrides {
		if o.System != "" && !known["s:"+o.System] {
			return Model{}, fmt.Errorf("rates line %d: system %q is not in the plan (%s): %w", o.Line, o.System, strings.Join(systems, ", "), ErrInvalidModel)
		}
		if o.Task != "" && !known["t:"+o.Task] {
			return Model{}, fmt.Errorf("rates line %d: task %q is not in the plan: %w", o.Line, o.Task, ErrInvalidModel)
		}
	}
	m := Model{Cells: map[string]map[string]Cell{}, ParticipantSD: participantSD, SessionSD: sessionSD}
	rank := func(o RateOverride) int {
		r := 0
		if o.Task != "" {
			r++
		}
		if o.System != "" {
			r += 2
		}
		return r
	}
	sorted := append([]RateOverride(nil), overrides...)
	sort.SliceStable(sorted, func(i, j int) bool { return rank(sorted[i]) < rank(sorted[j]) })
	for _, s := range systems {
		m.Cells[s] = map[string]Cell{}
		for _, t := range tasks {
			c := Cell{WS: ws, AFA: afa, Fields: fields[t]}
			if c.Fields < 1 {
				c.Fields = defaultFields
			}
			for _, o := range sorted {
				if (o.System == "" || o.System == s) && (o.Task == "" || o.Task == t) {
					if !math.IsNaN(o.WS) {
						c.WS = o.WS
					}
					if !math.IsNaN(o.AFA) {
						c.AFA = o.AFA
					}
				}
			}
			m.Cells[s][t] = c
		}
	}
	return m, m.Validate(systems, tasks)
}

// PilotModel estimates a model from a pilot's synthetic sessions (ended, graded, not excluded):
// per system and task, WS as (successes + ½)/(runs + 1) and AFA as (fields right + ½)/(fields
// graded + 1), the Krichevsky–Trofimov estimates, which stay inside (0, 1) where three runs all
// agree; the session SD from the pooled within-cell variance of AFA; the participant SD as stated
// (synthetic runs say nothing of participants). A cell the pilot did not run takes its system's
// rates over all its tasks, and says so in the notes.
func PilotModel(in report.Input, systems, tasks []string, fields map[string]int, participantSD float64) (Model, []string, error) {
	type acc = pilotCell
	cells := map[string]map[string]*acc{}
	for i := range in.Sessions {
		s := &in.Sessions[i]
		if s.Mode != report.Synthetic || !s.Ended || s.Grade == nil || s.Exclusion != nil {
			continue
		}
		if cells[s.System] == nil {
			cells[s.System] = map[string]*acc{}
		}
		a := cells[s.System][s.Task]
		if a == nil {
			a = &acc{totals: map[int]int{}}
			cells[s.System][s.Task] = a
		}
		a.runs++
		a.ws += float64(s.Grade.WS)
		if s.Grade.AFA.Total > 0 {
			a.right += float64(s.Grade.AFA.Correct)
			a.graded += float64(s.Grade.AFA.Total)
			a.afa = append(a.afa, s.Grade.AFA.Value)
			a.totals[s.Grade.AFA.Total]++
		}
	}
	m := Model{Cells: map[string]map[string]Cell{}, ParticipantSD: participantSD}
	var notes []string
	var sdCells []Cell
	var sdWeights []float64
	var ss, df float64
	for _, sys := range systems {
		per := cells[sys]
		if len(per) == 0 {
			return Model{}, nil, fmt.Errorf("pilot %s has no synthetic session of system %s (it has %s): %w", in.Study.ID, sys, strings.Join(slices.Sorted(maps.Keys(cells)), ", "), ErrInvalidModel)
		}
		var all acc
		for _, a := range per {
			all.ws += a.ws
			all.runs += a.runs
			all.right += a.right
			all.graded += a.graded
		}
		missing := 0
		m.Cells[sys] = map[string]Cell{}
		for _, t := range tasks {
			a := per[t]
			if a == nil || a.graded == 0 {
				missing++
				a = &all
			}
			c := Cell{WS: (a.ws + 0.5) / (a.runs + 1), AFA: (a.right + 0.5) / (a.graded + 1), Fields: fields[t]}
			if c.Fields < 1 && per[t] != nil {
				c.Fields = per[t].modalTotal()
			}
			if c.Fields < 1 {
				c.Fields = int(math.Round(all.graded / math.Max(1, all.runs)))
			}
			m.Cells[sys][t] = c
			if a != &all && len(a.afa) >= 2 {
				var mean float64
				for _, v := range a.afa {
					mean += v
				}
				mean /= float64(len(a.afa))
				for _, v := range a.afa {
					ss += (v - mean) * (v - mean)
				}
				df += float64(len(a.afa) - 1)
				sdCells = append(sdCells, c)
				sdWeights = append(sdWeights, float64(len(a.afa)-1))
			}
		}
		if missing > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d of %d tasks have no pilot runs and take the system's rates over its %d piloted tasks", sys, missing, len(tasks), len(per)))
		}
	}
	if df > 0 {
		observed := ss / df
		m.SessionSD = EstimateSessionSD(sdCells, sdWeights, observed)
		notes = append(notes, fmt.Sprintf("session SD %.2f (logit) from the pilot's pooled within-task AFA variance %.4f over %d cells", m.SessionSD, observed, len(sdCells)))
	} else {
		notes = append(notes, "the pilot has no repeated synthetic runs of a task: session SD 0 (AFA varies only by its fields)")
	}
	return m, notes, m.Validate(systems, tasks)
}

// pilotCell accumulates a pilot's synthetic runs of one system on one task.
type pilotCell struct {
	ws, runs      float64
	right, graded float64
	afa           []float64
	totals        map[int]int // runs by number of graded fields
}

// modalTotal is the most common number of graded fields among the cell's runs (0 without any).
func (a *pilotCell) modalTotal() int {
	best, n := 0, 0
	for total, c := range a.totals {
		if c > n || c == n && total > best {
			best, n = total, c
		}
	}
	return best
}
