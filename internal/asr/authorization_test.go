package asr

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/mediadevices/pkg/codec"
	mdopus "github.com/pion/mediadevices/pkg/codec/opus"
	"github.com/pion/mediadevices/pkg/io/audio"
	"github.com/pion/mediadevices/pkg/prop"
	"github.com/pion/mediadevices/pkg/wave"
	"github.com/pion/opus"

	pcmaudio "github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/task"
)

func TestClassifyAuthorization(t *testing.T) {
	for _, c := range []struct {
		words string
		want  Authorization
	}{
		{"yes", Approve},
		{"yeah go ahead", Approve},
		{"that's right", Approve},
		{"sure you have my approval", Approve},
		{"wait no not yet", Decline},
		{"yes go ahead actually wait no", Decline},
		{"no the loss date is march fourth", Decline},
		{"hold on that's wrong", Decline},
		{"oh my god never mind cancel that", Decline},
		{"the windshield", Unclear},
		{"", Unclear},
		{"noted", Unclear}, // whole words only: "noted" is not "no"
		{"yes that's notable", Approve},
		// How the recognizer hears refusals in the Flite voices (make approval-confusion); being
		// wrong this way only makes the agent ask again.
		{"i know", Decline},
		{"nailed down submitted yeah i want to check something", Decline},
		{"now leave it for now", Decline},
		{"h m m now please held on for a second", Decline},
		{"yes go ahead now", Approve}, // "now" late in the answer is not a leading "no"
	} {
		if got, _ := ClassifyAuthorization(c.words); got != c.want {
			t.Errorf("ClassifyAuthorization(%q) = %s, want %s", c.words, got, c.want)
		}
	}
}

// opusPath sends 24 kHz caller audio the way a participant's browser does: up to 48 kHz, libopus
// at 32 kbit/s in 20 ms packets, decoded by the console's pure-Go decoder at 24 kHz.
func opusPath(tb testing.TB, pcm24 []int16) []int16 {
	tb.Helper()
	in, err := pcmaudio.ResampleClip(pcm24, 24000, 48000)
	if err != nil {
		tb.Fatal(err)
	}
	const block = 960
	chunk := wave.NewInt16Interleaved(wave.ChunkInfo{Len: block, Channels: 1, SamplingRate: 48000})
	params, err := mdopus.NewParams()
	if err != nil {
		tb.Fatal(err)
	}
	params.BitRate = 32000
	params.Latency = mdopus.Latency20ms
	var enc codec.ReadCloser
	enc, err = params.BuildAudioEncoder(audio.ReaderFunc(func() (wave.Audio, func(), error) { return chunk, func() {}, nil }),
		prop.Media{Audio: prop.Audio{SampleRate: 48000, ChannelCount: 1}})
	if err != nil {
		tb.Fatal(err)
	}
	defer enc.Close()
	dec, err := opus.NewDecoderWithOutput(24000, 1)
	if err != nil {
		tb.Fatal(err)
	}
	buf := make([]int16, 24000*120/1000)
	var out []int16
	for off := 0; off+block <= len(in)+block; off += block {
		for i := range chunk.Data {
			chunk.Data[i] = 0
		}
		copy(chunk.Data, in[min(off, len(in)):min(off+block, len(in))])
		pkt, _, err := enc.Read()
		if err != nil {
			tb.Fatal(err)
		}
		n, err := dec.DecodeToInt16(pkt, buf)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, buf[:n]...)
	}
	return out
}

// authorizationEvery thins the bank measurement to every n-th sample (for a quick look on a busy
// machine); the acceptance figure is measured with 1.
var authorizationEvery = flag.Int("authorization.every", 1, "classify every n-th bank sample only")

// authorizationSample is one approve, decline or revoke variant of the bank in one voice.
type authorizationSample struct {
	task, plan, voice, text string
	want                    Authorization
}

// authorizationSamples lists every approve/decline/revoke variant of every task's bank in every
// caller voice.
func authorizationSamples(tb testing.TB) []authorizationSample {
	tb.Helper()
	files, err := filepath.Glob("../../tasks/*.json")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no tasks found: %v", err)
	}
	var out []authorizationSample
	for _, f := range files {
		tk, err := task.LoadFile(f)
		if err != nil {
			tb.Fatalf("load %s: %v", f, err)
		}
		plans := make([]string, 0, len(tk.Bank))
		for p := range tk.Bank {
			plans = append(plans, p)
		}
		sort.Strings(plans)
		for _, p := range plans {
			want := Decline
			switch strings.SplitN(p, ":", 2)[0] {
			case "approve":
				want = Approve
			case "decline", "revoke":
			default:
				continue
			}
			for _, text := range tk.Bank[p] {
				for _, v := range callerVoices {
					out = append(out, authorizationSample{task: tk.ID, plan: p, voice: v, text: text, want: want})
				}
			}
		}
	}
	return out
}

