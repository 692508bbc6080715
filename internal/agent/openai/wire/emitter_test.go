package wire

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"
)

// capture records the events an Emitter writes, as the JSON a client would read.
type capture struct{ events []map[string]any }

func (c *capture) send(ev *ServerEvent) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	c.events = append(c.events, m)
	return nil
}

func (c *capture) types() []string {
	out := make([]string, len(c.events))
	for i, e := range c.events {
		out[i] = e["type"].(string)
	}
	return out
}

func keys(m map[string]any) string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return strings.Join(k, ",")
}

// The sequences of REALTIME_PROTOCOLS.md §1 ("Fake-server sequences").
func TestAudioReplySequence(t *testing.T) {
	for _, tt := range []struct {
		schema Schema
		want   []string
	}{
		{SchemaGA, []string{"response.created", "response.output_item.added", "conversation.item.added", "response.content_part.added",
			"response.output_audio.delta", "response.output_audio_transcript.delta", "response.output_audio.done",
			"response.output_audio_transcript.done", "response.content_part.done", "response.output_item.done",
			"conversation.item.done", "response.done"}},
		{SchemaBeta, []string{"response.created", "response.output_item.added", "conversation.item.created", "response.content_part.added",
			"response.audio.delta", "response.audio_transcript.delta", "response.audio.done",
			"response.audio_transcript.done", "response.content_part.done", "response.output_item.done", "response.done"}},
	} {
		t.Run(string(tt.schema), func(t *testing.T) {
			var c capture
			e := NewEmitter(tt.schema, "t", c.send)
			r, _ := e.Begin()
			item, _ := r.BeginAudio()
			r.Audio(make([]int16, 2400))
			r.Transcript("Hello.")
			r.Done("completed", "", nil, &Usage{TotalTokens: 3})
			if got := c.types(); !slices.Equal(got, tt.want) {
				t.Fatalf("sequence\n%v\nwant\n%v", got, tt.want)
			}
			delta := c.events[4]
			if k := keys(delta); k != "content_index,delta,event_id,item_id,output_index,response_id,type" {
				t.Errorf("audio delta fields %s", k)
			}
			if delta["item_id"] != item || delta["output_index"] != 0.0 || delta["content_index"] != 0.0 {
				t.Errorf("audio delta %v", delta)
			}
			done := c.events[len(c.events)-1]["response"].(map[string]any)
			out := done["output"].([]any)[0].(map[string]any)
			if done["status"] != "completed" || out["id"] != item || out["content"].([]any)[0].(map[string]any)["transcript"] != "Hello." {
				t.Errorf("response.done %v", done)
			}
		})
	}
}

func TestFunctionCallBatchAndGrokUsage(t *testing.T) {
	var c capture
	e := NewEmitter(SchemaGrok, "t", c.send)
	r, _ := e.Begin()
	id1, _ := r.FunctionCall("a", `{"x":1}`)
	id2, _ := r.FunctionCall("b", `{}`)
	r.Done("completed", "", nil, &Usage{TotalTokens: 9, InputTokens: 4, OutputTokens: 5})
	want := []string{"response.created",
		"response.output_item.added", "conversation.item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
		"response.output_item.added", "conversation.item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
		"response.done"}
	if got := c.types(); !slices.Equal(got, want) {
		t.Fatalf("sequence %v", got)
	}
	args := c.events[4]
	if args["call_id"] != id1 || args["name"] != "a" || args["arguments"] != `{"x":1}` {
		t.Errorf("arguments.done %v", args)
	}
	done := c.events[len(c.events)-1]
	if u, _ := done["usage"].(map[string]any); u["total_tokens"] != 9.0 {
		t.Errorf("grok usage not at the top level: %v", done)
	}
	out := done["response"].(map[string]any)["output"].([]any)
	if len(out) != 2 || out[1].(map[string]any)["call_id"] != id2 {
		t.Errorf("output %v", out)
	}
}

func TestCancelClosesOpenItemIncomplete(t *testing.T) {
	var c capture
	e := NewEmitter(SchemaGA, "t", c.send)
	r, _ := e.Begin()
	r.BeginAudio()
	r.Audio(make([]int16, 240))
	r.Done("cancelled", "client_cancelled", nil, nil)
	last := c.events[len(c.events)-1]["response"].(map[string]any)
	if last["status"] != "cancelled" || last["status_details"].(map[string]any)["reason"] != "client_cancelled" ||
		last["output"].([]any)[0].(map[string]any)["status"] != "incomplete" {
		t.Fatalf("response.done %v", last)
	}
	if r.AudioMS() != 10 {
		t.Errorf("audio ms %d", r.AudioMS())
	}
}
