package store

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/voicebench/humanaudit/internal/audit"
)

// ErrSchemaTooNew: the database was migrated by a newer build than this one. The domain errors
// the store returns (not found, conflict, invalid, …) are audit's, wrapped with a message that is
// safe to show; the cluster's are pgcluster's.
var ErrSchemaTooNew = errors.New("database schema is newer than this build")

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
		return &audit.Error{Msg: what + ": " + audit.ErrNotFound.Error(), Kind: audit.ErrNotFound, Cause: err}
	}
	if unavailable(err) {
		return &audit.Error{Msg: what + ": " + audit.ErrUnavailable.Error(), Kind: audit.ErrUnavailable, Cause: err}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		var kind error
		switch pe.Code {
		case sqlUniqueViolation:
			kind = audit.ErrConflict
		case sqlForeignKeyViolation:
			kind = audit.ErrNotFound // a referenced study, system, task or session does not exist
		case sqlCheckViolation, sqlNotNullViolation, sqlInvalidText, sqlNumericOutOfRange:
			kind = audit.ErrInvalid
		case sqlRaiseException:
			kind = audit.ErrConflict // our triggers refuse changes to append-only tables
		}
		if kind != nil {
			msg := what + ": " + kind.Error()
			if pe.Code == sqlForeignKeyViolation {
				if m := referencedTable.FindStringSubmatch(pe.Detail); m != nil {
					msg = what + ": unknown " + nounFor(m[1]) + ": " + kind.Error()
				}
			}
			return &audit.Error{Msg: msg, Kind: kind, Cause: err}
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
