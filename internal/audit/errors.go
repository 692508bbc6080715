package audit

import (
	"errors"
	"fmt"
)

// Domain errors. Match them with errors.Is; the web layer maps them to HTTP status codes. The
// message of an error that wraps one of these is written for people and carries no SQL detail, so
// it may be shown to a client; any other error is internal and must only be logged.
var (
	// ErrNotFound: no such study, participant, session, token, item… (404).
	ErrNotFound = errors.New("not found")
	// ErrConflict: the thing exists already or its state forbids the change (409).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: a value is out of range or malformed (400/422).
	ErrInvalid = errors.New("invalid")
	// ErrExpired: a token that was valid has expired or been revoked (401/410).
	ErrExpired = errors.New("expired")
	// ErrUnauthorized: a name and password, or a token, did not match (401).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrNoAssignment: nothing is left to hand to this participant (the study is done for them).
	ErrNoAssignment = errors.New("no assignment left")
	// ErrLapsed: an open enrollment was not followed by consent in time; its plan slot went back
	// to the pool. It is also ErrExpired.
	ErrLapsed = errors.New("enrollment lapsed without consent")
)

// ErrEnrollmentFull is returned by Enroll when the study's cap on enrollments waiting for consent
// is reached.
var ErrEnrollmentFull = errors.New("too many enrollments are waiting for consent")

// ErrUnavailable: the database cannot be reached right now (the server is down, restarting or
// unreachable). Nothing was changed; the same request succeeds once the pool has reconnected (503).
var ErrUnavailable = errors.New("the database is unavailable")

// Error is a domain error whose message is written for people, so it may be shown to a client: it
// says what failed and its kind, and carries no SQL or other internal detail. It matches Kind with
// errors.Is and unwraps to Cause (the driver's error, for logs and errors.As).
type Error struct {
	Msg   string
	Kind  error
	Cause error
}

func (e *Error) Error() string   { return e.Msg }
func (e *Error) Unwrap() []error { return []error{e.Kind, e.Cause} }

// Errorf returns the Error "what: kind", with what formatted from format and args.
func Errorf(kind error, format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...) + ": " + kind.Error(), Kind: kind}
}
