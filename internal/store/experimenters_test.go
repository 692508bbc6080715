package store_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/store"
)

func TestExperimenterPasswordsAndTokens(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil, nil)
	e, err := f.db.CreateExperimenter(ctx, "ana", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.db.CreateExperimenter(ctx, "ana", "another long password")
	wantErr(t, err, audit.ErrConflict)
	_, err = f.db.CreateExperimenter(ctx, "bob", "short")
	wantErr(t, err, audit.ErrInvalid)
	if got, err := f.db.CheckExperimenterPassword(ctx, "ana", "correct horse battery"); err != nil || got.ID != e.ID {
		t.Fatalf("right password: %+v, %v", got, err)
	}
	for _, try := range [][2]string{{"ana", "correct horse batterY"}, {"ana", ""}, {"nobody", "correct horse battery"}} {
		_, err := f.db.CheckExperimenterPassword(ctx, try[0], try[1])
		wantErr(t, err, audit.ErrUnauthorized)
	}
	n, err := store.QueryInt(f.db, `SELECT count(*) FROM experimenters WHERE password_hash LIKE '$argon2id$%' AND strpos(password_hash, 'horse') = 0`)
	if err != nil || n != 1 {
		t.Fatalf("stored password hash: %d rows look right (%v)", n, err)
	}
	if err := f.db.SetExperimenterPassword(ctx, "ana", "a new passphrase"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.CheckExperimenterPassword(ctx, "ana", "correct horse battery"); err == nil {
		t.Fatal("old password still works")
	}

	// A sign-in link works once, within its lifetime, and is stored as a digest only.
	link, err := f.db.IssueSignInLink(ctx, e.ID, "cli link", 0)
	if err != nil || !strings.HasPrefix(link, "xl_") {
		t.Fatalf("link %q, %v", link, err)
	}
	if n, _ := store.QueryInt(f.db, `SELECT count(*) FROM experimenter_tokens WHERE strpos(encode(token_sha256, 'escape'), $1) > 0`, link); n != 0 {
		t.Fatal("the link token is stored in the clear")
	}
	_, err = f.db.ConsumeSignInLink(ctx, link+"x")
	wantErr(t, err, audit.ErrUnauthorized)
	if got, err := f.db.ConsumeSignInLink(ctx, link); err != nil || got.Name != "ana" {
		t.Fatalf("first use: %+v, %v", got, err)
	}
	_, err = f.db.ConsumeSignInLink(ctx, link)
	wantErr(t, err, audit.ErrExpired)
	late, _ := f.db.IssueSignInLink(ctx, e.ID, "cli link", 0)
	f.clock.Advance(audit.DefaultSignInLinkTTL)
	_, err = f.db.ConsumeSignInLink(ctx, late)
	wantErr(t, err, audit.ErrExpired)

	// Concurrent uses of one link: exactly one succeeds.
	race, _ := f.db.IssueSignInLink(ctx, e.ID, "race", time.Minute)
	var wg sync.WaitGroup
	var wins atomic.Int32
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.db.ConsumeSignInLink(ctx, race); err == nil {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Errorf("%d concurrent uses of one link succeeded, want 1", wins.Load())
	}
}

func TestExperimenterSessions(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil, nil)
	e, err := f.db.CreateExperimenter(ctx, "ana", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	lim := audit.SessionLimits{Idle: 30 * time.Minute, Absolute: 2 * time.Hour}
	tok, err := f.db.CreateExperimenterSession(ctx, e.ID, "password", lim)
	if err != nil || !strings.HasPrefix(tok, "xs_") {
		t.Fatalf("session %q, %v", tok, err)
	}
	if n, _ := store.QueryInt(f.db, `SELECT count(*) FROM experimenter_sessions WHERE strpos(encode(id_sha256, 'escape'), $1) > 0`, tok); n != 0 {
		t.Fatal("the session id is stored in the clear")
	}
	s, err := f.db.ExperimenterBySession(ctx, tok)
	if err != nil || s.Experimenter.Name != "ana" || s.Via != "password" {
		t.Fatalf("session: %+v, %v", s, err)
	}
	_, err = f.db.ExperimenterBySession(ctx, tok+"x")
	wantErr(t, err, audit.ErrUnauthorized)

	t.Run("requests keep it alive until the absolute expiry", func(t *testing.T) {
		for range 7 { // 7 × 20 min = 140 min > 2 h
			f.clock.Advance(20 * time.Minute)
			_, err := f.db.ExperimenterBySession(ctx, tok)
			if f.clock.Now().Before(s.CreatedAt.Add(lim.Absolute)) && err != nil {
				t.Fatalf("at %v: %v", f.clock.Now().Sub(s.CreatedAt), err)
			}
			if !f.clock.Now().Before(s.CreatedAt.Add(lim.Absolute)) {
				wantErr(t, err, audit.ErrExpired)
			}
		}
	})
	t.Run("idle", func(t *testing.T) {
		idle, _ := f.db.CreateExperimenterSession(ctx, e.ID, "link", lim)
		f.clock.Advance(29 * time.Minute)
		if _, err := f.db.ExperimenterBySession(ctx, idle); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(30 * time.Minute)
		_, err := f.db.ExperimenterBySession(ctx, idle)
		wantErr(t, err, audit.ErrExpired)
	})
	t.Run("logout revokes", func(t *testing.T) {
		out, _ := f.db.CreateExperimenterSession(ctx, e.ID, "password", lim)
		if err := f.db.RevokeExperimenterSession(ctx, out); err != nil {
			t.Fatal(err)
		}
		_, err := f.db.ExperimenterBySession(ctx, out)
		wantErr(t, err, audit.ErrExpired)
	})
}
