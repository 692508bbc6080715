package openai

import (
	"encoding/json"
	"log/slog"
	"strings"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/internal/link"
	"github.com/voicebench/humanaudit/internal/agent/openai/wire"
)

// handle processes one provider frame on the reader goroutine.
func (a *Adapter) handle(f link.Frame) {
	data := f.Data
	var ev wire.ServerEvent
	err := json.Unmarshal(data, &ev)
	raw := data // ReadMessage returns a fresh slice per frame: keep it without copying
	switch ev.Type {
	case wire.GAAudioDelta, wire.BetaAudioDelta:
		raw = agent.ElideAudio(data, "delta")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.link.ReceiveLocked(f, "JSON event", err, ev.Type, raw, func() []agent.Event { return a.normalizeLocked(&ev) })
}

func (a *Adapter) normalizeLocked(ev *wire.ServerEvent) []agent.Event {
	switch ev.Type {
	case wire.SessionCreated, wire.ConversationCreated, wire.SessionUpdated:
		a.handshakeLocked(ev)
		return nil

	case wire.ResponseCreated:
		if ev.Response == nil {
			return nil
		}
		a.active, a.awaiting, a.respSamples = ev.Response.ID, false, 0
		a.activeCaller, a.committed = a.committed, false
		a.followUp = false // the follow-up (if one was owed) has started; its response.done decides
		a.stopTimerLocked()
		if a.cancelNext {
			a.cancelNext = false
			a.cancelled[a.active] = true
			a.sendLocked(&wire.ClientEvent{Type: wire.ResponseCancel, ResponseID: a.active})
		}
		return nil

	case wire.GAAudioDelta, wire.BetaAudioDelta:
		if a.cancelled[ev.ResponseID] {
			return nil // the caller interrupted this response; the session flushed its audio
		}
		pcm, err := agent.DecodePCM(ev.Delta)
		if err != nil {
			return []agent.Event{protocolError("bad_audio", err.Error())}
		}
		if a.audio.id != ev.ItemID {
			a.audio = audioItem{id: ev.ItemID, respID: ev.ResponseID}
		}
		a.audio.samples += len(pcm)
		a.respSamples += len(pcm)
		return []agent.Event{{Type: agent.EventAudioDelta, Audio: pcm, ResponseID: ev.ResponseID, ItemID: ev.ItemID}}

	case wire.GATranscriptDelta, wire.BetaTranscriptDelta, wire.GATextDelta, wire.BetaTextDelta:
		b := a.transcripts[ev.ItemID]
		if b == nil {
			b = &strings.Builder{}
			a.transcripts[ev.ItemID] = b
		}
		b.WriteString(ev.Delta)
		return []agent.Event{{Type: agent.EventTranscriptDelta, Text: ev.Delta, ResponseID: ev.ResponseID, ItemID: ev.ItemID}}

	case wire.GATranscriptDone, wire.BetaTranscriptDone, wire.GATextDone, wire.BetaTextDone:
		text := ""
		switch {
		case ev.Transcript != nil && *ev.Transcript != "":
			text = *ev.Transcript
		case ev.Text != nil && *ev.Text != "":
			text = *ev.Text
		case a.transcripts[ev.ItemID] != nil:
			text = a.transcripts[ev.ItemID].String()
		}
		delete(a.transcripts, ev.ItemID)
		return []agent.Event{{Type: agent.EventTranscriptDone, Text: text, ResponseID: ev.ResponseID, ItemID: ev.ItemID}}

	case wire.FunctionArgsDone:
		return a.callLocked(ev.CallID, ev.Name, deref(ev.Arguments), ev.ResponseID, ev.ItemID)

	case wire.OutputItemDone:
		if ev.Item != nil && ev.Item.Type == "function_call" {
			return a.callLocked(ev.Item.CallID, ev.Item.Name, deref(ev.Item.Arguments), ev.ResponseID, ev.Item.ID)
		}
		return nil

	case wire.ResponseDone:
		return a.responseDoneLocked(ev)

	case wire.InputCommitted:
		a.committed = true
		return nil
	case wire.SpeechStarted:
		return []agent.Event{{Type: agent.EventCallerSpeechStarted, ItemID: ev.ItemID}}
	case wire.SpeechStopped:
		return []agent.Event{{Type: agent.EventCallerSpeechStopped, ItemID: ev.ItemID}}
	case wire.InputTranscriptDone:
		return []agent.Event{{Type: agent.EventCallerTranscript, Text: deref(ev.Transcript), ItemID: ev.ItemID}}

	case wire.Error:
		return a.errorLocked(ev.Error)
	}
	return nil // other events (item added, content parts, rate limits, ping, …) stay raw
}

func (a *Adapter) handshakeLocked(ev *wire.ServerEvent) {
	switch {
	case a.phase == phaseWaitCreated && ev.Type != wire.SessionUpdated:
		a.phase = phaseWaitUpdated
		if err := a.sendLocked(a.pendingUpdate); err != nil {
			a.handshakeDoneLocked(err)
		}
	case a.phase == phaseWaitUpdated && ev.Type == wire.SessionUpdated:
		a.handshakeDoneLocked(a.checkSessionLocked(ev.Session))
	}
}

func (a *Adapter) handshakeDoneLocked(err error) {
	if err == nil {
		a.phase = phaseDone
	}
	a.link.HandshakeDoneLocked(err)
}

// checkSessionLocked compares the effective session with what we asked for (a provider that
// silently dropped tools would leave the agent unable to act) and keeps what it applied.
func (a *Adapter) checkSessionLocked(session json.RawMessage) error {
	var s struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Voice             string          `json:"voice"`
		InputAudioFormat  string          `json:"input_audio_format"`
		OutputAudioFormat string          `json:"output_audio_format"`
		TurnDetection     json.RawMessage `json:"turn_detection"`
		Audio             struct {
			Input struct {
				Format        *wire.AudioFormat `json:"format"`
				TurnDetection json.RawMessage   `json:"turn_detection"`
			} `json:"input"`
			Output struct {
				Format *wire.AudioFormat `json:"format"`
				Voice  string            `json:"voice"`
			} `json:"output"`
		} `json:"audio"`
	}
	if len(session) == 0 || json.Unmarshal(session, &s) != nil {
		return nil // nothing to compare against: the fields stay what was sent
	}
	ap := &a.applied
	ap.Echoed = true
	if s.Tools != nil {
		ap.Tools = ap.Tools[:0]
		for _, t := range s.Tools {
			ap.Tools = append(ap.Tools, t.Name)
		}
	} else {
		ap.Tools = append(ap.Tools[:0], a.sentTools...) // not echoed: taken as applied
	}
	if v := firstNonEmpty(s.Audio.Output.Voice, s.Voice); v != "" {
		ap.Voice = v
	}
	if r := rateOf(s.Audio.Input.Format, s.InputAudioFormat); r > 0 {
		ap.InputRate = r
	}
	if r := rateOf(s.Audio.Output.Format, s.OutputAudioFormat); r > 0 {
		ap.OutputRate = r
	}
	td := s.TurnDetection
	if len(s.Audio.Input.TurnDetection) > 0 {
		td = s.Audio.Input.TurnDetection
	}
	if len(td) > 0 {
		var t struct {
			Type string `json:"type"`
		}
		if string(td) == "null" {
			ap.TurnDetection = "manual"
		} else if json.Unmarshal(td, &t) == nil && t.Type != "" {
			ap.TurnDetection = t.Type
		}
	}
	return link.CheckAppliedTools(a.sentTools, ap.Tools, "provider applied")
}

