package elevenlabs

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/voicebench/humanaudit/internal/agent"
)

// handle processes one server frame.
func (a *Adapter) handle(data []byte) {
	var msg ServerMessage
	err := json.Unmarshal(data, &msg)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lost {
		return
	}
	if err != nil || msg.Type == "" {
		if err == nil {
			err = fmt.Errorf("no type")
		}
		b, _ := json.Marshal(strings.ToValidUTF8(string(data), "?"))
		a.emitLocked(agent.Event{Type: agent.EventError, RawType: "unparsable", Raw: agent.BoundRaw(b),
			Err: &agent.Error{Class: agent.ClassProtocol, Code: "bad_json", Message: "provider sent a frame that is not an event: " + err.Error()}})
		return
	}
	raw := data
	if msg.Type == TypeAudio {
		raw = agent.ElideAudio(data, "audio_base_64")
	}
	out := a.normalizeLocked(&msg)
	if len(out) == 0 {
		out = []agent.Event{{Type: agent.EventRaw}}
	}
	out[0].RawType, out[0].Raw = msg.Type, agent.BoundRaw(raw)
	for _, e := range out {
		a.emitLocked(e)
	}
}

func (a *Adapter) normalizeLocked(m *ServerMessage) []agent.Event {
	switch m.Type {
	case TypeMetadata:
		a.metadataLocked(m.Metadata)
	case TypePing:
		if m.Ping != nil {
			// Unanswered pings make the platform drop the conversation.
			a.sendLocked(TypePong, Pong{Type: TypePong, EventID: m.Ping.EventID})
		}
	case TypeAudio:
		return a.audioLocked(m.Audio)
	case TypeAgentResponse:
		if m.Response == nil {
			return nil
		}
		out := a.openLocked(m.Response.EventID)
		a.cur.text = strings.TrimSpace(m.Response.Text)
		a.armLocked()
		if a.cur.text != "" {
			out = append(out, agent.Event{Type: agent.EventTranscriptDelta, Text: a.cur.text, ResponseID: a.cur.id, ItemID: a.cur.id})
		}
		return out
	case TypeAgentCorrection:
		// After an interruption: what the agent actually got to say.
		if c := m.Correction; c != nil && a.cur != nil {
			a.cur.corrected = strings.TrimSpace(c.Corrected)
		}
	case TypeUserTranscript:
		out := a.endTurnLocked(agent.StatusCompleted) // the caller spoke: the agent's turn is over
		if t := m.Transcript; t != nil && strings.TrimSpace(t.Text) != "" {
			out = append(out, agent.Event{Type: agent.EventCallerTranscript, Text: strings.TrimSpace(t.Text)})
		}
		return out
	case TypeInterruption:
		var id int64
		if m.Interruption != nil {
			id = m.Interruption.EventID
		}
		a.lastIntr = max(a.lastIntr, id)
		resp := ""
		if a.cur != nil {
			resp = a.cur.id
			a.lastIntr = max(a.lastIntr, a.cur.event)
		}
		out := a.endTurnLocked(agent.StatusCancelled)
		return append([]agent.Event{{Type: agent.EventInterrupted, ResponseID: resp}}, out...)
	case TypeClientToolCall:
		tc := m.ToolCall
		if tc == nil || tc.ID == "" || a.seen[tc.ID] {
			return nil
		}
		a.seen[tc.ID] = true
		a.calls[tc.ID] = tc.Name
		out := a.endResponseLocked(agent.StatusCompleted)
		args := tc.Parameters
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage(`{}`)
		}
		id := "tool_" + tc.ID
		// A tool call is a response of its own that ends in the call: the follow-up after the
		// result is the next response (as in the other families).
		return append(out, agent.Event{Type: agent.EventToolCall, CallID: tc.ID, Name: tc.Name, Arguments: args, ResponseID: id, ItemID: id},
			agent.Event{Type: agent.EventResponseDone, ResponseID: id, Status: agent.StatusCompleted})
	case TypeError:
		e := &agent.Error{Class: agent.ClassProvider, Code: "error", Message: m.Message}
		if ee := m.ErrorEvent; ee != nil {
			e.Code, e.Message = ee.Type, ee.Message
			if e.Code == "" {
				e.Code = "error"
			}
		}
		switch low := strings.ToLower(e.Message + " " + e.Code); {
		case strings.Contains(low, "quota") || strings.Contains(low, "rate limit"):
			e.Class = agent.ClassRateLimit
		case strings.Contains(low, "auth") || strings.Contains(low, "permission"):
			e.Class = agent.ClassAuth
		case strings.Contains(low, "invalid") || strings.Contains(low, "validation"):
			e.Class = agent.ClassProtocol
		}
		return []agent.Event{{Type: agent.EventError, Err: e}}
	}
	return nil // vad_score, tentative responses, the agent's server tools …: raw only
}

