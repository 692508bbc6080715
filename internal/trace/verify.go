package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// A trace is verified before it is graded or imported: each line's fields have their documented
// JSON types (CheckLines), and the events are numbered 1, 2, 3, … with known types and the fields
// their type needs (Verify). docs/trace.md lists the checks.

// Defect is one way a trace breaks the canonical format.
type Defect struct {
	Line    int // 1-based line of the JSONL file; 0 when unknown
	Seq     int64
	Type    Type
	Message string
}

func (d Defect) String() string {
	var b strings.Builder
	if d.Line > 0 {
		b.WriteString("line " + strconv.Itoa(d.Line))
	} else {
		b.WriteString("event seq " + strconv.FormatInt(d.Seq, 10))
	}
	if d.Type != "" {
		b.WriteString(" (" + string(d.Type) + ")")
	}
	return b.String() + ": " + d.Message
}

// Defects are a trace's defects; as an error it prints the first few, one per line.
type Defects []Defect

// maxReported bounds the defects an error prints.
const maxReported = 10

func (ds Defects) Error() string {
	var lines []string
	for i, d := range ds {
		if i == maxReported {
			lines = append(lines, fmt.Sprintf("… and %d more", len(ds)-maxReported))
			break
		}
		lines = append(lines, d.String())
	}
	return strings.Join(lines, "\n")
}

// KnownType reports whether t is an event type of the canonical trace (docs/trace.md).
func KnownType(t Type) bool {
	_, known := typeInfo(t)
	return known
}

// fieldKind is the JSON type a field of an event line has.
type fieldKind int

const (
	kindInteger fieldKind = iota
	kindString
	kindBoolean
	kindObject
	kindAny
	kindMeta // an object of strings (numbers and booleans read as text)
)

// fieldKinds are the documented fields of an event line and their JSON types.
var fieldKinds = map[string]fieldKind{
	"seq": kindInteger, "t_ms": kindInteger, "wall": kindString, "type": kindString, "actor": kindString,
	"text": kindString, "source": kindString, "plan": kindObject, "act": kindString, "field": kindString,
	"value": kindAny, "tool": kindString, "call_id": kindString, "args": kindObject, "result": kindAny,
	"ok": kindBoolean, "error": kindString, "from": kindString, "state": kindString, "action": kindString,
	"token": kindString, "event_id": kindString, "cue_id": kindString, "fact": kindString,
	"version": kindInteger, "duration_ms": kindInteger, "dropped_ms": kindInteger, "ref_ms": kindInteger,
	"meta": kindMeta, "raw": kindAny,
}

// CheckLines checks the fields of every event line of a JSONL trace against their documented
// JSON types, and refuses fields the format does not have (unless allowUnknown). Lines that are
// not JSON objects are left to the decoder (ReadJSONL), which names them.
func CheckLines(data []byte, allowUnknown bool) Defects {
	var ds Defects
	line := 0
	for b := range bytes.Lines(data) {
		line++
		b = bytes.TrimSpace(b)
		if len(b) == 0 || b[0] != '{' {
			continue
		}
		var fields map[string]json.RawMessage
		if json.Unmarshal(b, &fields) != nil {
			continue
		}
		typ := Type("")
		if t, ok := fields["type"]; ok {
			var s string
			if json.Unmarshal(t, &s) == nil {
				typ = Type(s)
			}
		}
		names := make([]string, 0, len(fields))
		for k := range fields {
			names = append(names, k)
		}
		sortStrings(names)
		for _, k := range names {
			v := bytes.TrimSpace(fields[k])
			want, known := fieldKinds[k]
			if !known {
				if !allowUnknown {
					ds = append(ds, Defect{Line: line, Type: typ, Message: fmt.Sprintf("field %q is not in the trace format (--allow-unknown lets it through)", k)})
				}
				continue
			}
			if msg := checkKind(k, want, v); msg != "" {
				ds = append(ds, Defect{Line: line, Type: typ, Message: msg})
			}
		}
	}
	return ds
}

// checkKind returns what is wrong with a field value of the wanted kind, or "".
func checkKind(name string, want fieldKind, v []byte) string {
	got := jsonKind(v)
	switch want {
	case kindAny:
		return ""
	case kindInteger:
		if got != "a number" {
			return fmt.Sprintf("field %q: got %s %s, want an integer", name, got, clip(v))
		}
		if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
			return fmt.Sprintf("field %q: got %s, want an integer", name, clip(v))
		}
	case kindString:
		if got != "a string" {
			return fmt.Sprintf("field %q: got %s %s, want a string", name, got, clip(v))
		}
		if name == "actor" {
			var s string
			json.Unmarshal(v, &s)
			switch Actor(s) {
			case ActorCaller, ActorAgent, ActorEnv, ActorSystem:
			default:
				return fmt.Sprintf("field \"actor\": %q is not one of caller, agent, env, system", s)
			}
		}
	case kindBoolean:
		if got != "a boolean" {
			return fmt.Sprintf("field %q: got %s %s, want a boolean", name, got, clip(v))
		}
	case kindObject:
		if got != "an object" {
			return fmt.Sprintf("field %q: got %s %s, want an object", name, got, clip(v))
		}
	case kindMeta:
		var m Meta
		if err := json.Unmarshal(v, &m); err != nil {
			return "field \"meta\": " + err.Error()
		}
	}
	return ""
}

