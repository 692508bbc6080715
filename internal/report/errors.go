package report

import "errors"

// Sentinel errors, matched with errors.Is.
var (
	// ErrNoSessions means the study has no session the report could use.
	ErrNoSessions = errors.New("no sessions")
	// ErrInvalidOption means an option is out of range (resamples < 1, level outside (0,1), …).
	ErrInvalidOption = errors.New("invalid option")
	// ErrInvalidInput means the input contradicts itself (a session of an unknown task, a duplicate
	// session id).
	ErrInvalidInput = errors.New("invalid input")
)
