package synth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/console"
	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/session"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// ErrBadTrace is wrapped by the reasons a trace file is refused.
var ErrBadTrace = errors.New("bad trace")

// ImportConfig says where imported traces go.
type ImportConfig struct {
	Store Store
	Tasks []*task.Task
	// System labels the traces whose session.start names no system; when a trace names one too,
	// they must agree.
	System string
	// Family is stored for a system the database does not know yet.
	Family string
	Grade  grade.Options
	// AllowUnknown imports traces with event types or fields the trace format does not have.
	AllowUnknown bool
}

// ImportResult is what happened to one trace file.
type ImportResult struct {
	File    string
	Session string
	Task    string
	Seed    int64
	System  string
	Status  string // "imported", "skipped" (already stored) or "refused"
	Reason  string // why it was skipped or refused
	Grade   *grade.Result
}

// Import reads every *.jsonl trace under dir (sorted by path), checks it, grades it with the same
// grader as live sessions and stores its session, events, score and recording (a .wav beside the
// trace) as a synthetic session. Files already imported are skipped; bad files are refused with
// the reason, and the others still imported.
func Import(ctx context.Context, cfg ImportConfig, dir string) ([]ImportResult, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("import %s: no *.jsonl trace files", dir)
	}
	slices.Sort(files)
	tasks := map[string]*task.Task{}
	graders := map[string]*grade.Grader{}
	for _, t := range cfg.Tasks {
		tasks[t.ID] = t
		graders[t.ID] = grade.New(t, cfg.Grade)
	}
	registered := map[string]bool{}
	var out []ImportResult
	for _, f := range files {
		r := importOne(ctx, cfg, tasks, graders, registered, f)
		out = append(out, r)
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
	}
	return out, nil
}

// checked is a trace that passed the checks, with what its session.start says.
type checked struct {
	events []trace.Event
	task   *task.Task
	seed   int64
	system string
	id     string
	reason string // session.end's reason
	excl   string // a session.exclusion's reason, if any
	torn   *trace.TornLine
}

// badTrace is a refusal: its message is the reason alone, and it matches ErrBadTrace.
type badTrace struct{ msg string }

func (e *badTrace) Error() string        { return e.msg }
func (e *badTrace) Is(target error) bool { return target == ErrBadTrace }

func refuse(format string, args ...any) error { return &badTrace{fmt.Sprintf(format, args...)} }

// check validates a trace file: every line's fields have their documented types, its events
// decode, it starts with a session.start whose meta names a known task (at the version loaded)
// and a seed, it is a synthetic trace, it ends with session.end, and it verifies (grade.Check):
// numbered 1, 2, 3, …, known types, and workspace events that a replay of its tool calls and
// authorization acts reproduces exactly.
func check(cfg ImportConfig, tasks map[string]*task.Task, graders map[string]*grade.Grader, file string) (checked, error) {
	var c checked
	data, err := os.ReadFile(file)
	if err != nil {
		return c, refuse("%v", err)
	}
	if ds := trace.CheckLines(data, cfg.AllowUnknown); len(ds) > 0 {
		return c, refuse("%v", ds)
	}
	// A crash mid-write tears at most the last line: it is left out (and said), any other
	// malformed line refuses the file.
	events, torn, err := trace.ReadJSONLTolerant(bytes.NewReader(data))
	if err != nil {
		return c, refuse("events do not decode: %v", err)
	}
	tornNote := ""
	if torn != nil {
		tornNote = "; " + torn.String()
	}
	if len(events) == 0 {
		return c, refuse("no events")
	}
	start := events[0]
	if start.Type != trace.SessionStart {
		return c, refuse("first event is %s, want session.start", start.Type)
	}
	m := start.Meta
	t, ok := tasks[m["task"]]
	switch {
	case m["task"] == "":
		return c, refuse("session.start meta names no task")
	case !ok:
		return c, refuse("session.start names task %q, which is not among the loaded tasks", m["task"])
	}
	if v := m["task_version"]; v != "" && v != strconv.Itoa(t.Version) {
		return c, refuse("task %s version %s in the trace, but version %d is loaded: grade it against the version it ran", t.ID, v, t.Version)
	}
	seed, err := strconv.ParseInt(m["seed"], 10, 64)
	if err != nil {
		return c, refuse("session.start meta seed %q: want an integer", m["seed"])
	}
	if mode := m["mode"]; mode != "" && mode != string(session.Synthetic) {
		return c, refuse("mode %q: only synthetic traces are imported", mode)
	}
	system := m["system"]
	switch {
	case system == "" && cfg.System == "":
		return c, refuse("session.start names no system: give --system")
	case system != "" && cfg.System != "" && system != cfg.System:
		return c, refuse("trace is of system %q, not %q", system, cfg.System)
	case system == "":
		system = cfg.System
	}
	last := events[len(events)-1]
	if last.Type != trace.SessionEnd {
		return c, refuse("last event is %s, want session.end (an unfinished call)%s", last.Type, tornNote)
	}
	if err := graders[t.ID].Check(events, grade.CheckOptions{AllowUnknown: cfg.AllowUnknown, Lines: trace.LineNumbers(data)}); err != nil {
		return c, refuse("%v", err)
	}
	c = checked{events: events, task: t, seed: seed, system: system, id: m["session"], reason: last.Text, torn: torn}
	for _, e := range events {
		if e.Type == trace.Exclusion {
			c.excl = e.Text
		}
	}
	if c.id == "" {
		sum := sha256.Sum256([]byte(file))
		c.id = fmt.Sprintf("imp-%s-%s-s%d-%s", system, t.ID, seed, hex.EncodeToString(sum[:4]))
	}
	return c, nil
}

