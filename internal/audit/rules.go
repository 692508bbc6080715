package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/voicebench/humanaudit/internal/trace"
)

// The rules below hold whichever repository keeps the records: each returns an ErrInvalid (or
// ErrConflict) Error naming the record, the field and what was expected.

var studyID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// CheckStudyID checks a study id: 1–64 lowercase letters, digits, - or _, used in URLs.
func CheckStudyID(id string) error {
	if !studyID.MatchString(id) {
		return Errorf(ErrInvalid, "study id %q: want 1–64 lowercase letters, digits, - or _", id)
	}
	return nil
}

// Checked checks a new study (its id, a JSON object config) and returns it with its config tidied.
func (s Study) Checked() (Study, error) {
	if err := CheckStudyID(s.ID); err != nil {
		return s, err
	}
	cfg, err := ConfigObject(s.Config, "study config")
	s.Config = cfg
	return s, err
}

// Checked checks a system to store (a label, a JSON object config) and returns it with its config
// tidied.
func (s System) Checked() (System, error) {
	if strings.TrimSpace(s.Label) == "" {
		return s, Errorf(ErrInvalid, "system label is empty")
	}
	cfg, err := ConfigObject(s.Config, "system "+s.Label+" config")
	s.Config = cfg
	if err != nil {
		return s, err
	}
	// A rule of the record, not of one repository: a key stored with a system would be in every
	// backup and export of the study.
	if path := credentialPath(cfg); path != "" {
		return s, Errorf(ErrInvalid, "system %s config field %s looks like a credential: keys belong in secrets.txt, never in the database", s.Label, path)
	}
	return s, nil
}

// ConfigObject checks that a config document is a JSON object (empty means {}) and returns it.
func ConfigObject(doc json.RawMessage, what string) (json.RawMessage, error) {
	doc = bytes.TrimSpace(doc)
	if len(doc) == 0 {
		return json.RawMessage(`{}`), nil
	}
	if !json.Valid(doc) || doc[0] != '{' {
		return nil, Errorf(ErrInvalid, "%s: want a JSON object", what)
	}
	return doc, nil
}

// WithConfig returns the config document cfg with key set to v, keeping every other key.
func WithConfig(cfg json.RawMessage, key string, v any) (json.RawMessage, error) {
	doc := map[string]json.RawMessage{}
	if len(cfg) > 0 {
		if err := json.Unmarshal(cfg, &doc); err != nil {
			return nil, fmt.Errorf("study config: %w", err)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("study config %s: %w", key, err)
	}
	doc[key] = b
	return json.Marshal(doc)
}

// CheckPlan checks plan rows before they are stored: every row names its slot, a position ≥ 1, a
// task, a system and repeat 1 or 2, and no slot has a position twice or meets a task twice.
func CheckPlan(rows []PlanRow) error {
	type key struct {
		slot string
		pos  int
	}
	seen := map[key]bool{}
	tasks := map[string]map[string]bool{} // slot → tasks in the input
	for i, r := range rows {
		switch {
		case r.Slot == "":
			return Errorf(ErrInvalid, "plan row %d: participant slot is empty", i+1)
		case r.Position < 1:
			return Errorf(ErrInvalid, "plan row %d (%s): position %d, want ≥ 1", i+1, r.Slot, r.Position)
		case r.Task == "" || r.System == "":
			return Errorf(ErrInvalid, "plan row %d (%s): task and system are required", i+1, r.Slot)
		case r.Repeat != 1 && r.Repeat != 2:
			return Errorf(ErrInvalid, "plan row %d (%s): repeat %d, want 1 or 2", i+1, r.Slot, r.Repeat)
		case seen[key{r.Slot, r.Position}]:
			return Errorf(ErrInvalid, "plan row %d: %s position %d appears twice", i+1, r.Slot, r.Position)
		}
		seen[key{r.Slot, r.Position}] = true
		if tasks[r.Slot] == nil {
			tasks[r.Slot] = map[string]bool{}
		}
		if tasks[r.Slot][r.Task] {
			return Errorf(ErrInvalid, "plan row %d: %s meets task %s twice", i+1, r.Slot, r.Task)
		}
		tasks[r.Slot][r.Task] = true
	}
	return nil
}

// PlanSlots returns the slots plan rows name, in the order they first appear.
func PlanSlots(rows []PlanRow) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.Slot] {
			seen[r.Slot] = true
			out = append(out, r.Slot)
		}
	}
	return out
}

