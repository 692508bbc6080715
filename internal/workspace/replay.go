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
		trace.AuthTokenInvalidated, trace.AuthCommitted, trace.AuthCommitBlocked:
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
// report, stopping when report returns false.
func (env *Env) replayer(events []trace.Event, report func(Mismatch) bool) *Workspace {
	scratch, _ := env.buffers.Get().(*[]trace.Event)
	if scratch == nil {
		scratch = new([]trace.Event)
		*scratch = make([]trace.Event, 0, 8)
	}
	buf := (*scratch)[:0]
	defer func() {
		clear(buf[:cap(buf)]) // drop references for the collector
		*scratch = buf[:0]
		env.buffers.Put(scratch)
	}()
	w := env.New(func(e trace.Event) trace.Event {
		buf = append(buf, e)
		return e
	})
	var pendingArr [8]int
	pending := pendingArr[:0] // indexes into buf of the outputs the last input produced
	next := 0
	var lastInput int64
	flush := func() bool {
		for ; next < len(pending); next++ {
			if !report(Mismatch{Seq: lastInput, Recorded: "nothing", Replayed: describe(&buf[pending[next]])}) {
				return false
			}
		}
		return true
	}
	for i := range events {
		e := &events[i]
		switch {
		case isInput(e):
			if !flush() {
				return w
			}
			buf = buf[:0]
			switch e.Type {
			case trace.ToolCall:
				w.Call(e.CallID, e.Tool, e.Args)
			case trace.AuthApprovalGranted:
				w.Approve(e.Action)
			case trace.AuthRevoked:
				w.Revoke(e.Action)
			case trace.AuthApprovalDeclined:
				w.Decline(e.Action)
			}
			lastInput = e.Seq
			// The first event emitted is the input's own record; an approval's token must be
			// the one the environment mints.
			if len(buf) > 0 && buf[0].Type == e.Type && e.Type != trace.ToolCall && buf[0].Token != e.Token {
				if !report(Mismatch{Seq: e.Seq, Recorded: describe(e), Replayed: describe(&buf[0])}) {
					return w
				}
			}
			pending = pending[:0]
			for j := range buf {
				if isOutput(&buf[j]) {
					pending = append(pending, j)
				}
			}
			next = 0
		case isOutput(e):
			if next >= len(pending) {
				if !report(Mismatch{Seq: e.Seq, Recorded: describe(e), Replayed: "nothing"}) {
					return w
				}
				continue
			}
			if r := &buf[pending[next]]; !sameOutput(e, r) {
				if !report(Mismatch{Seq: e.Seq, Recorded: describe(e), Replayed: describe(r)}) {
					return w
				}
			}
			next++
		}
	}
	flush()
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
