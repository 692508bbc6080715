package gemini

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/internal/link"
)

// handle processes one server frame (the Live API sends JSON in binary frames; both opcodes
// arrive here).
func (a *Adapter) handle(f link.Frame) {
	data := f.Data
	norm, err := CamelKeys(data)
	var msg ServerMessage
	if err == nil {
		err = json.Unmarshal(norm, &msg)
	}
	raw := norm
	if msg.ServerContent != nil && msg.ServerContent.ModelTurn != nil {
		raw = agent.ElideAudio(norm, "data")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.link.ReceiveLocked(f, "JSON message", err, rawType(&msg), raw, func() []agent.Event { return a.normalizeLocked(&msg) })
}

// rawType names a server message by its top-level field and, for content, what it carries.
func rawType(m *ServerMessage) string {
	switch {
	case m.SetupComplete != nil:
		return "setupComplete"
	case m.ServerContent != nil:
		c := m.ServerContent
		switch {
		case c.Interrupted:
			return "serverContent.interrupted"
		case c.ModelTurn != nil:
			return "serverContent.modelTurn"
		case c.TurnComplete:
			return "serverContent.turnComplete"
		case c.GenerationComplete:
			return "serverContent.generationComplete"
		case c.OutputTranscription != nil:
			return "serverContent.outputTranscription"
		case c.InputTranscription != nil:
			return "serverContent.inputTranscription"
		}
		return "serverContent"
	case m.ToolCall != nil:
		return "toolCall"
	case m.ToolCallCancellation != nil:
		return "toolCallCancellation"
	case m.GoAway != nil:
		return "goAway"
	case m.SessionResumptionUpdate != nil:
		return "sessionResumptionUpdate"
	case m.UsageMetadata != nil:
		return "usageMetadata"
	}
	return "unknown"
}

func (a *Adapter) normalizeLocked(m *ServerMessage) []agent.Event {
	var out []agent.Event
	if m.SetupComplete != nil && a.link.AwaitingHandshakeLocked() {
		a.link.HandshakeDoneLocked(nil)
	}
	if m.UsageMetadata != nil {
		a.usage = m.UsageMetadata
	}
	if c := m.ServerContent; c != nil {
		out = append(out, a.contentLocked(c)...)
	}
	if ru := m.SessionResumptionUpdate; ru != nil && ru.Resumable && ru.NewHandle != "" {
		a.resumeHandle, a.handleFresh = ru.NewHandle, true
	}
	if tc := m.ToolCall; tc != nil {
		a.beginTurnLocked()
		a.continuation = false
		for _, fc := range tc.FunctionCalls {
			if fc.ID == "" || a.seen[fc.ID] {
				continue
			}
			a.seen[fc.ID] = true
			a.calls[fc.ID] = fc.Name
			args := fc.Args
			if len(args) == 0 || string(args) == "null" {
				args = json.RawMessage(`{}`)
			}
			out = append(out, agent.Event{Type: agent.EventToolCall, CallID: fc.ID, Name: fc.Name, Arguments: args, ResponseID: a.turn, ItemID: a.turn})
		}
	}
	if cc := m.ToolCallCancellation; cc != nil {
		for _, id := range cc.IDs {
			delete(a.calls, id)
		}
		a.flushResultsLocked()
	}
	if ga := m.GoAway; ga != nil {
		out = append(out, a.goAwayLocked(ga.TimeLeft)...)
	}
	if a.usage != nil && a.turn == "" { // usage outside a turn: report it now
		out = append(out, a.usageEventLocked(""))
	}
	if m.ServerContent != nil && m.ServerContent.TurnComplete || m.SessionResumptionUpdate != nil {
		a.maybeReconnectLocked()
	}
	return out
}

func (a *Adapter) beginTurnLocked() {
	a.agentTurn, a.handleFresh = true, false
	if a.turn == "" {
		a.turns++
		a.turn = fmt.Sprintf("turn_%d", a.turns)
		a.interrupted = false
		a.outText.Reset()
	}
}

func (a *Adapter) contentLocked(c *ServerContent) []agent.Event {
	var out []agent.Event
	if t := c.InputTranscription; t != nil {
		a.inText.WriteString(t.Text)
		if t.Finished {
			out = append(out, a.callerTranscriptLocked()...)
		}
	}
	if c.ModelTurn != nil || c.OutputTranscription != nil {
		out = append(out, a.callerTranscriptLocked()...) // the model answers: the caller's turn is over
		a.beginTurnLocked()
		a.continuation = false // the model has continued after its tool results
	}
	if mt := c.ModelTurn; mt != nil {
		for _, p := range mt.Parts {
			if p.InlineData == nil || !strings.HasPrefix(p.InlineData.MimeType, "audio/pcm") {
				continue // thoughts and text parts stay in the raw event
			}
			if a.discard == a.turn {
				continue
			}
			pcm, err := agent.DecodePCM(p.InlineData.Data)
			if err != nil {
				out = append(out, agent.Event{Type: agent.EventError, Err: &agent.Error{Class: agent.ClassProtocol, Code: "bad_audio", Message: err.Error()}})
				continue
			}
			a.outSamples += len(pcm)
			out = append(out, agent.Event{Type: agent.EventAudioDelta, Audio: pcm, ResponseID: a.turn, ItemID: a.turn})
		}
	}
	if t := c.OutputTranscription; t != nil && t.Text != "" {
		a.outText.WriteString(t.Text)
		out = append(out, agent.Event{Type: agent.EventTranscriptDelta, Text: t.Text, ResponseID: a.turn, ItemID: a.turn})
	}
	if c.Interrupted {
		if a.turn != "" {
			a.interrupted = true
			a.discard = a.turn
		}
		out = append(out, agent.Event{Type: agent.EventInterrupted, ResponseID: a.turn})
	}
	if c.TurnComplete && a.turn != "" {
		status := agent.StatusCompleted
		if a.interrupted {
			status = agent.StatusCancelled
		}
		if a.outText.Len() > 0 {
			out = append(out, agent.Event{Type: agent.EventTranscriptDone, Text: a.outText.String(), ResponseID: a.turn, ItemID: a.turn})
		}
		out = append(out, a.usageEventLocked(a.turn))
		out = append(out, agent.Event{Type: agent.EventResponseDone, ResponseID: a.turn, Status: status})
		// The agent's turn is over unless a call waits for its result or the model owes the
		// continuation of results already sent (the shape that ends a tool-call turn with
		// turnComplete and answers in a new turn). An interrupted turn is over: the caller has
		// the floor.
		if a.interrupted || (len(a.calls) == 0 && len(a.results) == 0 && !a.continuation) {
			a.agentTurn, a.continuation = false, false
			out = append(out, agent.Event{Type: agent.EventTurnEnd, ResponseID: a.turn, Status: status})
		}
		a.turn = ""
	}
	return out
}

func (a *Adapter) callerTranscriptLocked() []agent.Event {
	if a.inText.Len() == 0 {
		return nil
	}
	text := strings.TrimSpace(a.inText.String())
	a.inText.Reset()
	return []agent.Event{{Type: agent.EventCallerTranscript, Text: text}}
}

func (a *Adapter) usageEventLocked(turn string) agent.Event {
	u := &agent.Usage{InputAudioSeconds: float64(a.link.TakeInputSamplesLocked()) / InputRate, OutputAudioSeconds: float64(a.outSamples) / OutputRate}
	a.outSamples = 0
	if m := a.usage; m != nil {
		u.InputTokens, u.OutputTokens = m.PromptTokenCount, m.ResponseTokenCount
		for _, d := range m.PromptTokensDetails {
			if d.Modality == "AUDIO" {
				u.InputAudioTokens += d.TokenCount
			}
		}
		for _, d := range m.ResponseTokensDetails {
			if d.Modality == "AUDIO" {
				u.OutputAudioTokens += d.TokenCount
			}
		}
	}
	a.usage = nil
	return agent.Event{Type: agent.EventUsage, ResponseID: turn, Usage: u}
}
