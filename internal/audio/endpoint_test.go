package audio

import (
	"errors"
	"math"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/audio/audiotest"
)

// segments builds 24 kHz audio from (duration ms, level dBFS) pieces; level <= -100 means silence.
func segments(parts ...[2]float64) []int16 { return audiotest.Segments(RecordRate, parts...) }

func runEndpointer(t *testing.T, cfg EndpointerConfig, pcm []int16, block int) []SpeechEvent {
	t.Helper()
	e, err := NewEndpointer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got []SpeechEvent
	for off := 0; off < len(pcm); off += block {
		blk := pcm[off:min(off+block, len(pcm))]
		e.Process(blk, RecordRate, time.Duration(off)*time.Second/RecordRate, func(ev SpeechEvent) { got = append(got, ev) })
	}
	return got
}

func TestEndpointerTurns(t *testing.T) {
	ms := time.Millisecond
	// sample is the media time of a sample at 24 kHz: onsets are stamped to the sample. The test
	// tones start at phase 0, so a tone's first sample is 0 and its onset is the next sample that
	// reaches the threshold level.
	sample := func(i int64) time.Duration { return SamplesToDuration(i, RecordRate) }
	cfg := EndpointerConfig{ThresholdDBFS: -40, MinSpeech: 100 * ms, SilenceDuration: 500 * ms, PrefixPadding: 300 * ms}
	for _, c := range []struct {
		name string
		pcm  []int16
		want []SpeechEvent
	}{
		{
			name: "one utterance",
			pcm:  segments([2]float64{1000, -120}, [2]float64{1200, -20}, [2]float64{1000, -120}),
			want: []SpeechEvent{
				// -20 dBFS: sample 24001 (364) already reaches -40 dBFS (328).
				{Start: true, At: sample(24001), Padded: sample(24001) - 300*ms, Detected: 1100 * ms},
				{At: 2200 * ms, Padded: 2200 * ms, Detected: 2700 * ms},
			},
		},
		{
			name: "a click is not speech",
			pcm:  segments([2]float64{500, -120}, [2]float64{30, -10}, [2]float64{1000, -120}),
		},
		{
			name: "a short pause does not end the turn",
			pcm:  segments([2]float64{200, -120}, [2]float64{400, -25}, [2]float64{300, -120}, [2]float64{400, -25}, [2]float64{800, -120}),
			want: []SpeechEvent{
				// -25 dBFS: sample 4801 is 205, sample 4802 is 408.
				{Start: true, At: sample(4802), Padded: 0, Detected: 300 * ms},
				{At: 1300 * ms, Padded: 1300 * ms, Detected: 1800 * ms},
			},
		},
		{
			name: "below threshold is silence",
			pcm:  segments([2]float64{2000, -50}),
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, block := range []int{FrameSamples, 7 * RecordRate} { // per tick, and all at once
				got := runEndpointer(t, cfg, c.pcm, block)
				if !reflect.DeepEqual(got, c.want) {
					t.Fatalf("block %d:\n got %+v\nwant %+v", block, got, c.want)
				}
			}
		})
	}
}

func TestEndpointerRejectsBadConfig(t *testing.T) {
	for _, cfg := range []EndpointerConfig{{ThresholdDBFS: 3}, {MinSpeech: -time.Second}} {
		if _, err := NewEndpointer(cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%+v: got %v, want ErrBadConfig", cfg, err)
		}
	}
}

func TestRMSDBFS(t *testing.T) {
	if got := RMSDBFS(make([]int16, 100)); got != -120 {
		t.Fatalf("silence: %v", got)
	}
	full := sine(RecordRate, RecordRate, 1000, 32767)
	if got := RMSDBFS(full); math.Abs(got+3.01) > 0.05 {
		t.Fatalf("full-scale sine: %.2f dBFS, want -3.01", got)
	}
}

// TestOnsetToTheSampleOnASyntheticSignal puts speech-like voice (audiotest.SpeechLike: its first
// sample is noise, its second already well above the threshold level) after a noise floor 15 dB
// under the threshold, starting at a known sample that takes every position in the 10 ms
// analysis block and many phases of the 40 ms tick. The onset is that sample or the next one:
// an error of 0 or 1 sample (42 µs), never the block grid.
func TestOnsetToTheSampleOnASyntheticSignal(t *testing.T) {
	voice := audiotest.SpeechLike(RecordRate, RecordRate, 7) // 1 s
	r := rand.New(rand.NewSource(3))
	hist := map[int]int{}
	block := RecordRate / 100
	for k := range block { // 97 is prime to 240: k·97 mod 240 takes every value
		off := RecordRate/2 + k*97
		sig := make([]int16, off+len(voice)+RecordRate)
		for i := range off {
			sig[i] = int16(max(-150, min(150, 30*r.NormFloat64()))) // about -60 dBFS, peaks below -45
		}
		copy(sig[off:], voice)
		for _, chunk := range []int{FrameSamples, 480, 1000} { // ticks, 20 ms packets, no grid at all
			var starts []SpeechEvent
			for _, ev := range runEndpointer(t, EndpointerConfig{}, sig, chunk) {
				if ev.Start {
					starts = append(starts, ev)
				}
			}
			if len(starts) != 1 {
				t.Fatalf("onset at sample %d, chunks of %d: %d speech starts %+v", off, chunk, len(starts), starts)
			}
			got := int(math.Round(starts[0].At.Seconds() * RecordRate))
			if d := got - off; d < 0 || d > 1 {
				t.Errorf("onset at sample %d (%d into its block), chunks of %d: stamped at sample %d (%+d samples)",
					off, off%block, chunk, got, d)
			}
			hist[got-off]++
		}
	}
	t.Logf("error in samples → onsets: %v", hist)
}
