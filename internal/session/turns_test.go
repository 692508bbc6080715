package session

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/gemini"
	"github.com/voicebench/humanaudit/internal/agent/gptlive"
	"github.com/voicebench/humanaudit/internal/agent/openai"
	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/media"
	"github.com/voicebench/humanaudit/internal/trace"
)

// goldIncident writes every gold value of it-vpn-incident.
const goldIncident = `{"caller_name":"Priya Venkataraman","employee_id":"EMP-00417","email":"priya.v@northwind.example",` +
	`"error_code":"0x80072EE7","affected_systems":["VPN","Outlook","SharePoint","Teams"],` +
	`"steps_tried":["restarted the laptop","reinstalled the VPN client","switched to phone hotspot"],` +
	`"scope":"team","summary":"Cannot connect to the VPN from home since this morning"}`

// goldReplies is a scripted agent that records the gold values and readies the ticket in its
// first turn (a tool turn), then says goodbye.
func goldReplies() []agenttest.Reply {
	return []agenttest.Reply{
		{Text: "Thanks Priya, I have what I need.", AudioMS: 1200, Calls: []agenttest.Call{
			{Name: "record_incident", Arguments: goldIncident}, {Name: "mark_ready_for_triage", Arguments: `{}`}}},
		{Text: "Your ticket is ready for the network team. Goodbye!", AudioMS: 1500},
	}
}

func needFlite(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed (scripts/deps.sh installs it)")
	}
}

// runGold runs a synthetic it-vpn-incident call against adapter and returns its result.
func runGold(t *testing.T, adapter agent.Adapter, serverVAD bool, clock media.MediaClock, limit time.Duration, onEvent func(trace.Event)) Result {
	t.Helper()
	tk := loadTask(t, "it-vpn-incident")
	s, err := Start(context.Background(), Config{ID: "turns", Task: tk, Mode: Synthetic, Seed: 1, System: "fake",
		Adapter: adapter, ServerTurnDetection: serverVAD, Caller: &fliteVoice{t: tk}, Clock: clock,
		RecordingPath: filepath.Join(t.TempDir(), "call.wav"), TimeLimit: limit, OnEvent: onEvent})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(limit + 30*time.Second):
		t.Fatal("session did not end")
	}
	return s.Result()
}

func checkGold(t *testing.T, res Result) {
	t.Helper()
	t.Logf("reason %s; trace: %s", res.Reason, typesOf(res.Events))
	if res.Reason != EndCallerHungUp || res.Exclusion != "" {
		t.Errorf("call ended %s (exclusion %q), want %s", res.Reason, res.Exclusion, EndCallerHungUp)
	}
	if res.Grade == nil {
		t.Fatalf("not graded: %v", res.GradeErr)
	}
	if g := res.Grade; g.WS != 1 {
		t.Errorf("WS=%d (TS %d PV %d AC %d AV %d, AFA %d/%d, final %s, violations %q)", g.WS, g.TS, g.PV, g.AC, g.AV, g.AFA.Correct, g.AFA.Total, g.FinalState, g.Violations)
	}
	var ends, errs int
	for _, e := range res.Events {
		switch e.Type {
		case trace.AgentTurnEnd:
			ends++
		case trace.AgentError:
			errs++
			t.Errorf("agent error %s: %s", e.Error, e.Text)
		}
	}
	if ends < 2 {
		t.Errorf("%d agent.turn_end events, want one per agent turn (at least 2)", ends)
	}
	if defects := trace.Verify(res.Events, trace.VerifyOptions{}); len(defects) > 0 {
		t.Errorf("trace defects: %v", defects)
	}
}

// TestSyntheticCallEachToolTurnShape: the frozen caller waits on the adapter's end of the
// agent's turn, so a call whose agent writes the gold values in a tool turn reaches Workflow
// Success whatever the provider's tool-turn shape: OpenAI's second response after
// response.create (or started by the server itself once it has the outputs), Gemini continuing the same turn after the toolResponse (one turnComplete),
// Gemini closing the tool-call turn and answering in a new one, GPT-Live delegating to its
// backend model (full duplex, no turns).
func TestSyntheticCallEachToolTurnShape(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time calls; skipped with -short")
	}
	needFlite(t)
	shapes := []struct {
		name      string
		serverVAD bool
		adapter   func(t *testing.T) agent.Adapter
	}{
		{"openai follow-up response", false, func(t *testing.T) agent.Adapter {
			f := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: goldReplies()})
			return openai.New(openai.Options{URL: f.URL(), Model: "gpt-realtime", Dialect: openai.GA})
		}},
		{"openai server continues by itself", false, func(t *testing.T) agent.Adapter {
			p := agenttest.OpenAIGA
			p.AutoFollowUp = true
			f := agenttest.NewOpenAIFake(t, p, agenttest.Script{Replies: goldReplies()})
			return openai.New(openai.Options{URL: f.URL(), Model: "gpt-realtime", Dialect: openai.GA})
		}},
		{"gemini same turn continues", false, func(t *testing.T) agent.Adapter {
			f := agenttest.NewGeminiFake(t, agenttest.Script{Replies: goldReplies()})
			return gemini.New(gemini.Options{URL: f.URL(), Model: "gemini-2.5-flash-native-audio-preview-12-2025"})
		}},
		{"gemini tool-call turn then a new turn", false, func(t *testing.T) agent.Adapter {
			f := agenttest.NewGeminiFake(t, agenttest.Script{SplitToolTurns: true, Replies: goldReplies()})
			return gemini.New(gemini.Options{URL: f.URL(), Model: "gemini-2.5-flash-native-audio-preview-12-2025"})
		}},
		{"gpt-live delegation", true, func(t *testing.T) agent.Adapter {
			f := agenttest.NewGPTLiveFake(t, agenttest.Script{Replies: goldReplies()}, agenttest.GPTLiveOptions{})
			return gptlive.New(gptlive.Options{URL: f.URL(), Model: "gpt-live-1"})
		}},
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			res := runGold(t, sh.adapter(t), sh.serverVAD, nil, 60*time.Second, nil)
			checkGold(t, res)
		})
	}
}

