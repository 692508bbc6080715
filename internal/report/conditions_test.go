package report

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/stats"
)

// conditionInput is two systems × six tasks under quiet and background_tv, human and synthetic,
// with known outcomes: every call passes in quiet; under background_tv the synthetic caller
// passes on tasks 0–1 only, humans on tasks 0–3.
func conditionInput(t *testing.T) Input {
	in := Input{Study: StudyInfo{ID: "vamos"}, Systems: []SystemInfo{{Label: "alpha"}, {Label: "beta"}}}
	for i := range 6 {
		in.Tasks = append(in.Tasks, TaskInfo{ID: fmt.Sprintf("t%d", i), Behavior: []string{"cooperative", "impatient"}[i%2], TransferRule: "forbidden", SoundAlike: i < 2})
	}
	n := 0
	for _, sys := range []string{"alpha", "beta"} {
		for _, cond := range []string{"", "background_tv@10"} {
			for i := range 6 {
				for _, m := range []Mode{Human, Synthetic} {
					ws := 1
					if cond != "" && (m == Synthetic && i >= 2 || m == Human && i >= 4) {
						ws = 0
					}
					n++
					s := gradedSession(t, fmt.Sprintf("s%03d", n), sys, fmt.Sprintf("t%d", i), m, 1, ws)
					s.Measures.Condition = cond
					if i == 0 {
						s.Grade.SoundAlikeOnly = m == Human
					}
					if i == 5 && m == Human && cond != "" {
						s.Grade.Transfer = &grade.Transfer{Reason: "asked for a person", AtMS: 9000}
					}
					in.Sessions = append(in.Sessions, s)
				}
			}
		}
	}
	return in
}

func TestReportSlicesByCondition(t *testing.T) {
	r, err := Build(conditionInput(t), Options{Resamples: 400, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Conditions) != 6 || r.Conditions[0].Condition != "quiet" || r.Conditions[3].Condition != "background_tv@10" {
		t.Fatalf("condition rows %+v", r.Conditions)
	}
	for _, c := range r.Conditions {
		hWant, sWant := 6, 6
		if c.Condition != "quiet" {
			hWant, sWant = 4, 2
		}
		if c.System == AllSystems {
			hWant, sWant = 2*hWant, 2*sWant
		}
		n := 6
		if c.System == AllSystems {
			n = 12
		}
		if c.Human.Successes != hWant || c.Human.N != n || c.Synthetic.Successes != sWant || c.Synthetic.N != n || c.Tasks != 6 || c.Paired != 6 {
			t.Fatalf("%s %s: %+v", c.Condition, c.System, c)
		}
		w, _ := stats.Wilson(hWant, n, 0.95)
		if math.Abs(float64(c.Human.Low)-w.Low) > 1e-12 || math.Abs(float64(c.Human.High)-w.High) > 1e-12 {
			t.Errorf("%s %s: human interval [%v, %v], Wilson [%v, %v]", c.Condition, c.System, c.Human.Low, c.Human.High, w.Low, w.High)
		}
		wantDelta := float64(hWant-sWant) / float64(n)
		if math.Abs(float64(c.Delta.Estimate)-wantDelta) > 1e-12 || c.Delta.Clusters != 6 {
			t.Errorf("%s %s: delta %+v, want %.3f over 6 tasks", c.Condition, c.System, c.Delta, wantDelta)
		}
	}
	// Sound-alike: on tasks t0, t1; human passes of t0 were verified only by sound.
	for _, s := range r.SoundAlike {
		want := 0
		if s.Mode == Human {
			want = 2 // t0 under quiet and background_tv
		}
		if s.Passes != 4 || s.SoundAlikeOnly.Successes != want || s.Sessions != 4 {
			t.Errorf("sound-alike %+v", s)
		}
	}
	// Transfers: t5 is impatient; humans transferred it under background_tv, a forbidden transfer.
	var found bool
	for _, x := range r.Transfers {
		if x.Mode == Human && x.Behavior == "impatient" {
			found = true
			if x.Sessions != 6 || x.Transfers.Successes != 1 || x.Wrong != 1 {
				t.Errorf("transfers %+v", x)
			}
		} else if x.Transfers.Successes != 0 {
			t.Errorf("unexpected transfers %+v", x)
		}
	}
	if !found {
		t.Fatal("no human impatient transfer row")
	}
	files, err := Render(r)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]byte{}
	for _, f := range files {
		byName[filepath.Base(f.Path)] = f.Data
	}
	md := byName["report.md"]
	for _, want := range []string{"## Listening conditions", "| background_tv@10 | (all systems) |", "## Sound-alike verification", "## Transfers to a human"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if c := string(byName["conditions.csv"]); !strings.HasPrefix(c, "condition,system,tasks,paired_tasks,human_ws") || strings.Count(c, "\n") != 7 {
		t.Errorf("conditions.csv:\n%s", c)
	}
	for _, f := range []string{"sound_alike.csv", "transfers.csv", "conditions.svg", "conditions.png", "conditions.pdf", "transfers.svg", "transfers.pdf"} {
		if len(byName[f]) == 0 {
			t.Errorf("no %s", f)
		}
	}
	// The condition figure (VAmoS's Figure 2a) plots every condition row by its label.
	for _, c := range r.Conditions {
		if !bytes.Contains(byName["conditions.svg"], []byte(c.Condition+"  "+c.System)) {
			t.Errorf("conditions.svg lacks the row %s  %s", c.Condition, c.System)
		}
	}
	for _, want := range []string{"figures/conditions.svg", "figures/transfers.svg"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

func TestReportWithoutConditionsIsUnchanged(t *testing.T) {
	in := conditionInput(t)
	for i := range in.Sessions {
		in.Sessions[i].Measures.Condition = ""
		in.Sessions[i].Grade.Transfer = nil
	}
	for i := range in.Tasks {
		in.Tasks[i].SoundAlike, in.Tasks[i].TransferRule = false, ""
	}
	r, err := Build(in, Options{Resamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Conditions)+len(r.SoundAlike)+len(r.Transfers) != 0 {
		t.Fatalf("sections for studies without conditions, sound-alike tasks or transfers: %d %d %d", len(r.Conditions), len(r.SoundAlike), len(r.Transfers))
	}
	figs, err := Figures(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range figs {
		if f.Name == "conditions" || f.Name == "transfers" {
			t.Errorf("figure %s for a study without conditions or transfers", f.Name)
		}
	}
}
