package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/systems"
	"github.com/voicebench/humanaudit/internal/condition"
	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/study"
	"github.com/voicebench/humanaudit/internal/task"
)

func init() {
	register("study plan", "plan a counterbalanced study: plan.csv and a balance report (--tasks --systems --anchor --sessions-per-participant --seed --out [--power --delta D [--pilot STUDY | --rates FILE]])", runStudyPlan)
	register("study create", "store a study from plan.csv and print participant links (--id --plan --consent FILE [--participants N] [--open-enrollment])", runStudyCreate)
	register("study status", "show a study's progress (--study ID [--csv status.csv])", runStudyStatus)
	register("study export", "write a study's plan.csv and status.csv for the recruiting platform (--study ID --plan FILE --status FILE)", runStudyExport)
	register("study extend", "add plan rows and/or participants to a running study without touching finished work (--study ID [--plan FILE] [--participants N])", runStudyExtend)
}

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
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "audit study plan: unexpected argument %q\n", pos[0])
		return errUsage
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
		var out []string
		for _, s := range f.Systems {
			out = append(out, s.Label)
		}
		return out, nil
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

// studyDB opens the console's database the way serve does: DATABASE_URL, else the private
// cluster under --data.
func studyDB(ctx context.Context, f dbFlags) (*store.DB, error) {
	return store.Open(ctx, store.Config{URL: databaseURL(), DataDir: *f.data, Database: *f.database, Logger: slog.New(slog.DiscardHandler)})
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

// planRows converts plan sessions to store rows.
func planRows(sessions []study.Session) []store.PlanRow {
	rows := make([]store.PlanRow, len(sessions))
	for i, s := range sessions {
		rows[i] = store.PlanRow{Slot: s.Participant, Position: s.Position, Task: s.Task, System: s.System, Repeat: s.Repeat}
	}
	return rows
}

// registerPlanRefs stores the systems (with blind aliases) and the task specs a plan names, so
// AddPlan's references resolve and sessions can be graded against the spec they ran.
func registerPlanRefs(ctx context.Context, db *store.DB, sessions []study.Session, systemsFile, tasksDir string) error {
	// Every plan system must be one the console can dial: defined in the systems file, or the
	// built-in reference agent. A study naming anything else would strand its participants.
	if systemsFile == "" {
		systemsFile = "systems.json"
	}
	sysFile, err := loadSystems(systemsFile)
	if err != nil {
		return err
	}
	labels, taskIDs := map[string]bool{}, map[string]bool{}
	for _, s := range sessions {
		labels[s.System], taskIDs[s.Task] = true, true
	}
	for _, l := range sortedSet(labels) {
		s, err := sysFile.Lookup(l)
		if err != nil {
			return fmt.Errorf("plan system %q is not defined in %s (the console could not call it): add it there or pass --systems FILE; defined: %s",
				l, systemsFile, strings.Join(systemLabelsOf(sysFile), ", "))
		}
		conf, _ := json.Marshal(map[string]any{"model": s.Model, "voice": s.Voice, "endpoint": s.Endpoint, "server_vad": s.ServerVAD})
		if _, err := db.UpsertSystem(ctx, store.System{Label: l, Family: string(s.Family), Config: conf}); err != nil {
			return err
		}
	}
	all, _ := task.LoadAll(tasksDir)
	byID := map[string]*task.Task{}
	for _, t := range all {
		byID[t.ID] = t
	}
	for _, id := range sortedSet(taskIDs) {
		t, ok := byID[id]
		if !ok {
			return fmt.Errorf("plan task %q: no valid task with that id in %s (use --tasks-dir)", id, tasksDir)
		}
		spec, err := os.ReadFile(t.Path)
		if err != nil {
			return err
		}
		if _, err := db.PutTask(ctx, t.ID, t.Version, spec); err != nil {
			return err
		}
	}
	return nil
}

func systemLabelsOf(f *systems.File) []string {
	var out []string
	for _, s := range f.Systems {
		out = append(out, s.Label)
	}
	return out
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// issueParticipants creates n participant links and prints them as "participant: URL".
func issueParticipants(ctx context.Context, db *store.DB, studyID string, n int, baseURL string, stdout io.Writer) error {
	base := strings.TrimSuffix(baseURL, "/")
	for i := 0; i < n; i++ {
		p, err := db.CreateParticipant(ctx, store.NewParticipant{StudyID: studyID})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "participant: %s/p/%s\n", base, p.Token)
	}
	return nil
}

func countSlots(sessions []study.Session) int {
	seen := map[string]bool{}
	for _, s := range sessions {
		seen[s.Participant] = true
	}
	return len(seen)
}

func runStudyCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("study create", stderr)
	dbf := addDBFlags(fs)
	id := fs.String("id", "", "study id (1–64 lowercase letters, digits, - or _)")
	name := fs.String("name", "", "study name (default: the id)")
	planFile := fs.String("plan", "", "plan.csv from audit study plan")
	seed := fs.Int64("seed", 1, "study seed (use the planning seed); it also orders each annotator's items")
	consent := fs.String("consent", "", "file with the consent text participants agree to")
	title := fs.String("title", "", "study title shown to participants")
	code := fs.String("completion-code", "", "completion code shown at the end (recruiting platform)")
	returnURL := fs.String("completion-url", "", "link back to the recruiting platform at the end")
	openEnrollment := fs.Bool("open-enrollment", false, "also accept participants through one study link, /join/ID?PROLIFIC_PID=… (recruiting platforms)")
	participants := fs.Int("participants", -1, "participant links to issue (default: one per plan slot)")
	systemsFile := fs.String("systems", "", "systems file giving each plan system's family and settings")
	tasksDir := fs.String("tasks-dir", "tasks", "task directory (the plan's task specs are stored with the study)")
	baseURL := fs.String("base-url", defaultBaseURL, "console base URL for the printed links")
	if err := noPositional(fs, args); err != nil {
		return err
	}
	if *id == "" || *planFile == "" {
		fmt.Fprintln(stderr, "audit study create: --id and --plan are required")
		return errUsage
	}
	sessions, err := readPlanFile(*planFile)
	if err != nil {
		return err
	}
	if problems := study.Verify(sessions); len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(stderr, "%s: %s\n", *planFile, p)
		}
		return fmt.Errorf("%s breaks the study's constraints (%d problems); plan again with audit study plan", *planFile, len(problems))
	}
	if *consent == "" {
		return fmt.Errorf("study create: --consent FILE is required: participants must agree to your approved consent text (the built-in text is only for audit demo)")
	}
	cfg := map[string]string{}
	if *consent != "" {
		b, err := os.ReadFile(*consent)
		if err != nil {
			return fmt.Errorf("--consent: %w", err)
		}
		if cfg["consent"] = strings.TrimSpace(string(b)); cfg["consent"] == "" {
			return fmt.Errorf("--consent %s: the file is empty", *consent)
		}
	}
	if *openEnrollment {
		cfg["enrollment"] = "open"
	}
	for k, v := range map[string]string{"title": *title, "completion_code": *code, "completion_url": *returnURL} {
		if v != "" {
			cfg[k] = v
		}
	}
	conf, _ := json.Marshal(cfg)
	if conf, err = study.WithPlanConfig(conf, study.PlanConfigOf(sessions)); err != nil {
		return err
	}
	if *name == "" {
		*name = *id
	}
	db, err := studyDB(ctx, dbf)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Study(ctx, *id); err == nil {
		return fmt.Errorf("study %s exists already: use audit study extend to add to it", *id)
	}
	if err := registerPlanRefs(ctx, db, sessions, *systemsFile, *tasksDir); err != nil {
		return err
	}
	if _, err := db.CreateStudy(ctx, store.Study{ID: *id, Name: *name, Seed: *seed, Config: conf}); err != nil {
		return err
	}
	added, err := db.AddPlan(ctx, *id, planRows(sessions))
	if err != nil {
		return err
	}
	if err := addPlanConditions(ctx, db, *id, sessions); err != nil {
		return err
	}
	slots := countSlots(sessions)
	fmt.Fprintf(stderr, "study %s: %d sessions in %d participant slots\n", *id, added, slots)
	if err := printAliases(ctx, db, sessions, stderr); err != nil {
		return err
	}
	n := *participants
	if n < 0 {
		n = slots
	}
	return issueParticipants(ctx, db, *id, n, *baseURL, stdout)
}

