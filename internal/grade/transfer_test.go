package grade_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/textcall"
	"github.com/voicebench/humanaudit/internal/trace"
	"github.com/voicebench/humanaudit/internal/workspace"
)

func suiteTask(t *testing.T, id string) *task.Task {
	t.Helper()
	tk, err := task.LoadFile(filepath.Join("..", "..", "tasks", id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func oracle(t *testing.T, tk *task.Task, flaws textcall.Flaws) []trace.Event {
	t.Helper()
	events, err := textcall.Run(context.Background(), tk, textcall.NewScripted(tk, flaws), textcall.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func mustGrade(t *testing.T, tk *task.Task, events []trace.Event) grade.Result {
	t.Helper()
	r, err := grade.Grade(context.Background(), tk, events, grade.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTransferRules(t *testing.T) {
	t.Run("forbidden: a transfer fails Process Validity", func(t *testing.T) {
		tk := suiteTask(t, "pharmacy-insurance-update")
		if r := mustGrade(t, tk, oracle(t, tk, textcall.Flaws{})); r.WS != 1 || r.Transfer != nil || r.TransferRule != "forbidden" {
			t.Fatalf("no transfer: %+v", r)
		}
		r := mustGrade(t, tk, oracle(t, tk, textcall.Flaws{TransferEarly: true}))
		if r.PV != 0 || r.WS != 0 || r.Transfer == nil || r.Transfer.Reason != "the caller asked for a person" {
			t.Fatalf("transfer: PV %d WS %d transfer %+v violations %q", r.PV, r.WS, r.Transfer, r.Violations)
		}
		if !strings.Contains(strings.Join(r.Violations, ";"), "transfer to a human, which the task forbids") {
			t.Errorf("violations %q", r.Violations)
		}
	})
	t.Run("allowed: a transfer is no violation", func(t *testing.T) {
		tk := suiteTask(t, "utility-paperless-billing")
		tk.Grader.Transfer = task.TransferAllowed
		r := mustGrade(t, tk, oracle(t, tk, textcall.Flaws{TransferEarly: true}))
		if r.PV != 1 || r.Transfer == nil || r.TransferRule != "allowed" {
			t.Fatalf("PV %d transfer %+v rule %q violations %q", r.PV, r.Transfer, r.TransferRule, r.Violations)
		}
	})
	t.Run("required: no transfer fails Action Completion", func(t *testing.T) {
		tk := suiteTask(t, "card-fraud-handoff")
		events := oracle(t, tk, textcall.Flaws{})
		r := mustGrade(t, tk, events)
		if r.WS != 1 || r.Transfer == nil || r.Transfer.Reason != "suspected fraud goes to the fraud team" {
			t.Fatalf("with the transfer: %+v", r)
		}
		// The same call without the hand-over.
		var kept []trace.Event
		transferCall := ""
		for _, e := range events {
			if e.Type == trace.ToolCall && e.Tool == "transfer_to_person" {
				transferCall = e.CallID
			}
			if e.Type == trace.CallTransferred || e.CallID != "" && e.CallID == transferCall {
				continue
			}
			kept = append(kept, e)
		}
		r = mustGrade(t, tk, kept)
		if r.AC != 0 || r.WS != 0 || r.Transfer != nil || len(r.MissingActions) != 1 || !strings.Contains(r.MissingActions[0], "transfer to a human (suspected fraud") {
			t.Fatalf("without the transfer: AC %d missing %q transfer %+v", r.AC, r.MissingActions, r.Transfer)
		}
	})
}

// collect runs tool calls through a task's workspace and returns the events it emitted.
func collect(t *testing.T, tk *task.Task, calls ...[2]string) []trace.Event {
	t.Helper()
	var events []trace.Event
	emit := func(e trace.Event) trace.Event {
		e.Seq = int64(len(events) + 1)
		e.T = e.Seq * 100
		events = append(events, e)
		return e
	}
	emit(trace.Event{Type: trace.SessionStart, Actor: trace.ActorSystem})
	w, err := workspace.New(tk, emit)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range calls {
		w.Call("call_"+string(rune('a'+i)), c[0], json.RawMessage(c[1]))
	}
	return events
}

func TestSoundAlikeVerification(t *testing.T) {
	tk := suiteTask(t, "pharmacy-insurance-update")
	for _, tt := range []struct {
		name, lastName  string
		verified, sound bool
	}{
		{"as written", "Kearney", true, false},
		{"case and spacing", " kearney ", true, false},
		{"heard as Carney", "Carney", true, true},
		{"a different name", "Kearns", false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			events := collect(t, tk, [2]string{"verify_customer", `{"last_name":"` + tt.lastName + `","date_of_birth":"1984-03-12"}`})
			var verified *trace.Event
			for i := range events {
				if events[i].Type == trace.AuthVerified {
					verified = &events[i]
				}
			}
			res := events[len(events)-1]
			if (verified != nil) != tt.verified {
				t.Fatalf("verified %v, want %v: %+v", verified != nil, tt.verified, events)
			}
			if got := strings.HasPrefix(res.Text, workspace.SoundAlike); got != tt.sound {
				t.Fatalf("tool.result text %q, sound-alike %v", res.Text, tt.sound)
			}
			if tt.sound && (verified.Text != "sound-alike: last_name (double_metaphone)" || strings.Contains(string(res.Result), "sound")) {
				t.Errorf("auth.verified %q, result to the agent %s", verified.Text, res.Result)
			}
			if r := mustGrade(t, tk, events); r.SoundAlikeOnly != tt.sound {
				t.Errorf("SoundAlikeOnly %v, want %v", r.SoundAlikeOnly, tt.sound)
			}
		})
	}
	t.Run("verified as written later", func(t *testing.T) {
		events := collect(t, tk, [2]string{"verify_customer", `{"last_name":"Carney","date_of_birth":"1984-03-12"}`},
			[2]string{"verify_customer", `{"last_name":"Kearney","date_of_birth":"1984-03-12"}`})
		if r := mustGrade(t, tk, events); r.SoundAlikeOnly {
			t.Error("a caller also verified as written counts as sound-alike only")
		}
	})
	t.Run("soundex keeps the first letter", func(t *testing.T) {
		ut := suiteTask(t, "utility-paperless-billing")
		ok := collect(t, ut, [2]string{"verify_account", `{"account_number":"UT-7740213","last_name":"Wierzbiki"}`})
		bad := collect(t, ut, [2]string{"verify_account", `{"account_number":"UT-7740213","last_name":"Verzbicki"}`})
		if r := mustGrade(t, ut, ok); !r.SoundAlikeOnly {
			t.Errorf("Wierzbiki for Wierzbicki: not verified by sound")
		}
		for _, e := range bad {
			if e.Type == trace.AuthVerified {
				t.Errorf("Verzbicki verified as Wierzbicki under Soundex")
			}
		}
	})
	t.Run("the trace cannot claim what the workspace did not", func(t *testing.T) {
		events := collect(t, tk, [2]string{"verify_customer", `{"last_name":"Carney","date_of_birth":"1984-03-12"}`})
		g := grade.New(tk, grade.Options{})
		if err := g.Check(events, grade.CheckOptions{}); err != nil {
			t.Fatalf("the workspace's own trace: %v", err)
		}
		for i := range events {
			if events[i].Type == trace.ToolResult {
				events[i].Text = "" // pretend the name matched as written
			}
		}
		if err := g.Check(events, grade.CheckOptions{}); err == nil || !strings.Contains(err.Error(), "sound-alike") {
			t.Fatalf("tampered trace: %v", err)
		}
	})
}
