// Package reporttest builds small but realistic audit studies in a store (a real one, from
// storetest) for report tests: human sessions run through the study plan (participants claim their
// assignments, anchor cells are repeated by a second participant), synthetic sessions per seed,
// every trace produced by a text-level call of a real task with a scripted agent and graded by the
// real grader, exclusions, provider usage, and ratings of frozen utterances by several annotators.
package reporttest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/textcall"
	"github.com/voicebench/humanaudit/internal/trace"
)

// Spec sizes a study.
type Spec struct {
	StudyID    string
	Seed       int64
	Systems    []string // labels; the first reports provider usage, the others none
	TaskFiles  []string // task files; tasks flagged anchor get a second human session per system
	Seeds      int      // synthetic sessions per (system, task)
	Annotators int
}

// Session is one stored session with everything it was made from, for independent checks.
type Session struct {
	ID          string
	System      string
	Task        string
	Mode        audit.Mode
	Seed        int64
	Repeat      int
	Participant int64
	Events      []trace.Event
	Grade       grade.Result
	Exclusion   audit.ExclusionReason // "" when the session counts
}

// Rating is one stored rating.
type Rating struct {
	Item, Task, Plan string
	Annotator        int64
	Fidelity         int
	Naturalness      int
	Leakage          bool
}

// Study is what Populate stored.
type Study struct {
	Tasks    []*task.Task
	Sessions []Session
	Ratings  []Rating
}

// flawsFor picks a scripted agent's flaws so that systems, modes and tasks differ in outcome
// deterministically: the first system is mostly sound, later ones less so, and human sessions
// fail a little more often than synthetic ones.
func flawsFor(sys, taskIdx, k int, mode audit.Mode) textcall.Flaws {
	x := sys*5 + taskIdx*3 + k
	if mode == audit.ModeHuman {
		x += 2
	}
	switch x % 7 {
	case 1:
		return textcall.Flaws{IgnoreCorrections: true}
	case 3:
		return textcall.Flaws{CommitWithoutApproval: true}
	case 5:
		return textcall.Flaws{NeverMarkReady: true}
	case 6:
		if sys > 0 {
			return textcall.Flaws{SpeakProtectedEarly: true, IgnoreCorrections: true}
		}
	}
	return textcall.Flaws{}
}

// Store is where Populate writes a study (the store implements it).
type Store interface {
	CreateStudy(ctx context.Context, s audit.Study) (audit.Study, error)
	UpsertSystem(ctx context.Context, s audit.System) (audit.System, error)
	PutTask(ctx context.Context, id string, version int, spec []byte) (audit.TaskVersion, error)
	AddPlan(ctx context.Context, studyID string, rows []audit.PlanRow) (int, error)
	CreateParticipant(ctx context.Context, np audit.NewParticipant) (audit.Participant, error)
	ClaimNext(ctx context.Context, participantID int64) (audit.Assignment, error)
	CreateSession(ctx context.Context, ns audit.NewSession) (audit.Session, error)
	StartSession(ctx context.Context, id string) error
	AppendEvents(ctx context.Context, sessionID string, events []trace.Event) error
	SaveScore(ctx context.Context, s audit.Score) error
	EndSession(ctx context.Context, id, reason string) error
	ExcludeSession(ctx context.Context, e audit.Exclusion) (audit.Assignment, error)
	PutRatingItems(ctx context.Context, items []audit.RatingItem) error
	CreateAnnotator(ctx context.Context, studyID string) (audit.Annotator, error)
	SaveRating(ctx context.Context, r audit.Rating) (audit.Rating, error)
}

