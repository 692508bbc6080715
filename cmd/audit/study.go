package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/systems"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/condition"
	"github.com/voicebench/humanaudit/internal/console"
	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/study"
	"github.com/voicebench/humanaudit/internal/task"
)

const defaultBaseURL = "http://127.0.0.1:8080"

func runStudyPlan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("study plan", stderr)
	tasksSpec := fs.String("tasks", task.SubsetAudit24, "tasks: subset flags and/or task ids, comma-separated")
	anchorSpec := fs.String("anchor", "", "anchor tasks run again by a second participant: subset flags and/or task ids")
	systemsSpec := fs.String("systems", "", "systems file, or comma-separated system labels")
	k := fs.Int("sessions-per-participant", 0, "sessions every participant runs (default: the number of systems)")
	seed := fs.Int64("seed", 1, "seed; the same seed gives the same plan")
	out := fs.String("out", "", "plan.csv to write (- for standard output)")
	report := fs.String("report", "", "write the balance report to this file instead of standard error")
	tasksDir := fs.String("tasks-dir", "tasks", "task directory")
	prefix := fs.String("slot-prefix", "P", "participant slot label prefix (use another for an extension plan)")
	conditions := fs.String("conditions", "", "listening conditions as a second factor, comma-separated (quiet,background_tv@10,phone_line+babble@5)")
	pf := addPowerFlags(fs)
	if err := noPositional(fs, args); err != nil {
		return err
	}
	if *systemsSpec == "" || *out == "" {
		fmt.Fprintln(stderr, "audit study plan: --systems and --out are required")
		fs.Usage()
		return errUsage
	}
	labels, err := systemLabels(*systemsSpec)
	if err != nil {
		return err
	}
	all, probs := task.LoadAll(*tasksDir)
	if len(all) == 0 && len(probs) > 0 {
		return fmt.Errorf("%s: no valid tasks (%d problems; run audit tasks validate)", *tasksDir, len(probs))
	}
	if len(probs) > 0 {
		fmt.Fprintf(stderr, "warning: %d problem(s) in %s; planning with the %d valid tasks (run audit tasks validate)\n", len(probs), *tasksDir, len(all))
	}
	picked, err := study.SelectTasks(all, *tasksSpec, "--tasks")
	if err != nil {
		return err
	}
	if len(picked) == 0 {
		return fmt.Errorf("--tasks %q selects no task in %s", *tasksSpec, *tasksDir)
	}
	anchors, err := study.SelectTasks(all, *anchorSpec, "--anchor")
	if err != nil {
		return err
	}
	req := study.Request{Systems: labels, SessionsPerParticipant: *k, Seed: *seed, SlotPrefix: *prefix}
	specs, err := condition.ParseList(*conditions)
	if err != nil {
		return fmt.Errorf("--conditions: %w", err)
	}
	for _, c := range specs {
		req.Conditions = append(req.Conditions, c.String())
	}
	if req.SessionsPerParticipant == 0 {
		req.SessionsPerParticipant = len(labels)
	}
	for _, t := range picked {
		req.Tasks = append(req.Tasks, study.Describe(t))
	}
	for _, t := range anchors {
		req.Anchors = append(req.Anchors, t.ID)
	}
	plan, err := study.Build(req)
	if err != nil {
		return err
	}
	if err := writeFileOr(*out, stdout, func(w io.Writer) error { return study.WriteCSV(w, plan.Sessions) }); err != nil {
		return err
	}
	rw := stderr
	if *report != "" {
		if err := writeFileOr(*report, stdout, func(w io.Writer) error {
			if err := plan.WriteReport(w); err != nil {
				return err
			}
			if *pf.on {
				return pf.runPower(ctx, plan, picked, w, stderr)
			}
			return nil
		}); err != nil {
			return err
		}
	} else if err := plan.WriteReport(rw); err != nil {
		return err
	} else if *pf.on {
		if err := pf.runPower(ctx, plan, picked, rw, stderr); err != nil {
			return err
		}
	}
	if *out != "-" {
		fmt.Fprintf(stderr, "wrote %s: %d sessions for %d participants\n", *out, len(plan.Sessions), len(plan.Participants))
	}
	return nil
}

