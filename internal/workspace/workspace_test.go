package workspace

import (
	"encoding/json"
	"path/filepath"
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

type log struct{ events []trace.Event }

func (l *log) emit(e trace.Event) trace.Event {
	e.Seq = int64(len(l.events) + 1)
	l.events = append(l.events, e)
	return e
}

func (l *log) types() []string {
	var out []string
	for _, e := range l.events {
		out = append(out, string(e.Type))
	}
	return out
}

func newWS(t *testing.T, id string) (*Workspace, *log) {
	t.Helper()
	var l log
	w, err := New(loadTask(t, id), l.emit)
	if err != nil {
		t.Fatal(err)
	}
	return w, &l
}

// fill records every required field of the FNOL task.
func fillFNOL(t *testing.T, w *Workspace) {
	t.Helper()
	res := w.Call("c-fill", "update_claim", []byte(`{"policy_number":"PA-20-44718","loss_date":"2026-11-24","loss_location":"2150 SW Borland Rd","callback_phone":"503-555-0174","damage_description":"crack","preferred_shop":"Clearview","estimate_amount":612.4,"deductible":100,"claim_type":"glass"}`))
	if !res.OK {
		t.Fatalf("fill: %s", res.Output)
	}
}

func TestUnknownToolAndBadArgumentsAreToolErrors(t *testing.T) {
	w, l := newWS(t, "fnol-auto-glass")
	for _, tc := range []struct{ tool, args, code, msg string }{
		{"delete_everything", `{}`, CodeUnknownTool, "no tool named"},
		{"update_claim", `{"claim_type":"flood"}`, CodeBadArguments, "$.claim_type"},
		{"update_claim", `{"colour":"red"}`, CodeBadArguments, "colour"},
		{"update_claim", `not json`, CodeBadArguments, "JSON object"},
		{"verify_caller", `{"policy_number":"PA-20-44718"}`, CodeBadArguments, "date_of_birth"},
	} {
		res := w.Call("c1", tc.tool, []byte(tc.args))
		if res.OK || res.Code != tc.code || !strings.Contains(string(res.Output), tc.msg) {
			t.Errorf("%s %s: %+v %s", tc.tool, tc.args, res, res.Output)
		}
	}
	// Every call is in the trace: call and result.
	if n := len(l.events); n != 10 {
		t.Errorf("events = %d (%v), want 10", n, l.types())
	}
}

func TestVerificationGatesAccountTools(t *testing.T) {
	w, _ := newWS(t, "fnol-auto-glass")
	if res := w.Call("c1", "lookup_policy", []byte(`{"policy_number":"PA-20-44718"}`)); res.Code != CodeNotVerified {
		t.Fatalf("lookup before verification: %+v", res)
	}
	// Wrong date of birth: not verified, and still gated.
	res := w.Call("c2", "verify_caller", []byte(`{"policy_number":"PA 20 44718","date_of_birth":"March 15, 1979"}`))
	if !res.OK || !strings.Contains(string(res.Output), `"verified":false`) {
		t.Fatalf("wrong DOB: %s", res.Output)
	}
	res = w.Call("c3", "verify_caller", []byte(`{"policy_number":"pa-20-44718","date_of_birth":"March fourteenth, 1979"}`))
	if !strings.Contains(string(res.Output), `"verified":true`) {
		t.Fatalf("spoken DOB should verify: %s", res.Output)
	}
	res = w.Call("c4", "lookup_policy", []byte(`{"policy_number":"PA2044718"}`))
	if !res.OK || !strings.Contains(string(res.Output), "Preferred") {
		t.Fatalf("lookup after verification: %s", res.Output)
	}
}

// A caller verifies an address by its street line, often with the unit and city, seldom with the
// state and ZIP (the frozen caller of utility-payment-arrangement never says "OR 97402"): the
// record matches on the leading parts said, and on nothing else.
func TestAddressVerifiesOnItsLeadingParts(t *testing.T) {
	for _, tc := range []struct {
		address  string
		verified bool
	}{
		{"1418 Alder Court, Unit 3B, Eugene, OR 97402", true},
		{"fourteen eighteen Alder Court, unit three B, Eugene", true},
		{"1418 Alder Ct Unit 3B Eugene", true},
		{"1418 Alder Ct Apt 3B", true},
		{"1418 Alder Court", true},
		{"1418 Alder Court, Unit 3D, Eugene", false},      // another unit
		{"1418 Alder Court, Eugene", false},               // a part skipped
		{"1418 Alder Court, Unit 3B, Springfield", false}, // another city
		{"1418 Older Ct Unit 3B Eugene", false},
		{"Eugene, OR 97402", false},
		{"", false},
	} {
		w, _ := newWS(t, "utility-payment-arrangement")
		args, _ := json.Marshal(map[string]string{"account_number": "8841 0392 57", "service_address": tc.address})
		res := w.Call("c1", "verify_account", args)
		if got := strings.Contains(string(res.Output), `"verified":true`); !res.OK || got != tc.verified {
			t.Errorf("verify_account with %q: %s, want verified %v", tc.address, res.Output, tc.verified)
		}
	}
}

func TestKnowledgeSearchFindsThePolicy(t *testing.T) {
	w, _ := newWS(t, "fnol-auto-glass")
	res := w.Call("c1", "kb_search", []byte(`{"query":"windshield glass deductible for preferred tier"}`))
	var out struct {
		Results []Hit `json:"results"`
	}
	json.Unmarshal(res.Output, &out)
	if len(out.Results) == 0 || out.Results[0].ID != "glass-deductibles" {
		t.Errorf("results: %+v", out.Results)
	}
	res = w.Call("c2", "kb_search", []byte(`{"query":"zebra"}`))
	if !strings.Contains(string(res.Output), `"results":[]`) {
		t.Errorf("no match should be an empty list: %s", res.Output)
	}
}

func TestLifecycleNeedsRequiredFields(t *testing.T) {
	w, _ := newWS(t, "fnol-auto-glass")
	res := w.Call("c1", "mark_ready", nil)
	if res.Code != CodeIncomplete || !strings.Contains(string(res.Output), "policy_number") {
		t.Fatalf("mark_ready on an empty claim: %s", res.Output)
	}
	if res := w.Call("c2", "request_submission_approval", []byte(`{}`)); res.Code != CodeBadState {
		t.Fatalf("approval request in draft: %+v", res)
	}
	fillFNOL(t, w)
	if res := w.Call("c3", "mark_ready", nil); !res.OK || w.State() != task.StateReady {
		t.Fatalf("mark_ready: %s state %s", res.Output, w.State())
	}
}

func TestApprovalTokenLifecycle(t *testing.T) {
	t.Run("commit without approval is blocked and recorded", func(t *testing.T) {
		w, l := newWS(t, "fnol-auto-glass")
		fillFNOL(t, w)
		w.Call("c1", "mark_ready", nil)
		res := w.Call("c2", "submit_claim", nil)
		if res.OK || res.Code != CodeApprovalRequired || w.State() == task.StateCommitted {
			t.Fatalf("commit without approval: %+v", res)
		}
		if !has(l, trace.AuthCommitBlocked, "no approval") {
			t.Errorf("blocked commit missing from the trace: %v", l.types())
		}
	})
	t.Run("approved commit succeeds once", func(t *testing.T) {
		w, l := newWS(t, "fnol-auto-glass")
		fillFNOL(t, w)
		w.Call("c1", "mark_ready", nil)
		tok := w.Approve("submit_claim")
		if !tok.Valid || w.State() != task.StateApproved {
			t.Fatalf("approve: %+v state %s", tok, w.State())
		}
		if res := w.Call("c2", "submit_claim", nil); !res.OK || w.State() != task.StateCommitted {
			t.Fatalf("commit: %s", res.Output)
		}
		if res := w.Call("c3", "submit_claim", nil); res.OK {
			t.Fatal("a token is used up by its commit")
		}
		if !has(l, trace.AuthCommitted, "") {
			t.Error("no auth.committed")
		}
		if res := w.Call("c4", "update_claim", []byte(`{"deductible":0}`)); res.Code != CodeBadState {
			t.Errorf("a committed artifact cannot change: %+v", res)
		}
	})
	t.Run("revocation invalidates at once", func(t *testing.T) {
		w, l := newWS(t, "fnol-auto-glass")
		fillFNOL(t, w)
		w.Call("c1", "mark_ready", nil)
		w.Approve("submit_claim")
		w.Revoke("submit_claim")
		if w.State() != task.StateReady {
			t.Errorf("state after revoke = %s", w.State())
		}
		res := w.Call("c2", "submit_claim", nil)
		if res.OK || !strings.Contains(string(res.Output), "revoked") || !has(l, trace.AuthCommitBlocked, "revoked") {
			t.Fatalf("commit after revocation: %s", res.Output)
		}
	})
	t.Run("changing the artifact after approval voids the token", func(t *testing.T) {
		w, l := newWS(t, "fnol-auto-glass")
		fillFNOL(t, w)
		w.Call("c1", "mark_ready", nil)
		w.Approve("submit_claim")
		w.Call("c2", "update_claim", []byte(`{"deductible":250}`))
		if !has(l, trace.AuthTokenInvalidated, "changed") || w.State() != task.StateReady {
			t.Fatalf("token not invalidated: %v state %s", l.types(), w.State())
		}
		if res := w.Call("c3", "submit_claim", nil); res.OK {
			t.Fatal("commit with a void token")
		}
	})
	t.Run("re-recording the same value keeps the approval", func(t *testing.T) {
		w, l := newWS(t, "fnol-auto-glass")
		fillFNOL(t, w)
		w.Call("c1", "mark_ready", nil)
		w.Approve("submit_claim")
		w.Call("c2", "update_claim", []byte(`{"deductible":100}`))
		if has(l, trace.AuthTokenInvalidated, "") {
			t.Fatal("an unchanged value must not void the approval")
		}
	})
}

func has(l *log, typ trace.Type, text string) bool {
	for _, e := range l.events {
		if e.Type == typ && strings.Contains(e.Text, text) {
			return true
		}
	}
	return false
}

func TestReplayRebuildsStateAndDetectsTampering(t *testing.T) {
	w, l := newWS(t, "fnol-auto-glass")
	fillFNOL(t, w)
	w.Call("c1", "mark_ready", nil)
	w.Approve("submit_claim")
	w.Call("c2", "submit_claim", nil)
	snap, mm, err := Replay(loadTask(t, "fnol-auto-glass"), l.events)
	if err != nil || len(mm) != 0 {
		t.Fatalf("replay: %v %v", err, mm)
	}
	if snap.State != task.StateCommitted || string(snap.Fields["deductible"]) != "100" {
		t.Errorf("snapshot: %+v", snap)
	}
	// A forged artifact update (a value the agent never sent) is caught.
	forged := append([]trace.Event(nil), l.events...)
	for i := range forged {
		if forged[i].Type == trace.ArtifactUpdate && forged[i].Field == "deductible" {
			forged[i].Value = json.RawMessage("0")
		}
	}
	if _, mm, _ := Replay(loadTask(t, "fnol-auto-glass"), forged); len(mm) == 0 {
		t.Error("replay did not notice a forged artifact value")
	}
}
