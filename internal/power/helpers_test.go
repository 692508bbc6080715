package power

import (
	"fmt"
	"testing"

	"github.com/voicebench/humanaudit/internal/study"
)

// suiteTasks are 24 tasks shaped like the audit suite's strata, the first six the anchors.
func suiteTasks() ([]study.TaskInfo, []string) {
	var tasks []study.TaskInfo
	var anchors []string
	for i := range 24 {
		id := fmt.Sprintf("task-%02d", i+1)
		tasks = append(tasks, study.TaskInfo{ID: id, RiskTier: []string{"low", "medium", "high"}[i%3],
			RequiredFields: 4 + (i*5)%12, ToolBurden: []string{"light", "moderate"}[(i/2)%2]})
		if i < 6 {
			anchors = append(anchors, id)
		}
	}
	return tasks, anchors
}

func systemLabels(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("sys-%c", 'a'+i))
	}
	return out
}

// mustPlan runs the planner.
func mustPlan(tb testing.TB, systems []string, tasks []study.TaskInfo, anchors []string, k int, seed int64, prefix string) []study.Session {
	tb.Helper()
	p, err := study.Build(study.Request{Tasks: tasks, Anchors: anchors, Systems: systems, SessionsPerParticipant: k, Seed: seed, SlotPrefix: prefix})
	if err != nil {
		tb.Fatal(err)
	}
	return p.Sessions
}

// spreadModel gives the systems rates spread over the tasks: WS from wsLo to wsHi, AFA from
// afaLo to afaHi (in another task order), each system 0.02 below the one before, each task's
// graded fields 4 to 15.
func spreadModel(systems []string, tasks []study.TaskInfo, wsLo, wsHi, afaLo, afaHi, participantSD, sessionSD float64) Model {
	m := Model{Cells: map[string]map[string]Cell{}, ParticipantSD: participantSD, SessionSD: sessionSD}
	n := float64(len(tasks) - 1)
	for si, s := range systems {
		m.Cells[s] = map[string]Cell{}
		for i, t := range tasks {
			m.Cells[s][t.ID] = Cell{WS: wsLo + (wsHi-wsLo)*float64(i)/n - 0.02*float64(si),
				AFA: afaLo + (afaHi-afaLo)*float64((i*7)%len(tasks))/n - 0.02*float64(si), Fields: t.RequiredFields}
		}
	}
	return m
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
