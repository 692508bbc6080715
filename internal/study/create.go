package study

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/voicebench/humanaudit/internal/audit"
)

// Records is what creating and extending a study writes (the store implements it).
type Records interface {
	Study(ctx context.Context, id string) (audit.Study, error)
	CreateStudy(ctx context.Context, s audit.Study) (audit.Study, error)
	UpsertSystem(ctx context.Context, s audit.System) (audit.System, error)
	System(ctx context.Context, label string) (audit.System, error)
	PutTask(ctx context.Context, id string, version int, spec []byte) (audit.TaskVersion, error)
	AddPlan(ctx context.Context, studyID string, rows []audit.PlanRow) (int, error)
	Assignments(ctx context.Context, studyID string) ([]audit.Assignment, error)
	CreateParticipant(ctx context.Context, np audit.NewParticipant) (audit.Participant, error)
}

// Definition is a study to create from a plan, with what the console needs to run it.
type Definition struct {
	// Study is the study's record; its Config carries the participant-facing settings (consent,
	// title, completion code, …), and the plan's limits are added under "plan".
	Study audit.Study
	Plan  []Session
	// References are the plan's systems and tasks, as the console calls and grades them.
	References
	// Participants is how many participant links to issue; below zero, one per plan slot.
	Participants int
}

// References are how to call every system a plan names (family and settings; each gets its blind
// alias when stored) and the spec of every task it names, stored so that its sessions stay
// gradable against the version they ran.
type References struct {
	Systems []audit.System
	Tasks   []audit.TaskVersion
}

// Created is what Create or Extend stored.
type Created struct {
	Study audit.Study
	// Added counts the plan rows stored; Kept those that were stored already (Extend).
	Added, Kept int
	// Slots counts the plan's participant slots (Create) or the new ones (Extend).
	Slots int
	// Systems are the plan's systems as stored, by label: Alias is what participants see (Create).
	Systems []audit.System
	// Participants are the issued participants, with their link tokens (Create).
	Participants []audit.Participant
	// Warnings are the plan's breaches of the study's constraints that Extend let through.
	Warnings []string
}

// ErrExists is returned by Create for a study id that is taken.
var ErrExists = errors.New("study exists already")

// PlanError is a plan that breaks the study's constraints: one line per problem (Verify).
type PlanError struct{ Problems []string }

func (e *PlanError) Error() string {
	return fmt.Sprintf("the plan breaks the study's constraints (%d problems): %s", len(e.Problems), strings.Join(e.Problems, "; "))
}

// Create stores a new study from a verified plan: its systems (with blind aliases) and task specs,
// the study record with the plan's limits, the plan rows, and the participant links. A plan that
// breaks the study's constraints is a *PlanError; a taken id ErrExists. After an error, Created
// holds what was stored.
func Create(ctx context.Context, db Records, d Definition) (Created, error) {
	if problems := Verify(d.Plan); len(problems) > 0 {
		return Created{}, &PlanError{Problems: problems}
	}
	cfg, err := WithPlanConfig(d.Study.Config, PlanConfigOf(d.Plan))
	if err != nil {
		return Created{}, err
	}
	st := d.Study
	st.Config = cfg
	if st.Name == "" {
		st.Name = st.ID
	}
	if _, err := db.Study(ctx, st.ID); err == nil {
		return Created{}, fmt.Errorf("study %s: %w", st.ID, ErrExists)
	}
	if err := Register(ctx, db, d.References); err != nil {
		return Created{}, err
	}
	if st, err = db.CreateStudy(ctx, st); err != nil {
		return Created{}, err
	}
	out := Created{Study: st, Slots: countSlots(d.Plan)}
	if out.Added, err = db.AddPlan(ctx, st.ID, PlanRows(d.Plan)); err != nil {
		return out, err
	}
	if out.Systems, err = planSystems(ctx, db, d.Plan); err != nil {
		return out, err
	}
	n := d.Participants
	if n < 0 {
		n = out.Slots
	}
	out.Participants, err = Issue(ctx, db, st.ID, n)
	return out, err
}

