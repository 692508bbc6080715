package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/audit"
)

func TestParticipantTokenLookupReturnsOnlyThatParticipant(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, []string{"alpha"}, []string{"task01", "task02"})
	p1, p2 := f.participant(t), f.participant(t)
	for _, p := range []audit.Participant{p1, p2} {
		raw, err := base64.RawURLEncoding.DecodeString(p.Token)
		if err != nil || len(raw)*8 < 128 {
			t.Fatalf("token %q carries %d bits; want ≥ 128 random bits", p.Token, len(raw)*8)
		}
	}
	if p1.Token == p2.Token {
		t.Fatal("two participants share a token")
	}
	got, err := f.db.ParticipantByToken(ctx, p1.Token)
	if err != nil || got.ID != p1.ID || got.Token != p1.Token {
		t.Fatalf("ParticipantByToken(p1) = %+v, %v", got, err)
	}
	for _, probe := range []string{
		"", p1.Token[:len(p1.Token)-1], p1.Token + "x", strings.ToUpper(p1.Token), strings.ToLower(p1.Token),
		p1.Token[:10] + "%", "%", p1.Token[:len(p1.Token)-1] + "_", " " + p1.Token, p1.Token + "' OR '1'='1",
	} {
		if probe == p1.Token || probe == p2.Token {
			continue
		}
		if got, err := f.db.ParticipantByToken(ctx, probe); err == nil {
			t.Errorf("ParticipantByToken(%q) returned participant %d", probe, got.ID)
		} else {
			wantErr(t, err, audit.ErrNotFound)
		}
	}

	// Sessions: a participant reaches only their own.
	if _, err := f.db.AddPlan(ctx, f.study, []audit.PlanRow{
		{Slot: "P01", Position: 1, Task: "task01", System: "alpha", Repeat: 1},
		{Slot: "P02", Position: 1, Task: "task02", System: "alpha", Repeat: 1},
	}); err != nil {
		t.Fatal(err)
	}
	a1, _ := f.db.ClaimNext(ctx, p1.ID)
	a2, _ := f.db.ClaimNext(ctx, p2.ID)
	s1, s2 := f.session(t, a1), f.session(t, a2)
	if s, err := f.db.ParticipantSession(ctx, p1.ID, s1.ID); err != nil || s.ID != s1.ID {
		t.Fatalf("own session: %+v, %v", s, err)
	}
	_, err = f.db.ParticipantSession(ctx, p1.ID, s2.ID)
	wantErr(t, err, audit.ErrNotFound)
	// Nor can one participant start a session on another's assignment.
	_, err = f.db.CreateSession(ctx, audit.NewSession{AssignmentID: a2.ID, ParticipantID: p1.ID, TaskVersion: 1})
	wantErr(t, err, audit.ErrConflict)
	as, _ := f.db.ParticipantAssignments(ctx, p1.ID)
	if len(as) != 1 || as[0].ID != a1.ID {
		t.Fatalf("p1's assignments: %+v", as)
	}

	// Expiry follows the injected clock.
	p3, err := f.db.CreateParticipant(ctx, audit.NewParticipant{StudyID: f.study, ExpiresAt: f.clock.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.ParticipantByToken(ctx, p3.Token); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Hour)
	_, err = f.db.ParticipantByToken(ctx, p3.Token)
	wantErr(t, err, audit.ErrExpired)
}

func TestParticipantRecordsConsentMicCheckAndPlatformIDs(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil, nil)
	p, err := f.db.CreateParticipant(ctx, audit.NewParticipant{StudyID: f.study, External: audit.ExternalIDs{ProlificPID: "5f1a", StudyID: "st-1"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.db.RecordConsent(ctx, p.ID, "I agree.")
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256([]byte("I agree.")); c.TextSHA256 != hex.EncodeToString(sum[:]) || !c.At.Equal(f.clock.Now()) {
		t.Fatalf("consent hash %q", c.TextSHA256)
	}
	f.clock.Advance(time.Minute)
	again, err := f.db.RecordConsent(ctx, p.ID, "I agree.")
	if err != nil || !again.At.Equal(c.At) {
		t.Fatalf("repeated consent: %+v, %v; want the first record kept", again, err)
	}
	_, err = f.db.RecordConsent(ctx, p.ID, "Something else.")
	wantErr(t, err, audit.ErrConflict)

	mc := audit.MicCheck{EchoCancellation: true, NoiseSuppression: true, AutoGainControl: false, Device: "USB mic", Level: 0.42,
		PlaybackOK: true, Details: json.RawMessage(`{"sampleRate":48000}`)}
	if err := f.db.RecordMicCheck(ctx, p.ID, mc); err != nil {
		t.Fatal(err)
	}
	if err := f.db.SetExternalIDs(ctx, p.ID, audit.ExternalIDs{SessionID: "sess-9"}); err != nil {
		t.Fatal(err)
	}
	got, err := f.db.ParticipantByToken(ctx, p.Token)
	if err != nil {
		t.Fatal(err)
	}
	if got.Consent == nil || !got.Consent.At.Equal(c.At) || got.Consent.TextSHA256 != c.TextSHA256 {
		t.Errorf("consent read back %+v", got.Consent)
	}
	if m := got.MicCheck; m == nil || !m.EchoCancellation || !m.NoiseSuppression || m.AutoGainControl || m.Device != "USB mic" ||
		m.Level != 0.42 || !m.At.Equal(f.clock.Now()) || !strings.Contains(string(m.Details), "48000") {
		t.Errorf("mic check read back %+v", got.MicCheck)
	}
	if got.External != (audit.ExternalIDs{ProlificPID: "5f1a", StudyID: "st-1", SessionID: "sess-9"}) {
		t.Errorf("external ids %+v", got.External)
	}
	if byPID, err := f.db.ParticipantByProlificPID(ctx, f.study, "5f1a"); err != nil || byPID.ID != p.ID {
		t.Errorf("ParticipantByProlificPID = %+v, %v", byPID, err)
	}
	_, err = f.db.CreateParticipant(ctx, audit.NewParticipant{StudyID: f.study, External: audit.ExternalIDs{ProlificPID: "5f1a"}})
	wantErr(t, err, audit.ErrConflict)
	_, err = f.db.CreateParticipant(ctx, audit.NewParticipant{StudyID: "nope"})
	wantErr(t, err, audit.ErrNotFound)
	if ps, err := f.db.Participants(ctx, f.study); err != nil || len(ps) != 1 {
		t.Errorf("Participants = %d, %v", len(ps), err)
	}
}
