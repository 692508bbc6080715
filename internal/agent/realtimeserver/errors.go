package realtimeserver

import "errors"

// Sentinel errors of a Server; match them with errors.Is.
var (
	// ErrNotListening is returned by Serve before Listen.
	ErrNotListening = errors.New("realtime server: not listening")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("realtime server: closed")
)
