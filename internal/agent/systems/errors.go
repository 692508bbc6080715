package systems

import (
	"errors"
	"fmt"
)

// Sentinels for errors.Is on configuration problems.
var (
	ErrMalformed      = errors.New("malformed systems file")
	ErrUnknownFamily  = errors.New("unknown family")
	ErrDuplicateLabel = errors.New("duplicate system label")
	ErrBadEndpoint    = errors.New("bad endpoint")
	ErrMissingKey     = errors.New("missing key")
	ErrUnknownSystem  = errors.New("unknown system")
	// ErrUnsupported: an option the system's family cannot honour.
	ErrUnsupported = errors.New("option not supported by the family")
)

// ConfigError is one problem with a systems or secrets file, printed as one line:
// `systems.json: system "grok-voice": key label XAI_API_KEY not found in secrets.txt or the environment`.
type ConfigError struct {
	File   string
	System string // label, when the problem is one system's
	Msg    string
	Err    error // sentinel
}

func (e *ConfigError) Error() string {
	if e.System != "" {
		return fmt.Sprintf("%s: system %q: %s", e.File, e.System, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// DialError says which system and endpoint a connection failure concerns; it wraps the adapter's
// classified *agent.Error.
type DialError struct {
	System   string
	Endpoint string // without query or credentials
	Err      error
}

func (e *DialError) Error() string {
	return fmt.Sprintf("system %q at %s: %v", e.System, e.Endpoint, e.Err)
}

func (e *DialError) Unwrap() error { return e.Err }
