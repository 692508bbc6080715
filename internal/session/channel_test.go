package session

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/openai"
	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/trace"
)

// slowToneVoice is a synthetic caller that takes renderDelay of wall time to "render" each plan,
// as Flite does, and speaks a tone whose pitch identifies the utterance (its first sample is the
// tone's peak, so the audio starts at a known sample).
type slowToneVoice struct {
	renderDelay time.Duration
	length      time.Duration

	mu     sync.Mutex
	spoken [][]int16
}

func (v *slowToneVoice) Speak(ctx context.Context, p trace.Plan) (string, string, []int16, error) {
	time.Sleep(v.renderDelay)
	v.mu.Lock()
	defer v.mu.Unlock()
	hz := 300 + 37*float64(len(v.spoken))
	pcm := make([]int16, audio.DurationToSamples(v.length, audio.RecordRate))
	for i := range pcm {
		pcm[i] = int16(6000 * math.Cos(2*math.Pi*hz*float64(i)/audio.RecordRate))
	}
	v.spoken = append(v.spoken, pcm)
	return "plan " + p.ID, "test", pcm, nil
}

// find returns the sample at which pcm occurs in ch at or after from, or -1.
func find(ch, pcm []int16, from int) int {
	for i := from; i+len(pcm) <= len(ch); i++ {
		if ch[i] == pcm[0] && slices.Equal(ch[i:i+len(pcm)], pcm) {
			return i
		}
	}
	return -1
}