func clip(v []byte) string {
	if len(v) > 40 {
		return string(v[:37]) + "…"
	}
	return string(v)
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// LineNumbers returns the line of each event ReadJSONL decodes from data: the non-blank lines.
func LineNumbers(data []byte) []int {
	var out []int
	line := 0
	for b := range bytes.Lines(data) {
		line++
		if len(bytes.TrimSpace(b)) > 0 {
			out = append(out, line)
		}
	}
	return out
}

// VerifyOptions tune Verify.
type VerifyOptions struct {
	// AllowUnknown tolerates event types the format does not have (they are not graded).
	AllowUnknown bool
	// Lines[i] is the file line of events[i] (LineNumbers), for messages.
	Lines []int
}

// typeInfo reports whether t is a known event type and lists the fields its events must carry,
// in one switch: Verify runs it for every event of every graded trace.
func typeInfo(t Type) (required []string, known bool) {
	switch t {
	case ToolCall:
		return reqToolCall, true
	case ToolResult:
		return reqToolResult, true
	case CallTransferred:
		return reqTool, true
	case ArtifactUpdate:
		return reqArtifactUpdate, true
	case ArtifactState:
		return reqState, true
	case AuthApprovalGranted:
		return reqGranted, true
	case AuthApprovalRequested, AuthApprovalDeclined, AuthApprovalUnclear, AuthRevoked, AuthTokenInvalidated, AuthCommitted, AuthCommitBlocked:
		return reqAction, true
	case FactRevealed:
		return reqFact, true
	case EnvEvent:
		return reqEventID, true
	case CueIssued, CueShown, CueSpoken, CueApplied, CueActed:
		return reqCue, true
	case AgentAct:
		return reqAct, true
	case CallerPlan:
		return reqPlan, true
	case SessionStart, SessionEnd, Exclusion, CallerAudioStart, CallerSpeechStart, CallerSpeechEnd, CallerUtterance,
		AgentSpeechStart, AgentSpeechEnd, AgentTranscript, AgentResponseDone, AgentTurnEnd, AgentReconnect, AgentUsage, AgentError, AgentRaw,
		AuthVerified, MediaBargeIn, MediaGap, MediaStats:
		return nil, true
	}
	return nil, false
}

var (
	reqToolCall       = []string{"call_id", "tool"}
	reqToolResult     = []string{"call_id", "tool", "ok"}
	reqTool           = []string{"tool"}
	reqArtifactUpdate = []string{"field", "value"}
	reqState          = []string{"state"}
	reqGranted        = []string{"action", "token"}
	reqAction         = []string{"action"}
	reqFact           = []string{"fact", "version"}
	reqEventID        = []string{"event_id"}
	reqCue            = []string{"cue_id"}
	reqAct            = []string{"act"}
	reqPlan           = []string{"plan"}
)

// hasAll reports whether e carries every field its type needs: the quick test Verify runs on
// every event before naming what is missing.
func hasAll(e *Event) bool {
	switch e.Type {
	case ToolCall:
		return e.CallID != "" && e.Tool != ""
	case ToolResult:
		return e.CallID != "" && e.Tool != "" && e.OK != nil
	case CallTransferred:
		return e.Tool != ""
	case ArtifactUpdate:
		return e.Field != "" && len(e.Value) > 0
	case ArtifactState:
		return e.State != ""
	case AuthApprovalGranted:
		return e.Action != "" && e.Token != ""
	case AuthApprovalRequested, AuthApprovalDeclined, AuthApprovalUnclear, AuthRevoked, AuthTokenInvalidated, AuthCommitted, AuthCommitBlocked:
		return e.Action != ""
	case FactRevealed:
		return e.Fact != "" && e.Version >= 1
	case EnvEvent:
		return e.EventID != ""
	case CueIssued, CueShown, CueSpoken, CueApplied, CueActed:
		return e.CueID != ""
	case AgentAct:
		return e.Act != ""
	case CallerPlan:
		return e.Plan != nil
	}
	return true
}

func has(e *Event, field string) bool {
	switch field {
	case "call_id":
		return e.CallID != ""
	case "tool":
		return e.Tool != ""
	case "ok":
		return e.OK != nil
	case "field":
		return e.Field != ""
	case "value":
		return len(e.Value) > 0
	case "state":
		return e.State != ""
	case "action":
		return e.Action != ""
	case "token":
		return e.Token != ""
	case "fact":
		return e.Fact != ""
	case "version":
		return e.Version >= 1
	case "event_id":
		return e.EventID != ""
	case "cue_id":
		return e.CueID != ""
	case "act":
		return e.Act != ""
	case "plan":
		return e.Plan != nil
	}
	return true
}

// Verify checks a decoded trace: sequence numbers run 1, 2, 3, … (a duplicate, a swap or a gap
// is a defect), the first event is session.start and a session.end is the last, every type is
// known (unless opts.AllowUnknown), every event has the fields its type needs, and every
// tool.result answers one earlier tool.call of the same call_id and tool.
func Verify(events []Event, opts VerifyOptions) Defects {
	var ds Defects
	add := func(i int, format string, args ...any) {
		d := Defect{Seq: events[i].Seq, Type: events[i].Type, Message: fmt.Sprintf(format, args...)}
		if i < len(opts.Lines) {
			d.Line = opts.Lines[i]
		}
		ds = append(ds, d)
	}
	if len(events) == 0 {
		return Defects{{Message: "the trace has no events"}}
	}
	type call struct{ id, tool string }
	var open []call // tool calls not answered yet
	for i := range events {
		e := &events[i]
		switch {
		case i == 0:
			if e.Seq != 1 {
				add(i, "the first event has seq %d, want 1", e.Seq)
			}
		case e.Seq == events[i-1].Seq+1:
		case e.Seq <= events[i-1].Seq && earlierSeq(events[:i], e.Seq) >= 0:
			add(i, "duplicate seq %d (also event %d)", e.Seq, earlierSeq(events[:i], e.Seq)+1)
		case e.Seq < events[i-1].Seq:
			add(i, "seq %d after seq %d: events out of order", e.Seq, events[i-1].Seq)
		default:
			add(i, "seq %d follows seq %d: %d event(s) missing", e.Seq, events[i-1].Seq, e.Seq-events[i-1].Seq-1)
		}
		required, known := typeInfo(e.Type)
		if !known {
			if !opts.AllowUnknown {
				add(i, "unknown event type %q (--allow-unknown lets it through)", e.Type)
			}
			continue
		}
		if i == 0 || i == len(events)-1 || e.Type == SessionStart || e.Type == SessionEnd {
			switch {
			case e.Type == SessionStart && i != 0:
				add(i, "session.start must be the first event")
			case e.Type == SessionEnd && i != len(events)-1:
				add(i, "session.end must be the last event")
			case i == 0 && e.Type != SessionStart:
				add(i, "the first event is %s, want session.start", e.Type)
			}
		}
		if required == nil {
			continue
		}
		if !hasAll(e) {
			for _, f := range required {
				if !has(e, f) {
					add(i, "a %s event needs %q", e.Type, f)
				}
			}
		}
		switch e.Type {
		case ToolCall:
			if e.CallID == "" {
				break
			}
			for _, c := range open {
				if c.id == e.CallID {
					add(i, "call_id %q is used by an earlier tool.call", e.CallID)
				}
			}
			open = append(open, call{e.CallID, e.Tool})
			if a := bytes.TrimSpace(e.Args); len(a) > 0 && a[0] != '{' {
				add(i, "args must be a JSON object")
			}
		case ToolResult:
			if e.CallID == "" {
				break
			}
			k := -1
			for j, c := range open {
				if c.id == e.CallID {
					k = j
				}
			}
			switch {
			case k >= 0 && open[k].tool != e.Tool:
				add(i, "tool.result of %q for call_id %q, which called %q", e.Tool, e.CallID, open[k].tool)
			case k < 0 && answeredBefore(events[:i], e.CallID):
				add(i, "a second tool.result for call_id %q", e.CallID)
			case k < 0:
				add(i, "tool.result for call_id %q answers no earlier tool.call", e.CallID)
			}
			if k >= 0 {
				open = append(open[:k], open[k+1:]...)
			}
		}
	}
	return ds
}

// earlierSeq returns the index of an earlier event with sequence number seq, or -1.
func earlierSeq(events []Event, seq int64) int {
	for j := len(events) - 1; j >= 0; j-- {
		if events[j].Seq == seq {
			return j
		}
	}
	return -1
}

// answeredBefore reports whether an earlier tool.result answers call_id.
func answeredBefore(events []Event, callID string) bool {
	for j := range events {
		if events[j].Type == ToolResult && events[j].CallID == callID {
			return true
		}
	}
	return false
}
