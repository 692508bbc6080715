package pgcluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/pgcluster"
	"github.com/voicebench/humanaudit/internal/store/storetest"
)

// processUID returns the real uid of pid.
func processUID(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "Uid:" {
			uid, _ := strconv.Atoi(f[1])
			return uid
		}
	}
	t.Fatalf("no Uid line for %d", pid)
	return -1
}

func TestClusterReusedAcrossRunsAndStoppedByLastUser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
	ctx := context.Background()
	// A root long enough that the socket cannot live in it (sun_path holds 107 bytes).
	dir := filepath.Join(storetest.ClusterDir(t), strings.Repeat("long-directory-name-", 5), "pg")
	storetest.StopOnCleanup(t, dir)

	// An earlier run starts the cluster and exits without stopping it.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperStartEnv+"="+dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper run: %v: %s", err, out)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || !storetest.Alive(pid) {
		t.Fatalf("helper printed %q; want the pid of a running postmaster", out)
	}

	a, err := pgcluster.Start(ctx, pgcluster.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if a.StartedHere() || a.PID() != pid {
		t.Fatalf("StartCluster: started here %v, pid %d; want to reuse pid %d", a.StartedHere(), a.PID(), pid)
	}
	if len(filepath.Join(dir, ".s.PGSQL.5432")) <= 107 {
		t.Fatal("test setup: cluster root too short to exercise the socket fallback")
	}
	if !strings.HasPrefix(a.SocketDir(), os.TempDir()) || len(filepath.Join(a.SocketDir(), ".s.PGSQL.5432")) > 107 {
		t.Errorf("socket dir %s: want a short directory under %s", a.SocketDir(), os.TempDir())
	}
	if os.Geteuid() == 0 {
		pg, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal(err)
		}
		if uid := processUID(t, pid); strconv.Itoa(uid) != pg.Uid {
			t.Errorf("postmaster runs as uid %d; want the postgres user (%s)", uid, pg.Uid)
		}
		fi, _ := os.Stat(filepath.Join(dir, "data"))
		if st := fi.Sys().(*syscall.Stat_t); strconv.Itoa(int(st.Uid)) != pg.Uid {
			t.Errorf("data directory owned by uid %d; want postgres", st.Uid)
		}
	}
	b, err := pgcluster.Start(ctx, pgcluster.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if b.PID() != pid {
		t.Fatalf("second user got pid %d, want %d", b.PID(), pid)
	}
	db, err := store.Open(ctx, store.Config{URL: b.URL("postgres")})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	db.Close()

	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !storetest.Alive(pid) {
		t.Fatal("first Close stopped the server while another user still holds it")
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	storetest.WaitDead(t, pid)
	if _, err := os.Stat(a.SocketDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket directory %s left behind after stop (%v)", a.SocketDir(), err)
	}
	st, err := pgcluster.Inspect(pgcluster.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if st.Running || !st.Initialized {
		t.Fatalf("after the last Close: %+v; want initialized and stopped", st)
	}

	// Held (audit db start): the last Close leaves it running until StopCluster.
	c, err := pgcluster.Start(ctx, pgcluster.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !c.StartedHere() {
		t.Fatal("StartCluster on a stopped cluster did not start it")
	}
	if err := c.Hold(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !storetest.Alive(c.PID()) {
		t.Fatal("a held cluster was stopped by Close")
	}
	if err := pgcluster.Stop(ctx, pgcluster.Config{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	storetest.WaitDead(t, c.PID())
}

func TestClusterPermissionProblemIsOneLineNamingTheDirectory(t *testing.T) {
	ctx := context.Background()
	t.Run("unreachable parent", func(t *testing.T) {
		var blocked, dir string
		if os.Geteuid() == 0 {
			// t.TempDir's top directory is 0700 and root's: the postgres user cannot pass it.
			base := t.TempDir()
			dir = filepath.Join(base, "audit_data", "pg")
			for p := base; p != "/"; p = filepath.Dir(p) {
				if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o001 == 0 {
					blocked = p
				}
			}
		} else {
			blocked = filepath.Join(t.TempDir(), "locked")
			os.Mkdir(blocked, 0o000)
			t.Cleanup(func() { os.Chmod(blocked, 0o700) })
			dir = filepath.Join(blocked, "audit_data", "pg")
		}
		_, err := pgcluster.Start(ctx, pgcluster.Config{Dir: dir})
		if !errors.Is(err, pgcluster.ErrPermission) {
			t.Fatalf("StartCluster = %v; want ErrPermission", err)
		}
		msg := err.Error()
		t.Log(msg)
		if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "store: ") || !strings.Contains(msg, "cannot reach "+blocked+" (owned by ") ||
			!strings.Contains(msg, "mode 0") {
			t.Errorf("message %q: want one line naming %s, its owner and mode", msg, blocked)
		}
	})
	t.Run("cluster directory owned by another user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to make a directory owned by another user")
		}
		dir := filepath.Join(storetest.ClusterDir(t), "pg")
		os.Mkdir(dir, 0o700)
		os.WriteFile(filepath.Join(dir, "something"), nil, 0o600)
		_, err := pgcluster.Start(ctx, pgcluster.Config{Dir: dir})
		if !errors.Is(err, pgcluster.ErrPermission) {
			t.Fatalf("StartCluster = %v; want ErrPermission", err)
		}
		want := "store: postgres user cannot write " + dir + " (owned by root, mode 0700): "
		if msg := err.Error(); !strings.HasPrefix(msg, want) || strings.Contains(msg, "\n") {
			t.Errorf("message %q: want one line starting %q", msg, want)
		}
	})
}

func TestFindBinDir(t *testing.T) {
	dir, err := pgcluster.FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"initdb", "postgres"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err = pgcluster.Start(context.Background(), pgcluster.Config{Dir: filepath.Join(storetest.ClusterDir(t), "pg"), BinDir: t.TempDir()})
	if !errors.Is(err, pgcluster.ErrNoPostgres) {
		t.Fatalf("StartCluster with an empty bin dir = %v; want ErrNoPostgres", err)
	}
}

// After a crash the postmaster.pid stays behind, and after a reboot its pid may belong to another
// process called postgres: status does not call that running, stop leaves it alone, and start
// runs a new server.
func TestStalePIDOfAnotherProcessIsNotTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
	ctx := context.Background()
	dir := filepath.Join(storetest.ClusterDir(t), "pg")
	storetest.StopOnCleanup(t, dir)
	c, err := pgcluster.Start(ctx, pgcluster.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	pid := c.PID()
	if got := sessionOf(t, pid); got != pid {
		t.Errorf("postmaster %d is in session %d; want a session of its own (pg_ctl start detaches it)", pid, got)
	}
	if st, err := pgcluster.Inspect(pgcluster.Config{Dir: dir}); err != nil || !st.Running || st.PID != pid {
		t.Fatalf("Inspect of the running cluster = %+v, %v; want running with pid %d", st, err, pid)
	}
	storetest.Crash(t, pid)
	c.Close(ctx)
	if st, err := pgcluster.Inspect(pgcluster.Config{Dir: dir}); err != nil || st.Running {
		t.Fatalf("Inspect after the crash = %+v, %v; want stopped", st, err)
	}
	pidPath := filepath.Join(dir, "data", "postmaster.pid")
	stale, err := os.ReadFile(pidPath)
	if err != nil {
		t.Fatalf("want the crash to leave a stale postmaster.pid: %v", err)
	}
	decoy := storetest.StartDecoy(t)
	_, rest, _ := strings.Cut(string(stale), "\n")
	if err := os.WriteFile(pidPath, []byte(strconv.Itoa(decoy)+"\n"+rest), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, err := pgcluster.Inspect(pgcluster.Config{Dir: dir}); err != nil || st.Running {
		t.Errorf("Inspect with the decoy's pid = %+v, %v; want stopped", st, err)
	}
	if err := pgcluster.Stop(ctx, pgcluster.Config{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if !storetest.Alive(decoy) {
		t.Fatal("Stop signalled an unrelated process that had the stale pid")
	}
	again, err := pgcluster.Start(ctx, pgcluster.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !again.StartedHere() || again.PID() == decoy {
		t.Fatalf("Start after the crash: started here %v, pid %d; want a new server", again.StartedHere(), again.PID())
	}
	if err := again.Close(ctx); err != nil {
		t.Fatal(err)
	}
	storetest.WaitDead(t, again.PID())
}

// sessionOf returns the session id of pid (field 6 of /proc/PID/stat).
func sessionOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	sid, _ := strconv.Atoi(f[3]) // state ppid pgrp session
	return sid
}
