package session

import (
	"context"
	"log/slog"
	"time"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/trace"
)

// Timing of the synthetic caller, on the media clock.
const (
	synthTurnGap       = 700 * time.Millisecond // silence after the agent's audio before the caller answers
	synthContinuation  = 500 * time.Millisecond // pause inside one turn ("Yes, go ahead. … Actually, no.")
	synthHangUpAfter   = 3 * time.Second        // after its goodbye, the caller waits this long for the agent to stop
	synthHangUpTail    = 300 * time.Millisecond // after the agent's closing speech ends, before the hang-up
	synthAgentPatience = 12 * time.Second       // silence from the agent before the caller speaks again
	synthMaxNudges     = 3
)

// synthState is the synthetic caller's turn-taking. It answers once the adapter says the agent's
// turn is over (agent.EventTurnEnd, whatever the provider's shape of tool turns) and the agent's
// audio has played out. Three rules keep it from looping against a fast agent:
//   - a turn end counts only when the agent produced output after the caller's last turn, so the
//     end of a response the caller interrupted (completed or cancelled) never hands the floor back;
//   - a scheduled answer is dropped the moment agent audio starts: the caller does not talk over it;
//   - the caller speaks over agent audio only for a barge-in the task authors.
type synthState struct {
	nextTurn      time.Duration // media time of the caller's next turn; -1 none scheduled
	bargeDue      bool          // nextTurn is an authored barge-in: it may cut the agent off
	agentTurnOver bool          // the agent ended its turn; the caller speaks once its audio has played
	repliedSince  bool          // agent output since the caller's last turn began
	callerDone    time.Duration // when the caller's last utterance ends
	closing       bool
	agentAfterBye bool // agent audio started after the caller's goodbye ended
	nudges        int  // nudges since the agent last produced output
	// interruptedItem is the agent item the caller last cut off: what still arrives of it is no
	// reply to the caller's turn.
	interruptedItem string
	// said is what the caller's current turn says (its bank text and what its plan means), for
	// cue.spoken: a synthetic caller's words are known, not recognized.
	said Heard
}

// interrupted reports whether an agent item is the one the caller last cut off.
func (st *synthState) interrupted(item string) bool {
	return item != "" && item == st.interruptedItem
}

// sawAgentOutput notes agent output (audio, transcript, a tool call): the agent's turn goes on.
func (st *synthState) sawAgentOutput() {
	st.agentTurnOver = false
	st.repliedSince = true
	st.nudges = 0 // the agent answered: only nudges in a row count towards giving up
}

// agentAudioStarted drops a scheduled answer when the agent starts (or goes on) speaking.
func (st *synthState) agentAudioStarted() {
	if st.nextTurn >= 0 && !st.bargeDue {
		st.nextTurn = -1
	}
}

// turnEnded notes the adapter's end of the agent's turn: the floor passes to the caller only when
// the turn answered the caller's last turn and was not cut short by it.
func (st *synthState) turnEnded(status string) {
	st.agentTurnOver = status != agent.StatusCancelled && st.repliedSince
}

