package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/store/storetest"
)

func TestStudiesSystemsAndTasks(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	s, err := db.CreateStudy(ctx, audit.Study{ID: "pilot-1", Name: "Pilot", Seed: 9, Config: json.RawMessage(`{"consent":"I agree.","completion_code":"C0DE"}`)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.CreateStudy(ctx, audit.Study{ID: "pilot-1"})
	wantErr(t, err, audit.ErrConflict)
	_, err = db.CreateStudy(ctx, audit.Study{ID: "Pilot 1"})
	wantErr(t, err, audit.ErrInvalid)
	_, err = db.CreateStudy(ctx, audit.Study{ID: "p2", Config: json.RawMessage(`[1]`)})
	wantErr(t, err, audit.ErrInvalid)
	got, err := db.Study(ctx, "pilot-1")
	if err != nil || got.Seed != 9 || !strings.Contains(string(got.Config), "C0DE") || !got.CreatedAt.Equal(s.CreatedAt) {
		t.Fatalf("Study = %+v, %v", got, err)
	}
	_, err = db.Study(ctx, "nope")
	wantErr(t, err, audit.ErrNotFound)
	if err := db.SetStudyConfig(ctx, "pilot-1", json.RawMessage(`{"consent":"v2"}`)); err != nil {
		t.Fatal(err)
	}
	if ss, _ := db.Studies(ctx); len(ss) != 1 || !strings.Contains(string(ss[0].Config), "v2") {
		t.Fatalf("Studies = %+v", ss)
	}

	// Aliases are assigned in order and kept on update.
	for _, label := range []string{"gpt-realtime", "gemini-live", "ref"} {
		if _, err := db.UpsertSystem(ctx, audit.System{Label: label, Family: "x", Config: json.RawMessage(`{"model":"m","voice":"alloy"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	up, err := db.UpsertSystem(ctx, audit.System{Label: "gemini-live", Family: "gemini", Config: json.RawMessage(`{"model":"m2"}`)})
	if err != nil || up.Alias != "Agent B" || up.Family != "gemini" {
		t.Fatalf("update kept alias %q family %q (%v); want Agent B", up.Alias, up.Family, err)
	}
	systems, _ := db.Systems(ctx)
	var aliases []string
	for _, s := range systems {
		aliases = append(aliases, s.Alias+"="+s.Label)
	}
	if strings.Join(aliases, " ") != "Agent A=gpt-realtime Agent B=gemini-live Agent C=ref" {
		t.Fatalf("aliases %v", aliases)
	}
	if s, err := db.SystemByAlias(ctx, "Agent C"); err != nil || s.Label != "ref" {
		t.Fatalf("SystemByAlias = %+v, %v", s, err)
	}
	_, err = db.UpsertSystem(ctx, audit.System{Label: "x", Alias: "Agent A"})
	wantErr(t, err, audit.ErrConflict)
	for _, cfg := range []string{`{"api_key":"abc"}`, `{"auth":{"Authorization":"Bearer x"}}`, `{"headers":[{"x":"sk-proj-0123456789abcdefghij"}]}`, `{"openaiApiKey":"k"}`} {
		_, err := db.UpsertSystem(ctx, audit.System{Label: "leaky", Config: json.RawMessage(cfg)})
		wantErr(t, err, audit.ErrInvalid)
		if !strings.Contains(err.Error(), "secrets.txt") {
			t.Errorf("config %s refused with %q; want it to point at secrets.txt", cfg, err)
		}
	}

	// Task versions are immutable.
	spec := []byte(`{"id": "t1", "version": 2, "gold": {"b": 1, "a": 2}}`)
	t1, err := db.PutTask(ctx, "t1", 2, spec)
	if err != nil {
		t.Fatal(err)
	}
	again, err := db.PutTask(ctx, "t1", 2, spec)
	if err != nil || again.SHA256 != t1.SHA256 {
		t.Fatalf("re-storing identical spec: %+v, %v", again, err)
	}
	_, err = db.PutTask(ctx, "t1", 2, []byte(`{"id": "t1", "version": 2}`))
	wantErr(t, err, audit.ErrConflict)
	db.PutTask(ctx, "t1", 1, []byte(`{"id":"t1","version":1}`))
	latest, err := db.LatestTask(ctx, "t1")
	if err != nil || latest.Version != 2 || string(latest.Spec) != string(spec) {
		t.Fatalf("LatestTask = %s v%d, %v; want the spec bytes unchanged", latest.Spec, latest.Version, err)
	}
	_, err = db.PutTask(ctx, "t2", 1, []byte(`{not json`))
	wantErr(t, err, audit.ErrInvalid)
	if ts, _ := db.Tasks(ctx); len(ts) != 1 || ts[0].Version != 2 {
		t.Fatalf("Tasks = %+v", ts)
	}
}

func TestSessionsScoresRecordingsAndListing(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, []string{"alpha", "beta"}, []string{"task01", "task02"})
	if _, err := f.db.AddPlan(ctx, f.study, []audit.PlanRow{
		{Slot: "P01", Position: 1, Task: "task01", System: "alpha", Repeat: 1},
		{Slot: "P01", Position: 2, Task: "task02", System: "beta", Repeat: 2},
	}); err != nil {
		t.Fatal(err)
	}
	p, _ := f.db.CreateParticipant(ctx, audit.NewParticipant{StudyID: f.study, External: audit.ExternalIDs{ProlificPID: "pp1"}})
	a, _ := f.db.ClaimNext(ctx, p.ID)
	s, err := f.db.CreateSession(ctx, audit.NewSession{AssignmentID: a.ID, TaskVersion: 1, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if s.ParticipantID != p.ID || s.StudyID != f.study || s.TaskID != "task01" || s.System != "alpha" || s.Mode != audit.ModeHuman {
		t.Fatalf("session filled from its assignment: %+v", s)
	}
	_, err = f.db.CreateSession(ctx, audit.NewSession{AssignmentID: a.ID, TaskVersion: 1})
	wantErr(t, err, audit.ErrConflict) // the assignment has its session
	_, err = f.db.CreateSession(ctx, audit.NewSession{TaskID: "task01", TaskVersion: 7, System: "alpha", Mode: audit.ModeSynthetic})
	wantErr(t, err, audit.ErrNotFound) // unknown task version
	_, err = f.db.CreateSession(ctx, audit.NewSession{TaskID: "task01", TaskVersion: 1, System: "alpha"})
	wantErr(t, err, audit.ErrInvalid) // a human session needs a participant

	f.clock.Advance(1e9)
	if err := f.db.StartSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(90e9)
	if err := f.db.EndSession(ctx, s.ID, "hangup"); err != nil {
		t.Fatal(err)
	}
	if err := f.db.EndSession(ctx, s.ID, "time_limit"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, f.db.StartSession(ctx, s.ID), audit.ErrConflict)
	if err := f.db.SaveRecording(ctx, audit.Recording{SessionID: s.ID, Path: "audit_data/rec/" + s.ID + ".wav", SampleRate: 48000, Channels: 2, DurationMS: 90000, Bytes: 17280044}); err != nil {
		t.Fatal(err)
	}
	afa, ttr := 0.75, int64(61000)
	grade := json.RawMessage(`{"ws":false,"gates":{"ts":true,"pv":false},"fields":[{"name":"b","ok":true},{"name":"a","ok":false}]}`)
	if err := f.db.SaveScore(ctx, audit.Score{SessionID: s.ID, GraderVersion: "g1", Grade: grade, TS: true, AC: true, AV: true, AFA: &afa, TTRMS: &ttr}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(1e9)
	if err := f.db.SaveScore(ctx, audit.Score{SessionID: s.ID, GraderVersion: "g2", Grade: json.RawMessage(`{"ws":true}`), WS: true, TS: true, PV: true, AC: true, AV: true}); err != nil {
		t.Fatal(err)
	}
	syn, err := f.db.CreateSession(ctx, audit.NewSession{TaskID: "task02", TaskVersion: 1, System: "beta", Mode: audit.ModeSynthetic, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}

	got, err := f.db.Session(ctx, s.ID)
	if err != nil || got.Status != audit.SessionEnded || got.EndReason != "hangup" || got.RecordingPath == "" ||
		!got.EndedAt.Equal(f.clock.Now().Add(-1e9)) || got.StartedAt.IsZero() {
		t.Fatalf("Session = %+v, %v", got, err)
	}
	list, err := f.db.ListSessions(ctx, audit.SessionFilter{StudyID: f.study})
	if err != nil || len(list) != 1 {
		t.Fatalf("study sessions: %d, %v", len(list), err)
	}
	row := list[0]
	if row.Alias != "Agent A" || row.Repeat != 1 || row.Slot != "P01" || row.Position != 1 || row.ProlificPID != "pp1" ||
		row.Score == nil || row.Score.GraderVersion != "g2" || !row.Score.WS {
		t.Fatalf("listed %+v score %+v; want the latest grade (g2)", row, row.Score)
	}
	old, _ := f.db.ListSessions(ctx, audit.SessionFilter{StudyID: f.study, GraderVersion: "g1"})
	if sc := old[0].Score; sc == nil || sc.WS || *sc.AFA != 0.75 || *sc.TTRMS != 61000 || string(sc.Grade) != string(grade) {
		t.Fatalf("g1 score %+v; want the grade document byte for byte", sc)
	}
	synth, _ := f.db.ListSessions(ctx, audit.SessionFilter{Mode: audit.ModeSynthetic, System: "beta"})
	if len(synth) != 1 || synth[0].ID != syn.ID || synth[0].Score != nil || synth[0].StudyID != "" {
		t.Fatalf("synthetic sessions %+v", synth)
	}
	if scores, _ := f.db.Scores(ctx, s.ID); len(scores) != 2 || scores[0].GraderVersion != "g2" {
		t.Fatalf("Scores = %+v", scores)
	}
	if recs, _ := f.db.Recordings(ctx, s.ID); len(recs) != 1 || recs[0].Channels != 2 || recs[0].Kind != audit.RecordingStereo {
		t.Fatalf("Recordings = %+v", recs)
	}
	if _, err := f.db.ExcludeSession(ctx, audit.Exclusion{SessionID: s.ID, Reason: audit.ReasonGraderError, By: "ana", Note: "judge cache miss"}); err != nil {
		t.Fatal(err)
	}
	if ex, _ := f.db.Exclusions(ctx, f.study); len(ex) != 1 || ex[0].By != "ana" || ex[0].Reason != audit.ReasonGraderError {
		t.Fatalf("Exclusions = %+v", ex)
	}
	if l, _ := f.db.ListSessions(ctx, audit.SessionFilter{StudyID: f.study}); l[0].Exclusion == nil {
		t.Fatal("listing lost the exclusion")
	}
}
