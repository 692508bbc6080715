// Command audit runs the human-audit console for voice-agent benchmarks: task validation, grading,
// the caller bank, live sessions, studies, annotation and reports.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/voicebench/humanaudit/internal/redact"
)

// command is one subcommand. Each lives in its own file and registers itself from init so that
// subcommands can be added without touching this file.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

func register(path, summary string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	if _, dup := commands[path]; dup {
		panic("audit: duplicate command " + path)
	}
	commands[path] = command{summary: summary, run: run}
}

// errUsage marks a usage error: the message has already been printed, exit status 2.
var errUsage = errors.New("usage")

// exitError carries an exit status without a message (e.g. validation problems already printed).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	ctx, stop := signalContext()
	defer stop()
	// The standard logger and slog's default write to stderr too: through the redaction layer.
	stderr := redact.NewWriter(os.Stderr, nil)
	log.SetOutput(stderr)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	code := exitCode(err, stderr)
	stderr.Flush()
	os.Exit(code)
}

// signalContext cancels on the first SIGINT/SIGTERM so servers drain; a second signal exits at once.
func signalContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ch
		cancel()
		<-ch
		fmt.Fprintln(os.Stderr, "audit: second interrupt, exiting now")
		os.Exit(130)
	}()
	return ctx, func() { signal.Stop(ch); cancel() }
}

func exitCode(err error, stderr io.Writer) int {
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0 // -h asked for the flags: not an error
	case errors.Is(err, errUsage):
		return 2
	case errors.As(err, &ee):
		return ee.code
	default:
		fmt.Fprintln(stderr, "audit:", err)
		return 1
	}
}

// run dispatches to the longest registered command path that prefixes args ("tasks validate",
// then "tasks").
//
// Everything a command prints passes through the redaction layer (internal/redact): a key loaded
// from the secrets file is never printed, whatever error text quotes it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	rout, rerr := redact.NewWriter(stdout, nil), redact.NewWriter(stderr, nil)
	defer rout.Flush()
	defer rerr.Flush()
	return dispatch(ctx, args, rout, rerr)
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	for n := min(len(args), 3); n >= 1; n-- {
		path := strings.Join(args[:n], " ")
		if c, ok := commands[path]; ok {
			return c.run(ctx, args[n:], stdout, stderr)
		}
	}
	if len(args) > 0 && args[0] != "help" && args[0] != "-h" && args[0] != "--help" {
		if group := strings.Join(args[:1], " "); hasGroup(group) {
			fmt.Fprintf(stderr, "audit %s: name a subcommand\n\n", group)
			printUsage(stderr, group+" ")
			return errUsage
		}
		fmt.Fprintf(stderr, "audit: unknown command %q\n\n", strings.Join(args, " "))
		printUsage(stderr, "")
		return errUsage
	}
	printUsage(stdout, "")
	return nil
}

// hasGroup reports whether commands exist under a group name ("study" for "study plan").
func hasGroup(group string) bool {
	for p := range commands {
		if strings.HasPrefix(p, group+" ") {
			return true
		}
	}
	return false
}

// printUsage lists the commands whose path starts with prefix (all for "").
func printUsage(w io.Writer, prefix string) {
	fmt.Fprintln(w, "usage: audit <command> [flags] [args]   (audit <command> -h for its flags)")
	fmt.Fprintln(w)
	paths := make([]string, 0, len(commands))
	for p := range commands {
		if strings.HasPrefix(p, prefix) {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		fmt.Fprintf(w, "  %-24s %s\n", p, commands[p].summary)
	}
}

// newFlags returns a flag set that reports errors to stderr and whose usage names the command.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("audit "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses flags allowing them to follow positional arguments (audit grade TRACE --task X).
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, errUsage
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}
