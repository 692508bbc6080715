package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/secrets"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// judgeFlags configure the semantic judge shared by commands that grade.
type judgeFlags struct {
	cache, url, model, keyLabel, secretsFile *string
}

func addJudgeFlags(fs interface {
	String(name, value, usage string) *string
}) judgeFlags {
	return judgeFlags{
		cache:       fs.String("judge-cache", "audit_data/judge", "directory of cached judge verdicts"),
		url:         fs.String("judge-url", "", "OpenAI-compatible base URL of the semantic judge (e.g. https://api.openai.com/v1); empty: no judge"),
		model:       fs.String("judge-model", "gpt-4.1-mini", "judge model"),
		keyLabel:    fs.String("judge-key", "OPENAI_API_KEY", "label of the judge's API key in secrets.txt or the environment"),
		secretsFile: fs.String("secrets", secrets.DefaultFile, "secrets file"),
	}
}

func (j judgeFlags) options() (grade.Options, error) {
	opts := grade.Options{Cache: &grade.JudgeCache{Dir: *j.cache}}
	if *j.url == "" {
		return opts, nil
	}
	s, err := secrets.Load(*j.secretsFile)
	if err != nil {
		return opts, err
	}
	key, err := s.Lookup(*j.keyLabel)
	if err != nil {
		return opts, fmt.Errorf("judge: %w", err)
	}
	opts.Judge = &grade.ChatJudge{BaseURL: *j.url, Model: *j.model, Key: key}
	return opts, nil
}

func runGrade(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("grade", stderr)
	taskRef := fs.String("task", "", "task id (looked up in --tasks) or task file; default: the task the trace names")
	tasksDir := addTasksFlag(fs)
	incomplete := fs.Bool("allow-incomplete", false, "grade a trace without session.end (a call cut short), leaving out a last line a crash tore")
	allowUnknown := fs.Bool("allow-unknown", false, "grade a trace with event types or fields the trace format does not have (they are not graded)")
	jf := addJudgeFlags(fs)
	pos, err := exactArgs(fs, args, 1, "usage: audit grade [--task ID_OR_FILE] TRACE.jsonl [--judge-cache DIR]")
	if err != nil {
		return err
	}
	if err := checkTraceLines(pos[0], *allowUnknown); err != nil {
		return err
	}
	events, err := readTrace(pos[0], *incomplete, stderr)
	if err != nil {
		return err
	}
	named, version, err := traceTask(pos[0], events, *incomplete)
	if err != nil {
		return err
	}
	ref := *taskRef
	if ref == "" {
		ref = named
	}
	t, err := task.Find(ref, *tasksDir)
	if err != nil {
		return fmt.Errorf("load task: %w", err)
	}
	if named != t.ID {
		return fmt.Errorf("%s is a trace of task %q, not %q", pos[0], named, t.ID)
	}
	if version != t.Version {
		return fmt.Errorf("%s was recorded on %s version %d; %s has version %d (grade against the version it ran)", pos[0], t.ID, version, t.Path, t.Version)
	}
	opts, err := jf.options()
	if err != nil {
		return err
	}
	g := grade.New(t, opts)
	if err := checkTraceEvents(pos[0], g, events, *allowUnknown); err != nil {
		return err
	}
	res, err := g.Grade(ctx, events)
	if err != nil {
		return fmt.Errorf("grade %s: %w", pos[0], err)
	}
	b, err := grade.Encode(res)
	if err != nil {
		return err
	}
	_, err = stdout.Write(b)
	return err
}

// traceTask returns the task and version a trace's session.start names, checking that the trace
// is a whole call.
func traceTask(file string, events []trace.Event, allowIncomplete bool) (string, int, error) {
	if len(events) == 0 || events[0].Type != trace.SessionStart {
		return "", 0, fmt.Errorf("%s: not a call trace: the first event must be session.start", file)
	}
	meta := events[0].Meta
	if meta["task"] == "" {
		return "", 0, fmt.Errorf("%s: session.start names no task", file)
	}
	v, err := strconv.Atoi(meta["task_version"])
	if err != nil {
		return "", 0, fmt.Errorf("%s: session.start has task_version %q, want a number", file, meta["task_version"])
	}
	if !allowIncomplete && events[len(events)-1].Type != trace.SessionEnd {
		return "", 0, fmt.Errorf("%s: the trace has no session.end (a call cut short); grade it anyway with --allow-incomplete", file)
	}
	return meta["task"], v, nil
}
