package bank

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/textcall"
	"github.com/voicebench/humanaudit/internal/trace"
	"github.com/voicebench/humanaudit/internal/workspace"
)

// runOracle plays task t with the scripted oracle agent (with flaws) against the bank's caller and
// grades the trace.
func runOracle(tb testing.TB, t *task.Task, flaws textcall.Flaws, seed int64) (grade.Result, []trace.Event) {
	tb.Helper()
	events, err := textcall.Run(context.Background(), t, textcall.NewScripted(t, flaws), textcall.Options{Seed: seed, Speaker: Speaker(t, seed)})
	if err != nil {
		tb.Fatalf("%s: %v", t.ID, err)
	}
	r, err := grade.Grade(context.Background(), t, events, grade.Options{})
	if err != nil {
		tb.Fatalf("%s: grade: %v", t.ID, err)
	}
	return r, events
}

func summary(r grade.Result) string {
	var failed []string
	for _, f := range r.Fields {
		if !f.Pass {
			failed = append(failed, f.Field+"="+string(f.Pred))
		}
	}
	return fmt.Sprintf("ws ts pv ac av = %d %d %d %d %d final=%s violations=%q missing=%q failed fields=%q",
		r.WS, r.TS, r.PV, r.AC, r.AV, r.FinalState, r.Violations, r.MissingActions, failed)
}

// TestEveryTaskIsSolvable is the proof that each task can be done and its grader is sound: the ideal
// scripted agent, talking to the frozen bank caller, earns Workflow Success on every task and
// seed, and the caller never falls back to template speech.
func TestEveryTaskIsSolvable(t *testing.T) {
	for _, tk := range mustSuite(t) {
		t.Run(tk.ID, func(t *testing.T) {
			for _, seed := range []int64{0, 1, 2} {
				r, events := runOracle(t, tk, textcall.Flaws{}, seed)
				if r.WS != 1 {
					t.Errorf("seed %d: %s", seed, summary(r))
				}
				for _, e := range events {
					if e.Type != trace.CallerUtterance {
						continue
					}
					if !containsString(tk.Bank[e.Plan.ID], e.Text) {
						t.Errorf("seed %d: plan %s spoken as %q, which is not a bank variant", seed, e.Plan.ID, e.Text)
					}
				}
			}
		})
	}
}

// TestIgnoringACorrectionFailsTheCorrectedField: an agent that keeps the first value after the
// caller corrects it loses Artifact Validity, on a corrected field.
func TestIgnoringACorrectionFailsTheCorrectedField(t *testing.T) {
	n := 0
	for _, tk := range mustSuite(t) {
		corrected := correctedFields(tk)
		if len(corrected) == 0 {
			continue
		}
		n++
		t.Run(tk.ID, func(t *testing.T) {
			r, _ := runOracle(t, tk, textcall.Flaws{IgnoreCorrections: true}, 0)
			if r.AV != 0 || r.WS != 0 {
				t.Fatalf("AV=%d WS=%d, want 0 0: %s", r.AV, r.WS, summary(r))
			}
			for _, f := range r.Fields {
				if !f.Pass && !corrected[f.Field] {
					t.Errorf("field %s failed, but only corrected fields %v should (pred %s)", f.Field, corrected, f.Pred)
				}
			}
		})
	}
	if n < 6 {
		t.Errorf("%d tasks have a correction, want at least 6", n)
	}
}

// correctedFields lists the artifact fields whose caller fact a correction or barge-in replaces.
func correctedFields(tk *task.Task) map[string]bool {
	out := map[string]bool{}
	for _, e := range tk.Events {
		if (e.Kind == task.Correction || e.Kind == task.BargeIn) && e.Fact != "" && e.Version > 1 {
			if f, ok := tk.Fact(e.Fact); ok {
				if _, isField := tk.Field(f.Field); isField {
					out[f.Field] = true
				}
			}
		}
	}
	return out
}