func (a *Adapter) metadataLocked(md *Metadata) {
	if a.ready || md == nil {
		return
	}
	in, err := inputRate(orDefault(md.InputFormat, "pcm_16000"))
	var out int
	if err == nil {
		out, err = outputRate(md.OutputFormat)
	}
	if err != nil {
		select {
		case a.hs <- protocolErr("unsupported_format", "agent %s negotiated %v (set the agent's audio formats on the platform)", a.opts.AgentID, err):
		default:
		}
		return
	}
	a.inRate, a.outRate = in, out
	a.format = agent.Format{InputRate: in, OutputRate: out}
	a.convID = md.ConversationID
	a.ready = true
	select {
	case a.hs <- nil:
	default:
	}
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// openLocked makes the response of event id current, ending another one first. An id of 0 (an
// agent_response without one) belongs to the response in progress.
func (a *Adapter) openLocked(event int64) []agent.Event {
	var out []agent.Event
	if a.cur != nil && (event == 0 || a.cur.event == event) {
		return nil
	}
	if a.cur != nil {
		out = a.endResponseLocked(agent.StatusCompleted)
	}
	a.cur = &response{event: event, id: "ev_" + strconv.FormatInt(event, 10)}
	a.owed = false // the continuation after the tool results has begun
	return out
}

func (a *Adapter) audioLocked(ev *AudioEvent) []agent.Event {
	if ev == nil {
		return nil
	}
	if ev.EventID != 0 && (ev.EventID <= a.lastIntr || ev.EventID == a.discard) {
		return nil // audio of an interrupted response still in flight: never played
	}
	pcm, err := agent.DecodePCM(ev.Audio)
	if err != nil {
		return []agent.Event{{Type: agent.EventError, Err: &agent.Error{Class: agent.ClassProtocol, Code: "bad_audio", Message: err.Error()}}}
	}
	out := a.openLocked(ev.EventID)
	a.cur.samples += len(pcm)
	a.armLocked()
	return append(out, agent.Event{Type: agent.EventAudioDelta, Audio: pcm, ResponseID: a.cur.id, ItemID: a.cur.id})
}

// armLocked (re)starts the timer that ends the current response when its audio stops.
func (a *Adapter) armLocked() {
	r := a.cur
	if r.timer != nil {
		r.timer.Reset(a.idle)
		return
	}
	r.timer = time.AfterFunc(a.idle, func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.cur != r || a.lost || a.closed {
			return
		}
		// Its audio stopped: the turn is over unless a tool call still waits for its result or
		// for the agent's continuation.
		var out []agent.Event
		if len(a.calls) == 0 && !a.owed {
			out = a.endTurnLocked(agent.StatusCompleted)
		} else {
			out = a.endResponseLocked(agent.StatusCompleted)
		}
		for _, e := range out {
			a.emitLocked(e)
		}
	})
}

// endTurnLocked ends the current response and, when a turn was in progress (a response, or a
// continuation owed after tool results), the agent's turn: the platform sends no end of turn, so
// the turn ends when its audio stops with nothing owed, when the caller's transcript arrives, or
// at an interruption (cancelled).
func (a *Adapter) endTurnLocked(status string) []agent.Event {
	if a.cur == nil && !a.owed {
		return nil
	}
	id := a.lastResp
	if a.cur != nil {
		id = a.cur.id
	}
	a.owed = false
	return append(a.endResponseLocked(status), agent.Event{Type: agent.EventTurnEnd, ResponseID: id, Status: status})
}

// endResponseLocked ends the current response: its transcript (corrected after an interruption),
// its usage (audio seconds; the platform reports no tokens) and its end.
func (a *Adapter) endResponseLocked(status string) []agent.Event {
	r := a.cur
	if r == nil {
		return nil
	}
	a.cur, a.lastResp = nil, r.id
	if r.timer != nil {
		r.timer.Stop()
	}
	var out []agent.Event
	text := r.text
	if r.corrected != "" {
		text = r.corrected
	}
	if text != "" {
		out = append(out, agent.Event{Type: agent.EventTranscriptDone, Text: text, ResponseID: r.id, ItemID: r.id})
	}
	u := &agent.Usage{OutputAudioSeconds: float64(r.samples) / float64(max(a.outRate, 1))}
	if a.inRate > 0 {
		u.InputAudioSeconds = float64(a.inSamp) / float64(a.inRate)
	}
	a.inSamp = 0
	out = append(out, agent.Event{Type: agent.EventUsage, ResponseID: r.id, Usage: u},
		agent.Event{Type: agent.EventResponseDone, ResponseID: r.id, Status: status})
	return out
}
