package report

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/trace"
)

// crossedStudy is 5 systems × 24 tasks in which participant p runs task (p + s) mod 24 with
// system s: every cell once, every participant five sessions on five tasks, one per system. AFA is
// 0.6 plus the participant's effect (SD participantSD) plus session noise (SD 0.1); the synthetic
// caller has the session noise only, three runs per cell.
func crossedStudy(participantSD float64, seed uint64) Input {
	rng := rand.New(rand.NewPCG(seed, 3))
	in := Input{Study: StudyInfo{ID: "crossed"}}
	for s := range 5 {
		in.Systems = append(in.Systems, SystemInfo{Label: fmt.Sprintf("sys-%d", s)})
	}
	for t := range 24 {
		in.Tasks = append(in.Tasks, TaskInfo{ID: fmt.Sprintf("task-%02d", t)})
	}
	session := func(id, sys, task string, mode Mode, participant string, afa float64) Session {
		afa = min(1, max(0, afa))
		ws := 0
		if afa > 0.6 {
			ws = 1
		}
		g := &grade.Result{Task: task, Grader: grade.Version, WS: ws, AFA: grade.AFA{Value: afa, Total: 10, Correct: int(10 * afa)}}
		return Session{ID: id, System: sys, Task: task, Mode: mode, Participant: participant, Ended: true, Grade: g}
	}
	for p := range 24 {
		u := rng.NormFloat64() * participantSD
		for s := range 5 {
			task := in.Tasks[(p+s)%24].ID
			in.Sessions = append(in.Sessions, session(fmt.Sprintf("h-%d-%d", p, s), in.Systems[s].Label, task, Human,
				fmt.Sprintf("p%02d", p), 0.6+u+0.1*rng.NormFloat64()))
		}
	}
	for s := range 5 {
		for t := range 24 {
			for k := range 3 {
				in.Sessions = append(in.Sessions, session(fmt.Sprintf("s-%d-%d-%d", s, t, k), in.Systems[s].Label, in.Tasks[t].ID, Synthetic, "",
					0.6+0.1*rng.NormFloat64()))
			}
		}
	}
	return in
}

func TestParticipantShareAndSensitivity(t *testing.T) {
	width := func(iv Interval) float64 { return float64(iv.High - iv.Low) }
	build := func(t *testing.T, sd float64) (ICCRow, SensitivityRow, *Report) {
		t.Helper()
		r, err := Build(crossedStudy(sd, 1), Options{Seed: 5, Resamples: 4000})
		if err != nil {
			t.Fatal(err)
		}
		p := r.Participants
		if p == nil || p.Participants != 24 || p.Sessions != 120 {
			t.Fatalf("participants %+v, want 24 participants and 120 sessions", p)
		}
		var icc ICCRow
		for _, x := range p.ICC {
			if x.Metric == MetricAFA {
				icc = x
			}
		}
		var pooled SensitivityRow
		for _, x := range p.Sensitivity {
			if x.System == AllSystems && x.Metric == MetricAFA {
				pooled = x
			}
			// Both bootstraps start from the same estimate: the report's delta.
			if d, _ := r.delta(x.System, x.Metric); math.Abs(float64(x.ParticipantLevel.Estimate-d.Diff.Estimate)) > 1e-12 {
				t.Errorf("%s %s: participant-level estimate %v, delta %v", x.System, x.Metric, x.ParticipantLevel.Estimate, d.Diff.Estimate)
			}
		}
		t.Logf("participant SD %.2f: AFA ICC %.3f [%.3f, %.3f]; pooled AFA delta %+.4f, task-level [%+.4f, %+.4f], participant-level [%+.4f, %+.4f]",
			sd, icc.ICC.Estimate, icc.ICC.Low, icc.ICC.High, pooled.TaskLevel.Estimate, pooled.TaskLevel.Low, pooled.TaskLevel.High,
			pooled.ParticipantLevel.Low, pooled.ParticipantLevel.High)
		if icc.Participants != 24 || icc.ICC.Clusters != 24 {
			t.Errorf("ICC row %+v: want 24 participants resampled", icc)
		}
		return icc, pooled, r
	}
	t.Run("participants who differ carry most of the variance and widen the pooled interval", func(t *testing.T) {
		// Residual variance: 0.15² between participants, 0.1² + 0.1²/3 within: an ICC of about 0.63.
		icc, pooled, r := build(t, 0.15)
		if !(icc.ICC.Estimate > 0.4 && icc.ICC.Low > 0.2) {
			t.Errorf("ICC %v [%v, %v], want about 0.63 and clear of 0", icc.ICC.Estimate, icc.ICC.Low, icc.ICC.High)
		}
		// The pooled delta's tasks share participants: resampling tasks misses that, resampling
		// participants does not (about 1.8× wider here).
		if ratio := width(pooled.ParticipantLevel) / width(pooled.TaskLevel); ratio < 1.4 {
			t.Errorf("pooled AFA: participant-level width / task-level width = %.2f, want > 1.4 (%+v)", ratio, pooled)
		}
		files, err := Render(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if f.Path == "report.md" {
				for _, want := range []string{"## Participants: share of variance and sensitivity of the deltas", "participant-level CI", "expanded percentile", "BCa CI"} {
					if !strings.Contains(string(f.Data), want) {
						t.Errorf("report.md lacks %q", want)
					}
				}
			}
			if f.Path == "icc.csv" && !strings.Contains(string(f.Data), "afa,24,120,5,") {
				t.Errorf("icc.csv:\n%s", f.Data)
			}
		}
	})
	t.Run("participants who do not differ carry none", func(t *testing.T) {
		icc, pooled, _ := build(t, 0)
		if math.Abs(float64(icc.ICC.Estimate)) > 0.2 || icc.ICC.Low > 0 {
			t.Errorf("ICC %v [%v, %v], want about 0 with 0 inside", icc.ICC.Estimate, icc.ICC.Low, icc.ICC.High)
		}
		// Without a participant effect only the synthetic means' noise (held fixed by the
		// participant-level bootstrap) separates the two: √(0.01 / (0.01 + 0.01/3)) = 0.87.
		if ratio := width(pooled.ParticipantLevel) / width(pooled.TaskLevel); ratio < 0.6 || ratio > 1.2 {
			t.Errorf("pooled AFA: participant-level width / task-level width = %.2f, want about 0.87", ratio)
		}
	})
}

func TestMeasureCueAdherenceReadsNewAndOldTraces(t *testing.T) {
	yes, no := true, false
	events := []trace.Event{
		{T: 1000, Type: trace.CueIssued, CueID: "a"},
		{T: 3000, Type: trace.CueSpoken, CueID: "a", RefMS: 2000, OK: &yes},
		{T: 4000, Type: trace.CueApplied, CueID: "a", OK: &no},
		{T: 5000, Type: trace.CueIssued, CueID: "b"},
		{T: 9000, Type: trace.CueSpoken, CueID: "b", OK: &no, Text: "no caller speech after the cue"},
		{T: 9000, Type: trace.CueApplied, CueID: "b", OK: &no},
		// A trace recorded before cue.spoken/cue.applied.
		{T: 10000, Type: trace.CueIssued, CueID: "c"},
		{T: 12000, Type: trace.CueActed, CueID: "c", RefMS: 11000, OK: &yes},
	}
	got := Measure(events).Cues
	want := CueCounts{Issued: 3, Spoken: 2, Said: 1, SaidKnown: 2, Applied: 1}
	if got != want {
		t.Fatalf("cue counts %+v, want %+v", got, want)
	}
}