// Check checks a session mode.
func (m Mode) Check() error {
	if m != ModeHuman && m != ModeSynthetic {
		return Errorf(ErrInvalid, "session mode %q: want human or synthetic", m)
	}
	return nil
}

// Created checks a new session (an empty mode is human) and returns it as just created at now:
// status created, first attempt. Assign then fills in a planned session from its assignment.
func (ns NewSession) Created(now time.Time) (Session, error) {
	if ns.Mode == "" {
		ns.Mode = ModeHuman
	}
	if err := ns.Mode.Check(); err != nil {
		return Session{}, err
	}
	return Session{ID: ns.ID, StudyID: ns.StudyID, AssignmentID: ns.AssignmentID, ParticipantID: ns.ParticipantID,
		TaskID: ns.TaskID, TaskVersion: ns.TaskVersion, System: ns.System, Mode: ns.Mode, Seed: ns.Seed,
		Status: SessionCreated, CreatedAt: now, Attempt: 1, ConsoleID: ns.ConsoleID, Condition: ns.Condition}, nil
}

// Assign fills a planned session's study, task, system and participant from its assignment, and
// checks that what was given agrees with it and that the assignment can take the session: it is
// the participant's, running, and has no session yet.
func (s *Session) Assign(a Assignment) error {
	fill := func(field string, have *string, want string) error {
		if *have == "" {
			*have = want
		}
		if *have != want {
			return Errorf(ErrInvalid, "session %s %s %q does not match assignment %d (%q)", s.ID, field, *have, a.ID, want)
		}
		return nil
	}
	if err := errors.Join(fill("study", &s.StudyID, a.StudyID), fill("task", &s.TaskID, a.Task), fill("system", &s.System, a.System)); err != nil {
		return err
	}
	if s.ParticipantID == 0 {
		s.ParticipantID = a.ParticipantID
	}
	switch {
	case a.ParticipantID == 0 || s.ParticipantID != a.ParticipantID:
		return Errorf(ErrConflict, "assignment %d is not the participant's", a.ID)
	case a.Status != StatusRunning:
		return Errorf(ErrConflict, "assignment %d is %s, not running", a.ID, a.Status)
	case a.SessionID != "":
		return Errorf(ErrConflict, "assignment %d already has session %s", a.ID, a.SessionID)
	}
	return nil
}

// Check checks an exclusion reason.
func (r ExclusionReason) Check() error {
	switch r {
	case ReasonCallerBrokeScript, ReasonPlatformLost, ReasonGraderError, ReasonOther, ReasonTooShort:
		return nil
	}
	return Errorf(ErrInvalid, "exclusion reason %q: want caller_broke_script, platform_lost, grader_error, too_short or other", r)
}

// CheckEvent checks an event before it is appended to a session's log: a seq ≥ 1 and a type.
func CheckEvent(sessionID string, e trace.Event) error {
	if e.Seq < 1 {
		return Errorf(ErrInvalid, "event of session %s: seq %d, want ≥ 1", sessionID, e.Seq)
	}
	if e.Type == "" {
		return Errorf(ErrInvalid, "event %d of session %s has no type", e.Seq, sessionID)
	}
	return nil
}

// Check checks that a closing's events continue the stored log after AfterSeq.
func (c Closing) Check() error {
	for i, e := range c.Append {
		if want := c.AfterSeq + int64(i) + 1; e.Seq != want {
			return Errorf(ErrInvalid, "closing session %s: appended event %d has seq %d, want %d", c.SessionID, i+1, e.Seq, want)
		}
	}
	return nil
}

