package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/storetest"
)

// Tokens at rest are digests: no participant or annotator token is in the database.
func TestLinkTokensAreStoredAsDigests(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil, nil)
	p := f.participant(t)
	a, err := f.db.CreateAnnotator(ctx, f.study)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`SELECT count(*) FROM participants WHERE strpos(encode(token_sha256, 'escape'), $1) > 0`,
		`SELECT count(*) FROM annotators WHERE strpos(encode(token_sha256, 'escape'), $1) > 0`} {
		for _, tok := range []string{p.Token, a.Token} {
			if n, err := store.QueryInt(f.db, q, tok); err != nil || n != 0 {
				t.Fatalf("%s: %d, %v", q, n, err)
			}
		}
	}
	if got, err := f.db.ParticipantByToken(ctx, p.Token); err != nil || got.ID != p.ID {
		t.Errorf("ParticipantByToken = %+v, %v", got, err)
	}
	if got, err := f.db.Participant(ctx, p.ID); err != nil || got.Token != "" {
		t.Errorf("Participant = %+v, %v: a read by id cannot know the token", got, err)
	}
	if got, err := f.db.AnnotatorByToken(ctx, a.Token); err != nil || got.ID != a.ID {
		t.Errorf("AnnotatorByToken = %+v, %v", got, err)
	}
}