func importOne(ctx context.Context, cfg ImportConfig, tasks map[string]*task.Task, graders map[string]*grade.Grader, registered map[string]bool, file string) ImportResult {
	r := ImportResult{File: file}
	c, err := check(cfg, tasks, graders, file)
	if err != nil {
		r.Status, r.Reason = "refused", err.Error()
		return r
	}
	r.Session, r.Task, r.Seed, r.System = c.id, c.task.ID, c.seed, c.system
	st := cfg.Store
	if _, err := st.Session(ctx, c.id); err == nil {
		r.Status, r.Reason = "skipped", "session "+c.id+" is already stored"
		return r
	} else if !errors.Is(err, audit.ErrNotFound) {
		r.Status, r.Reason = "refused", err.Error()
		return r
	}
	cond := ""
	if len(c.events) > 0 && c.events[0].Type == trace.SessionStart {
		cond = c.events[0].Meta["condition"] // a trace made under a listening condition says so
	}
	done, _, err := finished(ctx, st, c.system, cond)
	if err != nil {
		r.Status, r.Reason = "refused", err.Error()
		return r
	}
	if id := done[pairKey{c.task.ID, c.seed}]; id != "" {
		r.Status, r.Reason = "skipped", fmt.Sprintf("%s seed %d of %s is already finished by session %s", c.task.ID, c.seed, c.system, id)
		return r
	}
	if err := registerImport(ctx, cfg, c, registered); err != nil {
		r.Status, r.Reason = "refused", err.Error()
		return r
	}
	res := session.Result{Reason: c.reason, Exclusion: storeReason(c.excl), Events: c.events}
	g, err := graders[c.task.ID].Grade(ctx, c.events)
	if err != nil {
		res.GradeErr = err
	} else {
		res.Grade = &g
		r.Grade = &g
	}
	if wav := strings.TrimSuffix(file, ".jsonl") + ".wav"; fileExists(wav) {
		res.Recording = wav
	}
	if _, err := st.CreateSession(ctx, audit.NewSession{ID: c.id, TaskID: c.task.ID, TaskVersion: c.task.Version, System: c.system,
		Mode: audit.ModeSynthetic, Seed: c.seed, Condition: cond}); err != nil {
		r.Status, r.Reason = "refused", err.Error()
		return r
	}
	err = st.StartSession(ctx, c.id)
	if err == nil {
		err = st.AppendEvents(ctx, c.id, c.events)
	}
	if err == nil {
		err = console.SaveResult(ctx, st, c.id, res)
	}
	if err != nil {
		r.Status, r.Reason = "refused", "store: "+err.Error()
		return r
	}
	r.Status = "imported"
	if res.Exclusion != "" {
		r.Reason = "excluded: " + res.Exclusion
	} else if res.GradeErr != nil {
		r.Reason = "excluded: grader error: " + res.GradeErr.Error()
	}
	if c.torn != nil {
		r.Reason = strings.TrimPrefix(r.Reason+"; "+c.torn.String(), "; ")
	}
	return r
}

// storeReason maps an exclusion recorded in a trace to a store reason ("other" for unknown ones).
func storeReason(s string) string {
	switch audit.ExclusionReason(s) {
	case "":
		return ""
	case audit.ReasonCallerBrokeScript, audit.ReasonPlatformLost, audit.ReasonGraderError, audit.ReasonOther:
		return s
	}
	return string(audit.ReasonOther)
}

func registerImport(ctx context.Context, cfg ImportConfig, c checked, registered map[string]bool) error {
	if !registered["task:"+c.task.ID] {
		spec, err := os.ReadFile(c.task.Path)
		if err != nil {
			return fmt.Errorf("read task %s: %w", c.task.ID, err)
		}
		if _, err := cfg.Store.PutTask(ctx, c.task.ID, c.task.Version, spec); err != nil {
			return fmt.Errorf("store task %s: %w", c.task.ID, err)
		}
		registered["task:"+c.task.ID] = true
	}
	if !registered["system:"+c.system] {
		if _, err := cfg.Store.System(ctx, c.system); errors.Is(err, audit.ErrNotFound) {
			if _, err := cfg.Store.UpsertSystem(ctx, audit.System{Label: c.system, Family: cfg.Family}); err != nil {
				return fmt.Errorf("store system %s: %w", c.system, err)
			}
		} else if err != nil {
			return err
		}
		registered["system:"+c.system] = true
	}
	return nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
