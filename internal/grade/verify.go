package grade

import (
	"errors"
	"fmt"

	"github.com/voicebench/humanaudit/internal/trace"
	"github.com/voicebench/humanaudit/internal/workspace"
)

// ErrUnverified is wrapped by every error of Check: the trace is not one the grader can trust.
var ErrUnverified = errors.New("trace does not verify")

// CheckOptions tune Check.
type CheckOptions struct {
	// AllowUnknown tolerates event types the trace format does not have.
	AllowUnknown bool
	// Lines[i] is the file line of events[i] (trace.LineNumbers), for messages.
	Lines []int
}

// VerifyError says why a trace does not verify: format defects, or the first recorded workspace
// event that a replay of the trace's tool calls and authorization acts does not reproduce.
type VerifyError struct {
	Defects  trace.Defects
	Mismatch *workspace.Mismatch
	Line     int // the mismatching event's line, when known
}

func (e *VerifyError) Error() string {
	if len(e.Defects) > 0 {
		return e.Defects.Error()
	}
	m := e.Mismatch
	where := fmt.Sprintf("event seq %d", m.Seq)
	if e.Line > 0 {
		where = fmt.Sprintf("line %d (seq %d)", e.Line, m.Seq)
	}
	return fmt.Sprintf("%s: the recorded workspace events differ from a replay of the trace's tool calls and authorization acts: recorded %s, replayed %s",
		where, m.Recorded, m.Replayed)
}

// Unwrap makes a VerifyError match ErrUnverified.
func (e *VerifyError) Unwrap() error { return ErrUnverified }

// Check verifies a trace before it is graded: its events are numbered 1, 2, 3 … with known types
// and the fields their types need (trace.Verify), and the workspace events it records (tool
// results, artifact updates and states, verification, tokens, commits) are exactly what the
// task's workspace produces when the trace's tool calls and the caller's approvals, revocations
// and declines are replayed through it. The grader reads those recorded events, so a trace that
// passes Check cannot claim a value, a state or a commit the environment did not produce.
func (g *Grader) Check(events []trace.Event, opts CheckOptions) error {
	if ds := trace.Verify(events, trace.VerifyOptions{AllowUnknown: opts.AllowUnknown, Lines: opts.Lines}); len(ds) > 0 {
		return &VerifyError{Defects: ds}
	}
	env, err := g.environment()
	if err != nil {
		return err
	}
	m, found := env.FirstMismatch(events)
	if !found {
		return nil
	}
	ve := &VerifyError{Mismatch: &m}
	for i := range events {
		if events[i].Seq == m.Seq && i < len(opts.Lines) {
			ve.Line = opts.Lines[i]
			break
		}
	}
	return ve
}

// environment compiles the task's workspace environment once per grader.
func (g *Grader) environment() (*workspace.Env, error) {
	g.envOnce.Do(func() {
		g.env, g.envErr = workspace.Compile(g.t)
		if g.envErr != nil {
			g.envErr = fmt.Errorf("task %s: %w", g.t.ID, g.envErr)
		}
	})
	return g.env, g.envErr
}
