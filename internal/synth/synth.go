// Package synth runs the synthetic track: the frozen synthetic caller calls an evaluated system
// through the same session pipeline as a live human call (flow engine, media clock, matched
// turn-taking, workspace, recorder, grader), once per (task, seed) pair, and stores each session
// in the same database as human sessions. Runs are resumable and coverage-first, and a per-system
// lock lets different systems run in parallel while refusing a second run of the same one. It
// also imports synthetic traces produced elsewhere.
package synth

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/systems"
	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/condition"
	"github.com/voicebench/humanaudit/internal/console"
	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/session"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// ErrLocked means another run of the same system holds its lock.
var ErrLocked = errors.New("another synthetic run of this system is in progress")

// ErrAgentDown means the agent could not be reached for several runs in a row, so the run stopped.
var ErrAgentDown = errors.New("the agent cannot be reached")

// Pair is one (task, seed) of a run: one synthetic call.
type Pair struct {
	Task *task.Task
	Seed int64
}

func (p Pair) String() string { return fmt.Sprintf("%s seed %d", p.Task.ID, p.Seed) }

// Order lists the pairs of tasks × seeds 1..seeds coverage-first: every task gets seed 1 before any
// gets seed 2, so an interrupted run covers the most tasks it can. Tasks go in ID order.
func Order(tasks []*task.Task, seeds int) []Pair {
	ts := slices.Clone(tasks)
	slices.SortFunc(ts, func(a, b *task.Task) int { return cmp.Compare(a.ID, b.ID) })
	var out []Pair
	for s := 1; s <= seeds; s++ {
		for _, t := range ts {
			out = append(out, Pair{Task: t, Seed: int64(s)})
		}
	}
	return out
}

// Config describes a synthetic run of one system.
type Config struct {
	Store  Store
	System systems.System
	Keys   systems.Keys
	// Endpoint overrides the system's endpoint (the in-process reference agent's ws:// URL).
	Endpoint string
	Tasks    []*task.Task
	Seeds    int
	// Out receives the exported traces and grades (Out/traces, Out/grades, Out/runs.csv).
	Out string
	// DataDir holds the recordings (DataDir/recordings/<session>.wav, as for human sessions).
	DataDir  string
	Parallel int // calls at once (default 1)
	// Voice makes the caller of one call (default: a BankVoice on DataDir/bank without rendering).
	Voice      func(t *task.Task, seed int64) session.CallerVoice
	Grade      grade.Options
	TimeLimit  time.Duration // per call (default 15 minutes)
	Endpointer audio.EndpointerConfig
	// MaxConnectFailures stops the run after that many calls in a row could not reach the agent
	// (default 3).
	MaxConnectFailures int
	Progress           io.Writer // a line per finished call; nil: none
	Logger             *slog.Logger
	Now                func() time.Time
	// Condition is the listening condition every call of the run is made under (nil: none, as
	// before conditions existed, which is quiet); a run resumes and exports only the sessions of
	// its condition. Conditions holds the noise beds.
	Condition  *condition.Spec
	Conditions *condition.Library
}

// conditionName is the condition a run records ("" without one); quiet and none are the same
// condition when sessions are matched.
func (cfg Config) conditionName() string {
	if cfg.Condition == nil {
		return ""
	}
	return cfg.Condition.String()
}

func sameCondition(a, b string) bool {
	norm := func(c string) string {
		if c == condition.Quiet {
			return ""
		}
		return c
	}
	return norm(a) == norm(b)
}

// Outcome is how one call of a run ended.
type Outcome struct {
	Pair      Pair
	Session   string
	Reason    string
	Exclusion string
	Grade     *grade.Result
	Err       error // the call could not be run or stored
	Elapsed   time.Duration
}

// Summary is what a run did.
type Summary struct {
	Planned  int // pairs asked for
	Skipped  int // finished (graded, not excluded) before this run
	Ran      int
	Excluded int // ran but excluded (agent lost, grader error, interrupted)
	Failed   int // could not be run or stored
	Outcomes []Outcome
}