// TestUtteranceStampedAtItsFirstSample: the synthetic caller takes 150 ms of wall (and media) time
// to render each plan, yet every caller.utterance and caller.plan carries the media time of the
// first sample of its audio in the recording. Stamped before rendering, they were 150 ms early.
func TestUtteranceStampedAtItsFirstSample(t *testing.T) {
	tk := loadTask(t, "it-vpn-incident")
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: []agenttest.Reply{
		{Text: "Thanks. What's your employee ID?", AudioMS: 600},
		{Text: "Got it. Anything else?", AudioMS: 600},
		{Text: "Goodbye!", AudioMS: 400},
	}})
	voice := &slowToneVoice{renderDelay: 150 * time.Millisecond, length: 700 * time.Millisecond}
	rec := filepath.Join(t.TempDir(), "call.wav")
	s, err := Start(context.Background(), Config{ID: "stamps", Task: tk, Mode: Synthetic, Seed: 1,
		Adapter: openai.New(openai.Options{URL: fake.URL(), Model: "m", Dialect: openai.GA}), Caller: voice,
		RecordingPath: rec, TimeLimit: 12 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res := s.Result()
	w, err := audio.ReadWAV(rec)
	if err != nil {
		t.Fatal(err)
	}
	left := w.Channel(0)
	voice.mu.Lock()
	spoken := slices.Clone(voice.spoken)
	voice.mu.Unlock()
	var utterances, plans []trace.Event
	for _, e := range res.Events {
		switch e.Type {
		case trace.CallerUtterance:
			utterances = append(utterances, e)
		case trace.CallerPlan:
			plans = append(plans, e)
		}
	}
	if len(utterances) < 2 || len(utterances) != len(plans) {
		t.Fatalf("%d utterances and %d plans (reason %s)", len(utterances), len(plans), res.Reason)
	}
	from := 0
	for i, u := range utterances {
		if i >= len(spoken) {
			t.Fatalf("utterance %d has no audio", i)
		}
		at := find(left, spoken[i], from)
		if at < 0 {
			if i == len(utterances)-1 {
				break // the call ended while its last words were queued
			}
			t.Fatalf("utterance %d (%s) is not in the recording", i, u.Text)
		}
		from = at + len(spoken[i])
		want := audio.SamplesToDuration(int64(at), audio.RecordRate).Milliseconds()
		if u.T != want || plans[i].T != want {
			t.Errorf("utterance %d: caller.utterance at %d ms, caller.plan at %d ms; its first sample is %d (%d ms)", i, u.T, plans[i].T, at, want)
		}
	}
}

// fastAgent is an agent that speaks a long response faster than real time and goes on sending its
// deltas after being interrupted, as a provider does until the cancel reaches it (and a careless
// one after that). It answers the first caller turn only.
type fastAgent struct {
	text   string
	audio  time.Duration // length of the response's audio
	chunk  time.Duration // audio per delta
	pace   time.Duration // wall time between deltas
	events chan agent.Event
	stop   chan struct{}
	wg     sync.WaitGroup

	mu          sync.Mutex
	turns       int
	interrupted bool
	played      []int
	afterCut    int // deltas sent after Interrupt
}

var _ agent.Adapter = (*fastAgent)(nil)

func newFastAgent(text string) *fastAgent {
	return &fastAgent{text: text, audio: 8 * time.Second, chunk: 100 * time.Millisecond, pace: 50 * time.Millisecond,
		events: make(chan agent.Event, 256), stop: make(chan struct{})}
}

func (a *fastAgent) Connect(context.Context, agent.Config) error { return nil }
func (a *fastAgent) Format() agent.Format {
	return agent.Format{InputRate: audio.RecordRate, OutputRate: audio.RecordRate}
}
func (a *fastAgent) SendAudio([]int16) error { return nil }
func (a *fastAgent) StartTurn() error        { return nil }
func (a *fastAgent) SendToolResult(string, string, json.RawMessage) error {
	return nil
}
func (a *fastAgent) Events() <-chan agent.Event { return a.events }

func (a *fastAgent) EndTurn() error {
	a.mu.Lock()
	a.turns++
	first := a.turns == 1
	a.mu.Unlock()
	if first {
		a.wg.Add(1)
		go a.respond()
	}
	return nil
}

func (a *fastAgent) Interrupt(playedMS int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.interrupted = true
	a.played = append(a.played, playedMS)
	return nil
}

func (a *fastAgent) send(ev agent.Event) bool {
	select {
	case a.events <- ev:
		return true
	case <-a.stop:
		return false
	}
}

func (a *fastAgent) respond() {
	defer a.wg.Done()
	const resp, item = "resp_1", "item_1"
	if !a.send(agent.Event{Type: agent.EventTranscriptDone, Text: a.text, ResponseID: resp, ItemID: item}) {
		return
	}
	n := int(a.audio / a.chunk)
	per := int(audio.DurationToSamples(a.chunk, audio.RecordRate))
	for k := range n {
		select {
		case <-time.After(a.pace):
		case <-a.stop:
			return
		}
		if !a.send(agent.Event{Type: agent.EventAudioDelta, Audio: agenttest.Tone(per, audio.RecordRate, k*per), ResponseID: resp, ItemID: item}) {
			return
		}
		a.mu.Lock()
		if a.interrupted {
			a.afterCut++
		}
		a.mu.Unlock()
	}
	a.send(agent.Event{Type: agent.EventResponseDone, Status: agent.StatusCancelled, ResponseID: resp})
}

func (a *fastAgent) Close() error {
	select {
	case <-a.stop:
	default:
		close(a.stop)
	}
	a.wg.Wait()
	return nil
}

// TestBargeInLeavesNoAgentAudio: the agent summarises (which fires the task's barge-in cue 1.5 s
// later) in a long response sent at twice real time, and keeps sending its deltas after the
// barge-in. No agent audio follows media.barge_in in the recording, and played_ms (and the
// truncate's audio_end_ms) is exactly the agent audio the caller heard.
func TestBargeInLeavesNoAgentAudio(t *testing.T) {
	tk := loadTask(t, "utility-payment-arrangement")
	fast := newFastAgent("To summarise, three payments of one hundred dollars a month.")
	rec := filepath.Join(t.TempDir(), "call.wav")
	s, err := Start(context.Background(), Config{ID: "barge", Task: tk, Mode: Synthetic, Seed: 1, Adapter: fast,
		Caller: &slowToneVoice{length: 900 * time.Millisecond}, RecordingPath: rec, TimeLimit: 9 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res := s.Result()
	var barge []trace.Event
	var stats trace.Event
	for _, e := range res.Events {
		switch e.Type {
		case trace.MediaBargeIn:
			barge = append(barge, e)
		case trace.MediaStats:
			stats = e
		}
	}
	if len(barge) != 1 || barge[0].Source != "caller" {
		t.Fatalf("barge-ins %+v, want one by the caller (reason %s)", barge, res.Reason)
	}
	fast.mu.Lock()
	afterCut, played := fast.afterCut, slices.Clone(fast.played)
	fast.mu.Unlock()
	if afterCut == 0 {
		t.Fatal("the agent sent nothing after the barge-in: the test proves nothing")
	}
	w, err := audio.ReadWAV(rec)
	if err != nil {
		t.Fatal(err)
	}
	right := w.Channel(1)
	cut := int(audio.DurationToSamples(time.Duration(barge[0].T)*time.Millisecond, audio.RecordRate))
	for i := cut; i < len(right); i++ {
		if right[i] != 0 {
			t.Fatalf("agent audio at %v, after media.barge_in at %d ms (%d deltas came after the cut)",
				audio.SamplesToDuration(int64(i), audio.RecordRate), barge[0].T, afterCut)
		}
	}
	first := slices.IndexFunc(right, func(v int16) bool { return v != 0 })
	if first < 0 || first >= cut {
		t.Fatalf("no agent audio before the barge-in (first %d, cut %d)", first, cut)
	}
	// The tone's first sample is 0, so the response's audio began one sample before the first
	// non-zero one.
	heard := audio.SamplesToDuration(int64(cut-first+1), audio.RecordRate)
	got, _ := strconv.Atoi(barge[0].Meta["played_ms"])
	if d := time.Duration(got)*time.Millisecond - heard; d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("played_ms %d, the caller heard %v", got, heard)
	}
	if len(played) != 1 || played[0] != got {
		t.Errorf("truncate audio_end_ms %v, want [%d]", played, got)
	}
	if n, _ := strconv.Atoi(stats.Meta["agent_deltas_dropped"]); n == 0 {
		t.Errorf("media.stats meta %v: agent_deltas_dropped not counted", stats.Meta)
	}
	t.Logf("barge-in at %d ms (onset %d ms): heard %v, played_ms %d, %d deltas after the cut, %s dropped",
		barge[0].T, barge[0].RefMS, heard, got, afterCut, stats.Meta["agent_deltas_dropped"])
}
