package console_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/systems"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/condition"
	"github.com/voicebench/humanaudit/internal/console"
	"github.com/voicebench/humanaudit/internal/media"
	"github.com/voicebench/humanaudit/internal/media/libopus"
	"github.com/voicebench/humanaudit/internal/session"
	"github.com/voicebench/humanaudit/internal/task"
)

// TestHumanSessionRunsItsPlannedCondition: a participant's call runs under the condition its cell
// was planned with, recorded in the trace and the session, with the seed every system of the
// task shares; a noise the console has no beds for refuses the call before anything is stored.
func TestHumanSessionRunsItsPlannedCondition(t *testing.T) {
	ctx := context.Background()
	k := newKit(t, "phone_line")
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{})
	sys, _ := systems.Parse("systems.json", []byte(`{"systems":[{"label":"sys-a","family":"reference"}]}`))
	svc, err := console.New(ctx, console.Config{NewEncoder: media.Encoders(libopus.NewEncoder), Store: k.db, Tasks: []*task.Task{k.task}, Systems: sys, DataDir: k.data, ReferenceURL: fake.URL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	a, err := k.db.ClaimNext(ctx, k.p.ID)
	if err != nil {
		t.Fatal(err)
	}
	live, err := svc.StartHuman(ctx, k.p, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := live.Session.Events()[0]
	wantSeed := strconv.FormatInt(condition.SeedFor(k.task.ID, 1), 10)
	if start.Meta["condition"] != "phone_line" || start.Meta["condition_seed"] != wantSeed || start.Meta["condition_delay_samples"] != strconv.Itoa(condition.PhoneDelay) {
		t.Fatalf("session.start meta %v", start.Meta)
	}
	live.Session.Stop(session.EndCancelled, "")
	<-live.Ended()
	if rec, err := k.db.Session(ctx, live.ID); err != nil || rec.Condition != "phone_line" {
		t.Fatalf("stored condition %q %v", rec.Condition, err)
	}

	// A second participant's cell under a noise, on a console without noise beds.
	k2 := newKit(t, "babble@5")
	svc2, err := console.New(ctx, console.Config{NewEncoder: media.Encoders(libopus.NewEncoder), Store: k2.db, Tasks: []*task.Task{k2.task}, Systems: sys, DataDir: k2.data, ReferenceURL: fake.URL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc2.Close() })
	a2, _ := k2.db.ClaimNext(ctx, k2.p.ID)
	if _, err := svc2.StartHuman(ctx, k2.p, a2, nil); err == nil || !strings.Contains(err.Error(), "no noise beds") {
		t.Fatalf("start without beds: %v", err)
	}
	if ss, _ := k2.db.ListSessions(ctx, audit.SessionFilter{StudyID: "s1"}); len(ss) != 0 {
		t.Fatalf("a refused call left %d sessions", len(ss))
	}
}
