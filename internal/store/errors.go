package store

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
	// ErrNoPostgres: no PostgreSQL server binaries were found for the managed cluster.
	ErrNoPostgres = errors.New("no postgresql binaries")
	// ErrPermission: the cluster directory cannot be used by the user the server runs as.
	ErrPermission = errors.New("permission denied")
	// ErrSchemaTooNew: the database was migrated by a newer build than this one.
	ErrSchemaTooNew = errors.New("database schema is newer than this build")
	// ErrLapsed: an open enrollment was not followed by consent in time; its plan slot went back
	// to the pool. It is also ErrExpired.
	ErrLapsed = errors.New("enrollment lapsed without consent")
)

// domainError is an error whose message is safe to show (no SQL) but that still unwraps to the
// driver's error, so logs and errors.As see the cause.
type domainError struct {
	msg   string
	kind  error
	cause error
}

func (e *domainError) Error() string   { return e.msg }
func (e *domainError) Unwrap() []error { return []error{e.kind, e.cause} }

// newError returns an error with the safe message "what: kind".
func newError(kind error, format string, args ...any) error {
	return &domainError{msg: fmt.Sprintf(format, args...) + ": " + kind.Error(), kind: kind}
}

// PostgreSQL SQLSTATE codes translated into domain errors.
const (
	sqlUniqueViolation     = "23505"
	sqlForeignKeyViolation = "23503"
	sqlCheckViolation      = "23514"
	sqlNotNullViolation    = "23502"
	sqlInvalidText         = "22P02"
	sqlNumericOutOfRange   = "22003"
	sqlRaiseException      = "P0001"
	sqlDuplicateDatabase   = "42P04"
	sqlInvalidCatalogName  = "3D000"
)

// referencedTable finds the referenced table in a foreign-key violation's detail.
var referencedTable = regexp.MustCompile(`not present in table "(\w+)"`)

// nouns names tables for people.
var nouns = map[string]string{
	"studies": "study", "systems": "system", "tasks": "task version", "participants": "participant",
	"assignments": "assignment", "sessions": "session", "slots": "plan slot", "annotators": "annotator",
	"rating_items": "rating item", "experimenters": "experimenter",
}

// translate turns a driver error into a domain error where one applies, with what as the
// client-safe context ("create participant"). Other errors are wrapped with what and stay internal.
func translate(err error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return &domainError{msg: what + ": " + ErrNotFound.Error(), kind: ErrNotFound, cause: err}
	}
	if unavailable(err) {
		return &domainError{msg: what + ": " + ErrUnavailable.Error(), kind: ErrUnavailable, cause: err}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		var kind error
		switch pe.Code {
		case sqlUniqueViolation:
			kind = ErrConflict
		case sqlForeignKeyViolation:
			kind = ErrNotFound // a referenced study, system, task or session does not exist
		case sqlCheckViolation, sqlNotNullViolation, sqlInvalidText, sqlNumericOutOfRange:
			kind = ErrInvalid
		case sqlRaiseException:
			kind = ErrConflict // our triggers refuse changes to append-only tables
		}
		if kind != nil {
			msg := what + ": " + kind.Error()
			if pe.Code == sqlForeignKeyViolation {
				if m := referencedTable.FindStringSubmatch(pe.Detail); m != nil {
					msg = what + ": unknown " + nounFor(m[1]) + ": " + kind.Error()
				}
			}
			return &domainError{msg: msg, kind: kind, cause: err}
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

func nounFor(table string) string {
	if n, ok := nouns[table]; ok {
		return n
	}
	return "reference"
}
