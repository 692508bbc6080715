package main

import (
	"context"
	"fmt"
	"io"

	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/secrets"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

func init() {
	register("grade", "grade a JSONL trace: --task ID_OR_FILE TRACE.jsonl [--judge-cache DIR]", runGrade)
}

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
	taskRef := fs.String("task", "", "task id (looked up in --tasks) or task file")
	tasksDir := fs.String("tasks", "tasks", "task directory")
	jf := addJudgeFlags(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *taskRef == "" || len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: audit grade --task ID_OR_FILE TRACE.jsonl [--judge-cache DIR]")
		return errUsage
	}
	t, err := task.Find(*taskRef, *tasksDir)
	if err != nil {
		return fmt.Errorf("load task: %w", err)
	}
	events, err := trace.ReadFile(pos[0])
	if err != nil {
		return fmt.Errorf("read trace: %w", err)
	}
	opts, err := jf.options()
	if err != nil {
		return err
	}
	res, err := grade.Grade(ctx, t, events, opts)
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
