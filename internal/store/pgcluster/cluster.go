// Package pgcluster runs the console's private PostgreSQL cluster from the machine's binaries
// (initdb, pg_ctl): under the data directory, on a Unix socket only, as the unprivileged postgres
// user when the console runs as root, and shared by every process that opens the same directory
// (the last one to leave stops it). With a DATABASE_URL the console needs none of this.
package pgcluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// The managed cluster's layout under its root directory (audit_data/pg):
//
//	data/          PGDATA (initdb)
//	postgres.log   the server's log
//	.s.PGSQL.5432  the Unix socket, when its path fits in 107 bytes (else see socketDirFor)
//	lease.lock     every process using the cluster holds a shared flock on it
//	start.lock     an exclusive flock serialises starting and stopping
//	hold           present while `audit db start` keeps the cluster up for other tools
//
// The server listens on the Unix socket only (listen_addresses = ”), so access is governed by the
// file system: the root directory is 0700 and owned by the server's user, which is why local trust
// authentication is safe here. The port number only names the socket file.
const (
	clusterPort    = 5432
	clusterSuper   = "postgres" // the bootstrap superuser initdb creates
	maxSocketPath  = 107        // sun_path is 108 bytes including the terminating NUL
	socketFileName = ".s.PGSQL.5432"
)

// Config says where a managed cluster lives and how to run it.
type Config struct {
	// Dir is the cluster's root directory, e.g. audit_data/pg. It is created when missing.
	Dir string
	// BinDir holds initdb and postgres. Empty: `pg_config --bindir`, then the newest
	// /usr/lib/postgresql/<version>/bin.
	BinDir string
	// Logger receives lifecycle messages (started, reused, stopped, stale pid removed).
	Logger *slog.Logger
	// StartTimeout bounds waiting for the server to accept connections (default 60s).
	StartTimeout time.Duration
}

// Cluster is a private PostgreSQL cluster run from the machine's binaries, shared by every
// process that opens the same directory: the last process to Close it stops it (fast shutdown),
// unless it is held by `audit db start`. When the process runs as root, the server runs as the
// unprivileged `postgres` user, which PostgreSQL requires.
type Cluster struct {
	dir       string // absolute root
	bin       string
	owner     *serverUser
	log       *slog.Logger
	timeout   time.Duration
	socketDir string
	pid       int
	startedBy bool

	mu    sync.Mutex
	lease *os.File // shared flock held until Close
}

// Start starts the cluster under cfg.Dir, creating it with initdb on first use, or joins
// it when it is already running (from this or an earlier run). A stale postmaster.pid left by a
// crash is removed. The caller must Close the cluster.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	c, err := newCluster(cfg)
	if err != nil {
		return nil, err
	}
	if err := c.owner.prepareClusterDir(c.dir); err != nil {
		return nil, err
	}
	lease, err := openLock(filepath.Join(c.dir, "lease.lock"))
	if err != nil {
		return nil, err
	}
	if err := flockWait(ctx, lease, syscall.LOCK_SH); err != nil {
		lease.Close()
		return nil, fmt.Errorf("join cluster %s: %w", c.dir, err)
	}
	c.lease = lease
	if err := c.withStartLock(ctx, func() error { return c.ensureRunning(ctx) }); err != nil {
		lease.Close()
		c.lease = nil
		return nil, err
	}
	return c, nil
}

func newCluster(cfg Config) (*Cluster, error) {
	if cfg.Dir == "" {
		return nil, errors.New("store: the cluster directory is empty")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("cluster directory %s: %w", cfg.Dir, err)
	}
	bin := cfg.BinDir
	if bin == "" {
		if bin, err = FindBinDir(); err != nil {
			return nil, err
		}
	} else if !hasServerBinaries(bin) {
		return nil, fmt.Errorf("%w: %s has no initdb and postgres", ErrNoPostgres, bin)
	}
	owner, err := lookupServerUser()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	timeout := cfg.StartTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	return &Cluster{dir: dir, bin: bin, owner: owner, log: log.With(slog.String("cluster", dir)), timeout: timeout}, nil
}

// URL returns a connection URL for database on this cluster (Unix socket, trust authentication).
func (c *Cluster) URL(database string) string { return socketURL(c.socketDir, database) }

