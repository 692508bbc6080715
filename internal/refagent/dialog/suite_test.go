package dialog_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/flow"
	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/refagent/dialog"
	"github.com/voicebench/humanaudit/internal/refagent/turncall"
	"github.com/voicebench/humanaudit/internal/task"
)

// suiteTasks loads the audit24 tasks of tasks/ (or those DIALOG_SUITE_TASKS names).
func suiteTasks(tb testing.TB) []*task.Task {
	tb.Helper()
	var only []string
	if s := os.Getenv("DIALOG_SUITE_TASKS"); s != "" {
		only = strings.Split(s, ",")
	}
	tasks, err := turncall.Audit24("../../../tasks", only)
	if err != nil {
		tb.Fatal(err)
	}
	return tasks
}

// configured is a dialogue configured with task t's instructions and tools.
func configured(t *task.Task) *dialog.Dialog {
	tools := make([]dialog.Tool, len(t.Agent.Tools))
	for i, tl := range t.Agent.Tools {
		tools[i] = dialog.Tool{Name: tl.Name, Description: tl.Description, Parameters: tl.Parameters}
	}
	d := dialog.New(dialog.Config{})
	d.Configure(t.Agent.Instructions, tools)
	return d
}

// TestTextSuite plays every audit24 task with the bank's words as text, as a perfect recognizer
// would pass them in, with the real flow engine and workspace: the dialogue's ceiling, what it
// loses is lost by the policy. DIALOG_SUITE_TASKS limits it to some tasks; -v prints each dialogue.
func TestTextSuite(t *testing.T) {
	tasks := suiteTasks(t)
	var afa float64
	ws := 0
	var ids []string
	var grades []grade.Result
	for _, tk := range tasks {
		g, c, err := turncall.Play(context.Background(), tk, 1, dialog.Config{}, turncall.AsText)
		if err != nil {
			t.Fatal(err)
		}
		afa += g.AFA.Value
		ws += g.WS
		ids, grades = append(ids, tk.ID), append(grades, g)
		if testing.Verbose() && os.Getenv("DIALOG_SUITE_TASKS") != "" {
			t.Logf("%s:\n%s", tk.ID, strings.Join(c.Lines, "\n"))
		}
		if g.PV == 0 {
			t.Errorf("%s: process violations %v", tk.ID, g.Violations)
		}
	}
	t.Logf("text suite: mean AFA %.3f, WS %d of %d\n%s", afa/float64(len(tasks)), ws, len(tasks), turncall.Table(ids, grades))
	// With perfect recognition the dialogue must at least reach the audio targets of issue 17
	// (mean AFA 0.75, WS on 8 of the 24 tasks): what recognition loses comes on top.
	if os.Getenv("DIALOG_SUITE_TASKS") == "" && (afa/float64(len(tasks)) < 0.75 || ws < 8) {
		t.Errorf("the dialogue's ceiling fell: mean AFA %.3f (want >= 0.75), WS %d (want >= 8)", afa/float64(len(tasks)), ws)
	}
}

// TestQuestionsAskTheirFact: every question the agent asks for a field is heard by the task's
// caller as a question about the fact that field holds.
func TestQuestionsAskTheirFact(t *testing.T) {
	for _, tk := range suiteTasks(t) {
		for _, f := range dialog.FormFields(configured(tk)) {
			var fact *task.Fact
			for i := range tk.User.Facts {
				if tk.User.Facts[i].Field == f.Name {
					fact = &tk.User.Facts[i]
				}
			}
			if fact == nil {
				continue
			}
			var got []string
			for _, a := range flow.Classify(tk, f.Question) {
				got = append(got, a.String())
			}
			if !slices.Contains(got, "ask:"+fact.ID) {
				t.Errorf("%s: %s: %q is heard as %v, asked_as %q", tk.ID, f.Name, f.Question, got, fact.AskedAs)
			}
		}
	}
}

// TestPrintKinds prints each task field's kind, grader and question (DIALOG_PRINT_KINDS=1).
func TestPrintKinds(t *testing.T) {
	if os.Getenv("DIALOG_PRINT_KINDS") == "" {
		t.Skip("set DIALOG_PRINT_KINDS")
	}
	for _, tk := range suiteTasks(t) {
		for _, f := range dialog.FormFields(configured(tk)) {
			gr := ""
			for _, gf := range tk.Grader.Fields {
				if gf.Field == f.Name {
					gr = gf.Grader
				}
			}
			fmt.Printf("%-28s %-28s %-10s %-12s %q\n", tk.ID, f.Name, f.Kind, gr, f.Question)
		}
	}
}

// TestPracticeTaskEverySeed plays the demo's practice task with the bank's words as text on twelve
// seeds: every newcomer meets it first, so with perfect recognition it must resolve on each of
// them, whatever order and wording the seed gives the caller.
func TestPracticeTaskEverySeed(t *testing.T) {
	tasks, err := turncall.Audit24("../../../tasks", []string{"utility-payment-arrangement"})
	if err != nil {
		t.Fatal(err)
	}
	for seed := int64(1); seed <= 12; seed++ {
		g, c, err := turncall.Play(context.Background(), tasks[0], seed, dialog.Config{}, turncall.AsText)
		if err != nil {
			t.Fatal(err)
		}
		if g.WS != 1 {
			t.Errorf("seed %d: WS 0 (TS %d PV %d AC %d AV %d, AFA %.2f)\n%s", seed, g.TS, g.PV, g.AC, g.AV, g.AFA.Value, strings.Join(c.Lines, "\n"))
		}
	}
}
