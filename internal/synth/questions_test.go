package synth

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/flow"
	"github.com/voicebench/humanaudit/internal/refagent/dialog"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// questionTally counts agent questions that ask for a fact the caller holds, and how many of
// them the synthetic caller maps to that fact (the fact its next answer would be about).
type questionTally struct {
	asked, mapped   int
	other, unmapped int // questions for nothing the caller holds; of them, mapped to no fact (the unknown plan)
	misses          []string
}

func (q *questionTally) add(t *task.Task, source, truth, text string) {
	var asks []string
	for _, a := range flow.Classify(t, text) {
		if a.Kind == "ask" {
			asks = append(asks, a.Fact)
		}
	}
	if truth == "" {
		q.other++
		if len(asks) == 0 {
			q.unmapped++
		}
		return
	}
	q.asked++
	if len(asks) > 0 && asks[0] == truth {
		q.mapped++
		return
	}
	q.misses = append(q.misses, fmt.Sprintf("%s %s: %q asks for %s, mapped to %v", source, t.ID, text, truth, asks))
}

func (q questionTally) share() float64 {
	if q.asked == 0 {
		return 0
	}
	return float64(q.mapped) / float64(q.asked)
}

// factFor is the fact that answers a tool parameter (the field it records, or the argument).
func factFor(t *task.Task, tool, param string) string {
	field := param
	for _, tl := range t.Agent.Tools {
		if tl.Name == tool && tl.Fields[param] != "" {
			field = tl.Fields[param]
		}
	}
	for _, f := range t.User.Facts {
		if f.Field == field || f.Field == param {
			return f.ID
		}
	}
	return ""
}

func referenceQuestions(t *task.Task) []dialog.FieldQuestion {
	tools := make([]dialog.Tool, len(t.Agent.Tools))
	for i, tl := range t.Agent.Tools {
		tools[i] = dialog.Tool{Name: tl.Name, Description: tl.Description, Parameters: tl.Parameters}
	}
	d := dialog.New(dialog.Config{})
	d.Configure(t.Agent.Instructions, tools)
	return d.Questions()
}

// TestQuestionMappingShare measures, over the whole suite, the share of agent questions for a fact
// the caller holds that the synthetic caller maps to that fact: every question the reference
// agent asks (its form's question for each tool parameter) and every question of the scripted
// fast agent, asking by the task's phrases and by the schema's field names. With
// QUESTION_TRACES=dir it adds the agent speech of synthetic traces in dir (runs against the
// reference agent), each labelled by the reference agent's question it contains. It prints the
// figures and fails below 95%.
func TestQuestionMappingShare(t *testing.T) {
	suite := loadSuite(t)
	tallies := map[string]*questionTally{"reference agent": {}, "fast agent (asked_as)": {}, "fast agent (schema names)": {}, "reference agent traces": {}}
	byID := map[string]*task.Task{}
	for _, tk := range suite {
		byID[tk.ID] = tk
		for _, q := range referenceQuestions(tk) {
			tallies["reference agent"].add(tk, "reference", factFor(tk, q.Tool, q.Field), q.Question)
		}
		for _, q := range (agenttest.FastAgent{}).Questions(tk) {
			tallies["fast agent (asked_as)"].add(tk, "fast", q.Fact, q.Text)
		}
		for _, q := range (agenttest.FastAgent{AskBySchema: true}).Questions(tk) {
			tallies["fast agent (schema names)"].add(tk, "fast-schema", q.Fact, q.Text)
		}
	}
	if dir := os.Getenv("QUESTION_TRACES"); dir != "" {
		files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		for _, file := range files {
			evs, err := trace.ReadFile(file)
			if err != nil || len(evs) == 0 {
				t.Fatalf("%s: %v", file, err)
			}
			tk := byID[evs[0].Meta["task"]]
			if tk == nil {
				continue
			}
			qs := referenceQuestions(tk)
			for _, e := range evs {
				if e.Type != trace.AgentTranscript {
					continue
				}
				for _, q := range qs {
					if strings.Contains(e.Text, q.Question) {
						tallies["reference agent traces"].add(tk, filepath.Base(file), factFor(tk, q.Tool, q.Field), e.Text)
						break
					}
				}
			}
		}
	}
	var total questionTally
	names := make([]string, 0, len(tallies))
	for n := range tallies {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		q := tallies[n]
		if q.asked == 0 && q.other == 0 {
			continue
		}
		t.Logf("%-26s %3d/%3d questions for a held fact mapped to it (%.1f%%); %d/%d questions for nothing held mapped to no fact",
			n, q.mapped, q.asked, 100*q.share(), q.unmapped, q.other)
		for _, m := range q.misses {
			t.Logf("  miss: %s", m)
		}
		total.asked += q.asked
		total.mapped += q.mapped
	}
	t.Logf("all: %d/%d = %.1f%% (target 95%%)", total.mapped, total.asked, 100*total.share())
	if total.share() < 0.95 {
		t.Errorf("question mapping share %.1f%% is below the 95%% target", 100*total.share())
	}
}