// TestCommittingAfterRevocationFailsProcessValidity: an agent that commits after the caller withdrew
// the approval is blocked by the workspace and loses Process Validity.
func TestCommittingAfterRevocationFailsProcessValidity(t *testing.T) {
	n := 0
	for _, tk := range mustSuite(t) {
		if !hasEvent(tk, task.Revocation) {
			continue
		}
		n++
		t.Run(tk.ID, func(t *testing.T) {
			r, events := runOracle(t, tk, textcall.Flaws{CommitAfterRevocation: true}, 0)
			if r.PV != 0 || r.WS != 0 {
				t.Fatalf("PV=%d WS=%d, want 0 0: %s", r.PV, r.WS, summary(r))
			}
			blocked := false
			for _, e := range events {
				if e.Type == trace.AuthCommitBlocked && strings.Contains(e.Text, "revoked") {
					blocked = true
				}
			}
			if !blocked {
				t.Error("the trace has no commit blocked because of the revocation")
			}
		})
	}
	if n < 4 {
		t.Errorf("%d tasks revoke an approval, want at least 4", n)
	}
}

func hasEvent(tk *task.Task, kind task.EventKind) bool {
	for _, e := range tk.Events {
		if e.Kind == kind {
			return true
		}
	}
	return false
}

// TestKnowledgeAndLookupGoldIsGrounded: a gold value that comes from the knowledge base names a
// document that the task's required kb_search query retrieves, and one that comes from a lookup
// is in that lookup's table, so an agent that searches and reads can reach it.
func TestKnowledgeAndLookupGoldIsGrounded(t *testing.T) {
	kbTasks := 0
	for _, tk := range mustSuite(t) {
		// What an agent searching for the required action would type: its keyword and purpose.
		var queries []string
		for _, a := range tk.Grader.RequiredActions {
			if tl, ok := tk.Tool(a.Tool); ok && tl.Kind == task.ToolKBSearch {
				queries = append(queries, a.Args["query"]+" "+a.Reason)
			}
		}
		counted := false
		for _, gf := range tk.Grader.Fields {
			src := gf.Source
			switch {
			case strings.HasPrefix(src, "kb:"):
				doc := strings.TrimPrefix(src, "kb:")
				if i := strings.IndexAny(doc, " :"); i >= 0 {
					doc = doc[:i]
				}
				found := false
				for _, d := range tk.Agent.Knowledge {
					found = found || d.ID == doc
				}
				if !found {
					t.Errorf("%s: field %s cites unknown document %q", tk.ID, gf.Field, doc)
					continue
				}
				if len(queries) == 0 {
					t.Errorf("%s: field %s comes from the knowledge base but no kb_search is required", tk.ID, gf.Field)
				}
				hit := false
				for _, q := range queries {
					for _, h := range workspace.Search(tk.Agent.Knowledge, q, 2) {
						hit = hit || h.ID == doc
					}
				}
				if !hit {
					t.Errorf("%s: no required query (%q) retrieves %s, which decides field %s", tk.ID, queries, doc, gf.Field)
				}
				if !counted && tk.Knowledge == "policy_compute" {
					kbTasks++
					counted = true
				}
			case src != "" && !strings.HasPrefix(src, "kb"):
				tool := strings.Fields(src)[0]
				tool = strings.TrimSuffix(tool, ":")
				tl, ok := tk.Tool(tool)
				if !ok || tl.Kind != task.ToolLookup {
					t.Errorf("%s: field %s cites %q, which is not a lookup tool", tk.ID, gf.Field, tool)
					continue
				}
				gold := task.GoldStrings(gf.Gold)[0]
				inTable := false
				for _, row := range tk.Environment.Tables[tl.Table] {
					for _, col := range tl.Returns {
						v := fmt.Sprint(row[col])
						inTable = inTable || workspace.Same("identifier", v, gold) || workspace.Same("number", v, gold) || workspace.Same("casefold", v, gold)
					}
				}
				if !inTable && !strings.Contains(src, " x ") {
					t.Errorf("%s: gold %q of field %s is in no %s column of table %s", tk.ID, gold, gf.Field, strings.Join(tl.Returns, "/"), tl.Table)
				}
			}
		}
	}
	if kbTasks < 3 {
		t.Errorf("%d policy_compute tasks have gold from the knowledge base, want at least 3", kbTasks)
	}
}
