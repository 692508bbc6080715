package study

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/voicebench/humanaudit/internal/audit"
)

// PlanConfig is what a study's config records about its plan (under "plan") so that the console
// can hand out work beyond the plan's slots with the plan's limits.
type PlanConfig struct {
	SessionsPerParticipant int `json:"sessions_per_participant"`
	MaxPerSystem           int `json:"max_per_system"` // ⌈K/n⌉
	Systems                int `json:"systems"`
}

// PlanConfigOf derives the plan settings from plan sessions (K from the first participant).
func PlanConfigOf(sessions []Session) PlanConfig {
	perParticipant, systems := map[string]int{}, map[string]bool{}
	first := ""
	for _, s := range sessions {
		if first == "" {
			first = s.Participant
		}
		perParticipant[s.Participant]++
		systems[s.System] = true
	}
	k := perParticipant[first]
	return PlanConfig{SessionsPerParticipant: k, MaxPerSystem: ceilDiv(k, max(len(systems), 1)), Systems: len(systems)}
}

// WithPlanConfig returns the study config document cfg with pc set under "plan".
func WithPlanConfig(cfg json.RawMessage, pc PlanConfig) (json.RawMessage, error) {
	return audit.WithConfig(cfg, "plan", pc)
}

// StudyPlanConfig reads the plan settings of a study's config (zero when it has none).
func StudyPlanConfig(cfg json.RawMessage) PlanConfig {
	var doc struct {
		Plan PlanConfig `json:"plan"`
	}
	json.Unmarshal(cfg, &doc)
	return doc.Plan
}

// Handout is what NextAssignment needs of the study's records (the store implements it).
type Handout interface {
	ClaimNext(ctx context.Context, participantID int64) (audit.Assignment, error)
	HandCell(ctx context.Context, participantID int64, maxPerSystem int) (audit.Assignment, error)
	Participant(ctx context.Context, id int64) (audit.Participant, error)
	Study(ctx context.Context, id string) (audit.Study, error)
	ParticipantAssignments(ctx context.Context, participantID int64) ([]audit.Assignment, error)
}

// NextAssignment hands a participant their next session at run time: their plan slot's next
// unfinished session (ClaimNext binds a free slot on first use and resumes a running one); once
// no slot work is left, a cell returned to the pool by an exclusion, coverage first (HandCell:
// first runs before anchor repeats, least-covered cells first), never a task they met and never
// more than the plan's ⌈K/n⌉ sessions with one system, until they have run K sessions that
// count. It returns audit.ErrNoAssignment when nothing is left for them.
func NextAssignment(ctx context.Context, db Handout, participantID int64) (audit.Assignment, error) {
	a, err := db.ClaimNext(ctx, participantID)
	if !errors.Is(err, audit.ErrNoAssignment) {
		return a, err
	}
	p, err := db.Participant(ctx, participantID)
	if err != nil {
		return audit.Assignment{}, err
	}
	st, err := db.Study(ctx, p.StudyID)
	if err != nil {
		return audit.Assignment{}, err
	}
	pc := StudyPlanConfig(st.Config)
	if pc.SessionsPerParticipant == 0 {
		return audit.Assignment{}, fmt.Errorf("study %s records no plan limits: %w", st.ID, audit.ErrNoAssignment)
	}
	mine, err := db.ParticipantAssignments(ctx, participantID)
	if err != nil {
		return audit.Assignment{}, err
	}
	counted := 0
	for _, m := range mine {
		if m.Status != audit.StatusExcluded {
			counted++
		}
	}
	if counted >= pc.SessionsPerParticipant {
		return audit.Assignment{}, fmt.Errorf("participant %d has run %d sessions: %w", participantID, counted, audit.ErrNoAssignment)
	}
	if _, err := db.HandCell(ctx, participantID, pc.MaxPerSystem); err != nil {
		return audit.Assignment{}, err
	}
	return db.ClaimNext(ctx, participantID)
}