// Extend adds a plan's rows to a running study without touching finished work: rows whose slot
// and position are stored already are kept as they are, and new slots and positions are added.
// The plan's breaches of the study's constraints are returned as warnings, not refused.
func Extend(ctx context.Context, db Records, studyID string, plan []Session, refs References) (Created, error) {
	st, err := db.Study(ctx, studyID)
	if err != nil {
		return Created{}, err
	}
	out := Created{Study: st, Warnings: Verify(plan)}
	before, err := db.Assignments(ctx, studyID)
	if err != nil {
		return out, err
	}
	old := map[string]bool{}
	for _, a := range before {
		if a.Slot != "" {
			old[a.Slot] = true
		}
	}
	fresh := map[string]bool{}
	for _, s := range plan {
		if !old[s.Participant] {
			fresh[s.Participant] = true
		}
	}
	if err := Register(ctx, db, refs); err != nil {
		return out, err
	}
	if out.Added, err = db.AddPlan(ctx, studyID, PlanRows(plan)); err != nil {
		return out, err
	}
	out.Slots, out.Kept = len(fresh), len(plan)-out.Added
	return out, nil
}

// Register stores a plan's systems (each gets its blind alias on first store) and task specs, so
// that the plan's references resolve and its sessions can be graded against the spec they ran.
func Register(ctx context.Context, db Records, refs References) error {
	for _, s := range refs.Systems {
		if _, err := db.UpsertSystem(ctx, s); err != nil {
			return err
		}
	}
	for _, t := range refs.Tasks {
		if _, err := db.PutTask(ctx, t.ID, t.Version, t.Spec); err != nil {
			return err
		}
	}
	return nil
}

// Issue creates n participants of a study, each with a fresh link token.
func Issue(ctx context.Context, db Records, studyID string, n int) ([]audit.Participant, error) {
	var out []audit.Participant
	for range n {
		p, err := db.CreateParticipant(ctx, audit.NewParticipant{StudyID: studyID})
		if err != nil {
			return out, err
		}
		out = append(out, p)
	}
	return out, nil
}

// PlanRows converts plan sessions to the rows the store keeps.
func PlanRows(sessions []Session) []audit.PlanRow {
	rows := make([]audit.PlanRow, len(sessions))
	for i, s := range sessions {
		rows[i] = audit.PlanRow{Slot: s.Participant, Position: s.Position, Task: s.Task, System: s.System, Repeat: s.Repeat, Condition: s.Condition}
	}
	return rows
}

// PlanOf is the plan of a study's stored assignments: the plan slots' rows, without the pool cells
// that re-run excluded sessions.
func PlanOf(as []audit.Assignment) []Session {
	var out []Session
	for _, a := range as {
		if a.Slot != "" {
			out = append(out, Session{Participant: a.Slot, Position: a.Position, Task: a.Task, System: a.System, Repeat: a.Repeat, Condition: a.Condition})
		}
	}
	return out
}

// Labels returns the sorted system labels and task ids a plan names.
func Labels(sessions []Session) (systems, tasks []string) {
	ls, ts := map[string]bool{}, map[string]bool{}
	for _, s := range sessions {
		ls[s.System], ts[s.Task] = true, true
	}
	return sortedKeys(ls), sortedKeys(ts)
}

func countSlots(sessions []Session) int {
	seen := map[string]bool{}
	for _, s := range sessions {
		seen[s.Participant] = true
	}
	return len(seen)
}

// planSystems reads back the plan's systems by label, with their aliases.
func planSystems(ctx context.Context, db Records, plan []Session) ([]audit.System, error) {
	labels, _ := Labels(plan)
	out := make([]audit.System, 0, len(labels))
	for _, l := range labels {
		s, err := db.System(ctx, l)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
