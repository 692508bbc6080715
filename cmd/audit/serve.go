package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/systems"
	"github.com/voicebench/humanaudit/internal/console"
	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/media"
	"github.com/voicebench/humanaudit/internal/media/libopus"
	"github.com/voicebench/humanaudit/internal/redact"
	"github.com/voicebench/humanaudit/internal/rtc"
	"github.com/voicebench/humanaudit/internal/secrets"
	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/web"
)

// stackFlags are the settings shared by serve and demo.
type stackFlags struct {
	addr, data, tasks, systems, secrets, baseURL *string
	udp, publicIPs                               *string
	loopback                                     *bool
	timeLimit                                    *time.Duration
	verbose                                      *bool
	sec                                          securityFlags
}

func addStackFlags(fs *flag.FlagSet, defaultAddr string) stackFlags {
	return stackFlags{
		addr:      fs.String("addr", defaultAddr, "HTTP listen address"),
		data:      fs.String("data", "audit_data", "data directory (database cluster, recordings, judge cache)"),
		tasks:     addTasksFlag(fs),
		systems:   fs.String("systems", "systems.json", "systems file (a missing file means: only the reference agent)"),
		secrets:   fs.String("secrets", secrets.DefaultFile, "secrets file with API keys by label"),
		baseURL:   fs.String("base-url", "", "public base URL for printed links (default http://ADDR)"),
		udp:       fs.String("udp", "", "serve WebRTC media on this one UDP address (e.g. 0.0.0.0:3478); empty: ephemeral ports"),
		publicIPs: fs.String("public-ip", "", "comma-separated public IPs to advertise in ICE candidates (server behind 1:1 NAT)"),
		loopback:  fs.Bool("loopback-only", false, "limit WebRTC to the loopback interface (same-machine use and tests)"),
		timeLimit: fs.Duration("time-limit", 15*time.Minute, "longest call"),
		verbose:   fs.Bool("v", false, "log debug messages"),
		sec:       addSecurityFlags(fs),
	}
}

// stack is a running console: database, reference agent, WebRTC endpoint, sessions and web app.
type stack struct {
	log     *slog.Logger
	db      *store.DB
	ref     io.Closer
	refURL  string
	rtc     *rtc.Endpoint
	console *console.Service
	web     *web.Server
	tasks   []*task.Task
	systems *systems.File
	serveCh chan error
	tls     *tlsSource
}

// referenceAgentLabel is the system label of the in-process reference agent.
const referenceAgentLabel = systems.ReferenceAgentLabel

func startStack(ctx context.Context, f stackFlags, stderr io.Writer) (*stack, error) {
	level := slog.LevelInfo
	if *f.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(redact.NewHandler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}), nil))
	st := &stack{log: log, serveCh: make(chan error, 1)}
	ok := false
	defer func() {
		if !ok {
			st.Close()
		}
	}()

	// Security flags are checked before anything starts.
	sec, tlsSrc, err := f.sec.security(*f.data)
	if err != nil {
		return nil, err
	}
	// Bind the port first: a busy port is reported at once, not after the database and the speech
	// models have started.
	ln, err := net.Listen("tcp", *f.addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w (is another console running? choose another --addr)", *f.addr, err)
	}
	defer func() {
		if !ok {
			ln.Close()
		}
	}()
	tasks, err := loadTaskDir(*f.tasks)
	if err != nil {
		return nil, err
	}
	st.tasks = tasks
	sysFile, err := loadSystems(*f.systems)
	if err != nil {
		return nil, err
	}
	st.systems = sysFile
	keys, err := secrets.Load(*f.secrets)
	if err != nil {
		return nil, err
	}
	if err := sysFile.CheckKeys(keys); err != nil {
		return nil, err
	}

	st.db, err = dbFlags{data: f.data}.open(ctx, log)
	if err != nil {
		return nil, err
	}
	st.refURL, st.ref, err = startReferenceAgent(ctx, log)
	if err != nil {
		return nil, fmt.Errorf("reference agent: %w", err)
	}
	rcfg := rtc.Config{LoopbackOnly: *f.loopback, UDPListen: *f.udp, Logger: log}
	if *f.publicIPs != "" {
		rcfg.PublicIPs = strings.Split(*f.publicIPs, ",")
	}
	if st.rtc, err = rtc.NewEndpoint(rcfg); err != nil {
		return nil, err
	}
	st.console, err = console.New(ctx, console.Config{NewEncoder: media.Encoders(libopus.NewEncoder), NewDecoder: media.Decoders(libopus.NewDecoder), Store: st.db, Tasks: tasks, Systems: sysFile, Keys: keys, ReferenceURL: st.refURL,
		DataDir: *f.data, Grade: grade.Options{Cache: &grade.JudgeCache{Dir: filepath.Join(*f.data, "judge")}}, TimeLimit: *f.timeLimit, Logger: log})
	if err != nil {
		return nil, err
	}
	// Sessions a console that died left running are closed before anyone can ask for them (the
	// participant then runs the cell again); Reconcile logs one line with the counts.
	if _, err := st.console.Reconcile(ctx); err != nil {
		log.Error("some sessions left running could not be closed; the next start tries again", slog.Any("err", err))
	}
	// Studies may name systems this console cannot call (a systems file edited since): say so now,
	// not when a participant presses Start call.
	if known, err := st.db.Systems(ctx); err == nil {
		for _, k := range known {
			if _, err := sysFile.Lookup(k.Label); err != nil {
				log.Warn("a stored study system is not in the systems file: its participants cannot call it",
					slog.String("system", k.Label), slog.String("systems_file", *f.systems))
			}
		}
	}
	st.web, err = web.New(web.Config{Store: st.db, Console: st.console, RTC: st.rtc, DataDir: *f.data, BaseURL: *f.baseURL, Logger: log, Security: sec})
	if err != nil {
		return nil, err
	}
	st.web.UseListener(ln)
	go func() { st.serveCh <- st.web.Serve() }()
	// ACME's tls-alpn-01 challenge is answered by the serving listener: get the certificate now.
	st.tls = tlsSrc
	if err := tlsSrc.start(ctx, *f.sec.acmeHTTP, log); err != nil {
		return nil, err
	}
	ok = true
	return st, nil
}

