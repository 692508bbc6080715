package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/storetest"
	"github.com/voicebench/humanaudit/internal/trace"
)

func TestEventsSurviveServerCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
	ctx := context.Background()
	data := storetest.ClusterDir(t)
	storetest.StopOnCleanup(t, filepath.Join(data, "pg"))
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
	storetest.Crash(t, pid)
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
	decoy := storetest.StartDecoy(t)
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
	storetest.WaitDead(t, pid2)
}
