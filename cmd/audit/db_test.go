package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/pgcluster"
	"github.com/voicebench/humanaudit/internal/store/storetest"
)

func TestDBCommandsManageThePrivateCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
	t.Setenv("DATABASE_URL", "")
	ctx := context.Background()
	data := filepath.Join(storetest.ClusterDir(t), "audit_data")
	t.Cleanup(func() { pgcluster.Stop(context.Background(), pgcluster.Config{Dir: filepath.Join(data, "pg")}) })
	audit := func(args ...string) (string, string, error) {
		var out, errb bytes.Buffer
		err := run(ctx, args, &out, &errb)
		return out.String(), errb.String(), err
	}

	out, stderr, err := audit("db", "status", "--data", data)
	var ee exitError
	if !errors.As(err, &ee) || ee.code != 3 || !strings.Contains(out, "state:    stopped") {
		t.Fatalf("status before start: %v\n%s%s", err, out, stderr)
	}
	if _, _, err := audit("db", "url", "--data", data); err == nil || !strings.Contains(err.Error(), "audit db start") {
		t.Fatalf("url of a stopped cluster: %v; want a hint to start it", err)
	}

	out, stderr, err = audit("db", "start", "--data", data)
	if err != nil {
		t.Fatalf("db start: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "postgres running (pid ") || !strings.Contains(out, "url: postgres://postgres@/audit?host=") {
		t.Fatalf("db start printed %q", out)
	}
	// Held: still running after the start command's own Close.
	out, _, err = audit("db", "status", "--data", data)
	if err != nil || !strings.Contains(out, "state:    running") || !strings.Contains(out, "held:     yes") {
		t.Fatalf("status after start: %v\n%s", err, out)
	}
	url, _, err := audit("db", "url", "--data", data)
	if err != nil || !strings.HasPrefix(url, "postgres://postgres@/audit?") {
		t.Fatalf("db url = %q, %v", url, err)
	}
	// The console (here: store.Open on the same data dir) joins the held cluster and leaves it up.
	db, err := store.Open(ctx, store.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	if db.Cluster().StartedHere() || db.URL() != strings.TrimSpace(url) {
		t.Fatalf("console started its own server or another URL: %s vs %s", db.URL(), url)
	}
	db.Close()

	out, stderr, err = audit("db", "psql", "--data", data, "--", "-tAc", "SELECT count(*) FROM schema_migrations")
	if err != nil || strings.TrimSpace(out) == "" || strings.TrimSpace(out) == "0" {
		t.Fatalf("psql: %v %q %s", err, out, stderr)
	}

	out, _, err = audit("db", "stop", "--data", data)
	if err != nil || !strings.Contains(out, "postgres stopped") {
		t.Fatalf("db stop: %v %q", err, out)
	}
	if _, err := os.Stat(filepath.Join(data, "pg", "hold")); !os.IsNotExist(err) {
		t.Error("db stop left the hold marker")
	}
	out, _, err = audit("db", "stop", "--data", data)
	if err != nil || !strings.Contains(out, "not running") {
		t.Fatalf("second db stop: %v %q", err, out)
	}

	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/x")
	if _, _, err := audit("db", "start", "--data", data); err == nil || !strings.Contains(err.Error(), "DATABASE_URL is set") {
		t.Fatalf("db start with DATABASE_URL: %v", err)
	}
	if out, _, err := audit("db", "url"); err != nil || strings.TrimSpace(out) != "postgres://nobody@127.0.0.1:1/x" {
		t.Fatalf("db url with DATABASE_URL: %q %v", out, err)
	}
}