// SocketDir is the directory holding the cluster's Unix socket.
func (c *Cluster) SocketDir() string { return c.socketDir }

// Dir is the cluster's absolute root directory.
func (c *Cluster) Dir() string { return c.dir }

// PID is the postmaster's process id.
func (c *Cluster) PID() int { return c.pid }

// StartedHere reports whether this process started the server (rather than joining a running one).
func (c *Cluster) StartedHere() bool { return c.startedBy }

// Hold keeps the server running after every process has closed the cluster, until Stop.
func (c *Cluster) Hold() error {
	return os.WriteFile(filepath.Join(c.dir, "hold"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
}

// Close leaves the cluster. The last process to leave stops the server with a fast shutdown
// (clients are disconnected, transactions rolled back, data flushed), unless the cluster is held.
func (c *Cluster) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lease == nil {
		return nil
	}
	lease := c.lease
	c.lease = nil
	defer lease.Close()
	return c.withStartLock(ctx, func() error {
		if err := syscall.Flock(int(lease.Fd()), syscall.LOCK_UN); err != nil {
			return fmt.Errorf("leave cluster %s: %w", c.dir, err)
		}
		if err := syscall.Flock(int(lease.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			c.log.Info("postgres left running for other processes")
			return nil
		}
		if _, err := os.Stat(filepath.Join(c.dir, "hold")); err == nil {
			c.log.Info("postgres left running: held by audit db start")
			return nil
		}
		return c.stop(ctx)
	})
}

// Stop stops the server under cfg.Dir whoever uses it and releases a hold; it is what
// `audit db stop` runs. Stopping a cluster that is not running is not an error.
func Stop(ctx context.Context, cfg Config) error {
	c, err := newCluster(cfg)
	if err != nil {
		return err
	}
	if _, err := os.Stat(c.dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return c.withStartLock(ctx, func() error {
		if err := os.Remove(filepath.Join(c.dir, "hold")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("release hold: %w", err)
		}
		return c.stop(ctx)
	})
}

// Status describes a managed cluster without starting it.
type Status struct {
	Dir         string // absolute root
	BinDir      string
	Initialized bool   // initdb has run
	Version     string // PG_VERSION of the data directory
	Running     bool
	PID         int
	SocketDir   string
	Held        bool // audit db start holds it up
}

// URL is the connection URL for database on this cluster (valid while it runs).
func (s Status) URL(database string) string { return socketURL(s.SocketDir, database) }

// Inspect reports the state of the cluster under cfg.Dir, asking pg_ctl status whether its server
// runs; a pid that another process took over after a reboot does not count as running.
func Inspect(cfg Config) (Status, error) {
	c, err := newCluster(cfg)
	if err != nil {
		return Status{}, err
	}
	st := Status{Dir: c.dir, BinDir: c.bin, SocketDir: socketDirFor(c.dir)}
	if v, err := os.ReadFile(filepath.Join(c.pgdata(), "PG_VERSION")); err == nil {
		st.Initialized = true
		st.Version = strings.TrimSpace(string(v))
	}
	if _, err := os.Stat(filepath.Join(c.dir, "hold")); err == nil {
		st.Held = true
	}
	if !st.Initialized {
		return st, nil
	}
	// pg_ctl status: exit 0 running, 3 not running, 4 no usable data directory.
	out, err := c.pgCtl(context.Background(), "status")
	var ee *exec.ExitError
	switch {
	case err == nil:
		if pf, ok := c.readPIDFile(); ok && processAlive(pf.pid) && c.servesOurData(pf.pid) {
			st.Running, st.PID, st.SocketDir = true, pf.pid, pf.socketDir
		}
	case errors.As(err, &ee) && (ee.ExitCode() == 3 || ee.ExitCode() == 4):
	default:
		return st, fmt.Errorf("pg_ctl status %s: %w: %s", c.pgdata(), err, lastLine(out))
	}
	return st, nil
}

func (c *Cluster) pgdata() string  { return filepath.Join(c.dir, "data") }
func (c *Cluster) logPath() string { return filepath.Join(c.dir, "postgres.log") }

func (c *Cluster) withStartLock(ctx context.Context, fn func() error) error {
	f, err := openLock(filepath.Join(c.dir, "start.lock"))
	if err != nil {
		return err
	}
	defer f.Close() // closing releases the flock
	if err := flockWait(ctx, f, syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock cluster %s: %w", c.dir, err)
	}
	return fn()
}

// ensureRunning joins a running server or starts one. Called under the start lock.
func (c *Cluster) ensureRunning(ctx context.Context) error {
	if pf, ok := c.readPIDFile(); ok {
		if processAlive(pf.pid) && c.servesOurData(pf.pid) {
			c.pid, c.socketDir = pf.pid, pf.socketDir
			if err := c.waitReady(ctx); err == nil {
				c.log.Info("postgres reused", slog.Int("pid", pf.pid), slog.String("socket_dir", c.socketDir))
				return nil
			} else if processAlive(pf.pid) {
				return err
			}
			// It was shutting down; start it again below.
		} else {
			if err := c.removeStale(pf); err != nil {
				return err
			}
		}
	}
	if err := c.initdb(ctx); err != nil {
		return err
	}
	return c.start(ctx)
}

// removeStale deletes a postmaster.pid (and the socket's lock file) left by a server that no
// longer runs, as after a crash or a reboot.
func (c *Cluster) removeStale(pf pidFile) error {
	c.log.Warn("removing stale postmaster.pid", slog.Int("pid", pf.pid))
	if err := os.Remove(filepath.Join(c.pgdata(), "postmaster.pid")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale postmaster.pid: %w", err)
	}
	if pf.socketDir != "" {
		os.Remove(filepath.Join(pf.socketDir, socketFileName+".lock"))
	}
	return nil
}

// initdb creates the data directory unless it exists. A half-made one (no PG_VERSION, as after an
// interrupted initdb) is removed first.
func (c *Cluster) initdb(ctx context.Context) error {
	data := c.pgdata()
	v, err := os.ReadFile(filepath.Join(data, "PG_VERSION"))
	if err == nil {
		have := strings.TrimSpace(string(v))
		if want, err := c.binaryMajor(); err == nil && want != have {
			return fmt.Errorf("cluster %s was created by PostgreSQL %s but the binaries in %s are version %s: point --data elsewhere or upgrade the cluster with pg_upgrade", data, have, c.bin, want)
		}
		return nil
	}
	if err := os.RemoveAll(data); err != nil {
		return fmt.Errorf("remove incomplete data directory %s: %w", data, err)
	}
	c.log.Info("initdb", slog.String("data", data), slog.String("bin", c.bin))
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, "initdb"),
		"-D", data, "-U", clusterSuper, "-E", "UTF8", "--no-locale", "-A", "trust")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = c.dir
	c.owner.apply(cmd)
	if err := cmd.Run(); err != nil {
		os.RemoveAll(data)
		return fmt.Errorf("initdb %s: %w: %s", data, err, lastLine(out.String()))
	}
	return nil
}

func (c *Cluster) binaryMajor() (string, error) {
	out, err := exec.Command(filepath.Join(c.bin, "postgres"), "--version").Output()
	if err != nil {
		return "", err
	}
	// "postgres (PostgreSQL) 15.14 (Debian 15.14-0+deb12u1)"
	f := strings.Fields(string(out))
	if len(f) < 3 {
		return "", fmt.Errorf("unexpected postgres --version output %q", out)
	}
	return strings.SplitN(f[2], ".", 2)[0], nil
}

// start runs the server with pg_ctl, which starts the postmaster in a session of its own so it
// outlives this process and is not hit by a terminal's Ctrl-C, and waits until it accepts
// connections; it is stopped through Close or Stop.
func (c *Cluster) start(ctx context.Context) error {
	sock, err := c.owner.prepareSocketDir(socketDirFor(c.dir))
	if err != nil {
		return err
	}
	// The log is created here so that it is private whatever the umask, then handed to the server.
	logf, err := os.OpenFile(c.logPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open server log: %w", err)
	}
	logStart, _ := logf.Seek(0, io.SeekEnd)
	logf.Close()
	c.owner.chown(c.logPath())
	options := strings.Join([]string{
		"-c", shellQuote("listen_addresses="),
		"-c", shellQuote("unix_socket_directories=" + quoteSettingList(sock)),
		"-c", shellQuote("port=" + strconv.Itoa(clusterPort)),
		"-c", shellQuote("max_connections=200"),
	}, " ")
	out, err := c.pgCtl(ctx, "start", "-l", c.logPath(), "-t", c.timeoutSeconds(), "-o", options)
	if err != nil {
		// A server that started but did not become ready in time must not linger.
		if pf, ok := c.readPIDFile(); ok && processAlive(pf.pid) {
			c.pgCtl(context.WithoutCancel(ctx), "stop", "-m", "immediate", "-t", "10")
		}
		return fmt.Errorf("start postgres: %w: %s (server log %s: %s)", err, lastLine(out), c.logPath(), c.logTail(logStart))
	}
	pf, ok := c.readPIDFile()
	if !ok || !processAlive(pf.pid) {
		return fmt.Errorf("start postgres: pg_ctl reported success but no server runs (server log %s: %s)", c.logPath(), c.logTail(logStart))
	}
	c.pid, c.socketDir, c.startedBy = pf.pid, sock, true
	if err := c.waitReady(ctx); err != nil {
		return fmt.Errorf("%w (server log %s: %s)", err, c.logPath(), c.logTail(logStart))
	}
	c.log.Info("postgres started", slog.Int("pid", c.pid), slog.String("socket_dir", sock))
	return nil
}

// pgCtl runs pg_ctl ACTION on the data directory as the server's user (it refuses to run as root)
// and returns what it printed.
func (c *Cluster) pgCtl(ctx context.Context, action string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, "pg_ctl"), append([]string{action, "-D", c.pgdata(), "-s", "-w"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = c.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C", "HOME=" + c.owner.home()}
	c.owner.apply(cmd)
	err := cmd.Run()
	return out.String(), err
}

// timeoutSeconds is the start and stop timeout as pg_ctl's -t argument.
func (c *Cluster) timeoutSeconds() string {
	return strconv.Itoa(int(max(1, (c.timeout+time.Second-1)/time.Second)))
}

// shellQuote quotes one word for /bin/sh, which pg_ctl hands its -o options to.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// waitReady waits until the postmaster reports ready and accepts a connection.
func (c *Cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	for {
		if !processAlive(c.pid) {
			return errors.New("postgres exited during startup")
		}
		if pf, ok := c.readPIDFile(); ok && pf.pid == c.pid && pf.status == "ready" {
			if pf.socketDir != "" {
				c.socketDir = pf.socketDir
			}
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			conn, err := pgconn.Connect(pctx, c.URL("postgres"))
			pcancel()
			if err == nil {
				conn.Close(ctx)
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("postgres not ready: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop shuts the server down with pg_ctl's fast mode (clients disconnected, transactions rolled
// back, data flushed), falling back to an immediate shutdown if it lingers past the timeout.
func (c *Cluster) stop(ctx context.Context) error {
	pf, ok := c.readPIDFile()
	if !ok || !processAlive(pf.pid) || !c.servesOurData(pf.pid) {
		return nil
	}
	c.log.Info("stopping postgres", slog.Int("pid", pf.pid))
	if out, err := c.pgCtl(ctx, "stop", "-m", "fast", "-t", c.timeoutSeconds()); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("stop postgres (pid %d): %w", pf.pid, ctx.Err())
		}
		c.log.Warn("fast shutdown too slow; immediate shutdown", slog.Int("pid", pf.pid), slog.String("pg_ctl", lastLine(out)))
		if out, err := c.pgCtl(ctx, "stop", "-m", "immediate", "-t", "10"); err != nil && processAlive(pf.pid) {
			return fmt.Errorf("stop postgres (pid %d): %w: %s", pf.pid, err, lastLine(out))
		}
	}
	// pg_ctl returns once the pid file is gone; the postmaster may take a moment longer to exit.
	for processAlive(pf.pid) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("stop postgres (pid %d): %w", pf.pid, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if pf.socketDir != "" && pf.socketDir != c.dir {
		os.Remove(pf.socketDir) // the fallback directory under /tmp, empty once the server is gone
	}
	c.log.Info("postgres stopped", slog.Int("pid", pf.pid))
	return nil
}

// pidFile is the part of postmaster.pid we use.
type pidFile struct {
	pid       int
	dataDir   string
	socketDir string
	status    string // starting, stopping, ready, standby
}

func (c *Cluster) readPIDFile() (pidFile, bool) {
	b, err := os.ReadFile(filepath.Join(c.pgdata(), "postmaster.pid"))
	if err != nil {
		return pidFile{}, false
	}
	lines := strings.Split(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || pid <= 0 {
		return pidFile{pid: 0}, true // unreadable: treat as stale
	}
	pf := pidFile{pid: pid}
	at := func(i int) string {
		if i < len(lines) {
			return strings.TrimSpace(lines[i])
		}
		return ""
	}
	pf.dataDir, pf.socketDir, pf.status = at(1), at(4), at(7)
	return pf, true
}

// logTail returns the last meaningful line of the server log written since offset.
func (c *Cluster) logTail(offset int64) string {
	f, err := os.Open(c.logPath())
	if err != nil {
		return "no log"
	}
	defer f.Close()
	f.Seek(offset, 0)
	var last, fatal string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" {
			continue
		}
		last = l
		if strings.Contains(l, "FATAL") {
			fatal = l
		}
	}
	if fatal != "" {
		return fatal
	}
	if last == "" {
		return "empty log"
	}
	return last
}

// processAlive reports whether pid is a live (not zombie) PostgreSQL process.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// "pid (comm) S ...": comm may hold spaces, so split at the last ')'.
	s := string(stat)
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < open || close+2 >= len(s) {
		return false
	}
	comm, state := s[open+1:close], s[close+2]
	if state == 'Z' || state == 'X' {
		return false
	}
	// A pid recycled by an unrelated process after a reboot is not our server.
	return comm == "postgres" || comm == "postmaster"
}

// servesOurData tells our postmaster from an unrelated process that got its pid after a reboot: a
// postmaster's working directory is its data directory. When /proc does not say, assume it is ours.
func (c *Cluster) servesOurData(pid int) bool {
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return true
	}
	want, err := filepath.EvalSymlinks(c.pgdata())
	if err != nil {
		want = c.pgdata()
	}
	return cwd == want
}

// socketDirFor puts the socket in the cluster root when the socket's path fits in sun_path, and
// otherwise in a short per-cluster directory under /tmp named after a hash of the root.
func socketDirFor(root string) string {
	if len(root)+1+len(socketFileName) <= maxSocketPath {
		return root
	}
	h := sha256.Sum256([]byte(root))
	return filepath.Join(os.TempDir(), "audit-pg-"+hex.EncodeToString(h[:6]))
}

func socketURL(socketDir, database string) string {
	q := url.Values{}
	q.Set("host", socketDir)
	q.Set("port", strconv.Itoa(clusterPort))
	u := url.URL{Scheme: "postgres", User: url.User(clusterSuper), Path: "/" + database, RawQuery: q.Encode()}
	return u.String()
}

// quoteSettingList quotes one directory for a list-valued setting such as unix_socket_directories.
func quoteSettingList(dir string) string {
	if !strings.ContainsAny(dir, ", \t\"") {
		return dir
	}
	return `"` + strings.ReplaceAll(dir, `"`, `""`) + `"`
}

// FindBinDir locates the PostgreSQL server binaries: `pg_config --bindir` when it has initdb and
// postgres, else the newest Debian-style /usr/lib/postgresql/<version>/bin.
func FindBinDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); hasServerBinaries(dir) {
			return dir, nil
		}
	}
	const debian = "/usr/lib/postgresql"
	entries, _ := os.ReadDir(debian)
	best, bestV := "", -1.0
	for _, e := range entries {
		v, err := strconv.ParseFloat(e.Name(), 64) // 15, 9.6
		dir := filepath.Join(debian, e.Name(), "bin")
		if err == nil && v > bestV && hasServerBinaries(dir) {
			best, bestV = dir, v
		}
	}
	if best == "" {
		return "", fmt.Errorf("%w: neither `pg_config --bindir` nor %s/<version>/bin has initdb and postgres; install PostgreSQL (Debian: apt-get install postgresql) or set DATABASE_URL", ErrNoPostgres, debian)
	}
	return best, nil
}

func hasServerBinaries(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

func openLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	return f, nil
}

// flockWait takes a flock, polling so that ctx can cancel the wait.
func flockWait(ctx context.Context, f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
