package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/task"
)

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

// noPositional parses flags and refuses positional arguments.
func noPositional(fs *flag.FlagSet, args []string) error {
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected argument %q\n", fs.Name(), pos[0])
		return errUsage
	}
	return nil
}

// exactArgs parses flags and wants exactly n positional arguments; otherwise it prints the usage
// line and returns errUsage.
func exactArgs(fs *flag.FlagSet, args []string, n int, usage string) ([]string, error) {
	pos, err := parseFlags(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) != n {
		fmt.Fprintln(fs.Output(), usage)
		return nil, errUsage
	}
	return pos, nil
}

// dbFlags are the flags of the commands that open the console's database: the data directory,
// whose pg subdirectory holds the private cluster, and the database's name on that cluster.
type dbFlags struct {
	data, database *string
}

func addDBFlags(fs *flag.FlagSet) dbFlags {
	return dbFlags{
		data:     fs.String("data", "audit_data", "data directory; the cluster lives in its pg subdirectory"),
		database: fs.String("db", "audit", "database name on the private cluster"),
	}
}

// addDataFlag is --data alone, for commands that use the cluster's default database; usage says
// what else the directory holds for the command.
func addDataFlag(fs *flag.FlagSet, usage string) dbFlags {
	return dbFlags{data: fs.String("data", "audit_data", usage)}
}

// databaseURL is DATABASE_URL when set: then no cluster is managed.
func databaseURL() string { return os.Getenv("DATABASE_URL") }

// open opens the console's database the way serve does: DATABASE_URL, else the private cluster
// under --data (started or joined). A nil log discards the store's messages.
func (f dbFlags) open(ctx context.Context, log *slog.Logger) (*store.DB, error) {
	name := ""
	if f.database != nil {
		name = *f.database
	}
	return store.Open(ctx, store.Config{URL: databaseURL(), DataDir: *f.data, Database: name, Logger: log})
}

// studyFlags are the database flags and --study of the commands that work on one stored study.
type studyFlags struct {
	dbFlags
	id *string
}

func addStudyFlags(fs *flag.FlagSet) studyFlags {
	return studyFlags{dbFlags: addDBFlags(fs), id: fs.String("study", "", "study id")}
}

// openStudy opens the database and reads the --study, which must exist; the caller closes db.
func (f studyFlags) openStudy(ctx context.Context) (*store.DB, audit.Study, error) {
	db, err := f.open(ctx, nil)
	if err != nil {
		return nil, audit.Study{}, err
	}
	st, err := db.Study(ctx, *f.id)
	if err != nil {
		db.Close()
		return nil, audit.Study{}, err
	}
	return db, st, nil
}

// parseOpen parses a study command's flags, which take no positional argument, and opens the
// study. Without --study, or when ready says the command's other required flags (named by others)
// are missing, it prints "COMMAND: --study and OTHERS are required" and returns errUsage. The
// caller closes db.
func (f studyFlags) parseOpen(ctx context.Context, fs *flag.FlagSet, args []string, ready func() bool, others string) (*store.DB, audit.Study, error) {
	if err := noPositional(fs, args); err != nil {
		return nil, audit.Study{}, err
	}
	if *f.id == "" || !ready() {
		fmt.Fprintf(fs.Output(), "%s: --study and %s are required\n", fs.Name(), others)
		return nil, audit.Study{}, errUsage
	}
	return f.openStudy(ctx)
}

// warnLogger logs warnings and errors as text to w: for batch commands, whose progress goes to
// their own output.
func warnLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// addTasksFlag is --tasks, the task directory of the commands that read the task suite.
func addTasksFlag(fs *flag.FlagSet) *string { return fs.String("tasks", "tasks", "task directory") }

// addBankDirFlag is --dir, the bank's audio directory, with usage saying what the command does
// with it.
func addBankDirFlag(fs *flag.FlagSet, usage string) *string {
	return fs.String("dir", filepath.Join("audit_data", "bank"), usage)
}

// taskSelection is --tasks, which of the suite's tasks a command runs, and --tasks-dir, the suite.
type taskSelection struct {
	which, dir *string
}

func addTaskSelectionFlags(fs *flag.FlagSet) taskSelection {
	return taskSelection{
		which: fs.String("tasks", task.SubsetAudit24, "tasks: a subset (audit24, anchor), all, or comma-separated task ids"),
		dir:   fs.String("tasks-dir", "tasks", "task directory"),
	}
}

// load loads the suite (any problem stops it) and picks the selected tasks.
func (s taskSelection) load() ([]*task.Task, error) {
	all, err := loadTaskDir(*s.dir)
	if err != nil {
		return nil, err
	}
	return selectTasks(all, *s.which)
}
