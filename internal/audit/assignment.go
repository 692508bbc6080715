package audit

import "time"

// AssignmentStatus is where a planned session stands.
type AssignmentStatus string

// Assignment states: pending → running (claimed) → done (its session ended) or excluded (its
// session was excluded; a fresh pending copy of the cell goes back to the pool).
const (
	StatusPending  AssignmentStatus = "pending"
	StatusRunning  AssignmentStatus = "running"
	StatusDone     AssignmentStatus = "done"
	StatusExcluded AssignmentStatus = "excluded"
)

// PlanRow is one planned session of a study plan (plan.csv): planned participant Slot does Task
// with System at Position; Repeat is 1 for a cell's first run, 2 for the anchor repeat.
type PlanRow struct {
	Slot     string
	Position int
	Task     string
	System   string // system label
	Repeat   int
	// Condition is the listening condition the cell is run under ("" quiet), e.g. "phone_line+babble@5".
	Condition string
}

// Assignment is one planned session of one cell (task × system × repeat) at run time.
type Assignment struct {
	ID            int64
	StudyID       string
	Slot          string // "" for a cell returned to the pool
	ParticipantID int64  // 0 until a participant is bound
	Position      int    // 1-based order in the participant's sequence; 0 while in the pool
	Task          string
	System        string
	Repeat        int
	Status        AssignmentStatus
	SessionID     string
	Replaces      int64  // the excluded assignment this pool cell re-runs
	Condition     string // the planned listening condition ("" quiet); a re-run keeps it
	CreatedAt     time.Time
	ClaimedAt     time.Time
	FinishedAt    time.Time
}

// Progress counts assignments by state.
type Progress struct {
	Pending, Running, Done, Excluded int
}

// Total is the number of assignment rows. Each exclusion adds a row (the excluded run) and returns
// a pending copy of the cell, so the number of planned cells is Total − Excluded.
func (p Progress) Total() int { return p.Pending + p.Running + p.Done + p.Excluded }

// Add counts n assignments in status.
func (p *Progress) Add(status AssignmentStatus, n int) {
	switch status {
	case StatusPending:
		p.Pending += n
	case StatusRunning:
		p.Running += n
	case StatusDone:
		p.Done += n
	case StatusExcluded:
		p.Excluded += n
	}
}

// StudyProgress is a study's progress overall, per system label and per task.
type StudyProgress struct {
	Study    Progress
	BySystem map[string]Progress
	ByTask   map[string]Progress
}

// StatusRow is one line of status.csv: an assignment with who did it and how it ended.
type StatusRow struct {
	AssignmentID    int64
	Slot            string
	Position        int
	ParticipantID   int64
	ProlificPID     string
	Task            string
	System          string // label (experimenter-side export)
	Alias           string
	Repeat          int
	Status          AssignmentStatus
	SessionID       string
	ClaimedAt       time.Time
	FinishedAt      time.Time
	ExclusionReason ExclusionReason
	Replaces        int64
}