// printAliases shows which blind alias participants will see for each plan system.
func printAliases(ctx context.Context, db *store.DB, sessions []study.Session, w io.Writer) error {
	labels := map[string]bool{}
	for _, s := range sessions {
		labels[s.System] = true
	}
	for _, l := range sortedSet(labels) {
		sys, err := db.System(ctx, l)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  system %s is shown as %q\n", l, sys.Alias)
	}
	return nil
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

func runStudyStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("study status", stderr)
	dbf := addDBFlags(fs)
	id := fs.String("study", "", "study id")
	csvOut := fs.String("csv", "", "also write status.csv here (- for standard output instead of the summary)")
	if err := noPositional(fs, args); err != nil {
		return err
	}
	if *id == "" {
		fmt.Fprintln(stderr, "audit study status: --study is required")
		return errUsage
	}
	db, err := studyDB(ctx, dbf)
	if err != nil {
		return err
	}
	defer db.Close()
	if *csvOut == "-" {
		return writeStatusCSV(ctx, db, *id, stdout)
	}
	prog, err := db.Progress(ctx, *id)
	if err != nil {
		return err
	}
	rows, err := db.StatusRows(ctx, *id)
	if err != nil {
		return err
	}
	parts, err := db.Participants(ctx, *id)
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
		} else if r.Status == store.StatusPending && r.ParticipantID == 0 {
			pool++
		}
	}
	p := prog.Study
	planned := p.Total() - p.Excluded
	fmt.Fprintf(stdout, "study %s: %d of %d planned sessions done (%.0f%%), %d running, %d pending, %d excluded\n",
		*id, p.Done, planned, pct(p.Done, planned), p.Running, p.Pending, p.Excluded)
	fmt.Fprintf(stdout, "participants: %d links issued; %d of %d plan slots started; %d excluded cells waiting in the pool\n",
		len(parts), len(bound), len(slots), pool)
	alias := map[string]string{}
	for _, r := range rows {
		alias[r.System] = r.Alias
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "system\talias\tdone\trunning\tpending\texcluded")
	for _, l := range sortedKeys(prog.BySystem) {
		s := prog.BySystem[l]
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\n", l, alias[l], s.Done, s.Running, s.Pending, s.Excluded)
	}
	tw.Flush()
	if *csvOut != "" {
		if err := writeFileOr(*csvOut, stdout, func(w io.Writer) error { return writeStatusCSV(ctx, db, *id, w) }); err != nil {
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

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
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
	dbf := addDBFlags(fs)
	id := fs.String("study", "", "study id")
	planOut := fs.String("plan", "", "write the stored plan as plan.csv here")
	statusOut := fs.String("status", "", "write status.csv here")
	if err := noPositional(fs, args); err != nil {
		return err
	}
	if *id == "" || (*planOut == "" && *statusOut == "") {
		fmt.Fprintln(stderr, "audit study export: --study and at least one of --plan and --status are required")
		return errUsage
	}
	db, err := studyDB(ctx, dbf)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Study(ctx, *id); err != nil {
		return err
	}
	if *planOut != "" {
		as, err := db.Assignments(ctx, *id)
		if err != nil {
			return err
		}
		var sessions []study.Session
		for _, a := range as {
			if a.Slot == "" {
				continue // a pool cell re-running an excluded session, not part of the plan
			}
			sessions = append(sessions, study.Session{Participant: a.Slot, Position: a.Position, Task: a.Task, System: a.System, Repeat: a.Repeat})
		}
		if err := writeFileOr(*planOut, stdout, func(w io.Writer) error { return study.WriteCSV(w, sessions) }); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s: %d planned sessions\n", *planOut, len(sessions))
	}
	if *statusOut != "" {
		if err := writeFileOr(*statusOut, stdout, func(w io.Writer) error { return writeStatusCSV(ctx, db, *id, w) }); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s\n", *statusOut)
	}
	return nil
}

func runStudyExtend(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("study extend", stderr)
	dbf := addDBFlags(fs)
	id := fs.String("study", "", "study id")
	planFile := fs.String("plan", "", "plan.csv with more slots (plan it with another --slot-prefix); rows already stored are kept as they are")
	participants := fs.Int("participants", 0, "participant links to issue (default with --plan: one per new slot)")
	systemsFile := fs.String("systems", "", "systems file giving new plan systems their family and settings")
	tasksDir := fs.String("tasks-dir", "tasks", "task directory")
	baseURL := fs.String("base-url", defaultBaseURL, "console base URL for the printed links")
	if err := noPositional(fs, args); err != nil {
		return err
	}
	if *id == "" || (*planFile == "" && *participants == 0) {
		fmt.Fprintln(stderr, "audit study extend: --study and --plan and/or --participants are required")
		return errUsage
	}
	db, err := studyDB(ctx, dbf)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Study(ctx, *id); err != nil {
		return err
	}
	n := *participants
	if *planFile != "" {
		sessions, err := readPlanFile(*planFile)
		if err != nil {
			return err
		}
		for _, p := range study.Verify(sessions) {
			fmt.Fprintf(stderr, "warning: %s: %s\n", *planFile, p)
		}
		before, err := db.Assignments(ctx, *id)
		if err != nil {
			return err
		}
		oldSlots := map[string]bool{}
		for _, a := range before {
			if a.Slot != "" {
				oldSlots[a.Slot] = true
			}
		}
		newSlots := map[string]bool{}
		for _, s := range sessions {
			if !oldSlots[s.Participant] {
				newSlots[s.Participant] = true
			}
		}
		if err := registerPlanRefs(ctx, db, sessions, *systemsFile, *tasksDir); err != nil {
			return err
		}
		added, err := db.AddPlan(ctx, *id, planRows(sessions))
		if err != nil {
			return err
		}
		if err := addPlanConditions(ctx, db, *id, sessions); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "study %s: added %d sessions (%d new participant slots); %d rows were stored already and kept as they are\n",
			*id, added, len(newSlots), len(sessions)-added)
		if n == 0 {
			n = len(newSlots)
		}
	}
	return issueParticipants(ctx, db, *id, n, *baseURL, stdout)
}
