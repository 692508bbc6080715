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

// command is one subcommand: its path ("study plan"), a one-line summary for `audit help`, and the
// function that runs it. Each lives in its own file with its flags.
type command struct {
	path, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commandTable lists every subcommand, by path.
func commandTable() []command {
	return []command{
		{"annotate create", "store a study's blinded rating set and print annotator links (--study ID --annotators N --items FILE|-)", runAnnotateCreate},
		{"annotate export", "write a study's ratings in long format (--study ID --out ratings.csv)", runAnnotateExport},
		{"bank build", "render every bank variant to 24 kHz WAV with Flite into audit_data/bank", runBankBuild},
		{"bank check", "quality-control the frozen caller bank: TASK: PLAN: VARIANT: reason per problem", runBankCheck},
		{"bank import", "use audio rendered elsewhere (DIR holds task/plan.N.wav for every variant)", runBankImport},
		{"bank rating-set", "export the 72 frozen utterances for the annotator study (--json)", runBankRatingSet},
		{"conditions build", "make the listening conditions' noise beds offline with Flite (--data audit_data)", runConditionsBuild},
		{"conditions list", "list the listening conditions and whether their noise beds are built (--data audit_data)", runConditionsList},
		{"db psql", "open psql on the database; arguments after -- go to psql", runDBPsql},
		{"db start", "start the private PostgreSQL cluster under --data and keep it running", runDBStart},
		{"db status", "show the private cluster's state (exit status 3 when stopped)", runDBStatus},
		{"db stop", "stop the private PostgreSQL cluster (fast shutdown)", runDBStop},
		{"db url", "print the database's connection URL", runDBURL},
		{"demo", "run the console with the offline reference agent and a demo study; prints participant and experimenter links", runDemo},
		{"experimenter add", "create an experimenter account (password read from stdin)", runExperimenterAdd},
		{"experimenter link", "issue a sign-in link for an experimenter", runExperimenterLink},
		{"grade", "verify and grade a JSONL trace: [--task ID_OR_FILE] TRACE.jsonl [--judge-cache DIR] [--allow-unknown]", runGrade},
		{"import-traces", "import synthetic traces made elsewhere (canonical JSONL): DIR [--system LABEL]", runImportTraces},
		{"recover", "repair the header of a session recording left by a crash (FILE.wav ...)", runRecover},
		{"refagent", "serve the offline reference agent (OpenAI Realtime GA protocol) until interrupted ([--addr HOST:PORT] [--voice NAME])", runRefagent},
		{"report", "write a study's report: --study ID --out DIR [--seed S] [--resamples N] [--planning --participants N]", runReport},
		{"rolecards build", "render roleCards/<task>.md for every task (--check: exit 1 naming cards that would change)", runRoleCardsBuild},
		{"serve", "run the console: participant, experimenter and annotator web app", runServe},
		{"stats", "reliability and interval statistics (alpha, fleiss, wilson, passk, bootstrap)", runStats},
		{"stats alpha", "Krippendorff's alpha from unit,rater,value CSV (--level L FILE [--bootstrap N --seed S])", runStatsAlpha},
		{"stats bootstrap", "task-level bootstrap CI of a mean (task,value) or paired difference (task,a,b) (FILE)", runStatsBootstrap},
		{"stats fleiss", "Fleiss' kappa from unit,rater,value CSV or a --counts table (FILE)", runStatsFleiss},
		{"stats passk", "pass@k and pass^k averaged over tasks from task,trial,success CSV (--k K FILE)", runStatsPassK},
		{"stats wilson", "Wilson score interval for a proportion (--successes X --n N [--level 0.95])", runStatsWilson},
		{"study create", "store a study from plan.csv and print participant links (--id --plan --consent FILE [--participants N] [--open-enrollment])", runStudyCreate},
		{"study export", "write a study's plan.csv and status.csv for the recruiting platform (--study ID --plan FILE --status FILE)", runStudyExport},
		{"study extend", "add plan rows and/or participants to a running study without touching finished work (--study ID [--plan FILE] [--participants N])", runStudyExtend},
		{"study plan", "plan a counterbalanced study: plan.csv and a balance report (--tasks --systems --anchor --sessions-per-participant --seed --out [--power --delta D [--pilot STUDY | --rates FILE]])", runStudyPlan},
		{"study status", "show a study's progress (--study ID [--csv status.csv])", runStudyStatus},
		{"synth", "run the frozen synthetic caller against a system: --system LABEL --tasks audit24 --seeds 3 --out DIR", runSynth},
		{"systems check", "check the systems file and that each system's key is present (--systems FILE --secrets FILE [--connect [--task ID]])", runSystemsCheck},
		{"systems provision", "write the ElevenLabs agents a platform system needs, one per task (--system LABEL --tasks audit24 --out DIR)", runSystemsProvision},
		{"tasks list", "list tasks and their strata (--json)", runTasksList},
		{"tasks validate", "validate task files (default tasks/): FILE: JSONPATH: message per problem", runTasksValidate},
	}
}

// lookup finds the command with path.
func lookup(path string) (command, bool) {
	for _, c := range commandTable() {
		if c.path == path {
			return c, true
		}
	}
	return command{}, false
}

// commandsUnder lists the commands whose path starts with prefix (all for ""), by path.
func commandsUnder(prefix string) []command {
	var out []command
	for _, c := range commandTable() {
		if strings.HasPrefix(c.path, prefix) {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
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
		if c, ok := lookup(path); ok {
			return c.run(ctx, args[n:], stdout, stderr)
		}
	}
	if len(args) > 0 && args[0] != "help" && args[0] != "-h" && args[0] != "--help" {
		if group := args[0]; len(commandsUnder(group+" ")) > 0 {
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

// printUsage lists the commands whose path starts with prefix (all for "").
func printUsage(w io.Writer, prefix string) {
	fmt.Fprintln(w, "usage: audit <command> [flags] [args]   (audit <command> -h for its flags)")
	fmt.Fprintln(w)
	for _, c := range commandsUnder(prefix) {
		fmt.Fprintf(w, "  %-24s %s\n", c.path, c.summary)
	}
}
