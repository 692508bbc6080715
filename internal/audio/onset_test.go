package audio_test

import (
	"context"
	"math"
	"os/exec"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/tts"
)

// speechFrom cuts a rendering so that it starts at a known first voiced sample: the first sample
// reaching the threshold level from which ten consecutive 10 ms windows (MinSpeech) all reach the
// threshold RMS. Whatever came before (breath, a soft consonant that never reaches the threshold
// over 10 ms) is dropped, so sample 0 of the result is where its speech starts.
func speechFrom(pcm []int16, rate int, dbfs float64) []int16 {
	thr := 32768 * 32768 * math.Pow(10, dbfs/10)
	sums := make([]float64, len(pcm)+1)
	for i, v := range pcm {
		sums[i+1] = sums[i] + float64(v)*float64(v)
	}
	blk := rate / 100
	sustained := func(i int) bool {
		for k := range 10 {
			a, b := i+k*blk, i+(k+1)*blk
			if b > len(pcm) || sums[b]-sums[a] < thr*float64(blk) {
				return false
			}
		}
		return true
	}
	for i := range pcm {
		if math.Abs(float64(pcm[i])) >= math.Sqrt(thr) && sustained(i) {
			return pcm[i:]
		}
	}
	return nil
}

// TestOnsetsToTheSampleOnRenderedSpeech places Flite speech with a known first voiced sample (see
// speechFrom) after silence, at offsets that put it at every position within the 10 ms analysis
// block and in every phase of the 40 ms tick, and checks that each speech start is stamped within
// 1 ms of that sample, as the caller, agent and barge-in onsets of a call are (all three come from
// this endpointer). On the 10 ms grid the onset was the start of a block: up to 10 ms early.
func TestOnsetsToTheSampleOnRenderedSpeech(t *testing.T) {
	if _, err := exec.LookPath(tts.DefaultBinary); err != nil {
		t.Skipf("flite missing (%v): scripts/deps.sh installs it", err)
	}
	f := &tts.Flite{Rate: audio.RecordRate}
	cfg := audio.EndpointerConfig{} // the defaults every call uses: -45 dBFS, 100 ms of voice
	worst := time.Duration(0)
	for _, voice := range []string{"slt", "rms", "awb", "kal16"} {
		for _, text := range []string{"Hello, I need to move my appointment.", "Yes.", "Sure, go ahead.",
			"Four two seven.", "Thanks, bye.", "What was that?", "Hmm, no.", "Fine."} {
			pcm, err := f.Speak(context.Background(), voice, text)
			if err != nil {
				t.Fatal(err)
			}
			pcm = speechFrom(pcm, audio.RecordRate, -45)
			if len(pcm) == 0 {
				t.Fatalf("%s %q never holds -45 dBFS for 100 ms", voice, text)
			}
			for k := range 16 {
				// Offsets 0.5 s + k·(10 ms + 37 samples): the speech lands 37 samples further on in
				// the 10 ms block each time, across two and a half ticks.
				off := audio.RecordRate/2 + k*(audio.RecordRate/100+37)
				sig := make([]int16, off+len(pcm)+audio.RecordRate)
				copy(sig[off:], pcm)
				ep, err := audio.NewEndpointer(cfg)
				if err != nil {
					t.Fatal(err)
				}
				at := time.Duration(-1)
				for o := 0; o < len(sig); o += audio.FrameSamples { // 40 ms frames, as the tick feeds it
					blk := sig[o:min(o+audio.FrameSamples, len(sig))]
					ep.Process(blk, audio.RecordRate, audio.SamplesToDuration(int64(o), audio.RecordRate), func(ev audio.SpeechEvent) {
						if ev.Start && at < 0 {
							at = ev.At
						}
					})
				}
				want := audio.SamplesToDuration(int64(off), audio.RecordRate)
				d := at - want
				if d < 0 {
					d = -d
				}
				worst = max(worst, d)
				if at < 0 || d > time.Millisecond {
					t.Errorf("%s %q at +%d samples: onset %v, first voiced sample at %v (off by %v)", voice, text, off, at, want, at-want)
				}
			}
		}
	}
	t.Logf("largest distance from the first voiced sample: %v", worst)
}