// systemLabels reads --systems: a systems file when the value names a file (or ends in .json),
// else comma-separated labels.
func systemLabels(spec string) ([]string, error) {
	if st, err := os.Stat(spec); (err == nil && !st.IsDir()) || strings.HasSuffix(spec, ".json") {
		f, err := systems.Load(spec)
		if err != nil {
			return nil, err
		}
		return systemLabelsOf(f), nil
	}
	var out []string
	for _, l := range strings.Split(spec, ",") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--systems %q: want a systems file or comma-separated labels", spec)
	}
	return out, nil
}

// writeFileOr writes to path, or to stdout when path is "-".
func writeFileOr(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "-" {
		return write(stdout)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// readPlanFile reads and checks plan.csv.
func readPlanFile(path string) ([]study.Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sessions, err := study.ReadCSV(path, f)
	if err != nil {
		return nil, err
	}
	return sessions, canonicalConditions(path, sessions)
}

// planReferences resolves what a plan names: each system in the systems file (the console could
// not call any other, and a study naming it would strand its participants) and each task's spec
// in the task directory.
func planReferences(sessions []study.Session, systemsFile, tasksDir string) (study.References, error) {
	var refs study.References
	if systemsFile == "" {
		systemsFile = "systems.json"
	}
	sysFile, err := loadSystems(systemsFile)
	if err != nil {
		return refs, err
	}
	labels, taskIDs := study.Labels(sessions)
	for _, l := range labels {
		s, err := sysFile.Lookup(l)
		if err != nil {
			return refs, fmt.Errorf("plan system %q is not defined in %s (the console could not call it): add it there or pass --systems FILE; defined: %s",
				l, systemsFile, strings.Join(systemLabelsOf(sysFile), ", "))
		}
		refs.Systems = append(refs.Systems, console.SystemRecord(s))
	}
	all, _ := task.LoadAll(tasksDir)
	byID := map[string]*task.Task{}
	for _, t := range all {
		byID[t.ID] = t
	}
	for _, id := range taskIDs {
		t, ok := byID[id]
		if !ok {
			return refs, fmt.Errorf("plan task %q: no valid task with that id in %s (use --tasks-dir)", id, tasksDir)
		}
		spec, err := os.ReadFile(t.Path)
		if err != nil {
			return refs, err
		}
		refs.Tasks = append(refs.Tasks, audit.TaskVersion{ID: t.ID, Version: t.Version, Spec: spec})
	}
	return refs, nil
}

func systemLabelsOf(f *systems.File) []string {
	var out []string
	for _, s := range f.Systems {
		out = append(out, s.Label)
	}
	return out
}

// printLinks prints one "participant: URL" line per participant.
func printLinks(w io.Writer, baseURL string, ps []audit.Participant) {
	base := strings.TrimSuffix(baseURL, "/")
	for _, p := range ps {
		fmt.Fprintf(w, "participant: %s/p/%s\n", base, p.Token)
	}
}

// studySettings are how a study is set up: its record, plan and participant-facing settings, from
// the flags of audit study create or the --study file of audit serve.
type studySettings struct {
	id, name, planFile    string
	seed                  int64
	consent               string // file with the consent text
	title, code, complete string
	contact               string
	minCallSeconds        float64 // < 0: the default minimum
	practiceTask          string
	practiceSystem        string
	openEnrollment        bool
	participants          int // links to issue; < 0: one per plan slot
	systemsFile, tasksDir string
}

// createStudy creates a study from its settings and prints what it stored: counts and aliases on
// stderr, one participant link per line on stdout.
func createStudy(ctx context.Context, db study.Records, ss studySettings, baseURL string, stdout, stderr io.Writer) error {
	sessions, err := readPlanFile(ss.planFile)
	if err != nil {
		return err
	}
	if problems := study.Verify(sessions); len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(stderr, "%s: %s\n", ss.planFile, p)
		}
		return fmt.Errorf("%s breaks the study's constraints (%d problems); plan again with audit study plan", ss.planFile, len(problems))
	}
	if ss.consent == "" {
		return fmt.Errorf("study create: --consent FILE is required: participants must agree to your approved consent text (the built-in text is only for audit demo)")
	}
	b, err := os.ReadFile(ss.consent)
	if err != nil {
		return fmt.Errorf("--consent: %w", err)
	}
	cfg := map[string]any{"consent": strings.TrimSpace(string(b))}
	if cfg["consent"] == "" {
		return fmt.Errorf("--consent %s: the file is empty", ss.consent)
	}
	if ss.openEnrollment {
		cfg["enrollment"] = "open"
	}
	for k, v := range map[string]string{"title": ss.title, "completion_code": ss.code, "completion_url": ss.complete, "contact": ss.contact} {
		if v != "" {
			cfg[k] = v
		}
	}
	if ss.minCallSeconds >= 0 {
		cfg["min_call_seconds"] = ss.minCallSeconds
	}
	if ss.practiceTask != "" {
		// The practice task must be one the console loads (it is not stored with the study).
		tasks, _ := task.LoadAll(ss.tasksDir)
		if !slices.ContainsFunc(tasks, func(t *task.Task) bool { return t.ID == ss.practiceTask }) {
			return fmt.Errorf("--practice-task %q: no such task in %s", ss.practiceTask, ss.tasksDir)
		}
		if slices.ContainsFunc(sessions, func(r study.Session) bool { return r.Task == ss.practiceTask }) {
			return fmt.Errorf("--practice-task %q: the plan counts this task; pick one the plan does not use", ss.practiceTask)
		}
		cfg["practice"] = map[string]string{"task": ss.practiceTask, "system": ss.practiceSystem}
	}
	conf, _ := json.Marshal(cfg)
	refs, err := planReferences(sessions, ss.systemsFile, ss.tasksDir)
	if err != nil {
		return err
	}
	made, err := study.Create(ctx, db, study.Definition{Study: audit.Study{ID: ss.id, Name: ss.name, Seed: ss.seed, Config: conf},
		Plan: sessions, References: refs, Participants: ss.participants})
	if errors.Is(err, study.ErrExists) {
		return fmt.Errorf("study %s exists already: use audit study extend to add to it", ss.id)
	}
	if made.Study.ID != "" {
		fmt.Fprintf(stderr, "study %s: %d sessions in %d participant slots\n", ss.id, made.Added, made.Slots)
		for _, sys := range made.Systems {
			fmt.Fprintf(stderr, "  system %s is shown as %q\n", sys.Label, sys.Alias)
		}
		printLinks(stdout, baseURL, made.Participants)
	}
	return err
}

func runStudyCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("study create", stderr)
	dbf := addDBFlags(fs)
	var ss studySettings
	fs.StringVar(&ss.id, "id", "", "study id (1–64 lowercase letters, digits, - or _)")
	fs.StringVar(&ss.name, "name", "", "study name (default: the id)")
	fs.StringVar(&ss.planFile, "plan", "", "plan.csv from audit study plan")
	fs.Int64Var(&ss.seed, "seed", 1, "study seed (use the planning seed); it also orders each annotator's items")
	fs.StringVar(&ss.consent, "consent", "", "file with the consent text participants agree to")
	fs.StringVar(&ss.title, "title", "", "study title shown to participants")
	fs.StringVar(&ss.code, "completion-code", "", "completion code shown at the end (recruiting platform)")
	fs.StringVar(&ss.complete, "completion-url", "", "link back to the recruiting platform at the end (the code is added as ?cc=)")
	fs.StringVar(&ss.contact, "contact", "", "the research team's contact, shown to participants who decline")
	fs.Float64Var(&ss.minCallSeconds, "min-call-seconds", -1, "a call hung up sooner is excluded too_short and offered again (default 45; 0: none)")
	fs.StringVar(&ss.practiceTask, "practice-task", "", "task of an uncounted practice call before the counted ones")
	fs.StringVar(&ss.practiceSystem, "practice-system", "", "system of the practice call (default: the participant's first call's)")
	fs.BoolVar(&ss.openEnrollment, "open-enrollment", false, "also accept participants through one study link, /join/ID?PROLIFIC_PID=… (recruiting platforms)")
	fs.IntVar(&ss.participants, "participants", -1, "participant links to issue (default: one per plan slot)")
	fs.StringVar(&ss.systemsFile, "systems", "", "systems file giving each plan system's family and settings")
	fs.StringVar(&ss.tasksDir, "tasks-dir", "tasks", "task directory (the plan's task specs are stored with the study)")
	baseURL := fs.String("base-url", defaultBaseURL, "console base URL for the printed links")
	if err := noPositional(fs, args); err != nil {
		return err
	}
	if ss.id == "" || ss.planFile == "" {
		fmt.Fprintln(stderr, "audit study create: --id and --plan are required")
		return errUsage
	}
	db, err := dbf.open(ctx, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	return createStudy(ctx, db, ss, *baseURL, stdout, stderr)
}

func runStudyStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("study status", stderr)
	sf := addStudyFlags(fs)
	csvOut := fs.String("csv", "", "also write status.csv here (- for standard output instead of the summary)")
	if err := noPositional(fs, args); err != nil {
		return err
	}
	if *sf.id == "" {
		fmt.Fprintln(stderr, "audit study status: --study is required")
		return errUsage
	}
	db, err := sf.open(ctx, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	if *csvOut == "-" {
		return writeStatusCSV(ctx, db, *sf.id, stdout)
	}
	prog, err := db.Progress(ctx, *sf.id)
	if err != nil {
		return err
	}
	rows, err := db.StatusRows(ctx, *sf.id)
	if err != nil {
		return err
	}
	parts, err := db.Participants(ctx, *sf.id)
	if err != nil {
		return err
	}
	slots, bound, pool := map[string]bool{}, map[string]bool{}, 0
	for _, r := range rows {
		if r.Slot != "" {
			slots[r.Slot] = true
			if r.ParticipantID != 0 {
				bound[r.Slot] = true
			}
		} else if r.Status == audit.StatusPending && r.ParticipantID == 0 {
			pool++
		}
	}
	p := prog.Study
	planned := p.Total() - p.Excluded
	fmt.Fprintf(stdout, "study %s: %d of %d planned sessions done (%.0f%%), %d running, %d pending, %d excluded\n",
		*sf.id, p.Done, planned, pct(p.Done, planned), p.Running, p.Pending, p.Excluded)
	fmt.Fprintf(stdout, "participants: %d links issued; %d of %d plan slots started; %d excluded cells waiting in the pool\n",
		len(parts), len(bound), len(slots), pool)
	alias := map[string]string{}
	for _, r := range rows {
		alias[r.System] = r.Alias
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "system\talias\tdone\trunning\tpending\texcluded")
	for _, l := range slices.Sorted(maps.Keys(prog.BySystem)) {
		s := prog.BySystem[l]
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\n", l, alias[l], s.Done, s.Running, s.Pending, s.Excluded)
	}
	tw.Flush()
	if *csvOut != "" {
		if err := writeFileOr(*csvOut, stdout, func(w io.Writer) error { return writeStatusCSV(ctx, db, *sf.id, w) }); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s\n", *csvOut)
	}
	return nil
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// statusHeader is status.csv's header.
var statusHeader = []string{"assignment", "participant", "position", "participant_id", "prolific_pid", "task", "system", "alias",
	"repeat", "status", "session", "claimed_at", "finished_at", "exclusion_reason", "replaces"}

// writeStatusCSV writes status.csv: one row per assignment (planned sessions, excluded runs and
// the pool cells that re-run them), for the experimenter and the recruiting platform.
func writeStatusCSV(ctx context.Context, db *store.DB, studyID string, w io.Writer) error {
	rows, err := db.StatusRows(ctx, studyID)
	if err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	cw.Write(statusHeader)
	stamp := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	num := func(n int64) string {
		if n == 0 {
			return ""
		}
		return strconv.FormatInt(n, 10)
	}
	for _, r := range rows {
		pos := ""
		if r.Position > 0 {
			pos = strconv.Itoa(r.Position)
		}
		cw.Write([]string{strconv.FormatInt(r.AssignmentID, 10), r.Slot, pos, num(r.ParticipantID), r.ProlificPID, r.Task, r.System, r.Alias,
			strconv.Itoa(r.Repeat), string(r.Status), r.SessionID, stamp(r.ClaimedAt), stamp(r.FinishedAt), string(r.ExclusionReason), num(r.Replaces)})
	}
	cw.Flush()
	return cw.Error()
}

func runStudyExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("study export", stderr)
	sf := addStudyFlags(fs)
	planOut := fs.String("plan", "", "write the stored plan as plan.csv here")
	statusOut := fs.String("status", "", "write status.csv here")
	db, _, err := sf.parseOpen(ctx, fs, args, func() bool { return *planOut != "" || *statusOut != "" }, "at least one of --plan and --status")
	if err != nil {
		return err
	}
	defer db.Close()
	if *planOut != "" {
		as, err := db.Assignments(ctx, *sf.id)
		if err != nil {
			return err
		}
		sessions := study.PlanOf(as)
		if err := writeFileOr(*planOut, stdout, func(w io.Writer) error { return study.WriteCSV(w, sessions) }); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s: %d planned sessions\n", *planOut, len(sessions))
	}
	if *statusOut != "" {
		if err := writeFileOr(*statusOut, stdout, func(w io.Writer) error { return writeStatusCSV(ctx, db, *sf.id, w) }); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s\n", *statusOut)
	}
	return nil
}

