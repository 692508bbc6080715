package agent

import (
	"errors"
	"fmt"
)

// ErrorClass says what kind of failure an agent error is, so that a session can decide between
// retrying, excluding the call and blaming the agent.
type ErrorClass string

// Error classes.
const (
	ClassAuth           ErrorClass = "auth"            // key missing, invalid or not allowed
	ClassRateLimit      ErrorClass = "rate_limit"      // quota or rate limit
	ClassProtocol       ErrorClass = "protocol"        // the provider rejected what we sent, or sent what we cannot read
	ClassLostConnection ErrorClass = "lost_connection" // the socket dropped or the provider is going away
	ClassProvider       ErrorClass = "provider"        // the provider failed on its side
	ClassUnreachable    ErrorClass = "unreachable"     // the endpoint could not be reached at all
	ClassOverflow       ErrorClass = "overflow"        // the consumer fell behind the adapter's event bound
)

// Error is a classified agent error. It never contains a key.
type Error struct {
	Class   ErrorClass
	Code    string // provider code (conversation_already_has_active_response, 1011, http_401, …)
	Message string
	// Fatal means the connection is gone: the Events channel closes after this event.
	Fatal bool
}

func (e *Error) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("%s error (%s): %s", e.Class, e.Code, e.Message)
	}
	return fmt.Sprintf("%s error: %s", e.Class, e.Message)
}

// ClassOf returns the class of the first *Error in err's chain, or "" if there is none.
func ClassOf(err error) ErrorClass {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return ""
}

// Sentinel errors of adapter methods.
var (
	// ErrNotConnected: a method that needs a session was called before Connect succeeded.
	ErrNotConnected = errors.New("agent: not connected")
	// ErrClosed: the adapter was closed or its connection was lost.
	ErrClosed = errors.New("agent: connection closed")
	// ErrSendBacklog: the outbound queue is full (the provider stopped reading for seconds).
	ErrSendBacklog = errors.New("agent: outbound queue full")
	// ErrUnknownCall: a tool result names a call id the agent never made (or already answered).
	ErrUnknownCall = errors.New("agent: unknown tool call id")
	// ErrAlreadyConnected: Connect was called twice.
	ErrAlreadyConnected = errors.New("agent: already connected")
)
