// Package storetest gives tests a fresh, migrated PostgreSQL database each, on a real server.
//
// With DATABASE_URL set, databases are created on that server (its role needs CREATEDB).
// Otherwise every test process of the machine's user shares one managed cluster under
// /tmp/audit-pgtest-<uid>/pg (the same mechanism as the console's), started by the first process
// that needs it and reused while it runs; `go test ./...` starts it once, not once per package.
//
// Stopping: a package's TestMain should call storetest.Main(m). When the tests end, Main leaves the
// cluster, and the last process to leave stops it (fast shutdown). A test binary that is killed,
// or a package without Main, leaves the cluster running; the next test run reuses it and stops it
// when it ends, and `audit db stop --data /tmp/audit-pgtest-<uid>` stops it by hand. Test
// databases are named t_<unix time>_<random>; ones older than six hours (left by killed runs) are
// dropped when a process first sets up.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/pgcluster"
)

// server is where test databases are created.
type server struct {
	cluster  *pgcluster.Cluster // nil with DATABASE_URL
	adminURL string
}

var (
	mu       sync.Mutex
	shared   *server
	setupErr error
)

// SharedDir is the data directory of the shared test cluster (the cluster is its pg subdirectory).
func SharedDir() string {
	return filepath.Join(os.TempDir(), "audit-pgtest-"+strconv.Itoa(os.Getuid()))
}

func setup(ctx context.Context) (*server, error) {
	mu.Lock()
	defer mu.Unlock()
	if shared != nil || setupErr != nil {
		return shared, setupErr
	}
	srv := &server{adminURL: os.Getenv("DATABASE_URL")}
	if srv.adminURL == "" {
		c, err := pgcluster.Start(ctx, pgcluster.Config{Dir: filepath.Join(SharedDir(), "pg")})
		if err != nil {
			setupErr = fmt.Errorf("storetest: start the shared test cluster: %w", err)
			return nil, setupErr
		}
		srv.cluster, srv.adminURL = c, c.URL("postgres")
	}
	dropStale(ctx, srv.adminURL)
	shared = srv
	return shared, nil
}

// dropStale drops test databases left by killed runs.
func dropStale(ctx context.Context, adminURL string) {
	names, err := store.Databases(ctx, adminURL, "t_")
	if err != nil {
		return
	}
	cutoff := time.Now().Add(-6 * time.Hour).Unix()
	for _, n := range names {
		parts := strings.SplitN(n, "_", 3)
		if len(parts) != 3 {
			continue
		}
		if ts, err := strconv.ParseInt(parts[1], 10, 64); err == nil && ts < cutoff {
			store.DropDatabase(ctx, adminURL, n)
		}
	}
}

// Main runs the tests, then leaves the shared cluster (stopping it when no other process uses
// it), then, when the tests passed, runs each check (a goroutine-leak check, say), and exits with
// the tests' status or 1 when a check fails. Call it from TestMain.
func Main(m *testing.M, checks ...func() error) {
	code := m.Run()
	errs := []error{Release()}
	if code == 0 {
		for _, check := range checks {
			errs = append(errs, check())
		}
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// Release leaves the shared cluster now; Main calls it.
func Release() error {
	mu.Lock()
	defer mu.Unlock()
	if shared == nil || shared.cluster == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := shared.cluster.Close(ctx)
	shared, setupErr = nil, nil
	if err != nil {
		return fmt.Errorf("storetest: stop the shared test cluster: %w", err)
	}
	return nil
}

// NewURL creates an empty database for this test and returns its connection URL; the database is
// dropped when the test ends. Use it to Open the store yourself (to test migrations, reconnects).
func NewURL(tb testing.TB) string {
	tb.Helper()
	ctx := context.Background()
	srv, err := setup(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	b := make([]byte, 5)
	rand.Read(b)
	name := fmt.Sprintf("t_%d_%s", time.Now().Unix(), hex.EncodeToString(b))
	if err := store.CreateDatabase(ctx, srv.adminURL, name); err != nil {
		tb.Fatalf("storetest: %v", err)
	}
	tb.Cleanup(func() {
		if err := store.DropDatabase(context.Background(), srv.adminURL, name); err != nil {
			tb.Errorf("storetest: %v", err)
		}
	})
	u, err := store.DatabaseURL(srv.adminURL, name)
	if err != nil {
		tb.Fatalf("storetest: %v", err)
	}
	return u
}

// New returns a store on a fresh, migrated database of its own, closed and dropped when the test
// ends.
func New(tb testing.TB) *store.DB {
	tb.Helper()
	return NewWithConfig(tb, store.Config{})
}

// NewWithConfig is New with settings (a clock, a logger); the URL is set to the test's database.
func NewWithConfig(tb testing.TB, cfg store.Config) *store.DB {
	tb.Helper()
	cfg.URL = NewURL(tb)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	db, err := store.Open(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("storetest: open: %v", err)
	}
	tb.Cleanup(func() { db.Close() }) // registered after the drop, so it runs before it
	return db
}

// ClusterDir returns a new directory for a private cluster that the postgres user can reach
// (t.TempDir's parents are 0700 and root-owned, which it cannot traverse). It is removed when the
// test ends; stop the cluster first.
func ClusterDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "audit-pg-test-")
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// StopOnCleanup stops the private cluster in dir when the test ends. Call it after ClusterDir, so
// that the cluster stops before its directory is removed.
func StopOnCleanup(tb testing.TB, dir string) {
	tb.Cleanup(func() { pgcluster.Stop(context.Background(), pgcluster.Config{Dir: dir}) })
}

// Alive reports whether pid runs and is not a zombie.
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// Crash kills a running cluster as a power loss would: its postmaster and every process it
// started (backends, checkpointer, WAL writer), at once, with no shutdown; it returns when all are
// dead. Killing the postmaster's process group is not that: PostgreSQL puts each child in a session
// of its own, and a backend that has not yet noticed the postmaster's death still serves the next
// query (under load, an INSERT was committed and acknowledged after the postmaster was gone).
func Crash(tb testing.TB, postmaster int) {
	tb.Helper()
	// Stopped, the postmaster starts no new child while its children are killed.
	if err := syscall.Kill(postmaster, syscall.SIGSTOP); err != nil {
		tb.Fatal(err)
	}
	children := childrenOf(postmaster)
	for _, c := range children {
		syscall.Kill(c, syscall.SIGKILL)
	}
	if err := syscall.Kill(postmaster, syscall.SIGKILL); err != nil {
		tb.Fatal(err)
	}
	for _, pid := range append(children, postmaster) {
		WaitDead(tb, pid)
	}
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		// After the command: state, then the parent's pid.
		if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, c)
		}
	}
	return out
}

// WaitDead waits for pid to end (up to 30 s, then the test fails).
func WaitDead(tb testing.TB, pid int) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for Alive(pid) {
		if time.Now().After(deadline) {
			tb.Fatalf("process %d still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// StartDecoy runs a process whose name is postgres but that is no postmaster (a copy of sleep), as
// an unrelated process may take over a crashed server's pid after a reboot; it is killed when the
// test ends.
func StartDecoy(t testing.TB) int {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary for the decoy")
	}
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(ClusterDir(t), "postgres")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}
