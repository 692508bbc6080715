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
	"github.com/voicebench/humanaudit/internal/secrets"
)

func init() {
	register("systems check", "check the systems file and that each system's key is present (--systems FILE --secrets FILE [--connect])", runSystemsCheck)
}

// runSystemsCheck prints each system with its effective voice and whether its key is present
// (never the key). With --connect it also dials each system and completes the session handshake.
// Problems are printed one line each on stderr; the exit status is 1 when there is any.
func runSystemsCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("systems check", stderr)
	file := fs.String("systems", "systems.json", "systems file")
	secretsFile := fs.String("secrets", secrets.DefaultFile, "secrets file (LABEL=value lines); the environment is consulted too")
	connect := fs.Bool("connect", false, "also dial each system and complete its session handshake")
	timeout := fs.Duration("timeout", 10*time.Second, "handshake timeout per system with --connect")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "audit systems check: unexpected argument %q\n", pos[0])
		return errUsage
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
	store, err := secrets.Load(*secretsFile)
	if err != nil {
		return err
	}
	if st, err := os.Stat(*secretsFile); err == nil && st.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(stderr, "warning: %s is readable by other users (chmod 600 %s)\n", *secretsFile, *secretsFile)
	}

	fmt.Fprintf(stdout, "%s: %d systems\n", *file, len(f.Systems))
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	var problems []string
	for _, s := range f.Systems {
		endpoint := s.EndpointURL()
		if endpoint == "" {
			endpoint = "(in-process)"
		}
		voice, substituted := s.EffectiveVoice()
		switch {
		case substituted:
			voice = fmt.Sprintf("%s→%s (not offered)", s.Voice, voice)
		case voice == "":
			voice = "(default)"
		}
		key := "not needed"
		if s.NeedsKey() {
			if _, err := systems.Key(s, store); err != nil {
				key = s.KeyLabel + " MISSING"
				problems = append(problems, err.Error())
			} else {
				key = s.KeyLabel + " present"
			}
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
		for _, s := range f.Systems {
			if s.EndpointURL() == "" {
				fmt.Fprintf(stdout, "  %s: not dialled (in-process reference agent)\n", s.Label)
				continue
			}
			if _, err := systems.Key(s, store); err != nil {
				fmt.Fprintf(stdout, "  %s: not dialled (no key)\n", s.Label)
				continue
			}
			start := time.Now()
			a, err := systems.Dial(ctx, s, systems.DialOptions{Keys: store, HandshakeTimeout: *timeout})
			if err != nil {
				fmt.Fprintf(stdout, "  %s: FAILED\n", s.Label)
				problems = append(problems, err.Error())
				continue
			}
			a.Close()
			fmt.Fprintf(stdout, "  %s: ok (handshake %d ms)\n", s.Label, time.Since(start).Milliseconds())
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
