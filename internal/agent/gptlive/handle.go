package gptlive

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/internal/link"
)

// handle processes one server frame on the reader goroutine.
func (a *Adapter) handle(f link.Frame) {
	data := f.Data
	var ev ServerEvent
	err := json.Unmarshal(data, &ev)
	raw := data
	if ev.Type == OutputAudioDelta {
		raw = agent.ElideAudio(data, "delta")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.link.ReceiveLocked(f, "JSON event", err, ev.Type, raw, func() []agent.Event { return a.normalizeLocked(&ev) })
}

func (a *Adapter) normalizeLocked(ev *ServerEvent) []agent.Event {
	if a.link.AwaitingHandshakeLocked() {
		switch ev.Type {
		case SessionStarted:
			a.link.HandshakeDoneLocked(a.startedLocked(ev.Session))
		case Error:
			e := errorOf(ev.Error)
			e.Fatal = true
			a.link.HandshakeDoneLocked(e)
			return []agent.Event{{Type: agent.EventError, Err: e}}
		}
		return nil // a greeting (session.created, …) before the acknowledgement of session.start
	}
	switch ev.Type {
	case OutputAudioDelta:
		pcm, err := agent.DecodePCM(ev.Delta)
		if err != nil {
			return []agent.Event{{Type: agent.EventError, Err: &agent.Error{Class: agent.ClassProtocol, Code: "bad_audio", Message: err.Error()}}}
		}
		out := a.outputLocked()
		a.segSamples += len(pcm)
		d := time.Duration(len(pcm)) * time.Second / SampleRate
		if now := time.Now(); a.playoutEnd.Before(now) {
			a.playoutEnd = now
		}
		a.playoutEnd = a.playoutEnd.Add(d)
		a.scheduleTurnEndLocked()
		return append(out, agent.Event{Type: agent.EventAudioDelta, Audio: pcm, ResponseID: a.seg, ItemID: a.seg})
	case OutputTranscriptDelta:
		if ev.Delta == "" {
			return nil
		}
		out := a.outputLocked()
		a.segText.WriteString(ev.Delta)
		a.scheduleTurnEndLocked()
		return append(out, agent.Event{Type: agent.EventTranscriptDelta, Text: ev.Delta, ResponseID: a.seg, ItemID: a.seg})
	case InputTranscriptDelta:
		a.inText.WriteString(ev.Delta)
		return nil
	case DelegationCreated:
		if ev.Delegation == nil || ev.Delegation.ID == "" {
			return nil
		}
		return a.delegationLocked(ev.Delegation.ID)
	case ResponseEvent:
		if ev.Event == nil {
			return nil
		}
		return a.backendLocked(ev.DelegationID, ev.Event)
	case SessionClosed:
		select {
		case <-a.closing:
		default:
			close(a.closing)
		}
		if ev.Reason == "close_requested" {
			a.link.EndingLocked()
			return nil
		}
		class := agent.ClassLostConnection
		if ev.Reason == "content" {
			class = agent.ClassProvider
		}
		return []agent.Event{{Type: agent.EventError, Err: &agent.Error{Class: class, Code: "session_closed_" + ev.Reason,
			Message: "the server closed the session: " + ev.Reason}}}
	case Error:
		return []agent.Event{{Type: agent.EventError, Err: errorOf(ev.Error)}}
	}
	return nil // usage updates, appended-context acknowledgements, … stay raw
}

// startedLocked checks session.started's configuration against the request and keeps what the
// server applied: tools missing from the delegation are refused tools.
func (a *Adapter) startedLocked(session json.RawMessage) error {
	var s struct {
		Model string `json:"model"`
		Audio *struct {
			Format *AudioFormat `json:"format"`
			Output *AudioOutput `json:"output"`
		} `json:"audio"`
		Delegation *struct {
			Responses *struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			} `json:"responses"`
		} `json:"delegation"`
	}
	if len(session) == 0 || json.Unmarshal(session, &s) != nil {
		return nil // nothing echoed: the fields stay what was sent
	}
	ap := &a.applied
	ap.Echoed = true
	if s.Audio != nil {
		if s.Audio.Output != nil && s.Audio.Output.Voice != "" {
			ap.Voice = s.Audio.Output.Voice
		}
		if s.Audio.Format != nil && s.Audio.Format.Rate > 0 {
			ap.InputRate, ap.OutputRate = s.Audio.Format.Rate, s.Audio.Format.Rate
		}
	}
	if s.Delegation == nil || s.Delegation.Responses == nil || s.Delegation.Responses.Tools == nil {
		if len(a.tools) > 0 && s.Delegation == nil {
			ap.Tools = nil
		} else {
			return nil // tools not echoed: taken as applied
		}
	} else {
		ap.Tools = ap.Tools[:0]
		for _, t := range s.Delegation.Responses.Tools {
			ap.Tools = append(ap.Tools, t.Name)
		}
	}
	return link.CheckAppliedTools(a.tools, ap.Tools, "session.started delegates")
}

