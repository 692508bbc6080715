package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/trace"
)

// Every trace defect the grader used to grade as if the trace were clean is refused by audit
// grade, naming the line; --allow-unknown lets unknown types and fields through.
func TestGradeRefusesDefectiveTraces(t *testing.T) {
	golden := filepath.Join("..", "..", "internal", "grade", "testdata", "golden")
	tasks := filepath.Join("..", "..", "internal", "grade", "testdata", "tasks")
	clean, err := trace.ReadFile(filepath.Join(golden, "clean-success.trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	cleanGrade, err := os.ReadFile(filepath.Join(golden, "clean-success.grade.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gradeCLI := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"grade", "--tasks", tasks}, args...), &out, &errOut)
		return out.String(), err
	}
	writeEvents := func(name string, events []trace.Event) string {
		p := filepath.Join(dir, name)
		if err := trace.WriteFile(p, events); err != nil {
			t.Fatal(err)
		}
		return p
	}
	writeLines := func(name string, edit func(lines []string) []string) string {
		var buf bytes.Buffer
		trace.WriteJSONL(&buf, clean)
		lines := edit(strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n"))
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
		return p
	}
	renumber := func(ev []trace.Event) []trace.Event {
		for i := range ev {
			ev[i].Seq = int64(i + 1)
		}
		return ev
	}
	copyClean := func() []trace.Event { return append([]trace.Event(nil), clean...) }
	find := func(ev []trace.Event, match func(trace.Event) bool) int {
		for i, e := range ev {
			if match(e) {
				return i
			}
		}
		t.Fatal("no such event in the clean trace")
		return -1
	}

	duplicate := copyClean()
	duplicate[40].Seq = 40
	swapped := copyClean()
	swapped[40].Seq, swapped[41].Seq = 42, 41

	forged := copyClean()
	i := find(forged, func(e trace.Event) bool { return e.Type == trace.ArtifactUpdate && e.Field == "deductible" })
	forged[i].Value = json.RawMessage("225")

	// A field changed after the approval, with no token invalidation, then committed.
	afterApproval := copyClean()
	g := find(afterApproval, func(e trace.Event) bool { return e.Type == trace.AuthApprovalGranted })
	at := afterApproval[g+1].T
	change := []trace.Event{
		{T: at, Type: trace.ToolCall, Actor: trace.ActorAgent, CallID: "call_sneaky", Tool: "update_claim", Args: json.RawMessage(`{"deductible":0}`)},
		{T: at, Type: trace.ArtifactUpdate, Actor: trace.ActorEnv, Field: "deductible", Value: json.RawMessage("0")},
		{T: at, Type: trace.ToolResult, Actor: trace.ActorEnv, CallID: "call_sneaky", Tool: "update_claim", OK: trace.Bool(true),
			Result: json.RawMessage(`{"ok":true,"recorded":{"deductible":0},"state":"approved"}`)},
	}
	afterApproval = renumber(append(afterApproval[:g+2:g+2], append(change, afterApproval[g+2:]...)...))

	unknownType := copyClean()
	unknownType = renumber(append(unknownType[:10:10], append([]trace.Event{{T: unknownType[9].T, Type: "agent.thought", Text: "hmm"}}, unknownType[10:]...)...))

	for _, tc := range []struct {
		name, file, want string
	}{
		{"a duplicate seq", writeEvents("duplicate.jsonl", duplicate), "line 41 (caller.utterance): duplicate seq 40 (also event 40)"},
		{"swapped seq", writeEvents("swapped.jsonl", swapped), "line 42 (caller.speech_end): seq 41 after seq 42: events out of order"},
		{"a recorded value the tool call did not send", writeEvents("forged.jsonl", forged),
			"line " + itoa(i+1) + " (seq " + itoa(i+1) + "): the recorded workspace events differ from a replay of the trace's tool calls and authorization acts: recorded artifact.update field=deductible value=225, replayed artifact.update field=deductible value=100"},
		{"a change after approval without invalidating the token", writeEvents("after-approval.jsonl", afterApproval),
			`recorded tool.result call=call_sneaky tool=update_claim result={"ok":true,"recorded":{"deductible":0},"state":"approved"} ok=true, replayed auth.token_invalidated action=submit_claim token=apv-submit_claim-1 text=artifact changed after approval`},
		{"an unknown event type", writeEvents("unknown-type.jsonl", unknownType), `line 11 (agent.thought): unknown event type "agent.thought" (--allow-unknown lets it through)`},
		{"an unknown field", writeLines("unknown-field.jsonl", func(l []string) []string {
			l[4] = strings.Replace(l[4], `{"seq":5,`, `{"seq":5,"mood":"calm",`, 1)
			return l
		}), `line 5 (caller.utterance): field "mood" is not in the trace format (--allow-unknown lets it through)`},
		{"a field of the wrong type", writeLines("wrong-type.jsonl", func(l []string) []string {
			l[6] = strings.Replace(l[6], `{"seq":7,`, `{"seq":"7",`, 1)
			return l
		}), `line 7 (tool.call): field "seq": got a string "7", want an integer`},
		{"meta with an object value", writeLines("meta-object.jsonl", func(l []string) []string {
			l[0] = strings.Replace(l[0], `"caller":"textcall"`, `"caller":{"name":"textcall"}`, 1)
			return l
		}), `line 1 (session.start): field "meta": meta "caller": got an object, want a string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gradeCLI(tc.file)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}

	t.Run("--allow-unknown grades past unknown types and fields", func(t *testing.T) {
		for _, f := range []string{filepath.Join(dir, "unknown-type.jsonl"), filepath.Join(dir, "unknown-field.jsonl")} {
			out, err := gradeCLI("--allow-unknown", f)
			if err != nil || out != string(cleanGrade) {
				t.Errorf("%s: err %v\n%s", f, err, out)
			}
		}
	})
	t.Run("meta numbers and booleans are read as their text", func(t *testing.T) {
		f := writeLines("meta-number.jsonl", func(l []string) []string {
			l[0] = strings.Replace(l[0], `"seed":"0"`, `"seed":0`, 1)
			l[0] = strings.Replace(l[0], `"task_version":"1"`, `"task_version":1`, 1)
			return l
		})
		out, err := gradeCLI(f)
		if err != nil || out != string(cleanGrade) {
			t.Errorf("err %v\n%s", err, out)
		}
	})
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