// rateOf is the sample rate of a GA audio format object or a beta format name (pcm16 is 24 kHz).
func rateOf(f *wire.AudioFormat, beta string) int {
	switch {
	case f != nil && f.Rate > 0:
		return f.Rate
	case f != nil && f.Type == "audio/pcm":
		return wire.SampleRate
	case beta == "pcm16":
		return wire.SampleRate
	case beta == "g711_ulaw" || beta == "g711_alaw" || (f != nil && (f.Type == "audio/pcmu" || f.Type == "audio/pcma")):
		return 8000
	}
	return 0
}

// callLocked emits a tool call the first time its call id is seen (the same call appears in
// arguments.done, output_item.done and response.done).
func (a *Adapter) callLocked(callID, name, args, respID, itemID string) []agent.Event {
	if callID == "" || a.seenCalls[callID] {
		return nil
	}
	a.seenCalls[callID] = true
	a.pending[callID] = respID
	b := a.batches[respID]
	if b == nil {
		b = &batch{}
		a.batches[respID] = b
	}
	b.pending++
	return []agent.Event{{Type: agent.EventToolCall, CallID: callID, Name: name, Arguments: jsonArgs(args), ResponseID: respID, ItemID: itemID}}
}

// jsonArgs returns the arguments as JSON; text that is not JSON is kept as a JSON string so that
// the tool dispatcher can report it.
func jsonArgs(s string) json.RawMessage {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage(`{}`)
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

func (a *Adapter) responseDoneLocked(ev *wire.ServerEvent) []agent.Event {
	r := ev.Response
	if r == nil {
		return []agent.Event{protocolError("bad_event", "response.done without a response")}
	}
	var out []agent.Event
	for _, it := range r.Output {
		if it.Type == "function_call" {
			out = append(out, a.callLocked(it.CallID, it.Name, deref(it.Arguments), r.ID, it.ID)...)
		}
	}
	if r.Status == agent.StatusFailed {
		e := &agent.Error{Class: agent.ClassProvider, Code: "response_failed", Message: "response failed"}
		if r.StatusDetails != nil && r.StatusDetails.Error != nil {
			d := r.StatusDetails.Error
			e = &agent.Error{Class: classify(d), Code: firstNonEmpty(d.Code, d.Type), Message: d.Message}
		}
		out = append(out, agent.Event{Type: agent.EventError, Err: e, ResponseID: r.ID})
	}
	usage := r.Usage
	if usage == nil {
		usage = ev.Usage // Grok
	}
	out = append(out, agent.Event{Type: agent.EventUsage, ResponseID: r.ID, Usage: a.usageLocked(usage)})
	if r.Status == agent.StatusCancelled && r.StatusDetails != nil && r.StatusDetails.Reason == "turn_detected" {
		out = append(out, agent.Event{Type: agent.EventInterrupted, ResponseID: r.ID})
	}
	out = append(out, agent.Event{Type: agent.EventResponseDone, ResponseID: r.ID, Status: r.Status})

	if a.active == r.ID || a.active == "" {
		a.active = ""
	}
	delete(a.cancelled, r.ID)
	calls := false
	if b := a.batches[r.ID]; b != nil {
		calls = true
		b.done = true
		if b.pending == 0 {
			delete(a.batches, r.ID)
			a.pendingCreate, a.followUp = true, true
		}
	}
	if !calls && !a.followUp && !a.batchOpenLocked() {
		status := r.Status
		if status == "" {
			status = agent.StatusCompleted
		}
		out = append(out, agent.Event{Type: agent.EventTurnEnd, ResponseID: r.ID, Status: status})
	}
	if a.pendingCreate {
		a.requestResponseLocked(false)
	}
	return out
}

func (a *Adapter) usageLocked(u *wire.Usage) *agent.Usage {
	out := &agent.Usage{
		InputAudioSeconds:  float64(a.link.TakeInputSamplesLocked()) / wire.SampleRate,
		OutputAudioSeconds: float64(a.respSamples) / wire.SampleRate,
	}
	a.respSamples = 0
	if u != nil {
		out.InputTokens, out.OutputTokens = u.InputTokens, u.OutputTokens
		if u.InputTokenDetails != nil {
			out.InputAudioTokens = u.InputTokenDetails.AudioTokens
		}
		if u.OutputTokenDetails != nil {
			out.OutputAudioTokens = u.OutputTokenDetails.AudioTokens
		}
	}
	return out
}

func (a *Adapter) errorLocked(d *wire.ErrorDetail) []agent.Event {
	if d == nil {
		return []agent.Event{protocolError("bad_event", "error event without an error object")}
	}
	forCreate := a.awaiting && d.EventID != nil && *d.EventID == a.createID
	matchesCreate := d.EventID != nil && *d.EventID == a.createID
	switch {
	case (d.Code == wire.CodeActiveResponse || strings.Contains(d.Message, "ongoing response") || strings.Contains(d.Message, "already has an active response")) &&
		matchesCreate && a.createFollows && a.active != "" && !a.activeCaller:
		// Our follow-up to a tool batch met a response the provider started by itself once it had
		// the outputs, with no caller input in between (the other tool-turn shape): that response
		// is the follow-up. (One that answers new caller speech is not: then we ask again.)
		a.link.Log().Debug("the provider continued after the tool outputs by itself; follow-up not requested again")
		if a.awaiting {
			a.awaiting = false
			a.stopTimerLocked()
		}
		a.createFollows = false
		return nil
	case d.Code == wire.CodeActiveResponse || strings.Contains(d.Message, "ongoing response") || strings.Contains(d.Message, "already has an active response"):
		// The provider started a response we did not ask for (server VAD) between our bookkeeping
		// and its; ask again once that one is done.
		a.link.Log().Warn("response.create collided with an active response; queued", slog.String("message", d.Message))
		if a.awaiting {
			a.awaiting = false
			a.stopTimerLocked()
		}
		a.pendingCreate = true
		return nil
	case d.Code == wire.CodeCommitEmpty, d.Code == wire.CodeCancelNotActive:
		// Benign: VAD already consumed the buffer / the response already ended.
		a.link.Log().Debug("benign provider error", slog.String("code", d.Code))
		return nil
	}
	if forCreate {
		a.awaiting = false
		a.stopTimerLocked()
	}
	e := &agent.Error{Class: classify(d), Code: firstNonEmpty(d.Code, d.Type), Message: d.Message}
	if !a.link.ReadyLocked() {
		e.Fatal = true
		a.handshakeDoneLocked(e)
	}
	return []agent.Event{{Type: agent.EventError, Err: e}}
}

// classify maps an OpenAI-family error object to a class.
func classify(d *wire.ErrorDetail) agent.ErrorClass {
	code, typ := strings.ToLower(d.Code), strings.ToLower(d.Type)
	switch {
	case strings.Contains(code, "api_key") || strings.Contains(typ, "authentication") || strings.Contains(typ, "permission") || code == "unauthorized":
		return agent.ClassAuth
	case strings.Contains(code, "rate_limit") || strings.Contains(code, "quota") || strings.Contains(typ, "rate_limit"):
		return agent.ClassRateLimit
	case typ == "invalid_request_error" || strings.Contains(code, "invalid") || strings.Contains(code, "unknown_parameter"):
		return agent.ClassProtocol
	}
	return agent.ClassProvider
}

func protocolError(code, msg string) agent.Event {
	return agent.Event{Type: agent.EventError, Err: &agent.Error{Class: agent.ClassProtocol, Code: code, Message: msg}}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
