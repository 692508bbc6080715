package report

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/voicebench/humanaudit/internal/grade"
)

// studyShape sizes a generated study.
type studyShape struct {
	Systems, Tasks, Seeds, Anchors, Annotators, ItemsPerTask int
}

// genStudy builds a plausible study in memory: systems of different quality, human sessions one
// per cell plus the anchor repeats by a second participant, synthetic sessions per seed, a few
// exclusions, usage for some systems, and three-annotator ratings of the frozen utterances.
func genStudy(sh studyShape, seed uint64) Input {
	rng := rand.New(rand.NewPCG(seed, 7))
	in := Input{Study: StudyInfo{ID: "gen", Name: "Generated study", Seed: int64(seed)}, SessionsPerParticipant: 6}
	archetypes := []string{"benefits_enrollment", "fnol", "utility_billing", "card_freeze", "clinic_intake", "it_incident", "invoice_dispute", "travel_rebooking"}
	behaviors := []string{"cooperative", "terse", "verbose", "self_correcting", "impatient"}
	for i := range sh.Tasks {
		ti := TaskInfo{ID: fmt.Sprintf("task-%02d", i+1), Version: 1, Title: fmt.Sprintf("Task %d", i+1),
			Archetype: archetypes[i%len(archetypes)], Industry: []string{"insurance", "utilities", "banking", "health", "it"}[i%5],
			Authorization: []string{"prepare_only", "approval_gated"}[i%2], ToolBurden: []string{"light", "moderate"}[(i/2)%2],
			Behavior: behaviors[i%len(behaviors)], RiskTier: []string{"low", "medium", "high"}[i%3],
			RequiredFields: 4 + (i*5)%12, Anchor: i < sh.Anchors}
		for f := range 6 {
			ti.Fields = append(ti.Fields, fmt.Sprintf("field_%d", f+1))
		}
		in.Tasks = append(in.Tasks, ti)
	}
	for s := range sh.Systems {
		in.Systems = append(in.Systems, SystemInfo{Label: fmt.Sprintf("sys-%c", 'a'+s), Alias: fmt.Sprintf("Agent %c", 'A'+s), Family: "openai"})
	}
	participant := 0
	mk := func(id string, sys, taskIdx int, mode Mode, seed int64, repeat int) Session {
		quality := 0.55 + 0.08*float64(sys)
		if mode == Human {
			quality -= 0.07
		}
		difficulty := 0.15 * float64(taskIdx%4) / 3
		p := quality - difficulty
		bit := func(q float64) int {
			if rng.Float64() < q {
				return 1
			}
			return 0
		}
		g := &grade.Result{Task: in.Tasks[taskIdx].ID, TaskVersion: 1, Grader: grade.Version,
			TS: bit(p + 0.2), PV: bit(p + 0.25), AC: bit(p + 0.3), AV: bit(p + 0.1)}
		g.WS = g.TS * g.PV * g.AC * g.AV
		for _, f := range in.Tasks[taskIdx].Fields {
			pass := rng.Float64() < p+0.3
			fr := grade.FieldResult{Field: f, Grader: grade.Exact, Required: f != "field_6", Gold: json.RawMessage(`"x"`), Pred: json.RawMessage(`"x"`)}
			if pass {
				fr.Score, fr.Pass = 1, true
				g.AFA.Correct++
			}
			g.AFA.Total++
			g.Fields = append(g.Fields, fr)
		}
		g.AFA.Value = float64(g.AFA.Correct) / float64(g.AFA.Total)
		if g.TS == 1 {
			ttr := int64(60000 + rng.IntN(140000) + 10000*sys)
			g.TTRMS = &ttr
		}
		s := Session{ID: id, Task: in.Tasks[taskIdx].ID, System: in.Systems[sys].Label, Mode: mode, Seed: seed, Repeat: repeat,
			Ended: true, EndReason: "caller_hung_up", Grade: g}
		if mode == Human {
			participant++
			s.Participant = fmt.Sprintf("p%03d", participant)
		}
		for range 6 + rng.IntN(6) {
			s.Measures.LatenciesMS = append(s.Measures.LatenciesMS, int64(350+rng.IntN(900)+100*sys))
		}
		if sys%2 == 0 {
			s.Measures.Usage = &Usage{Responses: 8, InputTokens: int64(3000 + rng.IntN(2000)), OutputTokens: int64(1500 + rng.IntN(800)),
				InputAudioTokens: 2000, OutputAudioTokens: 1200, InputAudioSeconds: 60, OutputAudioSeconds: 45}
		}
		return s
	}
	n := 0
	for sys := range sh.Systems {
		for t := range sh.Tasks {
			repeats := 1
			if t < sh.Anchors {
				repeats = 2
			}
			for r := 1; r <= repeats; r++ {
				n++
				s := mk(fmt.Sprintf("h%04d", n), sys, t, Human, 0, r)
				switch n % 17 {
				case 5:
					s.Exclusion = &Exclusion{Reason: "caller_broke_script", Note: "read the card aloud", By: "alice"}
				case 11:
					s.Exclusion = &Exclusion{Reason: "platform_lost", By: "system"}
				}
				in.Sessions = append(in.Sessions, s)
			}
			for seed := 1; seed <= sh.Seeds; seed++ {
				n++
				in.Sessions = append(in.Sessions, mk(fmt.Sprintf("s%04d", n), sys, t, Synthetic, int64(seed), 0))
			}
		}
	}
	for t := range sh.Tasks {
		for it := range sh.ItemsPerTask {
			item := fmt.Sprintf("%s/plan-%d", in.Tasks[t].ID, it+1)
			base := 3 + rng.IntN(3)
			for a := range sh.Annotators {
				jitter := func() int { return min(5, max(1, base+rng.IntN(3)-1)) }
				in.Ratings = append(in.Ratings, Rating{Item: item, Task: in.Tasks[t].ID, Plan: fmt.Sprintf("plan-%d", it+1),
					Annotator: fmt.Sprintf("ann-%d", a+1), Fidelity: jitter(), Naturalness: jitter(), Leakage: rng.IntN(12) == 0})
			}
		}
	}
	return in
}

// fullStudy is the benchmark's size: 5 systems × 24 tasks × 3 synthetic repeats, 6 anchors, 72 items
// rated by three annotators.
var fullStudy = studyShape{Systems: 5, Tasks: 24, Seeds: 3, Anchors: 6, Annotators: 3, ItemsPerTask: 3}
