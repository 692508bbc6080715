package agenttest

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/voicebench/humanaudit/internal/task"
)

// FastAgent describes a scripted agent that works through a task as a quick commercial agent
// would: it asks for each fact the caller holds, records the gold values, reads them back, asks
// for approval where the task has one, moves the artifact to its target state and says goodbye.
// It never listens to what the caller says (a script, not a policy): the synthetic caller's
// turn-taking and read-back checking are what tests watch.
type FastAgent struct {
	// Latency is the wait before each reply's first audio (0: at once).
	Latency time.Duration
	// UtteranceMS is the audio length of each spoken reply (0: 4000 ms, a long turn).
	UtteranceMS int
	// AskBySchema makes the agent ask as an agent reading only the tool schema does: by the
	// field's name ("What is the employee id?") rather than the task's asked_as phrases.
	AskBySchema bool
	// WrongReadBack names a fact whose value the agent first records and reads back wrong; after
	// the caller's next turn it records the right value and reads everything back again.
	WrongReadBack string
}

// Replies is the agent's script for task t: one reply per response, in order, for an OpenAI,
// Gemini or GPT-Live fake (Script.Replies).
func (a FastAgent) Replies(t *task.Task) []Reply {
	ms := a.UtteranceMS
	if ms <= 0 {
		ms = 4000
	}
	say := func(text string) Reply { return Reply{Text: text, AudioMS: ms, Latency: a.Latency} }
	var out []Reply
	qs := a.Questions(t)
	first := "Thanks for calling, I can help with that."
	if len(qs) == 0 {
		out = append(out, say(first))
	}
	for i, q := range qs {
		text := q.Text
		if i == 0 {
			text = first + " " + text
		}
		out = append(out, say(text))
	}
	gold := goldArgs(t)
	record := recordTool(t)
	var calls []Call
	for _, ra := range t.Grader.RequiredActions {
		args, _ := json.Marshal(ra.Args)
		if ra.Args == nil {
			args = []byte("{}")
		}
		calls = append(calls, Call{Name: ra.Tool, Arguments: string(args)})
	}
	wrongField, wrongValue := "", ""
	if f, ok := t.Fact(a.WrongReadBack); ok && f.Field != "" {
		if v, ok := gold[f.Field].(string); ok {
			wrongField, wrongValue = f.Field, Misread(v)
		}
	}
	if record != nil {
		args := map[string]any{}
		for arg, field := range toolProperties(record) {
			if v, ok := gold[field]; ok {
				args[arg] = v
			}
		}
		if wrongField != "" {
			args[wrongField] = wrongValue
		}
		b, _ := json.Marshal(args)
		calls = append(calls, Call{Name: record.Name, Arguments: string(b)})
	}
	if len(calls) > 0 {
		out = append(out, Reply{Calls: calls, Latency: a.Latency})
	}
	out = append(out, say(readBack(t, gold, wrongField, wrongValue)))
	if wrongField != "" && record != nil {
		b, _ := json.Marshal(map[string]any{wrongField: gold[wrongField]})
		out = append(out, Reply{Calls: []Call{{Name: record.Name, Arguments: string(b)}}, Latency: a.Latency})
		out = append(out, say("Sorry about that, I corrected it. "+readBack(t, gold, "", "")))
	}
	var transitions, approval, commit []Call
	for _, tl := range t.Agent.Tools {
		switch {
		case tl.Kind == task.ToolTransition:
			transitions = append(transitions, Call{Name: tl.Name, Arguments: "{}"})
		case tl.Kind == task.ToolRequestApproval && tl.Action == t.Agent.Artifact.CommitAction:
			approval = append(approval, Call{Name: tl.Name, Arguments: "{}"})
		case tl.Kind == task.ToolCommit && tl.Action == t.Agent.Artifact.CommitAction:
			commit = append(commit, Call{Name: tl.Name, Arguments: "{}"})
		}
	}
	if len(transitions) > 0 {
		out = append(out, Reply{Calls: transitions, Latency: a.Latency})
	}
	if t.Agent.Artifact.CommitAction != "" && len(commit) > 0 {
		if len(approval) > 0 {
			out = append(out, Reply{Calls: approval, Latency: a.Latency})
		}
		out = append(out, say("Shall I go ahead and submit it?"))
		out = append(out, Reply{Calls: commit, Latency: a.Latency})
	}
	out = append(out, say("You're all set. Is there anything else I can help you with today? Goodbye!"))
	out = append(out, say("Thank you for calling. Have a great day!"))
	return out
}

// Question is one question of the agent's script and the fact it asks for.
type Question struct {
	Fact, Text string
}

// Questions are the agent's questions for task t, one per fact the caller is asked for, in order.
func (a FastAgent) Questions(t *task.Task) []Question {
	var out []Question
	for i := range t.User.Facts {
		f := &t.User.Facts[i]
		if f.Reveal != task.OnAsk || len(f.AskedAs) == 0 {
			continue
		}
		text := "Could you tell me " + askObject(f.AskedAs[0]) + "?"
		if a.AskBySchema && f.Field != "" {
			text = "What is the " + strings.ReplaceAll(f.Field, "_", " ") + "?"
		}
		out = append(out, Question{Fact: f.ID, Text: text})
	}
	return out
}

// askObject turns an asked_as phrase into the object of "could you tell me …".
func askObject(p string) string {
	l := strings.ToLower(p)
	for _, w := range []string{"what", "when", "where", "which", "how", "who", "whether", "if", "your", "the", "a ", "an "} {
		if strings.HasPrefix(l, w) {
			return p
		}
	}
	return "the " + p
}

// Misread returns v with one character changed as a mishearing would: the last digit moved on by
// one, else the last letter of the value swapped.
func Misread(v string) string {
	b := []byte(v)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] >= '0' && b[i] <= '9' {
			b[i] = '0' + (b[i]-'0'+1)%10
			return string(b)
		}
	}
	words := strings.Fields(v)
	if len(words) > 0 {
		words[len(words)-1] = "Smithson"
	}
	return strings.Join(words, " ")
}

// readBack says every fact value the agent recorded: "To confirm, I have your X as V, … Is that
// correct?".
func readBack(t *task.Task, gold map[string]any, wrongField, wrongValue string) string {
	var parts []string
	for _, f := range t.User.Facts {
		v, ok := gold[f.Field]
		if !ok || f.Field == "" {
			continue
		}
		s, isString := v.(string)
		if !isString {
			continue
		}
		if f.Field == wrongField {
			s = wrongValue
		}
		parts = append(parts, fmt.Sprintf("%s as %s", strings.ToLower(f.Label), s))
	}
	if len(parts) == 0 {
		return "I have everything I need. Is that correct?"
	}
	return "To confirm, I have " + strings.Join(parts, "; ") + ". Is that correct?"
}

func goldArgs(t *task.Task) map[string]any {
	out := map[string]any{}
	for _, gf := range t.Grader.Fields {
		var v any
		if json.Unmarshal(gf.Gold, &v) == nil && v != nil {
			out[gf.Field] = v
		}
	}
	return out
}

func recordTool(t *task.Task) *task.Tool {
	for i := range t.Agent.Tools {
		if t.Agent.Tools[i].Kind == task.ToolRecord {
			return &t.Agent.Tools[i]
		}
	}
	return nil
}

// toolProperties maps a record tool's argument names to the artifact fields they record.
func toolProperties(tl *task.Tool) map[string]string {
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(tl.Parameters, &schema)
	out := map[string]string{}
	for name := range schema.Properties {
		out[name] = name
		if f, ok := tl.Fields[name]; ok {
			out[name] = f
		}
	}
	return out
}
