package report

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// Source is what Load reads of a study's records (the store implements it).
type Source interface {
	Study(ctx context.Context, id string) (audit.Study, error)
	ListSessions(ctx context.Context, f audit.SessionFilter) ([]audit.SessionSummary, error)
	EventsOfTypes(ctx context.Context, sessionID string, types ...trace.Type) ([]trace.Event, error)
	Task(ctx context.Context, id string, version int) (audit.TaskVersion, error)
	Systems(ctx context.Context) ([]audit.System, error)
	RatingsLong(ctx context.Context, studyID string) ([]audit.RatingRow, error)
	Assignments(ctx context.Context, studyID string) ([]audit.Assignment, error)
}

// Load reads a study from the store: its human sessions, the synthetic sessions of the same
// systems and tasks (run outside any study or in this one), their grades, exclusions and traces,
// the tasks they ran, and the annotators' ratings. A study with neither a plan nor human sessions
// takes every synthetic session (a synthetic-only report).
func Load(ctx context.Context, src Source, studyID string) (Input, error) {
	st, err := src.Study(ctx, studyID)
	if err != nil {
		return Input{}, fmt.Errorf("load study %s: %w", studyID, err)
	}
	in := Input{Study: StudyInfo{ID: st.ID, Name: st.Name, Seed: st.Seed}}
	human, err := src.ListSessions(ctx, audit.SessionFilter{StudyID: studyID, Mode: audit.ModeHuman})
	if err != nil {
		return Input{}, fmt.Errorf("load study %s: %w", studyID, err)
	}
	plan, err := src.Assignments(ctx, studyID)
	if err != nil {
		return Input{}, fmt.Errorf("load study %s: %w", studyID, err)
	}
	scopeSystems, scopeTasks := map[string]bool{}, map[string]bool{}
	perSlot := map[string]int{}
	for _, a := range plan {
		scopeSystems[a.System], scopeTasks[a.Task] = true, true
		if a.Slot != "" {
			perSlot[a.Slot]++
			if a.Repeat == 2 {
				in.AnchorRepeats++
			}
		}
	}
	for _, n := range perSlot {
		in.SessionsPerParticipant = max(in.SessionsPerParticipant, n)
	}
	for _, s := range human {
		scopeSystems[s.System], scopeTasks[s.TaskID] = true, true
	}
	everything := len(scopeSystems) == 0
	synth, err := src.ListSessions(ctx, audit.SessionFilter{Mode: audit.ModeSynthetic})
	if err != nil {
		return Input{}, fmt.Errorf("load study %s: %w", studyID, err)
	}
	sessions := human
	for _, s := range synth {
		if (s.StudyID == "" || s.StudyID == studyID) && (everything || scopeSystems[s.System] && scopeTasks[s.TaskID]) {
			sessions = append(sessions, s)
		}
	}

	versions := map[string]int{} // the newest version of each task a session ran
	usedSystems := map[string]bool{}
	for _, s := range sessions {
		versions[s.TaskID] = max(versions[s.TaskID], s.TaskVersion)
		usedSystems[s.System] = true
		rs, err := loadSession(ctx, src, s)
		if err != nil {
			return Input{}, err
		}
		in.Sessions = append(in.Sessions, rs)
	}
	for _, id := range slices.Sorted(maps.Keys(versions)) {
		t, err := src.Task(ctx, id, versions[id])
		if err != nil {
			return Input{}, fmt.Errorf("load task %s v%d: %w", id, versions[id], err)
		}
		tk, err := task.Parse(fmt.Sprintf("stored task %s v%d", id, versions[id]), t.Spec)
		if err != nil {
			return Input{}, fmt.Errorf("load task %s v%d: %w", id, versions[id], err)
		}
		in.Tasks = append(in.Tasks, TaskInfoOf(tk))
	}
	syss, err := src.Systems(ctx)
	if err != nil {
		return Input{}, fmt.Errorf("load systems: %w", err)
	}
	for _, s := range syss {
		if usedSystems[s.Label] || scopeSystems[s.Label] {
			in.Systems = append(in.Systems, SystemInfo{Label: s.Label, Alias: s.Alias, Family: s.Family})
		}
	}
	rows, err := src.RatingsLong(ctx, studyID)
	if err != nil {
		return Input{}, fmt.Errorf("load ratings: %w", err)
	}
	for _, r := range rows {
		in.Ratings = append(in.Ratings, Rating{Item: r.ItemID, Task: r.TaskID, Plan: r.PlanID, Annotator: strconv.FormatInt(r.AnnotatorID, 10),
			Fidelity: r.Fidelity, Naturalness: r.Naturalness, Leakage: r.Leakage})
	}
	sort.SliceStable(in.Sessions, func(i, j int) bool { return in.Sessions[i].ID < in.Sessions[j].ID })
	return in, nil
}

func loadSession(ctx context.Context, src Source, s audit.SessionSummary) (Session, error) {
	rs := Session{ID: s.ID, Task: s.TaskID, System: s.System, Mode: Mode(s.Mode), Seed: s.Seed, Repeat: s.Repeat,
		Ended: s.Status == audit.SessionEnded, EndReason: s.EndReason}
	if s.ParticipantID != 0 {
		rs.Participant = strconv.FormatInt(s.ParticipantID, 10)
	}
	if s.Exclusion != nil {
		rs.Exclusion = &Exclusion{Reason: string(s.Exclusion.Reason), Note: s.Exclusion.Note, By: s.Exclusion.By}
	}
	if s.Score != nil {
		var g grade.Result
		if err := json.Unmarshal(s.Score.Grade, &g); err != nil {
			return rs, fmt.Errorf("session %s: stored grade: %w", s.ID, err)
		}
		rs.Grade = &g
	}
	events, err := src.EventsOfTypes(ctx, s.ID, MeasuredTypes...)
	if err != nil {
		return rs, fmt.Errorf("session %s: events: %w", s.ID, err)
	}
	rs.Measures = Measure(events)
	return rs, nil
}
