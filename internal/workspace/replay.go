package workspace

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// isOutput reports whether a trace event is one the workspace itself emits (and replay must
// reproduce), as opposed to an input: a tool call or a caller's authorization act.
func isOutput(e *trace.Event) bool {
	switch e.Type {
	case trace.ToolResult, trace.ArtifactUpdate, trace.ArtifactState, trace.AuthVerified,
		trace.AuthTokenInvalidated, trace.AuthCommitted, trace.AuthCommitBlocked, trace.CallTransferred:
		return true
	case trace.AuthApprovalRequested:
		return e.Source == "tool"
	}
	return false
}

// isInput reports whether a trace event is an input the workspace acts on.
func isInput(e *trace.Event) bool {
	switch e.Type {
	case trace.ToolCall, trace.AuthApprovalGranted, trace.AuthRevoked, trace.AuthApprovalDeclined:
		return true
	}
	return false
}

// Mismatch is a difference between a recorded workspace event and its replay.
type Mismatch struct {
	Seq      int64  // the recorded event's sequence number, or of the input whose effect is missing
	Recorded string // compact description ("nothing" when the trace lacks the event)
	Replayed string // compact description ("nothing" when the replay does not produce it)
}

func (m Mismatch) String() string {
	return fmt.Sprintf("seq %d: recorded %s, replayed %s", m.Seq, m.Recorded, m.Replayed)
}

// Replay rebuilds the workspace of task t from the inputs in a trace (tool calls, caller approvals,
// revocations and declines) and checks that it emits exactly the workspace events the trace
// recorded, each after the input that caused it and before the next input. It returns the rebuilt
// state and every mismatch.
func Replay(t *task.Task, events []trace.Event) (Snapshot, []Mismatch, error) {
	env, err := Compile(t)
	if err != nil {
		return Snapshot{}, nil, err
	}
	snap, mm := env.Replay(events)
	return snap, mm, nil
}

// Replay is the package Replay on a compiled environment.
func (env *Env) Replay(events []trace.Event) (Snapshot, []Mismatch) {
	var mm []Mismatch
	w := env.replayer(events, func(m Mismatch) bool { mm = append(mm, m); return true })
	return w.Snapshot(), mm
}

// FirstMismatch replays the trace and returns the first difference between the recorded
// workspace events and the replay, stopping there; ok is false when there is none.
func (env *Env) FirstMismatch(events []trace.Event) (m Mismatch, found bool) {
	env.replayer(events, func(x Mismatch) bool { m, found = x, true; return false })
	return m, found
}

// replayer drives a fresh workspace through the trace's inputs and reports each mismatch to
// report, stopping when report returns false. Each event the workspace emits is compared at once
// with the next recorded workspace event, which must come after the input that caused it and
// before the next input; nothing is copied.
func (env *Env) replayer(events []trace.Event, report func(Mismatch) bool) *Workspace {
	stop := false
	cur := 0 // the next recorded event not yet matched
	var input *trace.Event
	skip := func() {
		for cur < len(events) && !isInput(&events[cur]) && !isOutput(&events[cur]) {
			cur++
		}
	}
	w := env.New(func(e trace.Event) trace.Event {
		if stop {
			return e
		}
		if !isOutput(&e) {
			// The input's own record: an approval's token must be the one the environment mints.
			if input != nil && e.Type == input.Type && e.Type != trace.ToolCall && e.Token != input.Token {
				stop = !report(Mismatch{Seq: input.Seq, Recorded: describe(input), Replayed: describe(&e)})
			}
			return e
		}
		skip()
		switch {
		case cur >= len(events) || isInput(&events[cur]):
			stop = !report(Mismatch{Seq: input.Seq, Recorded: "nothing", Replayed: describe(&e)})
		case !sameOutput(&events[cur], &e):
			stop = !report(Mismatch{Seq: events[cur].Seq, Recorded: describe(&events[cur]), Replayed: describe(&e)})
			cur++
		default:
			cur++
		}
		return e
	})
	for !stop {
		skip()
		if cur >= len(events) {
			break
		}
		e := &events[cur]
		cur++
		if isOutput(e) {
			// Recorded, but the environment did not produce it.
			stop = !report(Mismatch{Seq: e.Seq, Recorded: describe(e), Replayed: "nothing"})
			continue
		}
		input = e
		switch e.Type {
		case trace.ToolCall:
			w.Call(e.CallID, e.Tool, e.Args)
		case trace.AuthApprovalGranted:
			if e.Source == "caller_speech" {
				w.ApproveSpoken(e.Action, e.Text, e.Meta)
			} else {
				w.Approve(e.Action)
			}
		case trace.AuthRevoked:
			w.Revoke(e.Action)
		case trace.AuthApprovalDeclined:
			if e.Source == "caller_speech" {
				w.DeclineSpoken(e.Action, e.Text, e.Meta)
			} else {
				w.Decline(e.Action)
			}
		}
	}
	return w
}

// sameOutput compares the parts of a workspace event that replay must reproduce.
func sameOutput(a, b *trace.Event) bool {
	return a.Type == b.Type && a.CallID == b.CallID && a.Tool == b.Tool && a.Field == b.Field &&
		bytes.Equal(a.Value, b.Value) && a.From == b.From && a.State == b.State && a.Action == b.Action &&
		a.Token == b.Token && a.Error == b.Error && a.Text == b.Text && bytes.Equal(a.Result, b.Result) &&
		(a.OK == nil) == (b.OK == nil) && (a.OK == nil || *a.OK == *b.OK)
}

// describe is the part of a workspace event that replay must reproduce, for messages.
func describe(e *trace.Event) string {
	var b bytes.Buffer
	b.WriteString(string(e.Type))
	for _, kv := range [][2]string{{"call", e.CallID}, {"tool", e.Tool}, {"field", e.Field}, {"value", string(e.Value)},
		{"from", e.From}, {"state", e.State}, {"action", e.Action}, {"token", e.Token}, {"error", e.Error},
		{"text", e.Text}, {"result", string(e.Result)}} {
		if kv[1] != "" {
			b.WriteString(" " + kv[0] + "=" + kv[1])
		}
	}
	if e.OK != nil {
		b.WriteString(" ok=" + strconv.FormatBool(*e.OK))
	}
	return b.String()
}
