package console_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/systems"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/audit/audittest"
	"github.com/voicebench/humanaudit/internal/console"
	"github.com/voicebench/humanaudit/internal/media"
	"github.com/voicebench/humanaudit/internal/media/libopus"
	"github.com/voicebench/humanaudit/internal/secrets"
	"github.com/voicebench/humanaudit/internal/session"
	"github.com/voicebench/humanaudit/internal/study"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// The compile-time check that the console runs on the in-memory store as on PostgreSQL.
var _ console.Store = (*audittest.Store)(nil)

// liveKit is a console on the in-memory store whose systems file names sys-a at endpoint, with a
// study whose one participant runs it-vpn-incident on sys-a.
type liveKit struct {
	db   *audittest.Store
	svc  *console.Service
	data string
	p    audit.Participant
}

func newLiveKit(t *testing.T, endpoint string) *liveKit {
	t.Helper()
	ctx := context.Background()
	tk, err := task.LoadFile(filepath.Join("..", "grade", "testdata", "tasks", "it-vpn-incident.json"))
	if err != nil {
		t.Fatal(err)
	}
	db := audittest.New()
	k := &liveKit{db: db, data: t.TempDir()}
	k.svc = k.console(t, tk, `{"systems":[{"label":"sys-a","family":"reference","endpoint":"`+endpoint+`"}]}`)
	if _, err := db.CreateStudy(ctx, audit.Study{ID: "s1", Name: "S1", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AddPlan(ctx, "s1", []audit.PlanRow{{Slot: "P1", Position: 1, Task: tk.ID, System: "sys-a", Repeat: 1}}); err != nil {
		t.Fatal(err)
	}
	if k.p, err = db.CreateParticipant(ctx, audit.NewParticipant{StudyID: "s1"}); err != nil {
		t.Fatal(err)
	}
	return k
}

// console starts a console on the kit's store and data directory (closed when the test ends).
func (k *liveKit) console(t *testing.T, tk *task.Task, systemsJSON string) *console.Service {
	t.Helper()
	sys, err := systems.Parse("systems.json", []byte(systemsJSON))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := console.New(context.Background(), console.Config{NewEncoder: media.Encoders(libopus.NewEncoder), Store: k.db, Tasks: []*task.Task{tk}, Systems: sys, DataDir: k.data,
		TimeLimit: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

func (k *liveKit) next(t *testing.T) audit.Assignment {
	t.Helper()
	a, err := study.NextAssignment(context.Background(), k.db, k.p.ID)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func endOf(t *testing.T, l *console.Live) console.Outcome {
	t.Helper()
	select {
	case <-l.Ended():
	case <-time.After(60 * time.Second):
		t.Fatal("the session was not stored within a minute of its end")
	}
	return l.Outcome()
}

// A participant's call runs against the assigned agent while it is live and, once hung up, is
// stored whole: ended with its reason, its trace from session.start to session.end, its stereo
// recording, its grade, and its assignment done.
func TestHumanSessionIsStoredWhenItEnds(t *testing.T) {
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: []agenttest.Reply{
		{Text: "Hello, this is the service desk. How can I help?", AudioMS: 600}}})
	k := newLiveKit(t, fake.URL())
	ctx := context.Background()
	a := k.next(t)
	l, err := k.svc.StartHuman(ctx, k.p, a, map[string]string{"participant": "pp-1"})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := k.svc.Live(l.ID); !ok || got != l || len(k.svc.LiveSessions()) != 1 {
		t.Fatalf("the started call is not live: %v, %d live", ok, len(k.svc.LiveSessions()))
	}
	if l.Alias != "Agent A" || l.ParticipantID != k.p.ID || l.Assignment.ID != a.ID {
		t.Errorf("live call %+v: want alias Agent A of participant %d, assignment %d", l, k.p.ID, a.ID)
	}
	running, _ := k.db.Session(ctx, l.ID)
	if running.Status != audit.SessionRunning || running.ConsoleID != k.svc.ID() || running.Mode != audit.ModeHuman || running.Attempt != 1 {
		t.Errorf("running session record %+v", running)
	}

	l.Session.HangUp()
	out := endOf(t, l)
	if out.Stored != nil || out.Reason != session.EndCallerHungUp || out.Exclusion != "" {
		t.Fatalf("outcome %+v: want stored, %s, not excluded", out, session.EndCallerHungUp)
	}
	if _, ok := k.svc.Live(l.ID); ok {
		t.Error("the ended call is still listed as live")
	}
	s, err := k.db.Session(ctx, l.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != audit.SessionEnded || s.EndReason != session.EndCallerHungUp || s.Exclusion != nil {
		t.Errorf("stored session %+v", s)
	}
	if fi, err := os.Stat(s.RecordingPath); err != nil || fi.Size() <= 44 {
		t.Errorf("recording %q: %v", s.RecordingPath, err)
	}
	events, _ := k.db.Events(ctx, l.ID)
	if len(events) < 2 || events[0].Type != trace.SessionStart || events[len(events)-1].Type != trace.SessionEnd ||
		events[0].Meta["participant"] != "pp-1" {
		t.Fatalf("trace of %d events does not run from session.start (with the call's meta) to session.end", len(events))
	}
	if scores, _ := k.db.Scores(ctx, l.ID); len(scores) != 1 || scores[0].GraderVersion == "" {
		t.Errorf("scores %+v: want the session's grade", scores)
	}
	if done, _ := k.db.Assignment(ctx, a.ID); done.Status != audit.StatusDone || done.SessionID != l.ID {
		t.Errorf("assignment %+v: want done by %s", done, l.ID)
	}
	// The journal beside the recording holds the same acknowledged events.
	journal, torn, err := trace.ReadFileTolerant(filepath.Join(k.data, "traces", l.ID+".jsonl"))
	if err != nil || torn != nil || len(journal) != len(events) {
		t.Errorf("journal: %d events (torn %v, %v), the store has %d", len(journal), torn, err, len(events))
	}
}

// An agent that cannot be reached is recorded as such — a platform_lost exclusion whose cell goes
// back to the pool — never as a silent failure of the agent.
func TestUnreachableAgentIsAnExclusion(t *testing.T) {
	k := newLiveKit(t, "ws://127.0.0.1:1/v1/realtime")
	ctx := context.Background()
	a := k.next(t)
	_, err := k.svc.StartHuman(ctx, k.p, a, nil)
	if !errors.Is(err, console.ErrAgentUnavailable) {
		t.Fatalf("StartHuman = %v; want ErrAgentUnavailable", err)
	}
	sessions, _ := k.db.ListSessions(ctx, audit.SessionFilter{StudyID: "s1"})
	if len(sessions) != 1 {
		t.Fatalf("%d sessions stored; want the one that could not start", len(sessions))
	}
	s := sessions[0]
	if s.Status != audit.SessionEnded || s.EndReason != session.EndPlatformLost || s.Exclusion == nil ||
		s.Exclusion.Reason != audit.ReasonPlatformLost || !strings.Contains(s.Exclusion.Note, "agent could not be reached") {
		t.Fatalf("stored session %+v, exclusion %+v", s.Session, s.Exclusion)
	}
	as, _ := k.db.Assignments(ctx, "s1")
	if len(as) != 2 || as[0].Status != audit.StatusExcluded || as[1].Replaces != a.ID || as[1].Status != audit.StatusPending || as[1].Slot != "" {
		t.Errorf("assignments %+v: want the excluded one and a fresh pool cell re-running it", as)
	}
}

// A call this console cannot run is refused before anything is stored.
func TestStartHumanRefusesWhatThisConsoleCannotRun(t *testing.T) {
	k := newLiveKit(t, "ws://127.0.0.1:1/")
	ctx := context.Background()
	a := k.next(t)
	for _, tc := range []struct {
		name   string
		change func(*audit.Assignment)
		want   error
	}{
		{"a task it has not loaded", func(a *audit.Assignment) { a.Task = "retired-task" }, console.ErrUnknownTask},
		{"a system its systems file lacks", func(a *audit.Assignment) { a.System = "sys-gone" }, console.ErrUnknownSystem},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := a
			tc.change(&b)
			if _, err := k.svc.StartHuman(ctx, k.p, b, nil); !errors.Is(err, tc.want) {
				t.Errorf("StartHuman = %v; want %v", err, tc.want)
			}
		})
	}
	if sessions, _ := k.db.ListSessions(ctx, audit.SessionFilter{}); len(sessions) != 0 {
		t.Errorf("%d sessions stored for calls that never started", len(sessions))
	}
}

// Stopping the console ends its live calls as console_shutdown: excluded (a call cut short by the
// platform cannot count) and handed back to the same participant, whose next start is attempt 2
// of the same assignment, linked to the first.
func TestCloseEndsLiveCallsForTheSameParticipantToRunAgain(t *testing.T) {
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: []agenttest.Reply{{Text: "Hello.", AudioMS: 400}}})
	k := newLiveKit(t, fake.URL())
	ctx := context.Background()
	a := k.next(t)
	l, err := k.svc.StartHuman(ctx, k.p, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.svc.Close(); err != nil {
		t.Fatal(err)
	}
	out := endOf(t, l)
	if out.Reason != console.EndConsoleShutdown || out.Exclusion != session.ExclusionPlatformLost || out.Stored != nil {
		t.Fatalf("outcome %+v: want console_shutdown, platform_lost, stored", out)
	}
	back, err := k.db.Assignment(ctx, a.ID)
	if err != nil || back.Status != audit.StatusPending || back.SessionID != "" || back.ParticipantID != k.p.ID {
		t.Fatalf("assignment after the shutdown %+v (%v): want pending again for participant %d", back, err, k.p.ID)
	}
	tk, _ := task.LoadFile(filepath.Join("..", "grade", "testdata", "tasks", "it-vpn-incident.json"))
	next := k.console(t, tk, fmt.Sprintf(`{"systems":[{"label":"sys-a","family":"reference","endpoint":%q}]}`, fake.URL()))
	again := k.next(t)
	if again.ID != a.ID {
		t.Fatalf("next assignment %d; want %d again", again.ID, a.ID)
	}
	l2, err := next.StartHuman(ctx, k.p, again, nil)
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := k.db.Session(ctx, l2.ID)
	if s2.Attempt != 2 || s2.Reruns != l.ID {
		t.Errorf("second attempt %+v: want attempt 2 re-running %s", s2, l.ID)
	}
	l2.Session.HangUp()
	endOf(t, l2)
}

// An experimenter's exclusion of a running call ends it first and is stored with the call.
func TestExcludeLiveEndsTheCallAndStoresTheExperimentersReason(t *testing.T) {
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: []agenttest.Reply{{Text: "Hello.", AudioMS: 400}}})
	k := newLiveKit(t, fake.URL())
	ctx := context.Background()
	l, err := k.svc.StartHuman(ctx, k.p, k.next(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	live, err := k.svc.ExcludeLive(ctx, audit.Exclusion{SessionID: l.ID, Reason: audit.ReasonCallerBrokeScript, Note: "read the card aloud", By: "eve"})
	if err != nil || !live {
		t.Fatalf("ExcludeLive = %v, %v; want the live call excluded", live, err)
	}
	if notLive, err := k.svc.ExcludeLive(ctx, audit.Exclusion{SessionID: "s_nobody", Reason: audit.ReasonOther}); notLive || err != nil {
		t.Errorf("ExcludeLive of a call that is not live = %v, %v; want false", notLive, err)
	}
	s, _ := k.db.Session(ctx, l.ID)
	if s.Status != audit.SessionEnded || s.EndReason != session.EndExcludedByExperimenter || s.Exclusion == nil ||
		s.Exclusion.Reason != audit.ReasonCallerBrokeScript || s.Exclusion.By != "eve" || s.Exclusion.Note != "read the card aloud" {
		t.Fatalf("session %+v, exclusion %+v", s, s.Exclusion)
	}
}

// keys is a secrets file in memory.
type keys map[string]string

func (k keys) Lookup(label string) (string, error) {
	if v, ok := k[label]; ok {
		return v, nil
	}
	return "", fmt.Errorf("%s: %w", label, secrets.ErrNotFound)
}

// The systems check says, per system, which voice it will speak with, whether its key is present
// (never the key), and whether it answers a session handshake.
func TestCheckSystems(t *testing.T) {
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{})
	f, err := systems.Parse("systems.json", []byte(`{"systems":[
		{"label":"ref-local","family":"reference"},
		{"label":"ref-remote","family":"reference","endpoint":"`+fake.URL()+`"},
		{"label":"openai-nokey","family":"openai","model":"gpt-realtime","voice":"nobody","key_label":"OPENAI_TEST_KEY","endpoint":"`+fake.URL()+`"},
		{"label":"ref-down","family":"reference","endpoint":"ws://127.0.0.1:1/"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	checks := console.CheckSystems(context.Background(), f, keys{}, console.CheckOptions{Connect: true, HandshakeTimeout: 5 * time.Second})
	by := map[string]console.SystemCheck{}
	for _, c := range checks {
		by[c.System.Label] = c
	}
	if c := by["ref-local"]; c.KeyErr != nil || c.Dial == nil || c.Dial.Skipped != "in-process reference agent" {
		t.Errorf("in-process reference agent: %+v", c)
	}
	if c := by["ref-remote"]; c.KeyErr != nil || c.Dial == nil || c.Dial.Skipped != "" || c.Dial.Err != nil || c.Dial.Handshake <= 0 {
		t.Errorf("reachable agent: %+v %+v", c, c.Dial)
	}
	if c := by["openai-nokey"]; !errors.Is(c.KeyErr, systems.ErrMissingKey) || c.Dial.Skipped != "no key" || !c.Substituted || c.Voice == "nobody" {
		t.Errorf("agent without its key, asking for a voice it does not offer: %+v %+v", c, c.Dial)
	}
	if c := by["ref-down"]; c.Dial == nil || c.Dial.Err == nil {
		t.Errorf("unreachable agent: %+v %+v", c, c.Dial)
	}
	if len(checks) != 4 || checks[0].System.Label != "ref-local" {
		t.Errorf("checks are not one per system in file order: %d", len(checks))
	}
}

// A system of the systems file is stored with what is not secret about it.
func TestSystemRecordKeepsSettingsNotKeys(t *testing.T) {
	f, err := systems.Parse("systems.json", []byte(`{"systems":[{"label":"gpt","family":"openai","model":"gpt-realtime","voice":"marin","key_label":"OPENAI_API_KEY","server_vad":true}]}`))
	if err != nil {
		t.Fatal(err)
	}
	rec := console.SystemRecord(f.Systems[0])
	if rec.Label != "gpt" || rec.Family != "openai" || rec.Alias != "" {
		t.Errorf("record %+v", rec)
	}
	if got := string(rec.Config); got != `{"endpoint":"","model":"gpt-realtime","server_vad":true,"voice":"marin"}` {
		t.Errorf("config %s", got)
	}
	if strings.Contains(string(rec.Config), "OPENAI_API_KEY") {
		t.Error("the key's label is stored with the system")
	}
}
