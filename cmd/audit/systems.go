package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/systems"
	"github.com/voicebench/humanaudit/internal/console"
	"github.com/voicebench/humanaudit/internal/secrets"
)

// runSystemsCheck prints each system with its effective voice and whether its key is present
// (never the key). With --connect it also dials each system and completes the session handshake.
// Problems are printed one line each on stderr; the exit status is 1 when there is any.
func runSystemsCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("systems check", stderr)
	file := fs.String("systems", "systems.json", "systems file")
	secretsFile := fs.String("secrets", secrets.DefaultFile, "secrets file (LABEL=value lines); the environment is consulted too")
	connect := fs.Bool("connect", false, "also dial each system and complete its session handshake")
	timeout := fs.Duration("timeout", 10*time.Second, "handshake timeout per system with --connect")
	if err := noPositional(fs, args); err != nil {
		return err
	}
	f, err := systems.Load(*file)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return fmt.Errorf("%s: %w", *file, pe.Err)
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(stderr, line)
		}
		return exitError{1}
	}
	keys, err := secrets.Load(*secretsFile)
	if err != nil {
		return err
	}
	if st, err := os.Stat(*secretsFile); err == nil && st.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(stderr, "warning: %s is readable by other users (chmod 600 %s)\n", *secretsFile, *secretsFile)
	}

	checks := console.CheckSystems(ctx, f, keys, console.CheckOptions{Connect: *connect, HandshakeTimeout: *timeout})
	fmt.Fprintf(stdout, "%s: %d systems\n", *file, len(f.Systems))
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	var problems []string
	for _, c := range checks {
		s := c.System
		endpoint := s.EndpointURL()
		if endpoint == "" {
			endpoint = "(in-process)"
		}
		voice := c.Voice
		switch {
		case c.Substituted:
			voice = fmt.Sprintf("%s→%s (not offered)", s.Voice, voice)
		case voice == "":
			voice = "(default)"
		}
		key := "not needed"
		switch {
		case c.KeyErr != nil:
			key = s.KeyLabel + " MISSING"
			problems = append(problems, c.KeyErr.Error())
		case s.NeedsKey():
			key = s.KeyLabel + " present"
		}
		model := s.Model
		if model == "" {
			model = "-"
		}
		mode := "matched turns"
		if s.ServerVAD {
			mode = "server VAD"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\tmodel %s\tvoice %s\t%s\tkey %s\n", s.Label, s.Family, endpoint, model, voice, mode, key)
	}
	tw.Flush()

	if *connect {
		fmt.Fprintln(stdout, "connect:")
		for _, c := range checks {
			switch d := c.Dial; {
			case d.Skipped != "":
				fmt.Fprintf(stdout, "  %s: not dialled (%s)\n", c.System.Label, d.Skipped)
			case d.Err != nil:
				fmt.Fprintf(stdout, "  %s: FAILED\n", c.System.Label)
				problems = append(problems, d.Err.Error())
			default:
				fmt.Fprintf(stdout, "  %s: ok (handshake %d ms)\n", c.System.Label, d.Handshake.Milliseconds())
			}
		}
	}
	for _, p := range problems {
		fmt.Fprintln(stderr, p)
	}
	if len(problems) > 0 {
		return exitError{1}
	}
	return nil
}