// parseAndStartStack parses a command's flags, then starts the stack they describe.
func parseAndStartStack(ctx context.Context, fs *flag.FlagSet, f stackFlags, args []string, stderr io.Writer) (*stack, error) {
	if _, err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	return startStack(ctx, f, stderr)
}

// loadSystems reads the systems file and adds the in-process reference agent unless the file
// already names one.
func loadSystems(path string) (*systems.File, error) {
	f, err := systems.Load(path)
	if errors.Is(err, os.ErrNotExist) {
		return systems.WithReferenceAgent(nil), nil
	}
	if err != nil {
		return nil, err
	}
	return systems.WithReferenceAgent(f), nil
}

// Close stops the web app, ends live sessions (stored as excluded), then the agent and database.
func (st *stack) Close() error {
	var errs []error
	if st.web != nil {
		errs = append(errs, st.web.Close())
	}
	errs = append(errs, st.tls.close())
	if st.console != nil {
		errs = append(errs, st.console.Close())
	}
	if st.rtc != nil {
		errs = append(errs, st.rtc.Close())
	}
	if st.ref != nil {
		errs = append(errs, st.ref.Close())
	}
	if st.db != nil {
		errs = append(errs, st.db.Close())
	}
	return errors.Join(errs...)
}

// wait blocks until ctx ends (the first interrupt) or the web server fails.
func (st *stack) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-st.serveCh:
		return err
	}
}

// studySpec is the --study file of audit serve: a study to create on first start.
type studySpec struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	Seed           int64  `json:"seed"`
	Plan           string `json:"plan"`    // plan.csv from audit study plan, relative to the spec file
	Consent        string `json:"consent"` // file with the consent text, relative to the spec file
	Participants   int    `json:"participants"`
	Title          string `json:"title"`
	CompletionCode string `json:"completion_code"`
	CompletionURL  string `json:"completion_url"`
	OpenEnrollment bool   `json:"open_enrollment"` // accept participants through /join/ID?PROLIFIC_PID=…
}

// ensureStudy creates the study of a --study file unless it exists, as audit study create does.
func ensureStudy(ctx context.Context, st *stack, f stackFlags, path string, stdout, stderr io.Writer) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--study: %w", err)
	}
	var spec studySpec
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return fmt.Errorf("--study %s: %w (fields: id, name, seed, plan, consent, participants, title, completion_code, completion_url, open_enrollment)", path, err)
	}
	if spec.ID == "" || spec.Plan == "" {
		return fmt.Errorf("--study %s: \"id\" and \"plan\" are required", path)
	}
	if _, err := st.db.Study(ctx, spec.ID); err == nil {
		fmt.Fprintf(stdout, "study %s: already created (audit study status --study %s)\n", spec.ID, spec.ID)
		return nil
	}
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(filepath.Dir(path), p)
	}
	ss := studySettings{id: spec.ID, name: spec.Name, planFile: rel(spec.Plan), seed: spec.Seed, consent: rel(spec.Consent),
		title: spec.Title, code: spec.CompletionCode, complete: spec.CompletionURL, openEnrollment: spec.OpenEnrollment,
		participants: spec.Participants, tasksDir: *f.tasks}
	if ss.seed == 0 {
		ss.seed = 1
	}
	if ss.participants <= 0 {
		ss.participants = -1 // one per plan slot
	}
	if _, err := os.Stat(*f.systems); err == nil {
		ss.systemsFile = *f.systems
	}
	if spec.OpenEnrollment {
		fmt.Fprintf(stdout, "study link for the recruiting platform: %s/join/%s?PROLIFIC_PID={{%%PROLIFIC_PID%%}}&STUDY_ID={{%%STUDY_ID%%}}&SESSION_ID={{%%SESSION_ID%%}}\n", st.web.URL(), spec.ID)
	}
	return createStudy(ctx, st.db, ss, st.web.URL(), stdout, stderr)
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	f := addStackFlags(fs, ":8080")
	studyFile := fs.String("study", "", "study file (JSON: id, name, seed, plan, consent, participants, title, completion_code, completion_url, open_enrollment) to create on first start")
	st, err := parseAndStartStack(ctx, fs, f, args, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	if *studyFile != "" {
		if err := ensureStudy(ctx, st, f, *studyFile, stdout, stderr); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "console: %s (experimenter: %s/x/)\n", st.web.URL(), st.web.URL())
	fmt.Fprintf(stdout, "tasks: %d; systems: %d; interrupt to stop (live calls are ended and kept as excluded)\n", len(st.tasks), len(st.systems.Systems))
	return st.wait(ctx)
}
