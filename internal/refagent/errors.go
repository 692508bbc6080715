package refagent

import (
	"errors"

	"github.com/voicebench/humanaudit/internal/agent/realtimeserver"
)

// Sentinel errors of the reference agent; match them with errors.Is.
var (
	// ErrNoVoice means Debian's flite (or the configured voice) is not available.
	ErrNoVoice = errors.New("refagent: speech synthesis unavailable")
	// ErrNotListening is returned by Serve before Listen.
	ErrNotListening = realtimeserver.ErrNotListening
	// ErrClosed is returned after Close.
	ErrClosed = realtimeserver.ErrClosed
)
