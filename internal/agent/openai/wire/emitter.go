package wire

import (
	"fmt"
	"strings"
	"sync"

	"github.com/voicebench/humanaudit/internal/agent"
)

// Emitter writes the server side of one realtime connection: event ids, and responses in the
// order the real API sends them (response.created, output items with their content parts and
// deltas, response.done). It is safe for concurrent use; send is called with Emitter's lock held,
// so events reach the socket in the order they were produced.
type Emitter struct {
	schema Schema
	names  Names
	mu     sync.Mutex
	send   func(*ServerEvent) error
	seq    uint64
	prefix string
}

// NewEmitter returns an Emitter for schema writing through send. idPrefix distinguishes ids of
// different connections (e.g. a connection counter); ids look like "resp_<prefix><n>".
func NewEmitter(schema Schema, idPrefix string, send func(*ServerEvent) error) *Emitter {
	return &Emitter{schema: schema, names: NamesFor(schema), send: send, prefix: idPrefix}
}

// Schema returns the emitter's schema.
func (e *Emitter) Schema() Schema { return e.schema }

// NewID returns a fresh id with the given prefix ("resp", "item", "call", "event", "sess").
func (e *Emitter) NewID(prefix string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.newIDLocked(prefix)
}

func (e *Emitter) newIDLocked(prefix string) string {
	e.seq++
	return fmt.Sprintf("%s_%s%06d", prefix, e.prefix, e.seq)
}

// Send stamps ev with an event id and writes it.
func (e *Emitter) Send(ev *ServerEvent) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sendLocked(ev)
}

func (e *Emitter) sendLocked(ev *ServerEvent) error {
	ev.EventID = e.newIDLocked("event")
	return e.send(ev)
}

// Error sends an error event. clientEventID is the event_id of the client event that caused it
// ("" when none), which is how clients match errors to requests.
func (e *Emitter) Error(typ, code, message, clientEventID string) error {
	d := &ErrorDetail{Type: typ, Code: code, Message: message}
	if clientEventID != "" {
		d.EventID = Str(clientEventID)
	}
	return e.Send(&ServerEvent{Type: Error, Error: d})
}

// Begin starts a response: it sends response.created and returns the writer of its output.
func (e *Emitter) Begin() (*ResponseWriter, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := &ResponseWriter{e: e, id: e.newIDLocked("resp")}
	return r, e.sendLocked(&ServerEvent{Type: ResponseCreated, Response: r.object("in_progress", nil, nil)})
}

// ResponseWriter writes the output of one response. Methods are not safe for concurrent use with
// each other (one goroutine produces a response), but interleave safely with other Emitter calls.
type ResponseWriter struct {
	e      *Emitter
	id     string
	output []Item

	// the open audio item, if any
	audioOpen  bool
	itemID     string
	samples    int
	transcript strings.Builder
}

// ID returns the response id.
func (r *ResponseWriter) ID() string { return r.id }

func (r *ResponseWriter) object(status string, details *StatusDetails, usage *Usage) *Response {
	out := r.output
	if out == nil {
		out = []Item{}
	}
	return &Response{ID: r.id, Object: "realtime.response", Status: status, StatusDetails: details, Output: out, Usage: usage}
}

// BeginAudio opens an assistant message with one audio content part and returns its item id.
func (r *ResponseWriter) BeginAudio() (string, error) {
	e := r.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if r.audioOpen {
		return "", fmt.Errorf("audio item %s already open", r.itemID)
	}
	r.audioOpen, r.itemID, r.samples = true, e.newIDLocked("item"), 0
	r.transcript.Reset()
	idx := len(r.output)
	item := Item{ID: r.itemID, Object: "realtime.item", Type: "message", Status: "in_progress", Role: "assistant", Content: []Content{}}
	r.output = append(r.output, item)
	for _, ev := range []*ServerEvent{
		{Type: OutputItemAdded, ResponseID: r.id, OutputIndex: Int(idx), Item: &item},
		{Type: e.names.ItemAdded, PreviousItemID: nil, Item: &item},
		{Type: ContentPartAdded, ResponseID: r.id, ItemID: r.itemID, OutputIndex: Int(idx), ContentIndex: Int(0),
			Part: &Content{Type: e.names.ContentType, Transcript: Str("")}},
	} {
		if err := e.sendLocked(ev); err != nil {
			return "", err
		}
	}
	return r.itemID, nil
}

// Audio sends one audio delta of the open item (PCM16 at SampleRate).
func (r *ResponseWriter) Audio(pcm []int16) error {
	if !r.audioOpen {
		return fmt.Errorf("no audio item open")
	}
	r.samples += len(pcm)
	return r.e.Send(&ServerEvent{Type: r.e.names.AudioDelta, ResponseID: r.id, ItemID: r.itemID,
		OutputIndex: Int(len(r.output) - 1), ContentIndex: Int(0), Delta: agent.EncodePCM(pcm)})
}

