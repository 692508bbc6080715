package trace

import (
	"encoding/json"
	"strings"
	"testing"
)

func verifyMessages(events []Event, opts VerifyOptions) []string {
	var out []string
	for _, d := range Verify(events, opts) {
		out = append(out, d.String())
	}
	return out
}

func TestVerifyFindsEachDefect(t *testing.T) {
	base := func() []Event {
		return []Event{
			{Seq: 1, Type: SessionStart},
			{Seq: 2, Type: ToolCall, CallID: "c1", Tool: "record", Args: json.RawMessage(`{"a":1}`)},
			{Seq: 3, Type: ToolResult, CallID: "c1", Tool: "record", OK: Bool(true)},
			{Seq: 4, Type: SessionEnd},
		}
	}
	if ds := Verify(base(), VerifyOptions{}); len(ds) != 0 {
		t.Fatalf("clean trace: %v", ds)
	}
	tests := []struct {
		name   string
		mutate func([]Event) []Event
		opts   VerifyOptions
		want   string
	}{
		{"first seq not 1", func(e []Event) []Event { e[0].Seq = 0; return e }, VerifyOptions{}, "event seq 0 (session.start): the first event has seq 0, want 1"},
		{"duplicate seq", func(e []Event) []Event { e[2].Seq = 2; return e }, VerifyOptions{}, "duplicate seq 2 (also event 2)"},
		{"swapped seq", func(e []Event) []Event { e[1].Seq, e[2].Seq = 3, 2; return e }, VerifyOptions{}, "seq 2 after seq 3: events out of order"},
		{"gap", func(e []Event) []Event { e[3].Seq = 7; return e }, VerifyOptions{}, "seq 7 follows seq 3: 3 event(s) missing"},
		{"unknown type with its line", func(e []Event) []Event { e[1].Type = "agent.thought"; return e }, VerifyOptions{Lines: []int{1, 3, 4, 5}}, `line 3 (agent.thought): unknown event type "agent.thought"`},
		{"result without a call", func(e []Event) []Event { e[2].CallID = "c9"; return e }, VerifyOptions{}, `tool.result for call_id "c9" answers no earlier tool.call`},
		{"result of another tool", func(e []Event) []Event { e[2].Tool = "other"; return e }, VerifyOptions{}, `tool.result of "other" for call_id "c1", which called "record"`},
		{"missing field", func(e []Event) []Event { e[2].OK = nil; return e }, VerifyOptions{}, `a tool.result event needs "ok"`},
		{"session.end not last", func(e []Event) []Event { e[1], e[3] = e[3], e[1]; e[1].Seq, e[3].Seq = 2, 4; return e }, VerifyOptions{}, "session.end must be the last event"},
		{"no session.start", func(e []Event) []Event { return e[1:] }, VerifyOptions{}, "the first event is tool.call, want session.start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := verifyMessages(tt.mutate(base()), tt.opts)
			if !strings.Contains(strings.Join(got, "\n"), tt.want) {
				t.Errorf("got %q, want one containing %q", got, tt.want)
			}
		})
	}
	unknown := base()
	unknown[1] = Event{Seq: 2, Type: "agent.thought"}
	unknown[2] = Event{Seq: 3, Type: "agent.thought"}
	if ds := Verify(unknown, VerifyOptions{AllowUnknown: true}); len(ds) != 0 {
		t.Errorf("AllowUnknown: %v", ds)
	}
}

func TestCheckLinesNamesLineAndField(t *testing.T) {
	data := "{\"seq\":1,\"type\":\"session.start\",\"meta\":{\"seed\":3,\"x\":true}}\n\n" +
		"{\"seq\":\"2\",\"type\":\"tool.call\",\"ok\":\"yes\",\"actor\":\"robot\",\"mood\":1}\n" +
		"not json\n"
	got := CheckLines([]byte(data), false).Error()
	for _, want := range []string{
		`line 3 (tool.call): field "actor": "robot" is not one of caller, agent, env, system`,
		`line 3 (tool.call): field "mood" is not in the trace format`,
		`line 3 (tool.call): field "ok": got a string "yes", want a boolean`,
		`line 3 (tool.call): field "seq": got a string "2", want an integer`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "line 1") || strings.Contains(got, "line 4") {
		t.Errorf("numbers in meta are documented, and a line that is no JSON is the decoder's: %s", got)
	}
	if ds := CheckLines([]byte("{\"seq\":1,\"type\":\"x\",\"mood\":1}\n"), true); len(ds) != 0 {
		t.Errorf("allowUnknown: %v", ds)
	}
}

func TestMetaReadsNumbersAndBooleansAsText(t *testing.T) {
	evs, err := ReadJSONL(strings.NewReader(`{"seq":1,"type":"session.start","meta":{"seed":3,"ok":true,"rate":0.5,"task":"x"}}` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := evs[0].Meta
	if m["seed"] != "3" || m["ok"] != "true" || m["rate"] != "0.5" || m["task"] != "x" {
		t.Errorf("meta = %v", m)
	}
	_, err = ReadJSONL(strings.NewReader(`{"seq":1,"type":"session.start","meta":{"seed":[3]}}` + "\n"))
	if err == nil || !strings.Contains(err.Error(), `line 1: meta "seed": got an array, want a string`) {
		t.Errorf("err = %v", err)
	}
}
