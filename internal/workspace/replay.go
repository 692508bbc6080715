package workspace

import (
	"bytes"
	"fmt"

	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// isOutput reports whether a trace event is one the workspace itself emits (and replay must
// reproduce), as opposed to an input: a tool call or a caller's authorization act.
func isOutput(e trace.Event) bool {
	switch e.Type {
	case trace.ToolResult, trace.ArtifactUpdate, trace.ArtifactState, trace.AuthVerified,
		trace.AuthTokenInvalidated, trace.AuthCommitted, trace.AuthCommitBlocked:
		return true
	case trace.AuthApprovalRequested:
		return e.Source == "tool"
	}
	return false
}

// Mismatch is a difference between a recorded workspace event and its replay.
type Mismatch struct {
	Seq      int64  // recorded event's sequence number (0 when the replay produced an extra event)
	Recorded string // compact description
	Replayed string
}

func (m Mismatch) String() string {
	return fmt.Sprintf("seq %d: recorded %s, replayed %s", m.Seq, m.Recorded, m.Replayed)
}

// Replay rebuilds the workspace of task t from the inputs in a trace (tool calls, caller approvals,
// revocations and declines) and checks that it emits exactly the workspace events the trace
// recorded. It returns the rebuilt state and every mismatch.
func Replay(t *task.Task, events []trace.Event) (Snapshot, []Mismatch, error) {
	var replayed []trace.Event
	w, err := New(t, func(e trace.Event) trace.Event {
		replayed = append(replayed, e)
		return e
	})
	if err != nil {
		return Snapshot{}, nil, err
	}
	var recorded []trace.Event
	for _, e := range events {
		switch {
		case e.Type == trace.ToolCall:
			w.Call(e.CallID, e.Tool, e.Args)
		case e.Type == trace.AuthApprovalGranted:
			w.Approve(e.Action)
		case e.Type == trace.AuthRevoked:
			w.Revoke(e.Action)
		case e.Type == trace.AuthApprovalDeclined:
			w.Decline(e.Action)
		case isOutput(e):
			recorded = append(recorded, e)
		}
	}
	var outputs []trace.Event
	for _, e := range replayed {
		if isOutput(e) {
			outputs = append(outputs, e)
		}
	}
	var mm []Mismatch
	for i := 0; i < len(recorded) || i < len(outputs); i++ {
		switch {
		case i >= len(outputs):
			mm = append(mm, Mismatch{Seq: recorded[i].Seq, Recorded: describe(recorded[i]), Replayed: "nothing"})
		case i >= len(recorded):
			mm = append(mm, Mismatch{Recorded: "nothing", Replayed: describe(outputs[i])})
		case describe(recorded[i]) != describe(outputs[i]):
			mm = append(mm, Mismatch{Seq: recorded[i].Seq, Recorded: describe(recorded[i]), Replayed: describe(outputs[i])})
		}
	}
	return w.Snapshot(), mm, nil
}

// describe is the part of a workspace event that replay must reproduce.
func describe(e trace.Event) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s", e.Type)
	for _, kv := range [][2]string{{"call", e.CallID}, {"tool", e.Tool}, {"field", e.Field}, {"value", string(e.Value)},
		{"from", e.From}, {"state", e.State}, {"action", e.Action}, {"token", e.Token}, {"error", e.Error}, {"result", string(e.Result)}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, " %s=%s", kv[0], kv[1])
		}
	}
	if e.OK != nil {
		fmt.Fprintf(&b, " ok=%v", *e.OK)
	}
	return b.String()
}