// Check checks a score before it is stored: a grader version and a JSON grade document.
func (s Score) Check() error {
	if s.GraderVersion == "" {
		return Errorf(ErrInvalid, "score of session %s has no grader version", s.SessionID)
	}
	if !json.Valid(s.Grade) {
		return Errorf(ErrInvalid, "score of session %s: grade is not valid JSON", s.SessionID)
	}
	return nil
}

// Check checks a rating: fidelity and naturalness on their 1–5 scales.
func (r Rating) Check() error {
	if r.Fidelity < 1 || r.Fidelity > 5 {
		return Errorf(ErrInvalid, "fidelity %d: want 1–5", r.Fidelity)
	}
	if r.Naturalness < 1 || r.Naturalness > 5 {
		return Errorf(ErrInvalid, "naturalness %d: want 1–5", r.Naturalness)
	}
	return nil
}

// Check checks the recruiting platform's ids: at most MaxExternalID characters each.
func (e ExternalIDs) Check() error {
	for name, v := range map[string]string{"PROLIFIC_PID": e.ProlificPID, "STUDY_ID": e.StudyID, "SESSION_ID": e.SessionID} {
		if len(v) > MaxExternalID {
			return Errorf(ErrInvalid, "%s: %d characters, at most %d", name, len(v), MaxExternalID)
		}
	}
	return nil
}

// MinPassword is the shortest experimenter password, in characters.
const MinPassword = 10

// CheckPassword checks an experimenter's password: at least MinPassword characters.
func CheckPassword(name, password string) error {
	if len([]rune(password)) < MinPassword {
		return Errorf(ErrInvalid, "password of %s: want at least %d characters", name, MinPassword)
	}
	return nil
}

// NewTaskVersion checks a task version's id, version and spec (the task file's JSON) and returns
// it with the spec's SHA-256, which tells stored content apart.
func NewTaskVersion(id string, version int, spec []byte) (TaskVersion, error) {
	if id == "" || version < 0 {
		return TaskVersion{}, Errorf(ErrInvalid, "task %q version %d: want a non-empty id and a version ≥ 0", id, version)
	}
	if !json.Valid(spec) {
		return TaskVersion{}, Errorf(ErrInvalid, "task %s version %d: spec is not valid JSON", id, version)
	}
	sum := sha256.Sum256(spec)
	return TaskVersion{ID: id, Version: version, SHA256: hex.EncodeToString(sum[:]), Spec: append(json.RawMessage(nil), spec...)}, nil
}

// Checked checks a rating item (an id, its task and plan, a JSON object payload) and returns it
// with its payload tidied.
func (it RatingItem) Checked() (RatingItem, error) {
	if it.ID == "" || it.TaskID == "" || it.PlanID == "" {
		return it, Errorf(ErrInvalid, "rating item %q: id, task and plan are required", it.ID)
	}
	payload, err := ConfigObject(it.Payload, "rating item "+it.ID+" payload")
	it.Payload = payload
	return it, err
}

// credentialPath returns the JSON path of the first field whose name suggests a credential.
func credentialPath(doc json.RawMessage) string {
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return ""
	}
	var walk func(v any, path string) string
	walk = func(v any, path string) string {
		switch t := v.(type) {
		case map[string]any:
			for k, sub := range t {
				n := strings.ToLower(strings.NewReplacer("_", "", "-", "", " ", "").Replace(k))
				if n == "key" || strings.HasSuffix(n, "apikey") || strings.Contains(n, "secret") || strings.Contains(n, "password") ||
					strings.Contains(n, "token") || strings.Contains(n, "authorization") || strings.Contains(n, "bearer") || strings.Contains(n, "credential") {
					return path + "." + k
				}
				if p := walk(sub, path+"."+k); p != "" {
					return p
				}
			}
		case []any:
			for i, sub := range t {
				if p := walk(sub, fmt.Sprintf("%s[%d]", path, i)); p != "" {
					return p
				}
			}
		case string:
			if strings.HasPrefix(t, "sk-") && len(t) > 20 {
				return path
			}
		}
		return ""
	}
	return walk(v, "$")
}
