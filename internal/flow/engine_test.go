package flow

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

func loadTask(t *testing.T, id string) *task.Task {
	t.Helper()
	tk, err := task.LoadFile(filepath.Join("..", "grade", "testdata", "tasks", id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func ids(fs []Firing) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.CueID)
	}
	return out
}

func TestMediaTimeTriggerIsAnchoredToFirstCallerAudio(t *testing.T) {
	e := New(loadTask(t, "fnol-auto-glass")) // shop_text fires at 20 s
	if fs := e.Advance(2000); len(fs) != 0 {
		t.Fatalf("fired before any caller audio: %v", ids(fs))
	}
	e.Observe(trace.Event{T: 2500, Type: trace.CallerAudioStart})
	if fs := e.Advance(22499); len(fs) != 0 {
		t.Fatalf("fired early: %v", ids(fs))
	}
	fs := e.Advance(22500)
	if len(fs) != 1 || fs[0].CueID != "shop_text" || fs[0].T != 22500 {
		t.Fatalf("firings = %+v", fs)
	}
	// A slow agent does not delay it: the firing carries its own media time even when observed late.
	e2 := New(loadTask(t, "fnol-auto-glass"))
	e2.Observe(trace.Event{T: 0, Type: trace.CallerAudioStart})
	fs = e2.Advance(31000)
	if len(fs) != 1 || fs[0].T != 20000 {
		t.Fatalf("late advance: %+v", fs)
	}
}

func TestConditionTriggerRevealsNewVersion(t *testing.T) {
	tk := loadTask(t, "fnol-auto-glass")
	e := New(tk)
	e.Observe(trace.Event{T: 0, Type: trace.CallerAudioStart})
	card := e.RoleCard(1000)
	if v := cardValue(card, "callback_phone"); v != "503-555-0147" {
		t.Fatalf("initial phone on card = %q", v)
	}
	fs := e.Observe(trace.Event{T: 5000, Type: trace.ArtifactUpdate, Field: "callback_phone", Value: json.RawMessage(`"503-555-0147"`)})
	if len(fs) != 1 || fs[0].Reveals == nil || fs[0].Reveals.Version != 2 {
		t.Fatalf("firings = %+v", fs)
	}
	card = e.RoleCard(5000)
	if v := cardValue(card, "callback_phone"); v != "503-555-0174" {
		t.Errorf("corrected phone on card = %q", v)
	}
	if len(card.Cues) != 1 || card.Cues[0].ID != "phone_fix" || card.Cues[0].IssuedMS != 5000 {
		t.Errorf("cues = %+v", card.Cues)
	}
	p := e.NextPlan() // opening first
	if p.ID != "open" {
		t.Fatalf("first plan %s", p.ID)
	}
	if p = e.NextPlan(); p.ID != "correct:callback_phone@v2" || p.Facts[0].Version != 2 {
		t.Errorf("plan after correction = %+v", p)
	}
}

// goldOnly lists gold values no caller fact holds.
func goldOnly(tk *task.Task) []string {
	var out []string
	for _, gf := range tk.Grader.Fields {
		for _, g := range task.GoldStrings(gf.Gold) {
			held := false
			for _, f := range tk.User.Facts {
				for _, v := range f.Versions {
					held = held || strings.Contains(strings.ToLower(v.Value), strings.ToLower(g))
				}
			}
			if !held && len(g) >= 3 {
				out = append(out, g)
			}
		}
	}
	return out
}

func cardValue(c RoleCard, fact string) string {
	for _, f := range c.Facts {
		if f.ID == fact {
			return f.Value
		}
	}
	return ""
}

// The role card holds only what the caller may know now: no future versions, no on_event facts
// before their event, nothing from the grader or agent side.
func TestRoleCardHidesFutureAndHiddenValues(t *testing.T) {
	for _, id := range []string{"fnol-auto-glass", "utility-payment-arrangement", "it-vpn-incident"} {
		tk := loadTask(t, id)
		rc := InitialRoleCard(tk)
		b, _ := json.Marshal(rc)
		card := string(b)
		for _, f := range tk.User.Facts {
			for i, v := range f.Versions {
				known := i == 0 && f.Reveal != task.OnEvent
				if known {
					continue
				}
				if cardValue(rc, f.ID) == v.Value || (len(v.Value) >= 3 && strings.Contains(card, v.Value)) {
					t.Errorf("%s: card shows %s version %d (%q) before it is revealed", id, f.ID, i+1, v.Value)
				}
			}
		}
		for _, g := range goldOnly(tk) {
			if strings.Contains(card, g) {
				t.Errorf("%s: card shows gold-only %q", id, g)
			}
		}
		for _, hidden := range []string{tk.Agent.Instructions[:40], "gold", "target_state", "grader", "forbidden"} {
			if strings.Contains(card, hidden) {
				t.Errorf("%s: card contains %q", id, hidden)
			}
		}
	}
}

