package refagent

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/openai"
	"github.com/voicebench/humanaudit/internal/asr"
	"github.com/voicebench/humanaudit/internal/media"
	"github.com/voicebench/humanaudit/internal/refagent/turncall"
	"github.com/voicebench/humanaudit/internal/session"
	"github.com/voicebench/humanaudit/internal/synth"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// The suite benchmark is configured from the environment, so that `make bench` runs it whole and
// an engineer can rerun one task:
//
//	REFAGENT_SUITE_TASKS   comma-separated task ids (default: every audit24 task)
//	REFAGENT_SUITE_VOICES  "bank", "other" or "bank,other" (default both)
//	REFAGENT_SUITE_SPEED   media clock speed, 1 = real time (default 1); see speedClock. Below 1
//	                       the calls run slower than real time, which gives the agent the CPU
//	                       share of a machine 1/speed times faster (for a loaded machine: the
//	                       media-clock latency is then what a caller there would wait)
//	REFAGENT_SUITE_OUT     a directory for each call's dialogue and grade (default: none)
//	REFAGENT_SUITE_PARALLEL calls at once (default 1)
//	REFAGENT_SUITE_SEEDS   the bank seeds, comma-separated (default 1): each task is called once
//	                       per seed, and the figures are over all the calls
//	REFAGENT_SUITE_BANK    the rendered bank (default ../../audit_data/bank, rendered on the fly
//	                       with the persona's Flite voice where it has no audio, as bank build does)
func suiteEnv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// BenchmarkSuiteReference runs the frozen bank caller against the reference agent on every task of
// audit24, seed 1, through the full audio path of a synthetic call: the caller's audio is encoded
// with libopus and decoded with pion's Opus decoder (as a browser's would be), played on the media
// clock through the matched endpointer, and the agent's speech comes back through the same
// session. It reports mean Artifact Field Accuracy, the number of Workflow Success calls, caller
// turns per call and response latency (end of caller speech to first agent audio), once with the
// bank as rendered (each persona's own Flite voice) and once re-rendered in another Flite voice.
func BenchmarkSuiteReference(b *testing.B) {
	needTools(b)
	speed, err := strconv.ParseFloat(suiteEnv("REFAGENT_SUITE_SPEED", "1"), 64)
	if err != nil || speed < 0.1 {
		b.Fatalf("REFAGENT_SUITE_SPEED=%q: want a number >= 0.1", os.Getenv("REFAGENT_SUITE_SPEED"))
	}
	parallel, err := strconv.Atoi(suiteEnv("REFAGENT_SUITE_PARALLEL", "1"))
	if err != nil || parallel < 1 {
		b.Fatalf("REFAGENT_SUITE_PARALLEL=%q: want a positive integer", os.Getenv("REFAGENT_SUITE_PARALLEL"))
	}
	tasks := suiteTasks(b)
	seeds := suiteSeeds(b)
	out := os.Getenv("REFAGENT_SUITE_OUT")
	for _, voice := range suiteVoices(b) {
		b.Run(voice, func(b *testing.B) {
			var rows []suiteRow
			for b.Loop() {
				rows = runSuite(b, tasks, seeds, suiteCall{voice: voice, speed: speed, out: out}, parallel)
			}
			reportSuite(b, rows, speed)
		})
	}
}

// suiteVoices are the voices REFAGENT_SUITE_VOICES names (default both): "bank" is each persona's
// own Flite voice, "other" the next one.
func suiteVoices(tb testing.TB) []string {
	tb.Helper()
	vs := strings.Split(suiteEnv("REFAGENT_SUITE_VOICES", "bank,other"), ",")
	for _, v := range vs {
		if v != "bank" && v != "other" {
			tb.Fatalf("REFAGENT_SUITE_VOICES: %q is neither bank nor other", v)
		}
	}
	return vs
}

// suiteSeeds are the bank seeds REFAGENT_SUITE_SEEDS names (default 1).
func suiteSeeds(tb testing.TB) []int64 {
	tb.Helper()
	var out []int64
	for _, f := range strings.Split(suiteEnv("REFAGENT_SUITE_SEEDS", "1"), ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || n < 1 {
			tb.Fatalf("REFAGENT_SUITE_SEEDS: %q is no positive integer", f)
		}
		out = append(out, n)
	}
	return out
}

// suiteTasks loads the audit24 tasks (or those REFAGENT_SUITE_TASKS names).
func suiteTasks(tb testing.TB) []*task.Task {
	tb.Helper()
	var only []string
	if s := os.Getenv("REFAGENT_SUITE_TASKS"); s != "" {
		only = strings.Split(s, ",")
	}
	tasks, err := turncall.Audit24(filepath.Join("..", "..", "tasks"), only)
	if err != nil {
		tb.Fatalf("REFAGENT_SUITE_TASKS: %v", err)
	}
	return tasks
}

