package session

import (
	"context"
	"math"
	"math/cmplx"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/gemini"
	"github.com/voicebench/humanaudit/internal/agent/openai"
	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/condition"
	"github.com/voicebench/humanaudit/internal/trace"
)

// tapAdapter keeps every caller frame the session hands the agent's adapter.
type tapAdapter struct {
	agent.Adapter
	mu  sync.Mutex
	pcm []int16
}

func (a *tapAdapter) SendAudio(pcm []int16) error {
	a.mu.Lock()
	a.pcm = append(a.pcm, pcm...)
	a.mu.Unlock()
	return a.Adapter.SendAudio(pcm)
}

func (a *tapAdapter) heard() []int16 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.pcm)
}

// toneSpeaker makes a bed's talkers without Flite: a tone per sentence.
type toneSpeaker struct{}

func (toneSpeaker) Speak(_ context.Context, voice, text string) ([]int16, error) {
	hz := 150 + 40*float64(len(voice)%5) + float64(text[0]%8)*25
	pcm := make([]int16, len(text)*condition.Rate/15)
	for i := range pcm {
		pcm[i] = int16(6000 * math.Sin(2*math.Pi*hz*float64(i)/condition.Rate))
	}
	return pcm, nil
}

type conditionedCall struct {
	res     Result
	adapter *tapAdapter
	rate    int
	rec     *audio.WAV
	clean   *audio.WAV
}

func runConditioned(t *testing.T, system string, spec condition.Spec, bed *condition.Bed, seed int64) conditionedCall {
	t.Helper()
	tk := loadTask(t, "it-vpn-incident")
	replies := []agenttest.Reply{{Text: "Thanks for calling the service desk. Goodbye!", AudioMS: 900}}
	var inner agent.Adapter
	rate := 24000
	switch system {
	case "openai":
		f := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: replies})
		inner = openai.New(openai.Options{URL: f.URL(), Model: "gpt-realtime", Dialect: openai.GA})
	case "gemini":
		f := agenttest.NewGeminiFake(t, agenttest.Script{Replies: replies})
		inner = gemini.New(gemini.Options{URL: f.URL(), Model: "gemini-live"})
		rate = gemini.InputRate
	}
	tap := &tapAdapter{Adapter: inner}
	proc, err := condition.NewProcessor(spec, bed, condition.SeedFor(tk.ID, seed))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rec, clean := filepath.Join(dir, "call.wav"), filepath.Join(dir, "call.clean.wav")
	s, err := Start(context.Background(), Config{ID: "cond-" + system, Task: tk, Mode: Synthetic, Seed: seed, System: system,
		Adapter: tap, Caller: &fliteVoice{t: tk}, RecordingPath: rec, CleanRecordingPath: clean, TimeLimit: 60 * time.Second,
		Condition: proc, ConditionSeed: condition.SeedFor(tk.ID, seed)})
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	select {
	case <-s.Done():
		res = s.Result()
	case <-time.After(90 * time.Second):
		t.Fatal("session did not end")
	}
	if res.CleanRecording != clean {
		t.Fatalf("result names clean recording %q, want %q", res.CleanRecording, clean)
	}
	w, err := audio.ReadWAV(rec)
	if err != nil {
		t.Fatal(err)
	}
	c, err := audio.ReadWAV(clean)
	if err != nil {
		t.Fatal(err)
	}
	return conditionedCall{res: res, adapter: tap, rate: rate, rec: w, clean: c}
}

