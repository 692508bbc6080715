package power

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/report"
)

func TestReadRatesAndStatedModel(t *testing.T) {
	file := "system,task,ws,afa\n*,*,0.7,\n*,t2,0.5,0.6\nsys-b,*,0.9,\nsys-b,t2,,0.95\n"
	os, err := ReadRates("rates.csv", strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	m, err := StatedModel([]string{"sys-a", "sys-b"}, []string{"t1", "t2"}, map[string]int{"t1": 6}, 8, 0.6, 0.8, os, 0.5, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	// Most specific wins: (system, task) over system over task over everything over the defaults.
	want := map[string]map[string]Cell{
		"sys-a": {"t1": {WS: 0.7, AFA: 0.8, Fields: 6}, "t2": {WS: 0.5, AFA: 0.6, Fields: 8}},
		"sys-b": {"t1": {WS: 0.9, AFA: 0.8, Fields: 6}, "t2": {WS: 0.9, AFA: 0.95, Fields: 8}},
	}
	for s, ts := range want {
		for task, c := range ts {
			if got := m.Cells[s][task]; got != c {
				t.Errorf("%s %s: %+v, want %+v", s, task, got, c)
			}
		}
	}
	for _, c := range []struct{ file, want string }{
		{"system,task,ws\n*,*,1.2\n", "rates.csv:2: ws \"1.2\": want a rate strictly between 0 and 1"},
		{"system,ws\n*,0.5\n", `rates.csv:1: no "task" column`},
		{"system,task\n*,*\n", "rates.csv:1: neither a ws nor an afa column"},
	} {
		if _, err := ReadRates("rates.csv", strings.NewReader(c.file)); !errors.Is(err, ErrInvalidModel) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want %q", c.file, err, c.want)
		}
	}
	unknown, _ := ReadRates("rates.csv", strings.NewReader("system,task,ws\nsys-z,*,0.5\n"))
	if _, err := StatedModel([]string{"sys-a"}, []string{"t1"}, nil, 8, 0.6, 0.8, unknown, 0.5, 0.8); err == nil || !strings.Contains(err.Error(), `system "sys-z" is not in the plan`) {
		t.Errorf("an unknown system: %v", err)
	}
}

// A pilot drawn from a known model gives back its rates and its session SD.
func TestPilotModelRecoversTheModel(t *testing.T) {
	tasks, anchors := suiteTasks()
	systems := systemLabels(2)
	plan := mustPlan(t, systems, tasks, anchors, 4, 5, "P")
	truth := spreadModel(systems, tasks, 0.3, 0.8, 0.55, 0.85, 0, 0.9)
	sim, err := NewSimulator(Design{Plan: plan, SyntheticRuns: 40}, truth)
	if err != nil {
		t.Fatal(err)
	}
	w := sim.newWorker()
	w.draw(1, 0, []int{0, 1}, make([][2]float64, 2))
	in := report.Input{Study: report.StudyInfo{ID: "pilot"}}
	in.Sessions = append(in.Sessions, w.sessions[sim.sStart[0]:]...)
	// One system's task 24 was never piloted.
	var kept []report.Session
	for _, s := range in.Sessions {
		if !(s.System == "sys-b" && s.Task == "task-24") {
			kept = append(kept, s)
		}
	}
	in.Sessions = kept
	fields := map[string]int{}
	for _, tk := range tasks {
		fields[tk.ID] = tk.RequiredFields
	}
	m, notes, err := PilotModel(in, systems, sim.tasks, fields, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("notes: %v", notes)
	if math.Abs(m.SessionSD-0.9) > 0.12 {
		t.Errorf("session SD %.3f, want about 0.9", m.SessionSD)
	}
	var dws, dafa float64
	for _, tk := range sim.tasks[:23] {
		dws = math.Max(dws, math.Abs(m.Cells["sys-a"][tk].WS-truth.Cells["sys-a"][tk].WS))
		dafa = math.Max(dafa, math.Abs(m.Cells["sys-a"][tk].AFA-truth.Cells["sys-a"][tk].AFA))
	}
	// 40 runs: a rate's standard error is at most 0.08, AFA's much less.
	if dws > 0.25 || dafa > 0.12 {
		t.Errorf("largest WS error %.3f, AFA %.3f", dws, dafa)
	}
	if len(notes) < 2 || !strings.Contains(notes[0], "sys-b: 1 of 24 tasks have no pilot runs") {
		t.Errorf("notes %q: want the unpiloted cell named", notes)
	}
	if _, _, err := PilotModel(in, []string{"sys-a", "sys-q"}, sim.tasks, fields, 0.5); !errors.Is(err, ErrInvalidModel) || !strings.Contains(err.Error(), "no synthetic session of system sys-q") {
		t.Errorf("a system the pilot lacks: %v", err)
	}
}
