package report

import (
	"testing"

	"github.com/voicebench/humanaudit/internal/grade"
)

func gradedSession(t testing.TB, id, system, task string, mode Mode, seed int64, ws int) Session {
	t.Helper()
	g := &grade.Result{Task: task, Grader: grade.Version, WS: ws, TS: ws, PV: 1, AC: ws, AV: 1}
	return Session{ID: id, System: system, Task: task, Mode: mode, Seed: seed, Ended: true, Grade: g}
}
