package audit

import (
	"encoding/json"
	"time"
)

// Study is one audit study: its plan, participants and annotators hang off it.
type Study struct {
	ID   string // short slug chosen by the experimenter ("pilot-1"); used in URLs and reports
	Name string
	Seed int64 // seeds the plan and annotator orders
	// Config holds the study's settings for the console (consent text, completion code, …).
	Config    json.RawMessage
	CreatedAt time.Time
}

// System is an evaluated voice agent. Participants and annotators only ever see its Alias.
type System struct {
	Label  string // the experimenter's name for it, also the key under which its API key is found
	Alias  string // blind name shown to participants ("Agent A"); assigned when empty
	Family string // protocol family (openai-realtime, …)
	// Config holds non-secret settings (model, voice, endpoint). Keys never go here: Checked,
	// which every repository's UpsertSystem calls, refuses anything that looks like a credential.
	Config    json.RawMessage
	CreatedAt time.Time
}

// TaskVersion is one version of a task spec as loaded from tasks/, stored so that sessions stay
// gradable against the spec they ran.
type TaskVersion struct {
	ID       string
	Version  int
	SHA256   string          // hex SHA-256 of Spec
	Spec     json.RawMessage // the task file's bytes, kept exactly
	LoadedAt time.Time
}
