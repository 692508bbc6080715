package audit

import (
	"encoding/json"
	"time"
)

// Annotator rates frozen caller utterances for a study, reached by the token in their link.
type Annotator struct {
	ID      int64
	StudyID string
	Token   string // the annotator's link secret, known only to CreateAnnotator and AnnotatorByToken: the database keeps its SHA-256
	// SeedPosition distinguishes annotators in the study seed, so each gets their own item order.
	SeedPosition int
	CreatedAt    time.Time
}

// RatingItem is one frozen caller utterance to rate.
type RatingItem struct {
	ID      string
	TaskID  string
	PlanID  string
	Variant string
	// Payload is what an annotator may see: the task-visible user state, the structured plan, the
	// transcript and the audio's location. Never gold or grader state.
	Payload   json.RawMessage
	CreatedAt time.Time
}

// Rating is one annotator's judgement of one item.
type Rating struct {
	AnnotatorID int64
	ItemID      string
	Fidelity    int  // semantic fidelity to the plan, 1–5
	Naturalness int  // naturalness as spoken interaction, 1–5
	Leakage     bool // the utterance gives away something the caller should not know
	Note        string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// RatingRow is one line of ratings.csv (long format), for the experimenter and the report.
type RatingRow struct {
	ItemID      string
	TaskID      string
	PlanID      string
	Variant     string
	AnnotatorID int64
	Fidelity    int
	Naturalness int
	Leakage     bool
	Note        string
	UpdatedAt   time.Time
}