// Migration 0003 turns plaintext tokens of an existing database into digests: links handed out
// before keep working, and the plaintext is gone.
func TestMigrationHashesExistingTokens(t *testing.T) {
	ctx := context.Background()
	url := storetest.NewURL(t)
	ms, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	const ptok, atok = "participant-token-from-before-0003", "annotator-token-from-before-00003"
	for _, sql := range []string{ms[0].SQL,
		`CREATE TABLE schema_migrations (version int PRIMARY KEY, name text NOT NULL, sha256 text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
		`INSERT INTO schema_migrations (version, name, sha256) VALUES (1, '` + ms[0].Name + `', '` + ms[0].SHA256 + `')`,
		`INSERT INTO studies (id, name, seed, created_at) VALUES ('old', 'Old', 1, now())`,
		`INSERT INTO participants (study_id, token, created_at) VALUES ('old', '` + ptok + `', now())`,
		`INSERT INTO annotators (study_id, token, seed_position, created_at) VALUES ('old', '` + atok + `', 0, now())`,
		`INSERT INTO experimenters (name, password_hash, created_at) VALUES ('ana', 'x', now())`,
		`INSERT INTO experimenter_tokens (token_sha256, experimenter_id, created_at) VALUES (sha256('old-link'), 1, now())`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%.60s: %v", sql, err)
		}
	}
	conn.Close(ctx)
	db, err := store.Open(ctx, store.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if p, err := db.ParticipantByToken(ctx, ptok); err != nil || p.StudyID != "old" {
		t.Errorf("participant link from before the migration: %+v, %v", p, err)
	}
	if a, err := db.AnnotatorByToken(ctx, atok); err != nil || a.StudyID != "old" {
		t.Errorf("annotator link from before the migration: %+v, %v", a, err)
	}
	if n, err := store.QueryInt(db, `SELECT count(*) FROM information_schema.columns WHERE table_name IN ('participants', 'annotators') AND column_name = 'token'`); err != nil || n != 0 {
		t.Errorf("plaintext token columns left: %d (%v)", n, err)
	}
	// The reusable experimenter tokens of before are revoked, not turned into one-time links.
	_, err = db.ConsumeSignInLink(ctx, "old-link")
	wantErr(t, err, audit.ErrExpired)
}

// Open enrollment: every enrollment takes a slot at once, at most MaxPending wait for consent, a
// recruiting id is enrolled once (a returning one gets a fresh token), and an enrollment without
// consent before its deadline gives its slot back.
func TestEnrollment(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, []string{"sys-a"}, []string{"t1"})
	var rows []audit.PlanRow
	for _, s := range names("P", 4) {
		rows = append(rows, audit.PlanRow{Slot: s, Position: 1, Task: "t1", System: "sys-a", Repeat: 1})
	}
	if _, err := f.db.AddPlan(ctx, f.study, rows); err != nil {
		t.Fatal(err)
	}
	lim := audit.EnrollLimits{ConsentTimeout: 30 * time.Minute, MaxPending: 2}
	a, err := f.db.Enroll(ctx, f.study, audit.ExternalIDs{ProlificPID: "pid-a"}, lim)
	if err != nil || a.Slot != "P01" || a.Participant.Token == "" || a.Resumed {
		t.Fatalf("first enrollment: %+v, %v", a, err)
	}
	again, err := f.db.Enroll(ctx, f.study, audit.ExternalIDs{ProlificPID: "pid-a"}, lim)
	if err != nil || !again.Resumed || again.Participant.ID != a.Participant.ID || again.Slot != "P01" || again.Participant.Token == a.Participant.Token {
		t.Fatalf("returning id: %+v, %v", again, err)
	}
	if _, err := f.db.ParticipantByToken(ctx, a.Participant.Token); err == nil {
		t.Error("the superseded token still opens the enrollment")
	}
	b, err := f.db.Enroll(ctx, f.study, audit.ExternalIDs{ProlificPID: "pid-b"}, lim)
	if err != nil || b.Slot != "P02" {
		t.Fatalf("second id: %+v, %v", b, err)
	}
	_, err = f.db.Enroll(ctx, f.study, audit.ExternalIDs{ProlificPID: "pid-c"}, lim)
	wantErr(t, err, audit.ErrEnrollmentFull)

	// Consent frees a pending place; the consented participant keeps its slot.
	if _, err := f.db.RecordConsent(ctx, b.Participant.ID, "I agree."); err != nil {
		t.Fatal(err)
	}
	c, err := f.db.Enroll(ctx, f.study, audit.ExternalIDs{ProlificPID: "pid-c"}, lim)
	if err != nil || c.Slot != "P03" {
		t.Fatalf("after a consent: %+v, %v", c, err)
	}
	if n, _ := f.db.PendingEnrollments(ctx, f.study); n != 2 {
		t.Errorf("pending = %d, want 2 (pid-a, pid-c)", n)
	}

	// Past the deadline the unconsented enrollments lapse: their links stop working, their slots
	// go back, and a new id takes the first free slot again.
	f.clock.Advance(31 * time.Minute)
	_, err = f.db.ParticipantByToken(ctx, c.Participant.Token)
	wantErr(t, err, audit.ErrExpired)
	d, err := f.db.Enroll(ctx, f.study, audit.ExternalIDs{ProlificPID: "pid-d"}, lim)
	if err != nil || d.Slot != "P01" {
		t.Fatalf("after the deadline: %+v, %v", d, err)
	}
	var free int64
	if free, err = store.QueryInt(f.db, `SELECT count(*) FROM slots WHERE participant_id IS NULL`); err != nil || free != 2 {
		t.Errorf("free slots = %d (%v), want 2 (P03 released, P04 never taken)", free, err)
	}
	if got, err := f.db.ParticipantByToken(ctx, b.Participant.Token); err != nil || got.Consent == nil {
		t.Errorf("the consented participant lost its link: %v", err)
	}
	// A lapsed id that returns is renewed with a new deadline and a slot.
	c2, err := f.db.Enroll(ctx, f.study, audit.ExternalIDs{ProlificPID: "pid-c"}, lim)
	if err != nil || !c2.Resumed || c2.Slot == "" {
		t.Fatalf("returning lapsed id: %+v, %v", c2, err)
	}
	if _, err := f.db.ParticipantByToken(ctx, c2.Participant.Token); err != nil {
		t.Errorf("renewed enrollment: %v", err)
	}
	// The plan is full now: P01 (pid-d), P02 (pid-b), P03/P04 (pid-c and one free).
	e, err := f.db.Enroll(ctx, f.study, audit.ExternalIDs{ProlificPID: "pid-e"}, audit.EnrollLimits{ConsentTimeout: time.Hour})
	if err != nil {
		t.Fatalf("last free slot: %v", err)
	}
	_, err = f.db.Enroll(ctx, f.study, audit.ExternalIDs{ProlificPID: "pid-f"}, audit.EnrollLimits{ConsentTimeout: time.Hour})
	wantErr(t, err, audit.ErrNoAssignment)
	_ = e
}

// Recruiting ids are bounded and fixed once recorded.
func TestExternalIDsAreFixed(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil, nil)
	p := f.participant(t)
	if err := f.db.SetExternalIDs(ctx, p.ID, audit.ExternalIDs{ProlificPID: "first"}); err != nil {
		t.Fatal(err)
	}
	if err := f.db.SetExternalIDs(ctx, p.ID, audit.ExternalIDs{ProlificPID: "second", SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	got, _ := f.db.Participant(ctx, p.ID)
	if got.External.ProlificPID != "first" || got.External.SessionID != "s1" {
		t.Errorf("external ids %+v", got.External)
	}
	err := f.db.SetExternalIDs(ctx, p.ID, audit.ExternalIDs{StudyID: strings.Repeat("x", 3000)})
	wantErr(t, err, audit.ErrInvalid)
}