func TestApprovalRevocationAndDecline(t *testing.T) {
	tk := loadTask(t, "utility-payment-arrangement")
	e := New(tk)
	e.Observe(trace.Event{T: 0, Type: trace.CallerAudioStart})
	e.NextPlan() // open
	fs := e.Observe(trace.Event{T: 1000, Type: trace.AuthApprovalRequested, Action: "set_up_arrangement"})
	if len(fs) != 1 || fs[0].CueID != "approve_plan" {
		t.Fatalf("approval firings %v", ids(fs))
	}
	p := e.NextPlan()
	if p.Kind != trace.PlanApprove || p.Action != "set_up_arrangement" {
		t.Fatalf("plan %+v", p)
	}
	// The session grants the approval; the revocation fires in the same caller turn.
	fs = e.Observe(trace.Event{T: 1500, Type: trace.AuthApprovalGranted, Action: "set_up_arrangement"})
	if len(fs) != 1 || fs[0].CueID != "withdraw_plan" {
		t.Fatalf("revocation firings %v", ids(fs))
	}
	cont, ok := e.Continuation()
	if !ok || cont.ID != "revoke:set_up_arrangement" {
		t.Fatalf("continuation %+v %v", cont, ok)
	}
	e.Observe(trace.Event{T: 2000, Type: trace.AuthRevoked, Action: "set_up_arrangement"})
	// Asked again after the revocation, the caller declines: the approval does not re-arm.
	fs = e.Observe(trace.Event{T: 3000, Type: trace.AgentAct, Act: "request_approval"})
	if len(fs) != 0 {
		t.Fatalf("approval re-fired after revocation: %v", ids(fs))
	}
	if p := e.NextPlan(); p.ID != "decline:set_up_arrangement" {
		t.Errorf("plan %+v, want decline", p)
	}
}

func TestApprovalRearmsOnANewRequest(t *testing.T) {
	tk := loadTask(t, "fnol-auto-glass")
	e := New(tk)
	e.Observe(trace.Event{T: 0, Type: trace.CallerAudioStart})
	e.NextPlan()
	e.Observe(trace.Event{T: 100, Type: trace.AuthApprovalRequested, Action: "submit_claim"})
	e.NextPlan()
	e.Observe(trace.Event{T: 200, Type: trace.AuthApprovalGranted, Action: "submit_claim"})
	fs := e.Observe(trace.Event{T: 300, Type: trace.AuthApprovalRequested, Action: "submit_claim"})
	if len(fs) != 1 || fs[0].CueID != "approve_submit#2" {
		t.Fatalf("second request firings %v", ids(fs))
	}
}

func TestPrepareOnlyCallerDeclines(t *testing.T) {
	e := New(loadTask(t, "it-vpn-incident"))
	e.Observe(trace.Event{T: 0, Type: trace.CallerAudioStart})
	e.NextPlan()
	e.Observe(trace.Event{T: 100, Type: trace.AuthApprovalRequested, Action: "dispatch"})
	if p := e.NextPlan(); p.ID != "decline:dispatch" {
		t.Errorf("plan %+v", p)
	}
}

