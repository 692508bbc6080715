package briefing

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/bank"
	"github.com/voicebench/humanaudit/internal/task"
)

func suite(tb testing.TB) []*task.Task {
	tb.Helper()
	tasks, probs := task.LoadAll(filepath.Join("..", "..", "tasks"))
	if len(probs) > 0 {
		tb.Fatalf("task suite does not validate:\n%v", probs)
	}
	return tasks
}

// TestRoleCardsKeepTheLeakageBarrier: no role card contains a gold-only value, a future fact
// version, an on_event fact's value, an unfired cue, the agent's instructions or a grader term.
func TestRoleCardsKeepTheLeakageBarrier(t *testing.T) {
	tasks := suite(t)
	if len(tasks) < 24 {
		t.Fatalf("%d tasks", len(tasks))
	}
	for _, tk := range tasks {
		md := string(Markdown(tk))
		if leaks := bank.Leaks(tk, md, bank.InitialKnown(tk), nil); len(leaks) > 0 {
			t.Errorf("roleCards/%s leaks: %v", FileName(tk), leaks)
		}
		// What the card must say: the persona, every goal and constraint, and every fact known at
		// the start with its hint.
		for _, want := range append(append([]string{tk.User.Persona.Name, tk.Title}, tk.User.Goals...), tk.User.Constraints...) {
			if !strings.Contains(md, want) {
				t.Errorf("%s: card lacks %q", tk.ID, want)
			}
		}
		for _, f := range tk.User.Facts {
			row := "| " + cell(f.Label) + " | " + cell(f.Versions[0].Value) + " |"
			switch {
			case f.Reveal == task.OnEvent && strings.Contains(md, row):
				t.Errorf("%s: on_event fact %s is on the card", tk.ID, f.ID)
			case f.Reveal == task.Volunteer && !strings.Contains(md, "| say it when it fits "+row):
				t.Errorf("%s: volunteer fact %s is not marked \"say it when it fits\"", tk.ID, f.ID)
			case f.Reveal == task.OnAsk && !strings.Contains(md, "| only if asked "+row):
				t.Errorf("%s: on_ask fact %s is not marked \"only if asked\"", tk.ID, f.ID)
			}
		}
	}
}

// TestLeakageCheckWouldCatchACardThatLeaks guards the guard: a card with a hidden value appended
// fails the same check.
func TestLeakageCheckWouldCatchACardThatLeaks(t *testing.T) {
	for _, tk := range suite(t) {
		md := string(Markdown(tk))
		factValue := map[string]bool{}
		for _, f := range tk.User.Facts {
			for _, v := range f.Versions {
				factValue[v.Value] = true
			}
		}
		var hidden []string
		for _, gf := range tk.Grader.Fields {
			for _, g := range task.GoldStrings(gf.Gold) {
				if gf.Source != "" && !factValue[g] {
					hidden = append(hidden, g)
				}
			}
		}
		for _, f := range tk.User.Facts {
			for i, v := range f.Versions {
				if i > 0 || f.Reveal == task.OnEvent {
					hidden = append(hidden, v.Value)
				}
			}
		}
		hidden = append(hidden, tk.Agent.Instructions)
		for _, h := range hidden {
			if len(h) < 3 || !strings.ContainsAny(h, "0123456789") && len(strings.Fields(h)) < 2 {
				continue // enumeration words like "family" are not specific enough to scan for
			}
			if leaks := bank.Leaks(tk, md+"\n"+h+"\n", bank.InitialKnown(tk), nil); len(leaks) == 0 {
				t.Errorf("%s: appending %q to the card is not caught", tk.ID, h)
			}
		}
	}
}
