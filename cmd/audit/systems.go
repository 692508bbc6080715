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
	"github.com/voicebench/humanaudit/internal/task"
)

// runSystemsCheck prints each system with its effective voice and whether its key is present
// (never the key), and what its family cannot honour. With --connect it opens a real session of
// each system with a suite task's instructions, tools and voice and reports what the provider
// applied (systems.CheckConnect). Problems are printed one line each on stderr; the exit status
// is 1 when there is any.
func runSystemsCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("systems check", stderr)
	file := fs.String("systems", "systems.json", "systems file")
	secretsFile := fs.String("secrets", secrets.DefaultFile, "secrets file (LABEL=value lines); the environment is consulted too")
	connect := fs.Bool("connect", false, "also open a session of each system with a suite task's instructions, tools and voice")
	tasksDir := fs.String("tasks", "tasks", "task suite: its tools are checked against each family, and --connect uses one of its tasks")
	taskID := fs.String("task", "", "the task --connect uses (default: the task with the most tools)")
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

	// The suite: its tools must suit every family; --connect needs it.
	var suite []*task.Task
	if _, err := os.Stat(*tasksDir); err == nil || *connect {
		if suite, err = loadTaskDir(*tasksDir); err != nil {
			return fmt.Errorf("task suite: %w (--tasks DIR)", err)
		}
	}
	var warnings []string
	for _, s := range f.Systems {
		warnings = append(warnings, s.Warnings()...)
	}
	opts := console.CheckOptions{Connect: *connect, HandshakeTimeout: *timeout}
	if *connect {
		tk, err := systems.ProbeTask(suite, *taskID)
		if err != nil {
			return fmt.Errorf("--task: %w", err)
		}
		opts.Probe = systems.ProbeFor(tk)
	}
	checks := console.CheckSystems(ctx, f, keys, opts)
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
	for _, s := range f.Systems {
		problems = append(problems, s.ToolProblems(suite)...)
	}

	if *connect {
		fmt.Fprintf(stdout, "connect (task %s: %d tools):\n", opts.Probe.Task, len(opts.Probe.Config.Tools))
		for _, c := range checks {
			d := c.Dial
			switch r := d.Report; {
			case d.Skipped != "":
				fmt.Fprintf(stdout, "  %s: not dialled (%s)\n", c.System.Label, d.Skipped)
				continue
			case d.Err != nil && r.Applied.InputRate == 0:
				fmt.Fprintf(stdout, "  %s: FAILED\n", c.System.Label)
			case d.Err != nil:
				fmt.Fprintf(stdout, "  %s: FAILED: %s\n", c.System.Label, r.Summary())
			default:
				fmt.Fprintf(stdout, "  %s: ok (handshake %d ms): %s\n", c.System.Label, d.Handshake.Milliseconds(), r.Summary())
			}
			for _, n := range d.Report.Applied.Notes {
				fmt.Fprintf(stdout, "    note: %s\n", n)
			}
			if d.Err != nil {
				problems = append(problems, d.Err.Error())
			}
		}
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "warning: "+w)
	}
	for _, p := range problems {
		fmt.Fprintln(stderr, p)
	}
	if len(problems) > 0 {
		return exitError{1}
	}
	return nil
}
