package audit_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/trace"
)

func TestRulesNameTheRecordAndWhatWasExpected(t *testing.T) {
	row := func(slot string, pos int, task string, repeat int) audit.PlanRow {
		return audit.PlanRow{Slot: slot, Position: pos, Task: task, System: "s", Repeat: repeat}
	}
	running := audit.Assignment{ID: 7, StudyID: "st", ParticipantID: 3, Task: "t", System: "s", Status: audit.StatusRunning}
	for _, tc := range []struct {
		name string
		err  error
		kind error
		want string // "" : no error
	}{
		{"good study id", audit.CheckStudyID("pilot-1"), nil, ""},
		{"study id with capitals", audit.CheckStudyID("Pilot"), audit.ErrInvalid, `study id "Pilot": want 1–64 lowercase letters`},
		{"good plan", audit.CheckPlan([]audit.PlanRow{row("p1", 1, "a", 1), row("p1", 2, "b", 2), row("p2", 1, "a", 1)}), nil, ""},
		{"plan row without a slot", audit.CheckPlan([]audit.PlanRow{row("", 1, "a", 1)}), audit.ErrInvalid, "plan row 1: participant slot is empty"},
		{"plan position twice", audit.CheckPlan([]audit.PlanRow{row("p1", 1, "a", 1), row("p1", 1, "b", 1)}), audit.ErrInvalid, "plan row 2: p1 position 1 appears twice"},
		{"plan task twice in a slot", audit.CheckPlan([]audit.PlanRow{row("p1", 1, "a", 1), row("p1", 2, "a", 2)}), audit.ErrInvalid, "plan row 2: p1 meets task a twice"},
		{"plan repeat 3", audit.CheckPlan([]audit.PlanRow{row("p1", 1, "a", 3)}), audit.ErrInvalid, "plan row 1 (p1): repeat 3, want 1 or 2"},
		{"unknown mode", audit.Mode("robot").Check(), audit.ErrInvalid, `session mode "robot": want human or synthetic`},
		{"unknown exclusion reason", audit.ExclusionReason("bored").Check(), audit.ErrInvalid, `exclusion reason "bored": want caller_broke_script`},
		{"event without a seq", audit.CheckEvent("s1", trace.Event{Type: trace.SessionStart}), audit.ErrInvalid, "event of session s1: seq 0, want ≥ 1"},
		{"closing that skips a seq", audit.Closing{SessionID: "s1", AfterSeq: 4, Append: []trace.Event{{Seq: 6}}}.Check(), audit.ErrInvalid,
			"closing session s1: appended event 1 has seq 6, want 5"},
		{"score without a grader", audit.Score{SessionID: "s1", Grade: []byte(`{}`)}.Check(), audit.ErrInvalid, "score of session s1 has no grader version"},
		{"fidelity 6", audit.Rating{Fidelity: 6, Naturalness: 3}.Check(), audit.ErrInvalid, "fidelity 6: want 1–5"},
		{"long recruiting id", audit.ExternalIDs{ProlificPID: strings.Repeat("x", 65)}.Check(), audit.ErrInvalid, "PROLIFIC_PID: 65 characters, at most 64"},
		{"short password", audit.CheckPassword("ana", "short"), audit.ErrInvalid, "password of ana: want at least 10 characters"},
		{"session of another participant's assignment", (&audit.Session{ID: "s1", ParticipantID: 4}).Assign(running), audit.ErrConflict, "assignment 7 is not the participant's"},
		{"session naming another task", (&audit.Session{ID: "s1", TaskID: "u"}).Assign(running), audit.ErrInvalid, `session s1 task "u" does not match assignment 7 ("t")`},
		{"session of a running assignment", (&audit.Session{ID: "s1"}).Assign(running), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == "" {
				if tc.err != nil {
					t.Fatalf("got %v, want no error", tc.err)
				}
				return
			}
			if !errors.Is(tc.err, tc.kind) || !strings.Contains(tc.err.Error(), tc.want) {
				t.Errorf("got %v, want %v containing %q", tc.err, tc.kind, tc.want)
			}
		})
	}
}

func TestAssignFillsThePlannedSessionFromItsAssignment(t *testing.T) {
	s := audit.Session{ID: "s1"}
	if err := s.Assign(audit.Assignment{ID: 7, StudyID: "st", ParticipantID: 3, Task: "t", System: "sys", Status: audit.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	if s.StudyID != "st" || s.ParticipantID != 3 || s.TaskID != "t" || s.System != "sys" {
		t.Errorf("session %+v", s)
	}
}

func TestErrorShowsItsMessageAndMatchesKindAndCause(t *testing.T) {
	cause := errors.New("driver: duplicate key")
	err := error(&audit.Error{Msg: "create study x: conflict", Kind: audit.ErrConflict, Cause: cause})
	if err.Error() != "create study x: conflict" || !errors.Is(err, audit.ErrConflict) || !errors.Is(err, cause) || errors.Is(err, audit.ErrNotFound) {
		t.Errorf("%v: kind or cause not matched", err)
	}
	if got := audit.Errorf(audit.ErrNotFound, "study %s", "x").Error(); got != "study x: not found" {
		t.Errorf("Errorf = %q", got)
	}
}

func TestWithConfigKeepsOtherKeys(t *testing.T) {
	cfg, err := audit.WithConfig([]byte(`{"consent":"I agree","plan":{"old":1}}`), "plan", map[string]int{"systems": 2})
	if err != nil || string(cfg) != `{"consent":"I agree","plan":{"systems":2}}` {
		t.Errorf("WithConfig = %s, %v", cfg, err)
	}
	if _, err := audit.ConfigObject([]byte(`[1]`), "study config"); !errors.Is(err, audit.ErrInvalid) {
		t.Errorf("a JSON array as config: %v", err)
	}
}

func TestSystemConfigRefusesCredentials(t *testing.T) {
	for cfg, field := range map[string]string{
		`{"api_key":"abc"}`:                                      "$.api_key",
		`{"auth":{"Authorization":"Bearer x"}}`:                  "$.auth.Authorization",
		`{"headers":[{"x":"sk-proj-0123456789abcdefghij"}]}`:     "$.headers[0].x",
		`{"openaiApiKey":"k"}`:                                   "$.openaiApiKey",
		`{"model":"gpt-realtime","session":{"client-secret":1}}`: "$.session.client-secret",
	} {
		_, err := audit.System{Label: "leaky", Config: json.RawMessage(cfg)}.Checked()
		if !errors.Is(err, audit.ErrInvalid) || !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), "secrets.txt") {
			t.Errorf("config %s: %v; want ErrInvalid naming %s and secrets.txt", cfg, err, field)
		}
	}
	// Settings whose names merely resemble a credential's stay allowed.
	for _, cfg := range []string{`{"model":"gpt-realtime","voice":"marin"}`, `{"keyboard":"en","monkey":1,"sk":"sk-short"}`, ``} {
		if _, err := (audit.System{Label: "ok", Config: json.RawMessage(cfg)}).Checked(); err != nil {
			t.Errorf("config %q refused: %v", cfg, err)
		}
	}
}