// outputLocked notes agent output: it opens the agent's turn (the caller's speech is then over)
// and a speech segment, and the result of a finished delegation has started being spoken.
func (a *Adapter) outputLocked() []agent.Event {
	var out []agent.Event
	if a.inText.Len() > 0 {
		out = append(out, agent.Event{Type: agent.EventCallerTranscript, Text: strings.TrimSpace(a.inText.String())})
		a.inText.Reset()
	}
	a.turnOpen, a.owed = true, false
	if a.seg == "" {
		a.segments++
		a.seg = fmt.Sprintf("speech_%d", a.segments)
		a.segText.Reset()
		a.segSamples = 0
	}
	return out
}

// endSegmentLocked closes the speech segment in progress: its transcript, usage and response.
func (a *Adapter) endSegmentLocked(status string) []agent.Event {
	var out []agent.Event
	if a.segText.Len() > 0 {
		out = append(out, agent.Event{Type: agent.EventTranscriptDone, Text: a.segText.String(), ResponseID: a.seg, ItemID: a.seg})
	}
	out = append(out, agent.Event{Type: agent.EventUsage, ResponseID: a.seg, Usage: &agent.Usage{
		InputAudioSeconds:  float64(a.link.TakeInputSamplesLocked()) / SampleRate,
		OutputAudioSeconds: float64(a.segSamples) / SampleRate}})
	out = append(out, agent.Event{Type: agent.EventResponseDone, ResponseID: a.seg, Status: status})
	a.seg = ""
	a.segText.Reset()
	a.segSamples = 0
	return out
}

// scheduleTurnEndLocked (re)arms the inferred end of the agent's turn: QuietMS after the audio
// received so far would have played out, provided no delegated work is open by then.
func (a *Adapter) scheduleTurnEndLocked() {
	a.quietGen++
	a.stopTimerLocked()
	if !a.turnOpen || a.owed || len(a.open) > 0 || len(a.calls) > 0 {
		return
	}
	gen := a.quietGen
	wait := time.Until(a.playoutEnd) + time.Duration(a.opts.QuietMS)*time.Millisecond
	a.quiet = time.AfterFunc(max(wait, 0), func() { a.quietElapsed(gen) })
}

func (a *Adapter) quietElapsed(gen int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if gen != a.quietGen || a.link.CheckLocked() != nil || !a.turnOpen || a.owed || len(a.open) > 0 || len(a.calls) > 0 {
		return
	}
	a.quiet = nil
	var out []agent.Event
	if a.seg != "" {
		out = a.endSegmentLocked(agent.StatusCompleted)
	}
	a.turnOpen = false
	out = append(out, agent.Event{Type: agent.EventTurnEnd, Status: agent.StatusCompleted})
	for _, e := range out {
		a.link.EmitLocked(e)
	}
}

// delegationLocked opens delegated work: the turn goes on until its result has been spoken. The
// speech before it is a segment of its own.
func (a *Adapter) delegationLocked(id string) []agent.Event {
	if a.open[id] {
		return nil
	}
	a.open[id] = true
	if a.respOfDl[id] == nil {
		a.respOfDl[id] = map[string]bool{}
	}
	a.turnOpen = true
	a.scheduleTurnEndLocked() // stops the quiet timer
	if a.seg != "" {
		return a.endSegmentLocked(agent.StatusCompleted)
	}
	return nil
}

