// Package dialog is the reference agent's side of a call as text in, text out: the form it
// derives from the session's instructions and tool definitions alone (which tool records,
// verifies, looks up, marks ready, asks for approval or commits; which fields exist and how to ask
// for them), the understanding of a recognized caller turn against the question asked, and the
// deterministic slot-filling policy that decides each response (speak, or call tools). It hears
// no audio: the audio responder in internal/refagent recognizes speech, passes the transcripts
// in and speaks what comes out.
package dialog

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/voicebench/humanaudit/internal/asr"
)

// Tool is a function the session offers the agent, as the protocol defines it.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // a JSON schema; its property order is the order fields are asked in
}

// Config configures a Dialog.
type Config struct {
	// Now is the wall clock: dates said without a year are resolved against it. Default time.Now.
	Now func() time.Time
	// Known reports whether the recognizer can put a word in a grammar (a question's grammar only
	// uses words it knows); nil knows every word.
	Known func(word string) bool
}

// Dialog is the agent's state in one call. It is not safe for concurrent use; the Question it
// hands out is, so that turns can be understood while the dialog moves on.
type Dialog struct {
	l listener
	m *model
	p *policy
}

// New starts a call with an empty session (no instructions, no tools).
func New(cfg Config) *Dialog {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	d := &Dialog{l: listener{vocab: cfg.Known, now: cfg.Now}}
	d.Configure("", nil)
	return d
}

// Configure takes the session's instructions and tools (a session update mid-call); what the
// agent has learned stays.
func (d *Dialog) Configure(instructions string, tools []Tool) {
	infos := make([]toolInfo, len(tools))
	for i, t := range tools {
		infos[i] = parseTool(t.Name, t.Description, t.Parameters)
	}
	d.m = newModel(instructions, infos)
	if d.p == nil {
		d.p = newPolicy(d.m)
	} else {
		d.p.setModel(d.m)
	}
}

// Question is what the agent asked last, with the form of the moment: a caller turn that begins
// now is read against it, however the dialog moves on meanwhile.
func (d *Dialog) Question() Question { return Question{l: &d.l, m: d.m, exp: d.p.exp} }

// Heard applies one understood caller turn.
func (d *Dialog) Heard(h Heard) { d.p.heard(h.h) }

// ToolResult takes the output of one of the agent's calls.
func (d *Dialog) ToolResult(name, output string) { d.p.toolResult(name, output) }

// Truncated notes that the caller cut the agent's last utterance short.
func (d *Dialog) Truncated() { d.p.truncated() }

// Next decides the agent's next response.
func (d *Dialog) Next() Action {
	a := d.p.next()
	out := Action{Say: a.say}
	for _, c := range a.calls {
		out.Calls = append(out.Calls, Call{Name: c.name, Args: c.args})
	}
	return out
}

// Action is what the agent does in one response: speak, or call tools (never both: the client
// asks for a follow-up response once the tool outputs are in).
type Action struct {
	Say   string
	Calls []Call
}

// Call is a function call the agent makes; Args is a JSON object.
type Call struct {
	Name string
	Args json.RawMessage
}

// Utterance is one recognized caller turn.
type Utterance struct {
	// Open is the open-vocabulary transcript with word timings.
	Open asr.Result
	// Typed says the turn was also decoded with the question's grammar (Question.Slot), with
	// Answer as the result.
	Typed  bool
	Answer asr.Answer
	// Reread decodes the turn's speech from the given time on with another grammar (to read a
	// value after a preamble: "my callback number is actually …"); false when too little speech
	// follows. Nil for a turn that was not spoken.
	Reread func(ctx context.Context, from time.Duration, slot asr.Slot) (asr.Answer, bool)
}

// Question is a snapshot of what the agent asked (see Dialog.Question).
type Question struct {
	l   *listener
	m   *model
	exp expectation
}

// Slot is the grammar a spoken answer to the question is decoded with besides the open
// vocabulary, or nil when the answer is free text.
func (q Question) Slot() *asr.Slot {
	switch {
	case q.exp.kind == expectField && q.exp.field != nil:
		return q.exp.field.slot(q.l.known)
	case q.exp.kind == expectApproval || q.exp.kind == expectAnythingElse:
		return &asr.Slot{Kind: asr.KindYesNo}
	}
	return nil
}

// Understand reads a recognized turn against the question.
func (q Question) Understand(ctx context.Context, u Utterance) Heard {
	return Heard{q.l.understand(ctx, q.m, q.exp, u)}
}

// UnderstandText reads a typed turn (a user message with text) against the question: its words
// stand for the open transcript, and a typed question's grammar parses them.
func (q Question) UnderstandText(ctx context.Context, text string) Heard {
	words := strings.Fields(strings.ToLower(strings.NewReplacer(",", " ", ".", " ", "?", " ", "!", " ").Replace(text)))
	ws := make([]asr.Word, len(words))
	for i, w := range words {
		ws[i] = asr.Word{Text: w}
	}
	u := Utterance{Open: asr.Result{Text: strings.Join(words, " "), Words: ws}}
	if q.exp.kind == expectField && q.exp.field != nil {
		if s := q.exp.field.slot(q.l.known); s != nil {
			u.Typed = true
			u.Answer.Value, u.Answer.OK = s.Parse(u.Open.Text)
			u.Answer.Result = u.Open
		}
	}
	return q.Understand(ctx, u)
}

// Heard is what the agent understood of one caller turn.
type Heard struct{ h heard }

// Transcript is what the recognizer heard: the caller's transcript.
func (h Heard) Transcript() string { return h.h.transcript }

// Intent names what the turn does (answer, correction, yes, …), for logs.
func (h Heard) Intent() string { return h.h.intent.String() }