// TestConditionIsWhatTheAgentHears runs one call per system (24 kHz and 16 kHz agents) under a
// telephone line with babble: the caller channel of the recording is the condition applied to
// the clean caller file beside it, the agent's adapter received exactly that channel, nothing
// above 4 kHz reaches it, and both systems heard the same conditioned audio for the same seed.
func TestConditionIsWhatTheAgentHears(t *testing.T) {
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed (scripts/deps.sh installs it)")
	}
	r, _ := condition.DefaultRecipe(condition.Babble)
	r.Seconds = 10
	bed, err := condition.Build(context.Background(), r, toneSpeaker{}, "tones")
	if err != nil {
		t.Fatal(err)
	}
	spec := condition.MustParse("phone_line+babble@5")
	calls := map[string]conditionedCall{}
	for _, sys := range []string{"openai", "gemini"} {
		call := runConditioned(t, sys, spec, bed, 3)
		calls[sys] = call
		left, cleanLeft := call.rec.Channel(0), call.clean.Channel(0)
		if len(left) != len(cleanLeft) || !slices.Equal(call.rec.Channel(1), call.clean.Channel(1)) {
			t.Fatalf("%s: recording and clean file disagree on length (%d, %d) or agent channel", sys, len(left), len(cleanLeft))
		}
		// The recording's caller channel is the condition of the clean caller, sample for sample.
		p, _ := condition.NewProcessor(spec, bed, condition.SeedFor("it-vpn-incident", 3))
		redo := slices.Clone(cleanLeft)
		for i := 0; i < len(redo); i += audio.FrameSamples {
			p.Condition(redo[i:min(i+audio.FrameSamples, len(redo))], int64(i))
		}
		if !slices.Equal(redo, left) {
			t.Fatalf("%s: the caller channel is not the condition applied to the clean caller", sys)
		}
		if slices.Equal(left, cleanLeft) {
			t.Fatalf("%s: the condition changed nothing", sys)
		}
		// The agent received the conditioned channel (at its own rate).
		want := left
		if call.rate != audio.RecordRate {
			rs, _ := audio.NewResampler(audio.RecordRate, call.rate)
			var out []int16
			for i := 0; i+audio.FrameSamples <= len(left); i += audio.FrameSamples {
				out = append(out, rs.Process(left[i:i+audio.FrameSamples], nil)...)
			}
			want = out
		}
		got := call.adapter.heard()
		n := min(len(got), len(want))
		if n < call.rate { // at least a second of the call
			t.Fatalf("%s: the agent received %d samples", sys, len(got))
		}
		if !slices.Equal(got[:n], want[:n]) {
			t.Fatalf("%s: the agent's audio differs from the recording's caller channel", sys)
		}
		// A telephone line: nothing above 4 kHz on the caller channel; the clean caller had it.
		above, cleanAbove := powerAbove(left, 4000), powerAbove(cleanLeft, 4000)
		t.Logf("%s: share of caller power above 4 kHz %.2e (clean caller %.2e)", sys, above, cleanAbove)
		if above > 1e-6 || cleanAbove < 1e-4 {
			t.Errorf("%s: caller share above 4 kHz %.2e (want below 1e-6), clean %.2e (want above 1e-4)", sys, above, cleanAbove)
		}
		meta := call.res.Events[0].Meta
		if meta["condition"] != "phone_line+babble@5" || meta["condition_level_db"] != "5" || meta["condition_bed_sha256"] != bed.SHA256 {
			t.Errorf("%s: session.start meta %v", sys, meta)
		}
		stats := call.res.Events[len(call.res.Events)-2]
		if stats.Type != trace.MediaStats || stats.Meta["condition_effective_snr_db"] == "" {
			t.Errorf("%s: media.stats %v", sys, stats.Meta)
		}
	}
	// Same condition, task and seed: both systems heard the same caller channel before the
	// caller first spoke (when their audio depends on nothing but the condition); after that each
	// call's channel is the same function of its own clean caller (checked above).
	lead := min(firstUtteranceStart(t, calls["openai"].res.Events), firstUtteranceStart(t, calls["gemini"].res.Events)) - 2*audio.FrameSamples
	a, b := calls["openai"].rec.Channel(0), calls["gemini"].rec.Channel(0)
	if lead < audio.RecordRate/4 {
		t.Fatalf("only %d samples before the caller spoke", lead)
	}
	if !slices.Equal(a[:lead], b[:lead]) {
		t.Fatalf("the two systems heard different conditioned audio in the first %d samples", lead)
	}
	if audio.RMSDBFS(a[:lead]) < -60 {
		t.Fatalf("no noise in the first %d samples", lead)
	}
	for _, k := range []string{"condition", "condition_seed", "condition_bed", "condition_bed_sha256", "condition_bed_offset"} {
		if x, y := calls["openai"].res.Events[0].Meta[k], calls["gemini"].res.Events[0].Meta[k]; x != y || x == "" {
			t.Errorf("session.start %s: %q and %q", k, x, y)
		}
	}
}

// firstUtteranceStart is the media sample where the caller's first utterance starts.
func firstUtteranceStart(t *testing.T, events []trace.Event) int {
	for _, e := range events {
		if e.Type == trace.CallerUtterance {
			return int(e.T * audio.RecordRate / 1000)
		}
	}
	t.Fatal("no caller utterance")
	return 0
}

// powerAbove is the share of x's power above hz (Hann-windowed 8192-point spectra).
func powerAbove(x []int16, hz float64) float64 {
	const n = 8192
	var above, all float64
	for off := 0; off+n <= len(x); off += n {
		a := make([]complex128, n)
		for i := range a {
			w := 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/n)
			a[i] = complex(float64(x[off+i])*w, 0)
		}
		fftInPlace(a)
		for k := 0; k < n/2; k++ {
			p := cmplx.Abs(a[k]) * cmplx.Abs(a[k])
			all += p
			if float64(k)*audio.RecordRate/n >= hz {
				above += p
			}
		}
	}
	if all == 0 {
		return 0
	}
	return above / all
}

func fftInPlace(a []complex128) {
	n := len(a)
	for i, j := 1, 0; i < n; i++ {
		bit := n >> 1
		for ; j&bit != 0; bit >>= 1 {
			j ^= bit
		}
		j ^= bit
		if i < j {
			a[i], a[j] = a[j], a[i]
		}
	}
	for size := 2; size <= n; size <<= 1 {
		w := cmplx.Exp(complex(0, -2*math.Pi/float64(size)))
		for start := 0; start < n; start += size {
			wk := complex(1, 0)
			for k := 0; k < size/2; k++ {
				u, v := a[start+k], a[start+k+size/2]*wk
				a[start+k], a[start+k+size/2] = u+v, u-v
				wk *= w
			}
		}
	}
}