// scaledClock is a media clock that runs speed times faster than real time, so that a long call
// takes a fraction of its media time on the wall (agents and fakes answer in wall time).
type scaledClock struct {
	start time.Time
	speed int64

	mu    sync.Mutex
	shift time.Duration
	stop  chan struct{}
	once  sync.Once
}

func newScaledClock(speed int64) *scaledClock {
	return &scaledClock{start: time.Now(), speed: speed, stop: make(chan struct{})}
}

func (c *scaledClock) Due(n int64) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.start.Add(time.Duration(n)*media.TickDuration/time.Duration(c.speed) + c.shift)
}

func (c *scaledClock) Shift(d time.Duration) {
	c.mu.Lock()
	c.shift += d
	c.mu.Unlock()
}

func (c *scaledClock) Next(n int64) (media.Tick, error) {
	due := c.Due(n)
	if err := c.WaitUntil(due); err != nil {
		return media.Tick{}, err
	}
	return media.Tick{N: n, Due: due, Start: time.Now()}, nil
}

func (c *scaledClock) WaitUntil(t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-c.stop:
		return media.ErrClosed
	}
}

func (c *scaledClock) Stop() { c.once.Do(func() { close(c.stop) }) }

var _ media.MediaClock = (*scaledClock)(nil)

// TestGeminiGoAwayAt60sResumes: Gemini ends its connections with goAway (about every ten
// minutes); at 60 s of media time the fake announces the end, the adapter moves the call to a
// session resumed from its latest handle, the trace records agent.reconnect, and the call goes
// on to Workflow Success on the new connection, on one unbroken media clock. The clock runs four
// times faster than real time.
func TestGeminiGoAwayAt60sResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("a long call; skipped with -short")
	}
	needFlite(t)
	replies := []agenttest.Reply{
		{Text: "Thanks Priya, let me take all of that down.", AudioMS: 30000,
			Calls: []agenttest.Call{{Name: "record_incident", Arguments: goldIncident}}},
		{Text: "Thank you, I am still noting it down.", AudioMS: 30000},
		{Text: "Your ticket is ready for the network team. Goodbye!", AudioMS: 1500,
			Calls: []agenttest.Call{{Name: "mark_ready_for_triage", Arguments: `{}`}}},
		{Text: "Goodbye!", AudioMS: 600},
	}
	f := agenttest.NewGeminiFake(t, agenttest.Script{Replies: replies})
	adapter := gemini.New(gemini.Options{URL: f.URL(), Model: "gemini-2.5-flash-native-audio-preview-12-2025"})
	var sent atomic.Bool
	onEvent := func(e trace.Event) {
		if e.T >= 60000 && sent.CompareAndSwap(false, true) {
			go f.GoAway(10 * time.Second)
		}
	}
	res := runGold(t, adapter, false, newScaledClock(4), 3*time.Minute, onEvent)
	checkGold(t, res)
	if !sent.Load() {
		t.Fatal("the call never reached 60 s of media time")
	}
	var reconnect *trace.Event
	var after []string
	last := int64(-1)
	for i := range res.Events {
		e := &res.Events[i]
		if e.Type == trace.AgentReconnect {
			reconnect = e
		}
		if reconnect != nil && e.Type != trace.AgentRaw {
			after = append(after, string(e.Type))
		}
		if e.Type == trace.ToolResult || e.Type == trace.ArtifactState {
			last = e.T
		}
	}
	if reconnect == nil || reconnect.T < 60000 || !strings.Contains(reconnect.Text, "goAway (10s left): resumed on connection 2") {
		t.Fatalf("agent.reconnect %+v", reconnect)
	}
	if !strings.Contains(strings.Join(after, " "), "tool.call") || last < reconnect.T {
		t.Errorf("no tool work after the reconnect: %v", after)
	}
	if setups := f.Setups(); len(setups) != 2 || len(f.Resumed()) != 1 {
		t.Errorf("%d setups, resumed %v", len(setups), f.Resumed())
	}
	// One media clock: the events after the move go on from its media time, and the recording
	// holds every tick of the call, the move included.
	for _, e := range res.Events {
		if e.Seq > reconnect.Seq && e.Type != trace.CallerSpeechStart && e.Type != trace.CallerSpeechEnd && e.T < reconnect.T {
			t.Errorf("%s at %d ms after the reconnect at %d ms", e.Type, e.T, reconnect.T)
		}
		if e.Type == trace.MediaStats {
			ticks, _ := strconv.Atoi(e.Meta["ticks"])
			w, err := audio.ReadWAV(res.Recording)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := w.Duration(), time.Duration(ticks)*media.TickDuration; got < want-media.TickDuration || got > want+media.TickDuration {
				t.Errorf("recording %v for %d ticks (%v)", got, ticks, want)
			}
			if ticks*40 < 60000 {
				t.Errorf("%d ticks: the call did not pass 60 s", ticks)
			}
		}
	}
}
