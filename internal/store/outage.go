package store

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// unavailable reports whether err says the server could not be reached or dropped the connection,
// as opposed to refusing the statement.
func unavailable(err error) bool {
	var ce *pgconn.ConnectError
	var pe *pgconn.PgError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne):
		return true
	case errors.As(err, &pe):
		// Class 08: connection exception; 57P01-57P03: the server is shutting down, crashed or
		// is starting up.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, context.DeadlineExceeded):
		return true
	}
	// A connection found broken while in use (pgx: "conn closed", "connection reset").
	return pgconn.SafeToRetry(err) || strings.Contains(err.Error(), "conn closed")
}
