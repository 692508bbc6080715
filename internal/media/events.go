package media

import "time"

// EventKind names an engine event.
type EventKind string

// Engine events. Media times are on the call's clock.
const (
	CallerSpeechStart EventKind = "caller.speech_start"
	CallerSpeechEnd   EventKind = "caller.speech_end"
	AgentSpeechStart  EventKind = "agent.speech_start"
	AgentSpeechEnd    EventKind = "agent.speech_end"
	// CallerStreamStart: a participant's RTP stream began (first connect, or again after a reload);
	// Duration is the silence since the previous stream's last audio (0 for the first stream).
	CallerStreamStart EventKind = "caller.stream_start"
	// CallerStreamEnd: the participant's peer detached; At is the end of its last audio.
	CallerStreamEnd EventKind = "caller.stream_end"
	// CallerGap: at least MinReportedGap of the live caller stream was missing (loss burst,
	// network stall); At is where it began, Duration how long it was.
	CallerGap EventKind = "caller.gap"
	// LateTick: a tick started more than LateTickThreshold after its due time (Duration).
	LateTick EventKind = "media.late_tick"
)

// MinReportedGap is the shortest run of missing caller audio reported as a CallerGap event
// (single lost packets are only counted).
const MinReportedGap = 60 * time.Millisecond

// Event is something the engine noticed, for the trace and the session's turn-taking.
type Event struct {
	Kind EventKind     // what happened
	At   time.Duration // media time of the onset, offset, stream edge or gap start
	// Detected is the media time the engine decided (speech events); At for the others.
	Detected time.Duration
	// Padded is a speech start's At minus the endpointer's prefix padding.
	Padded   time.Duration
	Duration time.Duration // gap length, tick lateness
	SSRC     uint32        // stream events
	Wall     time.Time     // wall time the engine noticed
}

// FlushReport says what a barge-in flush dropped.
type FlushReport struct {
	Dropped time.Duration // queued agent audio discarded
	// At is the media time from which the agent channel is silent: the first tick that had not
	// taken its audio yet when the flush happened.
	At   time.Duration
	Wall time.Time // wall time of the flush
}
