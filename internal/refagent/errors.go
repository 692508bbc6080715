package refagent

import "errors"

// Sentinel errors of the reference agent; match them with errors.Is.
var (
	// ErrNoVoice means Debian's flite (or the configured voice) is not available.
	ErrNoVoice = errors.New("refagent: speech synthesis unavailable")
	// ErrNotListening is returned by Serve before Listen.
	ErrNotListening = errors.New("refagent: not listening")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("refagent: server closed")
)