// synthTick decides, every tick, whether the synthetic caller speaks now.
func (s *Session) synthTick() {
	st := &s.synth
	now := s.now()
	if s.call.CallerQueued() > 0 {
		return // still speaking
	}
	if st.closing {
		// A polite ending: the agent's answer to the goodbye is heard out (hang up once it ends),
		// and an agent that stays quiet gets synthHangUpAfter from when it last stopped.
		quietSince := max(st.callerDone, s.lastAgentSignal)
		switch {
		case s.agentAudible():
		case st.agentAfterBye && now >= s.agentStoppedAt+synthHangUpTail:
			s.finish(EndCallerHungUp, "")
		case now >= quietSince+synthHangUpAfter:
			s.finish(EndCallerHungUp, "")
		}
		return
	}
	if st.nextTurn < 0 && st.agentTurnOver && !s.agentAudible() {
		st.nextTurn = now + synthTurnGap
		st.bargeDue = false
		st.agentTurnOver = false
	}
	// An agent that says nothing for a long time (its turn over or stalled) gets a nudge, and in
	// the end a hang-up.
	if st.nextTurn < 0 && !s.agentAudible() && st.callerDone > 0 &&
		now-max(st.callerDone, s.lastAgentSignal) > synthAgentPatience {
		if st.nudges >= synthMaxNudges {
			s.finish(EndAgentUnresponsive, "")
			return
		}
		st.nudges++
		st.nextTurn = now
	}
	if st.nextTurn >= 0 && now >= st.nextTurn {
		if s.agentAudible() && !st.bargeDue {
			// The agent took the floor again: wait for the end of its turn.
			st.nextTurn = -1
			return
		}
		st.nextTurn = -1
		st.bargeDue = false
		s.speakTurn()
	}
}

// hear notes what the synthetic caller says next: the words, and as an answer to an approval
// request what its plan means. Continuations in the same breath add to the turn.
func (st *synthState) hear(plan trace.Plan, text string) {
	if st.said.Words == "" {
		st.said = Heard{Words: text, Approval: ApprovalUnclear, Confidence: 1}
	} else {
		st.said.Words += " " + text
	}
	switch {
	case plan.Kind == trace.PlanDecline || plan.Kind == trace.PlanRevoke:
		st.said.Approval = ApprovalDecline // a refusal anywhere in the turn decides it
	case plan.Kind == trace.PlanApprove && st.said.Approval != ApprovalDecline:
		st.said.Approval = ApprovalApprove
	}
}

// speakTurn takes the flow engine's next plan (and any continuation in the same breath) and plays
// the caller's words on the caller channel.
func (s *Session) speakTurn() {
	plan := s.eng.NextPlan()
	s.synth.said = Heard{}
	// The caller has the floor: only output the agent produces from now on answers this turn.
	s.synth.agentTurnOver, s.synth.repliedSince = false, false
	if !s.speak(plan) {
		return
	}
	for {
		next, ok := s.eng.Continuation()
		if !ok {
			break
		}
		pause := make([]int16, int(synthContinuation.Seconds()*audio.RecordRate))
		if _, err := s.call.PushCallerPCM(pause); err != nil {
			s.log.Warn("push caller audio", slog.Any("err", err))
		}
		if !s.speak(next) {
			return
		}
	}
	s.synth.callerDone = s.now() + s.call.CallerQueued()
	if plan.Kind == trace.PlanClose {
		s.synth.closing = true
	}
}

// speak plays one plan. The words are rendered first and then queued on the caller channel, and
// the plan and the words go into the trace at the media time the engine says their first sample
// plays (rendering takes tens of milliseconds of media time, so a time taken before it would be
// early). An approval, revocation or decline takes effect then.
func (s *Session) speak(plan trace.Plan) bool {
	text, source, pcm, err := s.cfg.Caller.Speak(context.Background(), plan)
	if err != nil {
		s.log.Error("synthetic caller cannot speak", slog.String("plan", plan.ID), slog.Any("err", err))
		s.finish(EndCancelled, ExclusionPlatformLost)
		return false
	}
	start, err := s.call.PushCallerPCM(pcm)
	if err != nil {
		s.log.Warn("push caller audio", slog.Any("err", err))
		start = s.now()
	}
	t := start.Milliseconds()
	s.synth.hear(plan, text)
	s.emit(trace.Event{Type: trace.CallerPlan, Actor: trace.ActorCaller, T: t, Plan: &plan})
	s.emit(trace.Event{Type: trace.CallerUtterance, Actor: trace.ActorCaller, T: t, Text: text, Source: source, Plan: &plan,
		DurationMS: int64(len(pcm)) * 1000 / audio.RecordRate})
	s.ws.ApplyPlan(plan)
	return true
}