// suiteCall says how the suite's calls are made.
type suiteCall struct {
	voice string  // "bank": each persona's own voice; "other": another Flite voice
	speed float64 // media clock speed
	out   string  // where dialogues and grades go ("" for nowhere)
	seed  int64   // the bank seed (which variant of each plan the caller says)
}

// suiteName is a call's name in logs and files: the task, and its seed when not 1.
func suiteName(id string, seed int64) string {
	if seed == 1 {
		return id
	}
	return fmt.Sprintf("%s.seed%d", id, seed)
}

// suiteRow is the outcome of one call of the suite.
type suiteRow struct {
	task      string
	voice     string
	reason    string
	afa       float64
	correct   int
	total     int
	ws        int
	turns     int
	latencies []time.Duration
	media     []time.Duration // the same on the media clock alone
	failed    []string        // fields graded wrong: field=pred (gold)
	err       string
}

// fliteVoices are the synthetic callers' voices; otherVoice picks, for each, the next one.
var fliteVoices = []string{"slt", "rms", "awb", "kal16"}

func otherVoice(v string) string {
	if v == "" {
		v = "slt"
	}
	i := slices.Index(fliteVoices, v)
	return fliteVoices[(i+1)%len(fliteVoices)]
}

// voiceAs renders the bank's words in one fixed Flite voice, whatever the persona's.
type voiceAs struct {
	voice string
	f     synth.Flite
}

func (v *voiceAs) Render(ctx context.Context, _, text string) ([]int16, error) {
	return v.f.Render(ctx, v.voice, text)
}