// Transcript sends a transcript delta of the open item.
func (r *ResponseWriter) Transcript(delta string) error {
	if !r.audioOpen {
		return fmt.Errorf("no audio item open")
	}
	r.transcript.WriteString(delta)
	return r.e.Send(&ServerEvent{Type: r.e.names.TranscriptDelta, ResponseID: r.id, ItemID: r.itemID,
		OutputIndex: Int(len(r.output) - 1), ContentIndex: Int(0), Delta: delta})
}

// AudioMS is the duration of the open (or last) audio item's audio so far.
func (r *ResponseWriter) AudioMS() int { return r.samples * 1000 / SampleRate }

// EndAudio closes the open audio item as completed.
func (r *ResponseWriter) EndAudio() error { return r.endAudio("completed") }

func (r *ResponseWriter) endAudio(status string) error {
	if !r.audioOpen {
		return nil
	}
	e := r.e
	e.mu.Lock()
	defer e.mu.Unlock()
	r.audioOpen = false
	idx := len(r.output) - 1
	tr := r.transcript.String()
	part := Content{Type: e.names.ContentType, Transcript: Str(tr)}
	item := Item{ID: r.itemID, Object: "realtime.item", Type: "message", Status: status, Role: "assistant", Content: []Content{part}}
	r.output[idx] = item
	evs := []*ServerEvent{
		{Type: e.names.AudioDone, ResponseID: r.id, ItemID: r.itemID, OutputIndex: Int(idx), ContentIndex: Int(0)},
		{Type: e.names.TranscriptDone, ResponseID: r.id, ItemID: r.itemID, OutputIndex: Int(idx), ContentIndex: Int(0), Transcript: Str(tr)},
		{Type: ContentPartDone, ResponseID: r.id, ItemID: r.itemID, OutputIndex: Int(idx), ContentIndex: Int(0), Part: &part},
		{Type: OutputItemDone, ResponseID: r.id, OutputIndex: Int(idx), Item: &item},
	}
	if e.names.ItemDone {
		evs = append(evs, &ServerEvent{Type: ItemDone, Item: &item})
	}
	for _, ev := range evs {
		if err := e.sendLocked(ev); err != nil {
			return err
		}
	}
	return nil
}

// FunctionCall sends a complete function call item (added, arguments delta and done, item done)
// and returns its call id. Several calls in one response form a parallel batch.
func (r *ResponseWriter) FunctionCall(name, arguments string) (callID string, err error) {
	if err := r.endAudio("completed"); err != nil {
		return "", err
	}
	e := r.e
	e.mu.Lock()
	defer e.mu.Unlock()
	itemID, callID := e.newIDLocked("item"), e.newIDLocked("call")
	idx := len(r.output)
	added := Item{ID: itemID, Object: "realtime.item", Type: "function_call", Status: "in_progress", Name: name, CallID: callID, Arguments: Str("")}
	done := added
	done.Status, done.Arguments = "completed", Str(arguments)
	r.output = append(r.output, done)
	evs := []*ServerEvent{
		{Type: OutputItemAdded, ResponseID: r.id, OutputIndex: Int(idx), Item: &added},
		{Type: e.names.ItemAdded, Item: &added},
		{Type: FunctionArgsDelta, ResponseID: r.id, ItemID: itemID, OutputIndex: Int(idx), CallID: callID, Delta: arguments},
		{Type: FunctionArgsDone, ResponseID: r.id, ItemID: itemID, OutputIndex: Int(idx), CallID: callID, Name: name, Arguments: Str(arguments)},
		{Type: OutputItemDone, ResponseID: r.id, OutputIndex: Int(idx), Item: &done},
	}
	if e.names.ItemDone {
		evs = append(evs, &ServerEvent{Type: ItemDone, Item: &done})
	}
	for _, ev := range evs {
		if err := e.sendLocked(ev); err != nil {
			return "", err
		}
	}
	return callID, nil
}

// Done ends the response with status (completed, cancelled, failed, incomplete). reason fills
// status_details (client_cancelled, turn_detected, …); failure, when set, is the error of a failed
// response. An audio item still open is closed first, as incomplete unless the status is completed.
// Grok carries usage at the top level of response.done instead.
func (r *ResponseWriter) Done(status, reason string, failure *ErrorDetail, usage *Usage) error {
	itemStatus := "completed"
	if status != "completed" {
		itemStatus = "incomplete"
	}
	if err := r.endAudio(itemStatus); err != nil {
		return err
	}
	var details *StatusDetails
	if status != "completed" || reason != "" || failure != nil {
		details = &StatusDetails{Type: status, Reason: reason, Error: failure}
	}
	ev := &ServerEvent{Type: ResponseDone, Response: r.object(status, details, usage)}
	if r.e.schema == SchemaGrok {
		ev.Response.Usage, ev.Usage = nil, usage
	}
	return r.e.Send(ev)
}
