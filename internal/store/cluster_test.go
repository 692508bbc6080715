package store_test

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
	"time"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/storetest"
	"github.com/voicebench/humanaudit/internal/trace"
)

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}

func waitDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

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

func stopOnCleanup(t *testing.T, dir string) {
	t.Cleanup(func() { store.StopCluster(context.Background(), store.ClusterConfig{Dir: dir}) })
}

func TestClusterReusedAcrossRunsAndStoppedByLastUser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
	ctx := context.Background()
	// A root long enough that the socket cannot live in it (sun_path holds 107 bytes).
	dir := filepath.Join(storetest.ClusterDir(t), strings.Repeat("long-directory-name-", 5), "pg")
	stopOnCleanup(t, dir)

	// An earlier run starts the cluster and exits without stopping it.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperStartEnv+"="+dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper run: %v: %s", err, out)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || !alive(pid) {
		t.Fatalf("helper printed %q; want the pid of a running postmaster", out)
	}

	a, err := store.StartCluster(ctx, store.ClusterConfig{Dir: dir})
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
	b, err := store.StartCluster(ctx, store.ClusterConfig{Dir: dir})
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
	if !alive(pid) {
		t.Fatal("first Close stopped the server while another user still holds it")
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	waitDead(t, pid)
	if _, err := os.Stat(a.SocketDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket directory %s left behind after stop (%v)", a.SocketDir(), err)
	}
	st, err := store.InspectCluster(store.ClusterConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if st.Running || !st.Initialized {
		t.Fatalf("after the last Close: %+v; want initialized and stopped", st)
	}

	// Held (audit db start): the last Close leaves it running until StopCluster.
	c, err := store.StartCluster(ctx, store.ClusterConfig{Dir: dir})
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
	if !alive(c.PID()) {
		t.Fatal("a held cluster was stopped by Close")
	}
	if err := store.StopCluster(ctx, store.ClusterConfig{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	waitDead(t, c.PID())
}

func TestEventsSurviveServerCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
	ctx := context.Background()
	data := storetest.ClusterDir(t)
	stopOnCleanup(t, filepath.Join(data, "pg"))
	db, err := store.Open(ctx, store.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	if got := db.Cluster().SocketDir(); got != filepath.Join(data, "pg") {
		t.Errorf("socket dir %s; want the cluster root when the path is short", got)
	}
	if _, err := db.UpsertSystem(ctx, audit.System{Label: "ref"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.PutTask(ctx, "t1", 1, []byte(`{"id":"t1"}`)); err != nil {
		t.Fatal(err)
	}
	s, err := db.CreateSession(ctx, audit.NewSession{TaskID: "t1", TaskVersion: 1, System: "ref", Mode: audit.ModeSynthetic})
	if err != nil {
		t.Fatal(err)
	}
	log := trace.NewLog(nil, db.EventSink(s.ID))
	for i := range 50 {
		if _, err := log.Append(ctx, trace.Event{T: int64(i * 40), Wall: time.Now(), Type: trace.CallerUtterance, Text: fmt.Sprintf("turn %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	acked := log.Events() // every one of these was acknowledged, so it must survive

	// Crash: kill the postmaster and every backend at once, no shutdown.
	pid := db.Cluster().PID()
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitDead(t, pid)
	if _, err := log.Append(ctx, trace.Event{Type: trace.SessionEnd}); err == nil {
		t.Fatal("an event was acknowledged while the server was down")
	}
	db.Close()
	pidPath := filepath.Join(data, "pg", "data", "postmaster.pid")
	stale, err := os.ReadFile(pidPath)
	if err != nil {
		t.Fatalf("want the crash to leave a stale postmaster.pid: %v", err)
	}
	// As after a reboot, the stale pid now belongs to an unrelated process called postgres.
	decoy := startDecoy(t)
	_, rest, _ := strings.Cut(string(stale), "\n")
	if err := os.WriteFile(pidPath, []byte(strconv.Itoa(decoy)+"\n"+rest), 0o600); err != nil {
		t.Fatal(err)
	}

	db2, err := store.Open(ctx, store.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	if !db2.Cluster().StartedHere() || db2.Cluster().PID() == pid || db2.Cluster().PID() == decoy {
		t.Fatal("reopen after the crash did not start a new server")
	}
	got, err := db2.Events(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(acked) {
		t.Fatalf("after the crash %d events; want the %d acknowledged", len(got), len(acked))
	}
	for i := range got {
		a, _ := trace.MarshalEvent(acked[i])
		b, _ := trace.MarshalEvent(got[i])
		if string(a) != string(b) {
			t.Fatalf("event %d: got %s, want %s", i+1, b, a)
		}
	}
	pid2 := db2.Cluster().PID()
	if err := db2.Close(); err != nil {
		t.Fatal(err)
	}
	waitDead(t, pid2)
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
		_, err := store.StartCluster(ctx, store.ClusterConfig{Dir: dir})
		if !errors.Is(err, store.ErrPermission) {
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
		_, err := store.StartCluster(ctx, store.ClusterConfig{Dir: dir})
		if !errors.Is(err, store.ErrPermission) {
			t.Fatalf("StartCluster = %v; want ErrPermission", err)
		}
		want := "store: postgres user cannot write " + dir + " (owned by root, mode 0700): "
		if msg := err.Error(); !strings.HasPrefix(msg, want) || strings.Contains(msg, "\n") {
			t.Errorf("message %q: want one line starting %q", msg, want)
		}
	})
}

func TestFindBinDir(t *testing.T) {
	dir, err := store.FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"initdb", "postgres"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err = store.StartCluster(context.Background(), store.ClusterConfig{Dir: filepath.Join(storetest.ClusterDir(t), "pg"), BinDir: t.TempDir()})
	if !errors.Is(err, store.ErrNoPostgres) {
		t.Fatalf("StartCluster with an empty bin dir = %v; want ErrNoPostgres", err)
	}
}

// startDecoy runs a process whose name is postgres but that is no postmaster (a copy of sleep).
func startDecoy(t *testing.T) int {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary for the decoy")
	}
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(storetest.ClusterDir(t), "postgres")
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