func runSuite(b *testing.B, tasks []*task.Task, seeds []int64, sc suiteCall, parallel int) []suiteRow {
	b.Helper()
	lead := time.Duration(0)
	if sc.speed > 1 {
		lead = -1 // a faster clock plays the replies faster than real time: send each at once
	}
	n := len(tasks) * len(seeds)
	rows := make([]suiteRow, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(parallel, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c := sc
				c.seed = seeds[i%len(seeds)]
				rows[i] = suiteOneAlone(b, tasks[i/len(seeds)], c, lead)
				r := rows[i]
				b.Logf("%-30s %-5s AFA %2d/%-2d WS %d turns %3d end %s %s", r.task, r.voice, r.correct, r.total, r.ws, r.turns, r.reason, r.err)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return rows
}

// suiteOneAlone runs one call of the suite against a reference agent of its own (its own
// recognizer and server), as a deployment serving one call: no call's result depends on what
// the calls before it left behind. (With one server for the whole suite, every handshake after
// the first round timed out on a loaded machine; see the issue 17 report.)
func suiteOneAlone(b *testing.B, tk *task.Task, sc suiteCall, lead time.Duration) suiteRow {
	rec, err := asr.New(asr.Config{Decoders: 2})
	if err != nil {
		return suiteRow{task: tk.ID, err: err.Error()}
	}
	defer rec.Close()
	s, err := New(Config{AudioLead: lead, Recognizer: rec, Now: func() time.Time { return time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) }})
	if err != nil {
		return suiteRow{task: tk.ID, err: err.Error()}
	}
	if err := s.Listen("127.0.0.1:0"); err != nil {
		return suiteRow{task: tk.ID, err: err.Error()}
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	row := suiteOne(b, s, tk, sc)
	s.Close()
	<-done
	return row
}

// suiteOne runs one call of the suite.
func suiteOne(b *testing.B, s *Server, tk *task.Task, sc suiteCall) suiteRow {
	row := suiteRow{task: suiteName(tk.ID, sc.seed), voice: tk.User.Persona.Voice}
	var render synth.Renderer = &synth.Flite{}
	if sc.voice == "other" {
		row.voice = otherVoice(tk.User.Persona.Voice)
		render = &voiceAs{voice: row.voice}
	}
	dir := ""
	if sc.voice == "bank" {
		dir = suiteEnv("REFAGENT_SUITE_BANK", filepath.Join("..", "..", "audit_data", "bank"))
	}
	caller := &opusLine{voice: &synth.BankVoice{Task: tk, Seed: sc.seed, Dir: dir, Render: render}}
	var clock media.MediaClock
	if sc.speed != 1 {
		clock = newSpeedClock(sc.speed)
	}
	limit := time.Duration(float64(12*time.Minute) / sc.speed)
	adapter := openai.New(openai.Options{URL: s.URL(), Model: "reference", Dialect: openai.GA})
	sess, err := session.Start(context.Background(), session.Config{ID: "suite-" + tk.ID, Task: tk, Mode: session.Synthetic, Seed: sc.seed,
		System: "reference", Adapter: adapter, Voice: "marin", Caller: caller, Clock: clock,
		RecordingPath: filepath.Join(b.TempDir(), "call.wav"), TimeLimit: limit})
	if err != nil {
		row.err = err.Error()
		return row
	}
	select {
	case <-sess.Done():
	case <-time.After(limit + time.Minute):
		sess.Stop(session.EndCancelled, session.ExclusionOther)
	}
	res := sess.Result()
	row.reason = res.Reason
	for _, e := range res.Events {
		if e.Type == trace.CallerPlan {
			row.turns++
		}
	}
	row.latencies = suiteLatencies(res.Events)
	row.media = responseLatencies(res.Events)
	if res.Grade == nil {
		row.err = fmt.Sprint("not graded: ", res.GradeErr)
	} else {
		g := res.Grade
		row.afa, row.correct, row.total, row.ws = g.AFA.Value, g.AFA.Correct, g.AFA.Total, g.WS
		for _, f := range g.Fields {
			if !f.Pass {
				row.failed = append(row.failed, fmt.Sprintf("%s=%s (gold %s)", f.Field, f.Pred, f.Gold))
			}
		}
	}
	if sc.out != "" {
		name := filepath.Join(sc.out, sc.voice, suiteName(tk.ID, sc.seed))
		os.MkdirAll(filepath.Dir(name), 0o755)
		var sum strings.Builder
		fmt.Fprintf(&sum, "%s voice %s: end %s, AFA %d/%d, WS %d, turns %d\n", row.task, row.voice, row.reason, row.correct, row.total, row.ws, row.turns)
		if g := res.Grade; g != nil {
			fmt.Fprintf(&sum, "TS %d PV %d AC %d AV %d final %s violations %v missing %v\n", g.TS, g.PV, g.AC, g.AV, g.FinalState, g.Violations, g.MissingActions)
		}
		for _, f := range row.failed {
			fmt.Fprintf(&sum, "  wrong: %s\n", f)
		}
		os.WriteFile(name+".txt", []byte(sum.String()+"\n"+dialogue(res.Events)), 0o644)
		trace.WriteFile(name+".jsonl", res.Events)
	}
	return row
}

// suiteLatencies are the response latencies of a call as a caller in real time would have
// experienced them: the endpointer's wait for silence on the media clock, plus the wall time from
// the end of the turn being detected to the agent's first audio being played. On a real-time clock
// that is the media-clock latency; on a faster clock the agent's work still takes wall time.
func suiteLatencies(events []trace.Event) []time.Duration {
	var out []time.Duration
	var end *trace.Event
	for i := range events {
		e := &events[i]
		switch e.Type {
		case trace.CallerSpeechEnd:
			end = e
		case trace.CallerSpeechStart:
			end = nil
		case trace.AgentSpeechStart:
			if end != nil {
				hangover := time.Duration(max(0, end.RefMS-end.T)) * time.Millisecond
				out = append(out, hangover+max(0, e.Wall.Sub(end.Wall)))
			}
			end = nil
		}
	}
	return out
}

func reportSuite(b *testing.B, rows []suiteRow, speed float64) {
	var afa float64
	ws, turns := 0, 0
	var lat, media []time.Duration
	var table strings.Builder
	fmt.Fprintf(&table, "\n| task | voice | AFA | WS | turns | end | latency p50 | fields wrong |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		afa += r.afa
		ws += r.ws
		turns += r.turns
		lat = append(lat, r.latencies...)
		media = append(media, r.media...)
		p50 := "-"
		if len(r.latencies) > 0 {
			p50 = percentile(r.latencies, 0.5).Round(10 * time.Millisecond).String()
		}
		fmt.Fprintf(&table, "| %s | %s | %d/%d | %d | %d | %s | %s | %s |\n", r.task, r.voice, r.correct, r.total, r.ws, r.turns,
			cmp.Or(r.err, r.reason), p50, strings.Join(r.failed, "; "))
	}
	n := float64(len(rows))
	b.Logf("speed %gx, load %s%s", speed, loadavg(), table.String())
	b.ReportMetric(afa/n, "afa_mean")
	b.ReportMetric(float64(ws), "ws_count")
	b.ReportMetric(float64(turns)/n, "turns/call")
	if len(lat) > 0 {
		b.ReportMetric(float64(percentile(lat, 0.5).Milliseconds()), "response_ms_p50")
		b.ReportMetric(float64(percentile(lat, 0.9).Milliseconds()), "response_ms_p90")
	}
	if len(media) > 0 && speed != 1 {
		b.ReportMetric(float64(percentile(media, 0.5).Milliseconds()), "response_media_ms_p50")
	}
	b.ReportMetric(0, "ns/op")
}

func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	return strings.Join(f[:min(3, len(f))], " ")
}
