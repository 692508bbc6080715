package rtc

import "errors"

// Sentinel errors; match with errors.Is. The web layer maps ErrBadOffer to 400.
var (
	// ErrBadOffer: the SDP offer is unusable (not SDP, no audio, no Opus, no data channel, …); the
	// wrapping message says exactly what is wrong and what was expected.
	ErrBadOffer = errors.New("bad offer")
	// ErrClosed: the peer or endpoint is closed.
	ErrClosed = errors.New("rtc: closed")
	// ErrOutboxFull: too many DataChannel messages queued before the channel opened.
	ErrOutboxFull = errors.New("rtc: data channel outbox full")
)
