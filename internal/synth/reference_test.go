package synth

import (
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/systems"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/refagent"
	"github.com/voicebench/humanaudit/internal/report"
	"github.com/voicebench/humanaudit/internal/session"
	"github.com/voicebench/humanaudit/internal/store/storetest"
	"github.com/voicebench/humanaudit/internal/task"
)

// TestRunAgainstReferenceAgent is the synthetic track end to end with no stand-ins: the frozen
// caller (Flite) calls the offline reference agent (PocketSphinx, slot-filling policy, Flite)
// through the session pipeline, the call is stored and graded, and a synthetic-only study report is
// built from the database.
func TestRunAgainstReferenceAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("a real-time call of a minute or two; skipped with -short")
	}
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed")
	}
	ref, err := refagent.New(refagent.Config{})
	if err != nil {
		t.Skipf("reference agent unavailable: %v", err)
	}
	t.Cleanup(func() { ref.Close() })
	if err := ref.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	go ref.Serve()
	db := storetest.New(t)
	ctx := context.Background()
	flite := &Flite{}
	sum, err := Run(ctx, Config{Store: db, System: systems.System{Label: "reference", Family: systems.FamilyReference},
		Endpoint: ref.URL(), Tasks: loadTasks(t, "it-vpn-incident"), Seeds: 1, Out: t.TempDir(), DataDir: t.TempDir(),
		Voice: func(tk *task.Task, seed int64) session.CallerVoice {
			return &BankVoice{Task: tk, Seed: seed, Render: flite}
		},
		TimeLimit: 6 * time.Minute, Progress: io.Discard}) // the caller refuses wrong read-backs, so repairs take turns
	if err != nil {
		t.Fatal(err)
	}
	if sum.Ran != 1 || len(sum.Outcomes) != 1 {
		t.Fatalf("summary %+v", sum)
	}
	o := sum.Outcomes[0]
	if o.Grade == nil || o.Exclusion != "" || o.Reason != session.EndCallerHungUp {
		t.Fatalf("call: reason %s exclusion %q grade %+v", o.Reason, o.Exclusion, o.Grade)
	}
	t.Logf("reference agent on it-vpn-incident: WS=%d AFA=%.2f (%d/%d) in %s; violations %v, missing %v",
		o.Grade.WS, o.Grade.AFA.Value, o.Grade.AFA.Correct, o.Grade.AFA.Total, o.Elapsed, o.Grade.Violations, o.Grade.MissingActions)
	// The agent's tool calls reached the workspace through the pipeline: it recorded fields (how
	// well it heard them is the reference agent's own business, tested in its package).
	recorded := 0
	for _, f := range o.Grade.Fields {
		if string(f.Pred) != "null" && len(f.Pred) > 0 {
			recorded++
		}
	}
	if recorded == 0 {
		t.Errorf("the reference agent recorded no field: %+v", o.Grade.Fields)
	}
	// Invariant: the trace the console wrote verifies; its workspace events are what a replay of
	// the agent's tool calls and the caller's authorization acts produces.
	events, err := db.Events(ctx, o.Session)
	if err != nil {
		t.Fatal(err)
	}
	if err := grade.New(loadTasks(t, "it-vpn-incident")[0], grade.Options{}).Check(events, grade.CheckOptions{}); err != nil {
		t.Errorf("console trace of %s does not verify: %v", o.Session, err)
	}

	if _, err := db.CreateStudy(ctx, audit.Study{ID: "synthetic-only", Name: "synthetic only", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	in, err := report.Load(ctx, db, "synthetic-only")
	if err != nil {
		t.Fatal(err)
	}
	r, err := report.Build(in, report.Options{Seed: 1, Resamples: 500})
	if err != nil {
		t.Fatal(err)
	}
	syn := r.Systems[0].Synthetic
	if r.Systems[0].System.Label != "reference" || syn.Sessions != 1 || syn.WS.Successes != o.Grade.WS || syn.Latency.Responses == 0 {
		t.Errorf("report of the synthetic session: %+v", syn)
	}
	files, err := report.Render(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(files[0].Data), "### reference") {
		t.Errorf("report.md lacks the reference system")
	}
	t.Logf("median response latency %v ms over %d responses", syn.Latency.MedianMS, syn.Latency.Responses)
}