// Run runs every unfinished pair of cfg, coverage-first, cfg.Parallel at a time, and exports the
// system's finished sessions of those pairs to cfg.Out. It holds the system's lock throughout.
func Run(ctx context.Context, cfg Config) (Summary, error) {
	if cfg.Parallel < 1 {
		cfg.Parallel = 1
	}
	if c := cfg.System.MaxConcurrent; c > 0 && cfg.Parallel > c {
		// The provider's cap on concurrent sessions wins over the run's wish.
		cfg.Parallel = c
	}
	if cfg.MaxConnectFailures < 1 {
		cfg.MaxConnectFailures = 3
	}
	if cfg.TimeLimit == 0 {
		cfg.TimeLimit = 15 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Voice == nil {
		dir := filepath.Join(cfg.DataDir, "bank")
		cfg.Voice = func(t *task.Task, seed int64) session.CallerVoice { return &BankVoice{Task: t, Seed: seed, Dir: dir} }
	}
	label := cfg.System.Label
	lock, err := cfg.Store.TryLock(ctx, "synth:"+label)
	if errors.Is(err, audit.ErrConflict) {
		return Summary{}, fmt.Errorf("system %s: %w", label, ErrLocked)
	}
	if err != nil {
		return Summary{}, err
	}
	defer lock.Release(context.WithoutCancel(ctx))

	if err := register(ctx, cfg); err != nil {
		return Summary{}, err
	}
	for _, d := range []string{filepath.Join(cfg.DataDir, "recordings"), filepath.Join(cfg.Out, "traces"), filepath.Join(cfg.Out, "grades")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return Summary{}, fmt.Errorf("synth: %w", err)
		}
	}
	plan := Order(cfg.Tasks, cfg.Seeds)
	done, attempts, err := finished(ctx, cfg.Store, label, cfg.conditionName())
	if err != nil {
		return Summary{}, err
	}
	sum := Summary{Planned: len(plan)}
	var todo []Pair
	for _, p := range plan {
		if done[pairKey{p.Task.ID, p.Seed}] != "" {
			sum.Skipped++
			continue
		}
		todo = append(todo, p)
	}
	progress := newProgress(cfg.Progress, label, len(plan), sum.Skipped, len(todo), cfg.Parallel, cfg.Now)

	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	work := make(chan Pair)
	results := make(chan Outcome)
	var wg sync.WaitGroup
	for range min(cfg.Parallel, max(len(todo), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				progress.started(p)
				results <- runOne(runCtx, cfg, p, attempts)
			}
		}()
	}
	go func() {
		defer close(work)
		for _, p := range todo {
			select {
			case work <- p:
			case <-runCtx.Done():
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(results)
	}()
	connectFailures := 0
	for o := range results {
		sum.Outcomes = append(sum.Outcomes, o)
		switch {
		case o.Err != nil:
			sum.Failed++
		case o.Exclusion != "":
			sum.Ran++
			sum.Excluded++
		default:
			sum.Ran++
		}
		if errors.Is(o.Err, errConnect) {
			connectFailures++
			if connectFailures >= cfg.MaxConnectFailures {
				stop(fmt.Errorf("system %s: %d calls in a row: %w: %v", label, connectFailures, ErrAgentDown, o.Err))
			}
		} else {
			connectFailures = 0
		}
		progress.finished(o)
	}
	slices.SortFunc(sum.Outcomes, func(a, b Outcome) int {
		return cmp.Or(cmp.Compare(a.Pair.Seed, b.Pair.Seed), cmp.Compare(a.Pair.Task.ID, b.Pair.Task.ID))
	})
	if err := export(context.WithoutCancel(ctx), cfg, plan); err != nil {
		return sum, err
	}
	progress.summary(sum)
	if cause := context.Cause(runCtx); cause != nil && !errors.Is(cause, context.Canceled) {
		return sum, cause
	}
	return sum, ctx.Err()
}

// register stores the tasks' specs and the system, as the console does for human sessions.
func register(ctx context.Context, cfg Config) error {
	for _, t := range cfg.Tasks {
		spec, err := os.ReadFile(t.Path)
		if err != nil {
			return fmt.Errorf("synth: read task %s: %w", t.ID, err)
		}
		if _, err := cfg.Store.PutTask(ctx, t.ID, t.Version, spec); err != nil {
			return fmt.Errorf("synth: store task %s: %w (bump the task's version when its content changes)", t.ID, err)
		}
	}
	if _, err := cfg.Store.UpsertSystem(ctx, console.SystemRecord(cfg.System)); err != nil {
		return fmt.Errorf("synth: store system %s: %w", cfg.System.Label, err)
	}
	return nil
}

type pairKey struct {
	task string
	seed int64
}

// finished returns the system's finished pairs (a graded, ended, not excluded synthetic session)
// under the run's condition with the session that finished each, and how many sessions each pair
// has had (to name the next).
func finished(ctx context.Context, st Store, label, cond string) (map[pairKey]string, map[pairKey]int, error) {
	ss, err := conditionSessions(ctx, st, label, cond)
	if err != nil {
		return nil, nil, err
	}
	done, attempts := map[pairKey]string{}, map[pairKey]int{}
	for _, s := range ss {
		k := pairKey{s.TaskID, s.Seed}
		attempts[k]++
		if s.Status == audit.SessionEnded && s.Score != nil && s.Exclusion == nil && done[k] == "" {
			done[k] = s.ID
		}
	}
	return done, attempts, nil
}

// conditionSessions lists the system's synthetic sessions run under cond.
func conditionSessions(ctx context.Context, st Store, label, cond string) ([]audit.SessionSummary, error) {
	ss, err := st.ListSessions(ctx, audit.SessionFilter{Mode: audit.ModeSynthetic, System: label})
	if err != nil {
		return nil, fmt.Errorf("synth: list sessions: %w", err)
	}
	out := ss[:0]
	for _, s := range ss {
		if sameCondition(s.Condition, cond) {
			out = append(out, s)
		}
	}
	return out, nil
}

// errConnect marks a call whose agent could not be reached.
var errConnect = errors.New("connect agent")

// sessionID names a synthetic session by system, task, seed and attempt, so it is recognisable in
// listings and unique across re-runs of an excluded pair.
func sessionID(label string, p Pair, attempt int, cond string) string {
	if sameCondition(cond, "") {
		return fmt.Sprintf("syn-%s-%s-s%d-%d", label, p.Task.ID, p.Seed, attempt)
	}
	slug := strings.NewReplacer("+", "-", "@", "-", ".", "_").Replace(cond)
	return fmt.Sprintf("syn-%s-%s-%s-s%d-%d", label, p.Task.ID, slug, p.Seed, attempt)
}

var (
	attemptsMu sync.Mutex
	connectMu  sync.Mutex
)

func runOne(ctx context.Context, cfg Config, p Pair, attempts map[pairKey]int) Outcome {
	start := cfg.Now()
	out := Outcome{Pair: p}
	k := pairKey{p.Task.ID, p.Seed}
	attemptsMu.Lock()
	attempts[k]++
	out.Session = sessionID(cfg.System.Label, p, attempts[k], cfg.conditionName())
	attemptsMu.Unlock()
	st := cfg.Store
	sctx := context.WithoutCancel(ctx) // storing what happened must not be cut short
	ns := audit.NewSession{ID: out.Session, TaskID: p.Task.ID, TaskVersion: p.Task.Version,
		System: cfg.System.Label, Mode: audit.ModeSynthetic, Seed: p.Seed}
	if cfg.Condition != nil {
		ns.Condition = cfg.Condition.String()
	}
	if _, err := st.CreateSession(sctx, ns); err != nil {
		out.Err = fmt.Errorf("create session: %w", err)
		return out
	}
	var proc *condition.Processor
	condSeed := condition.SeedFor(p.Task.ID, p.Seed) // the same noise for every system of the pair
	if cfg.Condition != nil {
		lib := cfg.Conditions
		if lib == nil {
			lib = &condition.Library{}
		}
		var err error
		if proc, err = lib.Processor(sctx, *cfg.Condition, condSeed); err != nil {
			st.EndSession(sctx, out.Session, session.EndCancelled)
			st.ExcludeSession(sctx, audit.Exclusion{SessionID: out.Session, Reason: audit.ReasonOther, Note: "listening condition: " + err.Error(), By: "system"})
			out.Err = fmt.Errorf("condition %s: %w", cfg.Condition, err)
			return out
		}
	}
	sys := cfg.System
	// Calls are connected one at a time: parallel handshakes against a busy agent (the reference
	// agent loads a recognizer per connection) time out where staggered ones do not.
	connectMu.Lock()
	adapter, err := systems.New(sys, systems.DialOptions{Keys: cfg.Keys, Endpoint: cfg.Endpoint, Task: p.Task.ID})
	var s *session.Session
	if err == nil {
		voice, _ := sys.EffectiveVoice()
		s, err = session.Start(sctx, session.Config{ID: out.Session, Task: p.Task, Mode: session.Synthetic, Seed: p.Seed,
			System: sys.Label, Adapter: adapter, Voice: voice, ServerTurnDetection: sys.ServerVAD, Caller: cfg.Voice(p.Task, p.Seed),
			RecordingPath: filepath.Join(cfg.DataDir, "recordings", out.Session+".wav"), Endpointer: cfg.Endpointer,
			Sinks: []trace.Sink{st.EventSink(out.Session)}, Now: cfg.Now, TimeLimit: cfg.TimeLimit, Grade: cfg.Grade,
			Logger: cfg.Logger, Meta: map[string]string{"runner": "audit synth"},
			Condition: proc, ConditionSeed: condSeed, CleanRecordingPath: console.CleanRecordingPath(filepath.Join(cfg.DataDir, "recordings", out.Session+".wav"))})
	}
	connectMu.Unlock()
	if err != nil {
		// As for a human call: an unreachable agent is recorded as a platform_lost exclusion.
		st.EndSession(sctx, out.Session, session.EndPlatformLost)
		st.ExcludeSession(sctx, audit.Exclusion{SessionID: out.Session, Reason: audit.ReasonPlatformLost,
			Note: "agent could not be reached: " + err.Error(), By: "system"})
		out.Err = fmt.Errorf("%w: %w", errConnect, err)
		out.Reason, out.Exclusion = session.EndPlatformLost, session.ExclusionPlatformLost
		return out
	}
	if err := st.StartSession(sctx, out.Session); err != nil {
		cfg.Logger.Warn("mark session started", slog.String("session", out.Session), slog.Any("err", err))
	}
	select {
	case <-s.Done():
	case <-ctx.Done():
		// An interrupted call cannot count: it is excluded, so a resumed run calls the pair again.
		s.Stop(session.EndCancelled, session.ExclusionOther)
	}
	res := s.Result()
	out.Reason, out.Exclusion, out.Grade = res.Reason, res.Exclusion, res.Grade
	if res.GradeErr != nil && out.Exclusion == "" {
		out.Exclusion = session.ExclusionGraderError
	}
	if err := console.SaveResult(sctx, st, out.Session, res); err != nil {
		out.Err = fmt.Errorf("store result: %w", err)
	}
	out.Elapsed = cfg.Now().Sub(start)
	return out
}

// export writes the finished sessions of the plan's pairs (this run's and earlier ones) to Out:
// traces/<session>.jsonl as the store holds them, grades/<session>.json, and runs.csv.
func export(ctx context.Context, cfg Config, plan []Pair) error {
	ss, err := conditionSessions(ctx, cfg.Store, cfg.System.Label, cfg.conditionName())
	if err != nil {
		return fmt.Errorf("synth: export: %w", err)
	}
	want := map[pairKey]bool{}
	for _, p := range plan {
		want[pairKey{p.Task.ID, p.Seed}] = true
	}
	// Rows in coverage-first order (seed, then task), each pair's attempts in the order they ran.
	slices.SortStableFunc(ss, func(a, b audit.SessionSummary) int {
		return cmp.Or(cmp.Compare(a.Seed, b.Seed), cmp.Compare(a.TaskID, b.TaskID))
	})
	rows := [][]string{{"session", "system", "task", "seed", "status", "end_reason", "excluded", "ws", "ts", "pv", "ac", "av", "afa", "ttr_ms", "trace", "grade"}}
	for _, s := range ss {
		if !want[pairKey{s.TaskID, s.Seed}] || s.Status != audit.SessionEnded {
			continue
		}
		tracePath := filepath.Join("traces", s.ID+".jsonl")
		if err := writeFile(filepath.Join(cfg.Out, tracePath), func(w io.Writer) error { return cfg.Store.WriteTrace(ctx, s.ID, w) }); err != nil {
			return fmt.Errorf("synth: export %s: %w", s.ID, err)
		}
		row := []string{s.ID, s.System, s.TaskID, strconv.FormatInt(s.Seed, 10), string(s.Status), s.EndReason, "", "", "", "", "", "", "", "", tracePath, ""}
		if s.Exclusion != nil {
			row[6] = string(s.Exclusion.Reason)
		}
		gradePath := filepath.Join("grades", s.ID+".json")
		var gradeJSON []byte
		if s.Score != nil {
			gradeJSON = s.Score.Grade
		}
		if s.Exclusion != nil || gradeJSON != nil {
			// An excluded run's grade says so itself: averaging grades/*.json must not count a lost
			// platform as an agent failure.
			if s.Exclusion != nil {
				gradeJSON, err = markExcluded(gradeJSON, s.ID, s.Exclusion)
				if err != nil {
					return fmt.Errorf("synth: export %s: %w", s.ID, err)
				}
			}
			if err := os.WriteFile(filepath.Join(cfg.Out, gradePath), gradeJSON, 0o644); err != nil {
				return fmt.Errorf("synth: export %s: %w", s.ID, err)
			}
			row[15] = gradePath
		}
		if sc := s.Score; sc != nil {
			row[7], row[8], row[9], row[10], row[11] = b01(sc.WS), b01(sc.TS), b01(sc.PV), b01(sc.AC), b01(sc.AV)
			if sc.AFA != nil {
				row[12] = strconv.FormatFloat(*sc.AFA, 'g', -1, 64)
			}
			if sc.TTRMS != nil {
				row[13] = strconv.FormatInt(*sc.TTRMS, 10)
			}
		}
		rows = append(rows, row)
	}
	return writeCSV(filepath.Join(cfg.Out, "runs.csv"), rows)
}

// Excluded is the "excluded" member of an excluded run's exported grade file.
type Excluded struct {
	Reason string `json:"reason"`
	Note   string `json:"note,omitempty"`
	By     string `json:"by,omitempty"`
}

// markExcluded puts "excluded" first in a grade object (keeping the grade's own bytes after it),
// or, for a run that has no grade, makes a grade file of the session and its exclusion alone.
func markExcluded(grade []byte, sessionID string, x *audit.Exclusion) ([]byte, error) {
	ex, err := json.Marshal(Excluded{Reason: string(x.Reason), Note: x.Note, By: x.By})
	if err != nil {
		return nil, err
	}
	body := bytes.TrimSpace(grade)
	if len(body) < 2 || body[0] != '{' {
		sid, _ := json.Marshal(sessionID)
		return []byte(fmt.Sprintf(`{"excluded":%s,"session":%s}`+"\n", ex, sid)), nil
	}
	rest := bytes.TrimSpace(body[1:])
	out := append([]byte(`{"excluded":`), ex...)
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...), nil
}

func b01(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