// Populate stores the study described by spec in db and returns what it stored.
func Populate(tb testing.TB, db Store, spec Spec) Study {
	tb.Helper()
	ctx := context.Background()
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	var out Study
	if _, err := db.CreateStudy(ctx, audit.Study{ID: spec.StudyID, Name: "Report test " + spec.StudyID, Seed: spec.Seed}); err != nil {
		tb.Fatal(err)
	}
	for _, label := range spec.Systems {
		_, err := db.UpsertSystem(ctx, audit.System{Label: label, Family: "openai"})
		must(err)
	}
	byID := map[string]int{}
	for i, f := range spec.TaskFiles {
		t, err := task.LoadFile(f)
		must(err)
		b, err := os.ReadFile(f)
		must(err)
		_, err = db.PutTask(ctx, t.ID, t.Version, b)
		must(err)
		out.Tasks = append(out.Tasks, t)
		byID[t.ID] = i
	}
	sysIdx := map[string]int{}
	for i, s := range spec.Systems {
		sysIdx[s] = i
	}

	run := func(sys, taskIdx, k int, mode audit.Mode, seed int64) ([]trace.Event, grade.Result) {
		tb.Helper()
		t := out.Tasks[taskIdx]
		ev, err := textcall.Run(ctx, t, textcall.NewScripted(t, flawsFor(sys, taskIdx, k, mode)), textcall.Options{Seed: seed})
		must(err)
		if sys == 0 {
			ev = withUsage(ev, k)
		}
		g, err := grade.Grade(ctx, t, ev, grade.Options{})
		must(err)
		return ev, g
	}
	save := func(id string, ev []trace.Event, g grade.Result) {
		tb.Helper()
		must(db.StartSession(ctx, id))
		must(db.AppendEvents(ctx, id, ev))
		doc, err := grade.Encode(g)
		must(err)
		afa := g.AFA.Value
		must(db.SaveScore(ctx, audit.Score{SessionID: id, GraderVersion: g.Grader, Grade: doc, WS: g.WS == 1, TS: g.TS == 1,
			PV: g.PV == 1, AC: g.AC == 1, AV: g.AV == 1, AFA: &afa, TTRMS: g.TTRMS}))
		must(db.EndSession(ctx, id, ev[len(ev)-1].Text))
	}

	// Human sessions through the plan: slot H<n> calls every task with system n, slot A<n> repeats
	// the anchor tasks with it.
	var plan []audit.PlanRow
	for si, sys := range spec.Systems {
		pos := 0
		for _, t := range out.Tasks {
			pos++
			plan = append(plan, audit.PlanRow{Slot: fmt.Sprintf("H%d", si+1), Position: pos, Task: t.ID, System: sys, Repeat: 1})
		}
		pos = 0
		for _, t := range out.Tasks {
			if t.InSubset(task.SubsetAnchor) {
				pos++
				plan = append(plan, audit.PlanRow{Slot: fmt.Sprintf("A%d", si+1), Position: pos, Task: t.ID, System: sys, Repeat: 2})
			}
		}
	}
	_, err := db.AddPlan(ctx, spec.StudyID, plan)
	must(err)
	slots := map[string]bool{}
	for _, r := range plan {
		slots[r.Slot] = true
	}
	for range len(slots) {
		p, err := db.CreateParticipant(ctx, audit.NewParticipant{StudyID: spec.StudyID})
		must(err)
		for {
			a, err := db.ClaimNext(ctx, p.ID)
			if err != nil {
				break // ErrNoAssignment: this participant's slot is done
			}
			ti := byID[a.Task]
			ev, g := run(sysIdx[a.System], ti, a.Repeat, audit.ModeHuman, a.ID)
			s, err := db.CreateSession(ctx, audit.NewSession{AssignmentID: a.ID, ParticipantID: p.ID, TaskID: a.Task,
				TaskVersion: out.Tasks[ti].Version, System: a.System, Mode: audit.ModeHuman, Seed: a.ID})
			must(err)
			save(s.ID, ev, g)
			out.Sessions = append(out.Sessions, Session{ID: s.ID, System: a.System, Task: a.Task, Mode: audit.ModeHuman,
				Seed: a.ID, Repeat: a.Repeat, Participant: p.ID, Events: ev, Grade: g})
		}
	}
	for si, sys := range spec.Systems {
		for ti, t := range out.Tasks {
			for seed := 1; seed <= spec.Seeds; seed++ {
				ev, g := run(si, ti, seed, audit.ModeSynthetic, int64(seed))
				s, err := db.CreateSession(ctx, audit.NewSession{TaskID: t.ID, TaskVersion: t.Version, System: sys,
					Mode: audit.ModeSynthetic, Seed: int64(seed)})
				must(err)
				save(s.ID, ev, g)
				out.Sessions = append(out.Sessions, Session{ID: s.ID, System: sys, Task: t.ID, Mode: audit.ModeSynthetic,
					Seed: int64(seed), Events: ev, Grade: g})
			}
		}
	}
	// Exclusions: the first human session that passed (the caller read out the card) and the first
	// synthetic one (the agent connection dropped).
	for _, want := range []struct {
		mode   audit.Mode
		passed bool
		reason audit.ExclusionReason
		by     string
	}{{audit.ModeHuman, true, audit.ReasonCallerBrokeScript, "tester"}, {audit.ModeSynthetic, false, audit.ReasonPlatformLost, "system"}} {
		for i := range out.Sessions {
			s := &out.Sessions[i]
			if s.Mode == want.mode && (!want.passed || s.Grade.WS == 1) {
				_, err := db.ExcludeSession(ctx, audit.Exclusion{SessionID: s.ID, Reason: want.reason, Note: "report test", By: want.by})
				must(err)
				s.Exclusion = want.reason
				break
			}
		}
	}

	// Ratings: two items per task (the opening and the first other plan) by every annotator.
	var items []audit.RatingItem
	for _, t := range out.Tasks {
		plans := slices.Sorted(maps.Keys(t.Bank))
		if len(plans) < 2 {
			plans = []string{"open", "close"}
		}
		for _, p := range plans[:2] {
			items = append(items, audit.RatingItem{ID: t.ID + "/" + p, TaskID: t.ID, PlanID: p, Variant: "1", Payload: json.RawMessage(`{}`)})
		}
	}
	must(db.PutRatingItems(ctx, items))
	for a := range spec.Annotators {
		an, err := db.CreateAnnotator(ctx, spec.StudyID)
		must(err)
		for i, it := range items {
			fid := 3 + (i+a)%3     // 3..5, raters shifted against each other
			nat := 2 + (i*2+a*a)%4 // 2..5
			leak := (i+a)%5 == 0 && i%2 == 0
			_, err := db.SaveRating(ctx, audit.Rating{AnnotatorID: an.ID, ItemID: it.ID, Fidelity: fid, Naturalness: nat, Leakage: leak})
			must(err)
			out.Ratings = append(out.Ratings, Rating{Item: it.ID, Task: it.TaskID, Plan: it.PlanID, Annotator: an.ID,
				Fidelity: fid, Naturalness: nat, Leakage: leak})
		}
	}
	return out
}

// withUsage adds the provider's usage report after every response, as the adapters do, and
// renumbers the trace.
func withUsage(ev []trace.Event, k int) []trace.Event {
	var out []trace.Event
	n := 0
	for _, e := range ev {
		out = append(out, e)
		if e.Type == trace.AgentResponseDone {
			n++
			out = append(out, trace.Event{Type: trace.AgentUsage, Actor: trace.ActorAgent, T: e.T, Wall: e.Wall, Meta: map[string]string{
				"input_tokens": strconv.Itoa(400 + 10*n + k), "output_tokens": strconv.Itoa(120 + n),
				"input_audio_tokens": strconv.Itoa(300 + n), "output_audio_tokens": strconv.Itoa(100),
				"input_audio_seconds": "2.500", "output_audio_seconds": "3.000"}})
		}
	}
	for i := range out {
		out[i].Seq = int64(i + 1)
	}
	return out
}
