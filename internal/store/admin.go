package store

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
)

// DatabaseURL returns serverURL with its database replaced by name. It accepts both URL
// (postgres://…) and keyword/value (host=… dbname=…) connection strings.
func DatabaseURL(serverURL, name string) (string, error) {
	if strings.HasPrefix(serverURL, "postgres://") || strings.HasPrefix(serverURL, "postgresql://") {
		u, err := url.Parse(serverURL)
		if err != nil {
			return "", fmt.Errorf("database url: %w", redactURLError(err))
		}
		u.Path, u.RawPath = "/"+name, ""
		q := u.Query()
		if q.Has("dbname") {
			q.Set("dbname", name)
			u.RawQuery = q.Encode()
		}
		return u.String(), nil
	}
	// Keyword/value: a later dbname wins.
	return strings.TrimSpace(serverURL) + " dbname='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(name) + "'", nil
}

// CreateDatabase creates database name on the server serverURL points at (the role needs
// CREATEDB); an existing one is left alone.
func CreateDatabase(ctx context.Context, serverURL, name string) error {
	return createDatabase(ctx, serverURL, name)
}

// DropDatabase drops database name, disconnecting its sessions; a missing one is not an error.
func DropDatabase(ctx context.Context, serverURL, name string) error {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// Databases lists the server's databases whose names start with prefix.
func Databases(ctx context.Context, serverURL, prefix string) ([]string, error) {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return nil, fmt.Errorf("list databases: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, _ := conn.Query(ctx, `SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY datname`, prefix)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list databases: %w", err)
	}
	return names, nil
}

// ServerVersion connects to serverURL and returns the server's version: a health check that
// changes nothing (audit db status).
func ServerVersion(ctx context.Context, serverURL string) (string, error) {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var v string
	if err := conn.QueryRow(ctx, `SHOW server_version`).Scan(&v); err != nil {
		return "", fmt.Errorf("server version: %w", err)
	}
	return v, nil
}