// backendLocked follows the backend Responses model of a delegation: its function calls (once
// per call id, from output_item.done or the final response) and its end.
func (a *Adapter) backendLocked(dl string, ev *BackendEvent) []agent.Event {
	out := a.delegationLocked(dl)
	respID := ""
	if ev.Response != nil {
		respID = ev.Response.ID
	}
	switch ev.Type {
	case BackendCreated:
		if respID != "" {
			a.respLocked(dl, respID)
		}
	case BackendItemDone:
		if ev.Item != nil && ev.Item.Type == "function_call" {
			out = append(out, a.callLocked(dl, a.latestRespLocked(dl), ev.Item)...)
		}
	case BackendCompleted, BackendFailed, BackendIncomplete:
		r := ev.Response
		if r == nil {
			return out
		}
		if respID == "" {
			respID = a.latestRespLocked(dl)
		}
		br := a.respLocked(dl, respID)
		for i := range r.Output {
			if r.Output[i].Type == "function_call" {
				out = append(out, a.callLocked(dl, respID, &r.Output[i])...)
			}
		}
		br.done = true
		status := map[string]string{BackendCompleted: agent.StatusCompleted, BackendFailed: agent.StatusFailed, BackendIncomplete: agent.StatusIncomplete}[ev.Type]
		u := &agent.Usage{}
		if r.Usage != nil {
			u.InputTokens, u.OutputTokens = r.Usage.InputTokens, r.Usage.OutputTokens
		}
		out = append(out, agent.Event{Type: agent.EventUsage, ResponseID: respID, Usage: u},
			agent.Event{Type: agent.EventResponseDone, ResponseID: respID, Status: status})
		if br.calls > 0 && status == agent.StatusCompleted {
			if err := a.continueLocked(respID); err != nil {
				a.link.Log().Warn("continue delegation", "err", err)
			}
			return out
		}
		// No calls (or the backend failed): the delegation's result goes back to the live model,
		// which owes its spoken answer.
		delete(a.backend, respID)
		delete(a.respOfDl[dl], respID)
		if len(a.respOfDl[dl]) == 0 {
			delete(a.open, dl)
			delete(a.respOfDl, dl)
			a.owed = true
		}
	}
	return out
}

// respLocked returns the backend response respID of delegation dl, registering it.
func (a *Adapter) respLocked(dl, respID string) *backendResp {
	br := a.backend[respID]
	if br == nil {
		br = &backendResp{delegation: dl}
		a.backend[respID] = br
		if a.respOfDl[dl] == nil {
			a.respOfDl[dl] = map[string]bool{}
		}
		a.respOfDl[dl][respID] = true
	}
	return br
}

// latestRespLocked is the delegation's backend response in progress (a synthetic one when the
// server has not named it yet).
func (a *Adapter) latestRespLocked(dl string) string {
	for id := range a.respOfDl[dl] {
		if br := a.backend[id]; br != nil && !br.done {
			return id
		}
	}
	id := "backend_" + dl
	a.respLocked(dl, id)
	return id
}

// callLocked emits a backend function call the first time its call id is seen.
func (a *Adapter) callLocked(dl, respID string, it *Item) []agent.Event {
	if it.CallID == "" || a.seen[it.CallID] {
		return nil
	}
	a.seen[it.CallID] = true
	br := a.respLocked(dl, respID)
	br.calls++
	br.pending++
	a.calls[it.CallID] = respID
	args := json.RawMessage(`{}`)
	if s := strings.TrimSpace(it.Arguments); s != "" {
		if json.Valid([]byte(s)) {
			args = json.RawMessage(s)
		} else {
			args, _ = json.Marshal(s)
		}
	}
	return []agent.Event{{Type: agent.EventToolCall, CallID: it.CallID, Name: it.Name, Arguments: args, ResponseID: respID, ItemID: it.ID}}
}

// errorOf classifies a GPT-Live error object.
func errorOf(d *ErrorDetail) *agent.Error {
	if d == nil {
		return &agent.Error{Class: agent.ClassProtocol, Code: "bad_event", Message: "error event without an error object"}
	}
	code, typ := strings.ToLower(d.Code), strings.ToLower(d.Type)
	class := agent.ClassProvider
	switch {
	case strings.Contains(code, "api_key") || strings.Contains(typ, "authentication") || strings.Contains(typ, "permission") || code == "unauthorized":
		class = agent.ClassAuth
	case strings.Contains(code, "rate_limit") || strings.Contains(code, "quota") || strings.Contains(typ, "rate_limit"):
		class = agent.ClassRateLimit
	case typ == "invalid_request_error" || strings.Contains(code, "invalid") || strings.Contains(code, "unknown_parameter") || strings.Contains(code, "missing"):
		class = agent.ClassProtocol
	}
	c := d.Code
	if c == "" {
		c = d.Type
	}
	return &agent.Error{Class: class, Code: c, Message: d.Message}
}
