package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/pgcluster"
)

func (f dbFlags) cluster(log *slog.Logger) pgcluster.Config {
	return pgcluster.Config{Dir: filepath.Join(*f.data, "pg"), Logger: log}
}

// parseDBFlags parses args up to a "--"; what follows it is returned separately (for psql).
func parseDBFlags(name string, args []string, stderr io.Writer) (dbFlags, []string, error) {
	fs := newFlags(name, stderr)
	f := addDBFlags(fs)
	var rest []string
	for i, a := range args {
		if a == "--" {
			args, rest = args[:i], args[i+1:]
			break
		}
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return f, nil, err
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "audit %s: unexpected argument %q\n", name, pos[0])
		return f, nil, errUsage
	}
	return f, rest, nil
}

// parseClusterFlags parses the flags of a command that manages the private cluster, which there
// is none of with a DATABASE_URL.
func parseClusterFlags(name string, args []string, stderr io.Writer) (dbFlags, error) {
	f, _, err := parseDBFlags(name, args, stderr)
	if err == nil && databaseURL() != "" {
		err = errors.New("DATABASE_URL is set: the console uses that server and manages no cluster")
	}
	return f, err
}

func runDBStart(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseClusterFlags("db start", args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	db, err := store.Open(ctx, store.Config{DataDir: *f.data, Database: *f.database, Logger: log})
	if err != nil {
		return err
	}
	c := db.Cluster()
	holdErr := c.Hold()
	fmt.Fprintf(stdout, "postgres running (pid %d) in %s\nurl: %s\n", c.PID(), c.Dir(), db.URL())
	if err := errors.Join(holdErr, db.Close()); err != nil {
		return err
	}
	return nil
}

func runDBStop(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseClusterFlags("db stop", args, stderr)
	if err != nil {
		return err
	}
	cfg := f.cluster(slog.New(slog.DiscardHandler))
	st, err := pgcluster.Inspect(cfg)
	if err != nil {
		return err
	}
	if !st.Running {
		fmt.Fprintf(stdout, "postgres is not running in %s\n", st.Dir)
		return nil
	}
	if err := pgcluster.Stop(ctx, cfg); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "postgres stopped (pid %d)\n", st.PID)
	return nil
}

func runDBStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, _, err := parseDBFlags("db status", args, stderr)
	if err != nil {
		return err
	}
	if u := databaseURL(); u != "" {
		v, err := store.ServerVersion(ctx, u)
		if err != nil {
			return fmt.Errorf("DATABASE_URL: %w", err)
		}
		fmt.Fprintf(stdout, "server:   DATABASE_URL (PostgreSQL %s), no managed cluster\n", v)
		return nil
	}
	st, err := pgcluster.Inspect(f.cluster(nil))
	if err != nil {
		return err
	}
	version := "not initialized"
	if st.Initialized {
		version = "PostgreSQL " + st.Version
	}
	fmt.Fprintf(stdout, "cluster:  %s (%s)\nbinaries: %s\n", st.Dir, version, st.BinDir)
	if !st.Running {
		fmt.Fprintln(stdout, "state:    stopped")
		return exitError{3}
	}
	state := "running"
	if v, err := store.ServerVersion(ctx, st.URL("postgres")); err != nil {
		state = "not answering: " + err.Error()
	} else {
		state += ", server " + v
	}
	held := "no (the last console to exit stops it)"
	if st.Held {
		held = "yes (audit db stop stops it)"
	}
	fmt.Fprintf(stdout, "state:    %s (pid %d)\nsocket:   %s\nheld:     %s\nurl:      %s\n", state, st.PID, st.SocketDir, held, st.URL(*f.database))
	return nil
}

// currentURL is DATABASE_URL or the running private cluster's URL.
func currentURL(f dbFlags) (url, binDir string, err error) {
	if u := databaseURL(); u != "" {
		return u, "", nil
	}
	st, err := pgcluster.Inspect(f.cluster(nil))
	if err != nil {
		return "", "", err
	}
	if !st.Running {
		return "", "", fmt.Errorf("postgres is not running in %s: start it with `audit db start --data %s`", st.Dir, *f.data)
	}
	return st.URL(*f.database), st.BinDir, nil
}

func runDBURL(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	u, _, _, err := parseDBURL("db url", args, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, u)
	return nil
}

// parseDBURL parses a db command's flags and finds the database's URL (and the binaries' directory
// of the private cluster); rest is what followed "--".
func parseDBURL(name string, args []string, stderr io.Writer) (url, binDir string, rest []string, err error) {
	f, rest, err := parseDBFlags(name, args, stderr)
	if err != nil {
		return "", "", nil, err
	}
	url, binDir, err = currentURL(f)
	return url, binDir, rest, err
}

func runDBPsql(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	u, binDir, rest, err := parseDBURL("db psql", args, stderr)
	if err != nil {
		return err
	}
	psql := "psql"
	if p := filepath.Join(binDir, "psql"); binDir != "" {
		if _, err := os.Stat(p); err == nil {
			psql = p
		}
	}
	cmd := exec.CommandContext(ctx, psql, append([]string{"-d", u}, rest...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return exitError{ee.ExitCode()}
		}
		return fmt.Errorf("psql: %w", err)
	}
	return nil
}
