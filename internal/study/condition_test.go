package study

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestConditionFactorIsBalanced plans 2 listening conditions × 5 systems over the audit suite's
// shape and checks, independently of the planner's own report, that every task × system ×
// condition cell is run once (anchors twice, by another participant), every arm, condition and
// system sits equally often at every position, every participant meets each condition equally
// often, and that the balance report says so.
func TestConditionFactorIsBalanced(t *testing.T) {
	tasks, anchors := suite(24, 6, rand.New(rand.NewPCG(19, 2)))
	conds := []string{"quiet", "background_tv@10"}
	for _, k := range []int{10, 5} {
		req := Request{Tasks: tasks, Anchors: anchors, Systems: labels(5), Conditions: conds, SessionsPerParticipant: k, Seed: 7}
		p, err := Build(req)
		if err != nil {
			t.Fatalf("K=%d: %v", k, err)
		}
		if got, want := len(p.Sessions), 5*2*(24+6); got != want {
			t.Fatalf("K=%d: %d sessions, want %d", k, got, want)
		}
		cells := map[string][]string{}
		perCondition := map[string]map[string]int{}
		positions := map[string][]int{}
		for _, s := range p.Sessions {
			if s.Condition == "" || !slices.Contains(conds, s.Condition) {
				t.Fatalf("session without a planned condition: %+v", s)
			}
			key := s.Task + "|" + s.System + "|" + s.Condition + "|" + string(rune('0'+s.Repeat))
			cells[key] = append(cells[key], s.Participant)
			if perCondition[s.Participant] == nil {
				perCondition[s.Participant] = map[string]int{}
			}
			perCondition[s.Participant][s.Condition]++
			for _, lvl := range []string{"arm:" + s.Arm(), "cond:" + s.Condition, "sys:" + s.System} {
				if positions[lvl] == nil {
					positions[lvl] = make([]int, k)
				}
				positions[lvl][s.Position-1]++
			}
		}
		for _, tk := range tasks {
			for _, sys := range labels(5) {
				for _, c := range conds {
					first := cells[tk.ID+"|"+sys+"|"+c+"|1"]
					if len(first) != 1 {
						t.Fatalf("K=%d: cell %s × %s × %s run %d times", k, tk.ID, sys, c, len(first))
					}
					if slices.Contains(anchors, tk.ID) {
						second := cells[tk.ID+"|"+sys+"|"+c+"|2"]
						if len(second) != 1 || second[0] == first[0] {
							t.Fatalf("K=%d: anchor cell %s × %s × %s repeated by %v after %v", k, tk.ID, sys, c, second, first)
						}
					}
				}
			}
		}
		for lvl, pos := range positions {
			for i := range pos {
				if pos[i] != pos[0] {
					t.Fatalf("K=%d: %s has %v sessions by position, not equal", k, lvl, pos)
				}
			}
		}
		for part, byCond := range perCondition {
			a, b := byCond[conds[0]], byCond[conds[1]]
			if k%2 == 0 && a != b || k%2 == 1 && (a-b > 1 || b-a > 1) {
				t.Fatalf("K=%d: %s meets the conditions %d and %d times", k, part, a, b)
			}
		}
		bal := p.Balance()
		if !bal.PositionsEqual || !FactorsEqual(bal.Conditions) || !FactorsEqual(bal.BySystem) || len(bal.Systems) != 10 {
			t.Fatalf("K=%d: balance %+v", k, bal)
		}
		for _, f := range bal.Conditions {
			if f.Cells != 5*24 || (k == 10 && (f.PerParticipantMin != 5 || f.PerParticipantMax != 5)) {
				t.Errorf("K=%d: condition %s: %d first-run cells, %d–%d per participant", k, f.Name, f.Cells, f.PerParticipantMin, f.PerParticipantMax)
			}
		}
		var buf bytes.Buffer
		if err := p.WriteReport(&buf); err != nil {
			t.Fatal(err)
		}
		report := buf.String()
		for _, want := range []string{"5 systems × 2 listening conditions (quiet, background_tv@10) = 10 arms × (24 tasks + 6 anchor repeats) = 300 sessions",
			"Sessions per system × condition arm at each position (equal: yes", "Sessions per system at each position (equal: yes", "Sessions per condition at each position (equal: yes", "sys-a · background_tv@10"} {
			if !strings.Contains(report, want) {
				t.Errorf("K=%d: balance report lacks %q:\n%s", k, want, report)
			}
		}
		if k == 10 {
			t.Logf("balance report (K=10):\n%s", report)
		}
		// plan.csv keeps the condition, and the plan read back verifies.
		var csv bytes.Buffer
		WriteCSV(&csv, p.Sessions)
		back, err := ReadCSV("plan.csv", &csv)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(back, p.Sessions) {
			t.Fatal("plan.csv does not round-trip the conditions")
		}
		if problems := Verify(back); len(problems) > 0 {
			t.Fatalf("K=%d: %v", k, problems)
		}
		// Dropping one condition's session of a cell is caught.
		if problems := Verify(back[1:]); len(problems) == 0 {
			t.Fatal("a missing cell was not caught")
		}
	}
}

func TestConditionFactorRequestErrors(t *testing.T) {
	tasks, _ := suite(6, 0, rand.New(rand.NewPCG(1, 1)))
	for _, conds := range [][]string{{"quiet", "quiet"}, {"quiet", " "}} {
		if _, err := Build(Request{Tasks: tasks, Systems: labels(2), Conditions: conds, SessionsPerParticipant: 2}); err == nil {
			t.Errorf("conditions %q accepted", conds)
		}
	}
	_, err := Build(Request{Tasks: tasks, Systems: labels(2), Conditions: []string{"quiet", "babble@5"}, SessionsPerParticipant: 5})
	if err == nil || !strings.Contains(err.Error(), "4 system × condition arms") {
		t.Errorf("infeasible request: %v", err)
	}
}
