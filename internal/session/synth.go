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
	synthHangUpTail    = 1500 * time.Millisecond
	synthAgentPatience = 12 * time.Second // silence from the agent before the caller speaks again
	synthMaxNudges     = 3
)

// synthState is the synthetic caller's turn-taking: it answers once the adapter says the agent's
// turn is over (agent.EventTurnEnd, whatever the provider's shape of tool turns) and the agent's
// audio has played out. A turn that ended because the caller took the floor (cancelled) does not
// hand it back.
type synthState struct {
	nextTurn      time.Duration // media time of the caller's next turn; -1 none scheduled
	agentTurnOver bool          // the agent ended its turn; the caller speaks once its audio has played
	callerDone    time.Duration // when the caller's last utterance ends
	closing       bool
	nudges        int
}

// sawAgentOutput notes agent output (audio, transcript, a tool call): the agent's turn goes on.
func (st *synthState) sawAgentOutput() { st.agentTurnOver = false }

// turnEnded notes the adapter's end of the agent's turn.
func (st *synthState) turnEnded(status string) {
	st.agentTurnOver = status != agent.StatusCancelled
}

// synthTick decides, every tick, whether the synthetic caller speaks now.
func (s *Session) synthTick() {
	st := &s.synth
	now := s.now()
	if s.call.CallerQueued() > 0 {
		return // still speaking
	}
	if st.closing {
		if now >= st.callerDone+synthHangUpTail {
			s.finish(EndCallerHungUp, "")
		}
		return
	}
	if st.nextTurn < 0 && st.agentTurnOver && !s.agentAudible() {
		st.nextTurn = now + synthTurnGap
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
		st.nextTurn = -1
		s.speakTurn()
	}
}

// speakTurn takes the flow engine's next plan (and any continuation in the same breath) and plays
// the caller's words on the caller channel.
func (s *Session) speakTurn() {
	plan := s.eng.NextPlan()
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
	s.emit(trace.Event{Type: trace.CallerPlan, Actor: trace.ActorCaller, T: t, Plan: &plan})
	s.emit(trace.Event{Type: trace.CallerUtterance, Actor: trace.ActorCaller, T: t, Text: text, Source: source, Plan: &plan,
		DurationMS: int64(len(pcm)) * 1000 / audio.RecordRate})
	switch plan.Kind {
	case trace.PlanApprove:
		s.ws.Approve(plan.Action)
	case trace.PlanRevoke:
		s.ws.Revoke(plan.Action)
	case trace.PlanDecline:
		s.ws.Decline(plan.Action)
	}
	return true
}