// confusion counts decisions by the plan's kind (approve, decline, revoke).
type confusion struct {
	n      map[string]map[Authorization]int
	wrong  []string
	total  int
	right  int
	unsafe int // declines and withdrawals read as approvals
}

func (c *confusion) add(s authorizationSample, got AuthorizationReading) {
	kind := strings.SplitN(s.plan, ":", 2)[0]
	if c.n == nil {
		c.n = map[string]map[Authorization]int{}
	}
	if c.n[kind] == nil {
		c.n[kind] = map[Authorization]int{}
	}
	c.n[kind][got.Decision]++
	c.total++
	if got.Decision == s.want {
		c.right++
		return
	}
	if got.Decision == Approve {
		c.unsafe++
	}
	c.wrong = append(c.wrong, fmt.Sprintf("%s %s [%s] %q heard %q (confidence %.2f): %s", s.task, s.plan, s.voice, s.text, got.Words, got.Confidence, got.Decision))
}

func (c *confusion) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %8s %8s %8s\n", "said", "approve", "decline", "unclear")
	for _, k := range []string{"approve", "decline", "revoke"} {
		fmt.Fprintf(&b, "%-8s %8d %8d %8d\n", k, c.n[k][Approve], c.n[k][Decline], c.n[k][Unclear])
	}
	fmt.Fprintf(&b, "correct %d/%d (%.1f%%); declines or withdrawals read as approvals: %d\n", c.right, c.total,
		100*float64(c.right)/float64(max(c.total, 1)), c.unsafe)
	return b.String()
}

// measureAuthorization renders every sample with Flite, sends it through Opus and classifies it,
// with one worker per decoder, logging progress.
func measureAuthorization(tb testing.TB, r *Recognizer, workers int, samples []authorizationSample) *confusion {
	tb.Helper()
	type res struct {
		s   authorizationSample
		got AuthorizationReading
		err error
	}
	jobs := make(chan authorizationSample)
	results := make(chan res)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range jobs {
				pcm := opusPath(tb, flite24k(tb, s.voice, s.text))
				got, err := r.RecognizeAuthorization(context.Background(), pcm, 24000)
				results <- res{s, got, err}
			}
		}()
	}
	go func() {
		for _, s := range samples {
			jobs <- s
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()
	c := &confusion{}
	var errs []error
	done := 0
	for r := range results {
		if done++; done%50 == 0 {
			tb.Logf("%d of %d classified", done, len(samples))
		}
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		c.add(r.s, r.got)
	}
	if len(errs) > 0 {
		tb.Fatalf("%d samples failed to decode, first: %v", len(errs), errs[0])
	}
	sort.Strings(c.wrong)
	return c
}

// TestAuthorizationClassifierOnBank is the acceptance figure of the approval classifier: every
// approve, decline and revoke variant of the bank, in all four Flite voices, through Opus, is
// classified at least 98% correctly and no decline or withdrawal is read as an approval. Run with
// -v to see the confusion table (or `make approval-confusion`).
func TestAuthorizationClassifierOnBank(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes several hundred utterances")
	}
	needFlite(t)
	const workers = 4 // decoders decode in parallel; more than the cores keeps a fair share on a busy machine
	r, err := New(Config{Decoders: workers})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	all := authorizationSamples(t)
	var samples []authorizationSample
	for i := 0; i < len(all); i += max(*authorizationEvery, 1) {
		samples = append(samples, all[i])
	}
	start := time.Now()
	c := measureAuthorization(t, r, workers, samples)
	t.Logf("%d samples in %v", len(samples), time.Since(start).Round(time.Millisecond))
	t.Logf("authorization classifier on the bank (Flite voices %v, Opus 32 kbit/s):\n%s", callerVoices, c.table())
	for _, w := range c.wrong {
		t.Logf("misread: %s", w)
	}
	if c.unsafe > 0 {
		t.Errorf("%d declines or withdrawals read as approvals", c.unsafe)
	}
	if c.right*100 < c.total*98 {
		t.Errorf("correct %d of %d, want at least 98%%", c.right, c.total)
	}
}