func runStudyExtend(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("study extend", stderr)
	sf := addStudyFlags(fs)
	planFile := fs.String("plan", "", "plan.csv with more slots (plan it with another --slot-prefix); rows already stored are kept as they are")
	participants := fs.Int("participants", 0, "participant links to issue (default with --plan: one per new slot)")
	systemsFile := fs.String("systems", "", "systems file giving new plan systems their family and settings")
	tasksDir := fs.String("tasks-dir", "tasks", "task directory")
	baseURL := fs.String("base-url", defaultBaseURL, "console base URL for the printed links")
	db, _, err := sf.parseOpen(ctx, fs, args, func() bool { return *planFile != "" || *participants != 0 }, "--plan and/or --participants")
	if err != nil {
		return err
	}
	defer db.Close()
	n := *participants
	if *planFile != "" {
		sessions, err := readPlanFile(*planFile)
		if err != nil {
			return err
		}
		refs, err := planReferences(sessions, *systemsFile, *tasksDir)
		if err != nil {
			return err
		}
		made, err := study.Extend(ctx, db, *sf.id, sessions, refs)
		for _, p := range made.Warnings {
			fmt.Fprintf(stderr, "warning: %s: %s\n", *planFile, p)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "study %s: added %d sessions (%d new participant slots); %d rows were stored already and kept as they are\n",
			*sf.id, made.Added, made.Slots, made.Kept)
		if n == 0 {
			n = made.Slots
		}
	}
	ps, err := study.Issue(ctx, db, *sf.id, n)
	printLinks(stdout, *baseURL, ps)
	return err
}
