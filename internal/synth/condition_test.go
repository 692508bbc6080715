package synth

import (
	"context"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/systems"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/condition"
	"github.com/voicebench/humanaudit/internal/session"
	"github.com/voicebench/humanaudit/internal/store/storetest"
	"github.com/voicebench/humanaudit/internal/task"
)

type toneSpeaker struct{}

func (toneSpeaker) Speak(_ context.Context, voice, text string) ([]int16, error) {
	pcm := make([]int16, len(text)*condition.Rate/15)
	for i := range pcm {
		pcm[i] = int16(5000 * math.Sin(2*math.Pi*float64(180+len(voice)*20)*float64(i)/condition.Rate))
	}
	return pcm, nil
}

// TestRunUnderConditions: a run under a listening condition records it (session, trace, clean
// recording), resumes only its own condition's calls, and leaves another condition's calls of the
// same pairs alone.
func TestRunUnderConditions(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time calls; skipped with -short")
	}
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed (scripts/deps.sh installs it)")
	}
	db := storetest.New(t)
	ctx := context.Background()
	var replies []agenttest.Reply
	for range 10 {
		replies = append(replies, agenttest.Reply{Text: "Thanks for calling. Goodbye!", AudioMS: 600})
	}
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: replies})
	sys := systems.System{Label: "fake-ga", Family: systems.FamilyOpenAI, Endpoint: fake.URL(), Model: "gpt-realtime", Voice: "marin"}
	tasks := loadTasks(t, "it-vpn-incident")
	data, out := t.TempDir(), t.TempDir()
	// A bed made offline (here from tones) and stored: the library reads it, building nothing.
	r, _ := condition.DefaultRecipe(condition.BackgroundTV)
	bed, err := condition.Build(ctx, r, toneSpeaker{}, "tones")
	if err != nil {
		t.Fatal(err)
	}
	lib := &condition.Library{Dir: filepath.Join(data, "conditions")}
	if err := condition.Save(lib.Dir, bed); err != nil {
		t.Fatal(err)
	}
	flite := &Flite{}
	run := func(cond string) Summary {
		spec := condition.MustParse(cond)
		sum, err := Run(ctx, Config{Store: db, System: sys, Tasks: tasks, Seeds: 1, Out: out, DataDir: data,
			Voice: func(tk *task.Task, seed int64) session.CallerVoice {
				return &BankVoice{Task: tk, Seed: seed, Dir: filepath.Join(data, "bank"), Render: flite}
			},
			TimeLimit: 45 * time.Second, Progress: io.Discard, Condition: &spec, Conditions: lib})
		if err != nil {
			t.Fatalf("%s: %v", cond, err)
		}
		return sum
	}
	if s := run("quiet"); s.Ran != 1 || s.Failed != 0 {
		t.Fatalf("quiet: %+v", s)
	}
	s := run("background_tv@10")
	if s.Ran != 1 || s.Skipped != 0 || s.Failed != 0 {
		t.Fatalf("background_tv: %+v (the quiet call must not count for another condition)", s)
	}
	tv := s.Outcomes[0].Session
	if s := run("background_tv@10"); s.Ran != 0 || s.Skipped != 1 {
		t.Fatalf("background_tv again: %+v", s)
	}
	if !strings.Contains(tv, "background_tv-10") {
		t.Errorf("session id %s does not name the condition", tv)
	}
	ss, err := db.ListSessions(ctx, audit.SessionFilter{Mode: audit.ModeSynthetic, System: "fake-ga"})
	conds := map[string]string{}
	for _, s := range ss {
		conds[s.ID] = s.Condition
	}
	if err != nil || len(conds) != 2 || conds[tv] != "background_tv@10" {
		t.Fatalf("stored conditions %v %v", conds, err)
	}
	events, err := db.Events(ctx, tv)
	if err != nil {
		t.Fatal(err)
	}
	if m := events[0].Meta; m["condition"] != "background_tv@10" || m["condition_bed_sha256"] != bed.SHA256 ||
		m["condition_seed"] == "" || m["condition_level_db"] != "10" {
		t.Errorf("session.start meta %v", m)
	}
	if _, err := os.Stat(filepath.Join(data, "recordings", tv+".clean.wav")); err != nil {
		t.Errorf("no clean caller recording: %v", err)
	}
	recs, err := db.Recordings(ctx, tv)
	if err != nil || len(recs) != 2 {
		t.Errorf("recordings %+v %v, want the stereo and the clean caller", recs, err)
	}
	// The export of the last run lists only its condition's session.
	b, _ := os.ReadFile(filepath.Join(out, "runs.csv"))
	if strings.Count(string(b), "\n") != 2 || !strings.Contains(string(b), tv) {
		t.Errorf("runs.csv:\n%s", b)
	}
}
