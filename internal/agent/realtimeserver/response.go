package realtimeserver

import (
	"sync"

	"github.com/voicebench/humanaudit/internal/agent/openai/wire"
)

// Response is one response in progress, written by the agent's Respond. Its methods register
// what the agent sends (assistant audio for truncation, function calls for their outputs) before
// the client can act on it.
type Response struct {
	c       *Conn
	rw      *wire.ResponseWriter
	auto    bool
	turns   []Turn
	outputs []ToolOutput

	cancel chan struct{}
	once   sync.Once
	reason string

	itemID  string // the open assistant audio item
	samples int
}

// Outcome is how a response ended: Status completed, cancelled, failed or incomplete, with the
// reason of status_details (turn_detected, client_cancelled, …; a cancel without one reads
// client_cancelled), the error of a failed response and the usage. An empty Status means the
// connection was dropped: no response.done is sent.
type Outcome struct {
	Status  string
	Reason  string
	Failure *wire.ErrorDetail
	Usage   *wire.Usage
}

// ID is the response id.
func (r *Response) ID() string { return r.rw.ID() }

// Auto reports a response server VAD started on its own (not asked for by response.create).
func (r *Response) Auto() bool { return r.auto }

// Turns are the caller turns given to Agent.Commit after the previous response was created and
// before this one: with the earlier ones, what this response answers.
func (r *Response) Turns() []Turn { return r.turns }

// Outputs are the tool outputs received after the previous response was created and before this
// one.
func (r *Response) Outputs() []ToolOutput { return r.outputs }

// Cancelled is closed when the response is cancelled: by the client, by the caller speaking
// over it (server VAD), or because the connection ended. Reason then says which.
func (r *Response) Cancelled() <-chan struct{} { return r.cancel }

// Reason says why the response was cancelled (valid once Cancelled is closed).
func (r *Response) Reason() string { return r.reason }

func (r *Response) stop(reason string) {
	r.once.Do(func() {
		r.reason = reason
		close(r.cancel)
	})
}

// BeginAudio opens the response's assistant audio item and returns its id; the session's voice
// is frozen from now on.
func (r *Response) BeginAudio() (string, error) {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	id, err := r.rw.BeginAudio()
	if err != nil {
		return "", err
	}
	r.itemID, r.samples = id, 0
	c.items[id] = &item{role: "assistant", typ: "message"}
	c.lastItem = id
	c.spoke = true
	return id, nil
}

// Audio sends one delta of the open audio item (PCM16 24 kHz).
func (r *Response) Audio(pcm []int16) error {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := r.rw.Audio(pcm); err != nil {
		return err
	}
	r.samples += len(pcm)
	c.items[r.itemID].samples = r.samples
	return nil
}

// Transcript sends a transcript delta of the open audio item.
func (r *Response) Transcript(delta string) error { return r.rw.Transcript(delta) }

// AudioMS is the duration of the audio sent so far in the open (or last) audio item.
func (r *Response) AudioMS() int { return r.rw.AudioMS() }

// Call sends one complete function call and returns its call id; the calls of one response form
// the tool batch the client answers before asking for the next response.
func (r *Response) Call(name, arguments string) (string, error) {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	id, err := r.rw.FunctionCall(name, arguments)
	if err != nil {
		return "", err
	}
	c.calls[id] = &call{name: name}
	c.batch = append(c.batch, id)
	return id, nil
}

// Drop closes the connection's TCP socket without a close frame, as a network failure would.
func (r *Response) Drop() { r.c.Drop() }
