package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

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
	wantErr(t, err, store.ErrConflict)
	_, err = f.db.CreateExperimenter(ctx, "bob", "short")
	wantErr(t, err, store.ErrInvalid)
	if got, err := f.db.CheckExperimenterPassword(ctx, "ana", "correct horse battery"); err != nil || got.ID != e.ID {
		t.Fatalf("right password: %+v, %v", got, err)
	}
	for _, try := range [][2]string{{"ana", "correct horse batterY"}, {"ana", ""}, {"nobody", "correct horse battery"}} {
		_, err := f.db.CheckExperimenterPassword(ctx, try[0], try[1])
		wantErr(t, err, store.ErrUnauthorized)
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

	tok, err := f.db.IssueExperimenterToken(ctx, e.ID, "laptop", time.Hour)
	if err != nil || !strings.HasPrefix(tok, "ex_") {
		t.Fatalf("token %q, %v", tok, err)
	}
	if n, _ := store.QueryInt(f.db, `SELECT count(*) FROM experimenter_tokens WHERE strpos(encode(token_sha256, 'escape'), $1) > 0`, tok); n != 0 {
		t.Fatal("the token is stored in the clear")
	}
	if got, err := f.db.ExperimenterByToken(ctx, tok); err != nil || got.Name != "ana" {
		t.Fatalf("ExperimenterByToken = %+v, %v", got, err)
	}
	_, err = f.db.ExperimenterByToken(ctx, tok+"x")
	wantErr(t, err, store.ErrUnauthorized)
	f.clock.Advance(time.Hour)
	_, err = f.db.ExperimenterByToken(ctx, tok)
	wantErr(t, err, store.ErrExpired)

	forever, _ := f.db.IssueExperimenterToken(ctx, e.ID, "ci", 0)
	if _, err := f.db.ExperimenterByToken(ctx, forever); err != nil {
		t.Fatal(err)
	}
	if err := f.db.RevokeExperimenterToken(ctx, forever); err != nil {
		t.Fatal(err)
	}
	_, err = f.db.ExperimenterByToken(ctx, forever)
	wantErr(t, err, store.ErrExpired)
}
