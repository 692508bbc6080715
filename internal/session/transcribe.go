package session

import (
	"context"
	"log/slog"
	"time"

	"github.com/voicebench/humanaudit/internal/trace"
)

// Span is a stretch of one recorded channel, from the recording's first sample.
type Span struct{ Start, End time.Duration }

// Transcript is what a recognizer heard in one span.
type Transcript struct {
	Span
	Text string
}

// Transcriber recognizes speech in spans of one channel of a stereo recording (0 = caller,
// 1 = agent). The console backs it with the offline recognizer; the session calls it after the
// call for the sides the provider gave no transcript of.
type Transcriber interface {
	TranscribeChannel(ctx context.Context, wavPath string, channel int, spans []Span) ([]Transcript, error)
}

// Channels of the stereo recording.
const (
	channelCaller = 0
	channelAgent  = 1
)

// transcribeAfterCall adds our own recognizer's transcript of each side the provider did not
// transcribe, each segment marked with its source.
func (s *Session) transcribeAfterCall(events []trace.Event) {
	if s.cfg.Transcriber == nil || s.cfg.RecordingPath == "" {
		return
	}
	var haveAgent, haveCaller bool
	var agentSpans, callerSpans []Span
	var agentOpen, callerOpen time.Duration = -1, -1
	onsets := map[time.Duration]time.Duration{} // caller span start (padded) -> the speech onset
	for _, e := range events {
		t := time.Duration(e.T) * time.Millisecond
		switch e.Type {
		case trace.AgentTranscript:
			haveAgent = true
		case trace.CallerUtterance:
			// A synthetic caller's words are known; a human's only from a provider transcript.
			haveCaller = haveCaller || e.Source == "provider" || s.cfg.Mode == Synthetic
		case trace.AgentSpeechStart:
			agentOpen = t
		case trace.AgentSpeechEnd:
			if agentOpen >= 0 {
				agentSpans = append(agentSpans, Span{agentOpen, t + 200*time.Millisecond})
				agentOpen = -1
			}
		case trace.CallerSpeechStart:
			callerOpen = t - 300*time.Millisecond
		case trace.CallerSpeechEnd:
			if callerOpen >= 0 {
				sp := Span{max(callerOpen, 0), t + 200*time.Millisecond}
				onsets[sp.Start] = callerOpen + 300*time.Millisecond
				callerSpans = append(callerSpans, sp)
				callerOpen = -1
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, side := range []struct {
		skip    bool
		channel int
		spans   []Span
		typ     trace.Type
		actor   trace.Actor
	}{
		{haveAgent, channelAgent, agentSpans, trace.AgentTranscript, trace.ActorAgent},
		{haveCaller, channelCaller, callerSpans, trace.CallerUtterance, trace.ActorCaller},
	} {
		if side.skip || len(side.spans) == 0 {
			continue
		}
		got, err := s.cfg.Transcriber.TranscribeChannel(ctx, s.cfg.RecordingPath, side.channel, side.spans)
		if err != nil {
			s.log.Warn("post-call transcription failed", slog.Int("channel", side.channel), slog.Any("err", err))
			continue
		}
		for _, tr := range got {
			if tr.Text == "" {
				continue
			}
			// A caller's words are stamped where their speech starts, not at the padding before it.
			at := tr.Start
			if on, ok := onsets[tr.Start]; ok && side.channel == channelCaller {
				at = on
			}
			s.emit(trace.Event{Type: side.typ, Actor: side.actor, T: at.Milliseconds(), Text: tr.Text, Source: "asr",
				DurationMS: (tr.End - at).Milliseconds()})
		}
	}
}