func TestNextPlanAnswersTheQuestionAsked(t *testing.T) {
	tk := loadTask(t, "it-vpn-incident")
	e := New(tk)
	e.Observe(trace.Event{T: 0, Type: trace.CallerAudioStart})
	if p := e.NextPlan(); p.ID != "open" || len(p.Facts) != 1 || p.Facts[0].Fact != "caller_name" {
		t.Fatalf("open = %+v", p)
	}
	for _, a := range Classify(tk, "thanks priya what's your employee id") {
		e.Observe(trace.Event{T: 100, Type: trace.AgentAct, Act: a.String()})
	}
	if p := e.NextPlan(); p.ID != "answer:employee_id" {
		t.Errorf("plan %+v", p)
	}
	e.Observe(trace.Event{T: 200, Type: trace.AgentAct, Act: "confirm"})
	if p := e.NextPlan(); p.Kind != trace.PlanAffirm {
		t.Errorf("plan %+v", p)
	}
	e.Observe(trace.Event{T: 300, Type: trace.AgentAct, Act: "close"})
	if p := e.NextPlan(); p.Kind != trace.PlanClose || !e.Closed() {
		t.Errorf("plan %+v", p)
	}
}

func TestClassify(t *testing.T) {
	tk := loadTask(t, "fnol-auto-glass")
	tests := []struct {
		text string
		want []string
	}{
		{"Thanks. Could you tell me your policy number?", []string{"ask:policy_number"}},
		{"and your date of birth please", []string{"ask:date_of_birth"}},                  // ASR: no punctuation
		{"I'll note your policy number now.", nil},                                        // not a question
		{"To confirm, the number is 503 555 0174. Is that correct?", []string{"confirm"}}, // two confirm phrases, one act
		{"To summarize, I have your claim. Do I have your approval to submit the claim?", []string{"summarise", "request_approval"}},
		{"Thank you for calling. Goodbye!", []string{"close"}},
		{"How can I help you today?", []string{"greet"}},
	}
	for _, tt := range tests {
		var got []string
		for _, a := range Classify(tk, tt.text) {
			got = append(got, a.String())
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Classify(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

func TestReachablePlans(t *testing.T) {
	var got []string
	for _, p := range ReachablePlans(loadTask(t, "utility-payment-arrangement")) {
		got = append(got, p.ID)
	}
	for _, want := range []string{"open", "answer:account_number", "answer:installments", "answer:installments@v2",
		"barge_in:more_payments", "approve:set_up_arrangement", "revoke:set_up_arrangement", "decline:set_up_arrangement", "close"} {
		if !slices.Contains(got, want) {
			t.Errorf("missing plan %s in %v", want, got)
		}
	}
}

// An agent that asks by the schema's field name ("the scope") is understood too.
func TestClassifyByFieldName(t *testing.T) {
	tk := loadTask(t, "it-vpn-incident")
	var got []string
	for _, a := range Classify(tk, "Thanks. What is the scope: single user, team, or site?") {
		got = append(got, a.String())
	}
	if !slices.Equal(got, []string{"ask:scope"}) {
		t.Errorf("acts %v, want ask:scope", got)
	}
}

func TestApprovalAskedAgainAfterADeclineSaysSo(t *testing.T) {
	tk := loadTask(t, "fnol-auto-glass")
	e := New(tk)
	e.Observe(trace.Event{T: 0, Type: trace.CallerAudioStart})
	e.NextPlan()
	fs := e.Observe(trace.Event{T: 100, Type: trace.AuthApprovalRequested, Action: "submit_claim"})
	if len(fs) != 1 || fs[0].CueText() != fs[0].Event.Cue {
		t.Fatalf("first request firings %v", ids(fs))
	}
	// Asked again while still pending: the cue already on the card covers it.
	if fs := e.Observe(trace.Event{T: 150, Type: trace.AgentAct, Act: "request_approval"}); len(fs) != 0 {
		t.Fatalf("approval re-fired while pending: %v", ids(fs))
	}
	// The human caller said the read-back was wrong: the next request is a new question.
	e.Observe(trace.Event{T: 200, Type: trace.AuthApprovalDeclined, Action: "submit_claim"})
	fs = e.Observe(trace.Event{T: 300, Type: trace.AgentAct, Act: "request_approval"})
	if len(fs) != 1 || fs[0].CueID != "approve_submit#2" {
		t.Fatalf("request after the decline: firings %v", ids(fs))
	}
	want := "The agent asks again: " + fs[0].Event.Cue
	if got := fs[0].CueText(); got != want {
		t.Errorf("repeated cue %q, want %q", got, want)
	}
	card := e.RoleCard(400)
	if last := card.Cues[len(card.Cues)-1]; last.Text != want {
		t.Errorf("role card shows the repeated cue as %q", last.Text)
	}
}
