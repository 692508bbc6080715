package audio

import (
	"math"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/audio/audiotest"
)

var sine = audiotest.Sine

func rmsOf(x []int16) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(max(1, len(x))))
}

func TestResamplerRatios(t *testing.T) {
	for _, c := range []struct {
		from, to int
		delay    time.Duration
	}{
		{24000, 16000, 875 * time.Microsecond},
		{48000, 24000, 0},
		{48000, 16000, 0},
		{16000, 24000, 0},
	} {
		r, err := NewResampler(c.from, c.to)
		if err != nil {
			t.Fatal(err)
		}
		if c.delay != 0 && r.Delay() != c.delay {
			t.Errorf("%d->%d: delay %v, want %v", c.from, c.to, r.Delay(), c.delay)
		}
		// Delay must be a whole number of output samples so alignment is exact.
		if got := time.Duration(r.DelaySamples()) * time.Second / time.Duration(c.to); got != r.Delay().Round(time.Second/time.Duration(c.to)) && got != r.Delay() {
			t.Errorf("%d->%d: %d delay samples disagree with Delay %v", c.from, c.to, r.DelaySamples(), r.Delay())
		}
		in := c.from / 25 // 40 ms
		want := c.to / 25
		var out []int16
		for i := range 10 {
			if n := r.OutLen(in); n != want {
				t.Fatalf("%d->%d block %d: OutLen %d, want %d", c.from, c.to, i, n, want)
			}
			out = r.Process(make([]int16, in), out)
			if len(out) != want {
				t.Fatalf("%d->%d block %d: %d samples, want %d", c.from, c.to, i, len(out), want)
			}
		}
	}
	if _, err := NewResampler(44100, 16001); err == nil {
		t.Fatal("irrational-looking ratio accepted")
	}
}

// TestResamplerTracksSineWithDelay checks passband accuracy and that Delay is the true delay: a
// 1 kHz tone comes out as the same tone shifted by exactly Delay.
func TestResamplerTracksSineWithDelay(t *testing.T) {
	r, _ := NewResampler(24000, 16000)
	in := sine(24000, 24000, 1000, 10000)
	var out []int16
	for off := 0; off < len(in); off += 960 {
		out = append(out, r.Process(in[off:off+960], nil)...)
	}
	d := r.Delay().Seconds()
	var errE, sigE float64
	for n := 800; n < len(out); n++ {
		want := 10000 * math.Sin(2*math.Pi*1000*(float64(n)/16000-d))
		e := float64(out[n]) - want
		errE += e * e
		sigE += want * want
	}
	snr := 10 * math.Log10(sigE/errE)
	t.Logf("1 kHz through 24k->16k: SNR %.1f dB against the ideal tone delayed by %v", snr, r.Delay())
	if snr < 55 {
		t.Fatalf("SNR %.1f dB, want >= 55", snr)
	}
}

func TestResamplerRejectsAliases(t *testing.T) {
	r, _ := NewResampler(24000, 16000)
	in := sine(24000, 24000, 9500, 10000) // above the 8 kHz output Nyquist
	out := r.Process(in, nil)
	att := 20 * math.Log10(rmsOf(out[400:])/rmsOf(in))
	t.Logf("9.5 kHz tone attenuated by %.1f dB", -att)
	if att > -50 {
		t.Fatalf("alias only %.1f dB down, want <= -50", att)
	}
}

func TestResamplerBlocksEqualWhole(t *testing.T) {
	in := sine(24000, 9600, 440, 12000)
	for i := range in {
		in[i] += int16(i % 97) // break periodicity
	}
	whole, _ := NewResampler(24000, 16000)
	want := whole.Process(in, nil)
	blocks, _ := NewResampler(24000, 16000)
	var got []int16
	for off := 0; off < len(in); off += 960 {
		got = append(got, blocks.Process(in[off:off+960], nil)...)
	}
	if len(got) != len(want) {
		t.Fatalf("blocks gave %d samples, whole %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("sample %d: blocks %d, whole %d", i, got[i], want[i])
		}
	}
}

func BenchmarkResample24to16Frame(b *testing.B) {
	r, _ := NewResampler(24000, 16000)
	in := sine(24000, 960, 440, 12000)
	out := make([]int16, 0, 640)
	b.ReportAllocs()
	for b.Loop() {
		out = r.Process(in, out)
	}
}

// TestResamplerImpulseLandsAtDelay: an impulse at input time t comes out peaking at output time
// t + Delay, for every ratio the engine may use.
func TestResamplerImpulseLandsAtDelay(t *testing.T) {
	for _, c := range [][2]int{{24000, 16000}, {48000, 24000}, {48000, 16000}, {16000, 24000}} {
		r, _ := NewResampler(c[0], c[1])
		in := make([]int16, c[0]/5)
		at := c[0] / 10 // 100 ms
		in[at] = 20000
		out := r.Process(in, nil)
		peak := 0
		for i := range out {
			if abs16(out[i]) > abs16(out[peak]) {
				peak = i
			}
		}
		want := c[1]/10 + r.DelaySamples()
		if peak != want {
			t.Errorf("%d->%d: impulse peak at output %d, want %d (delay %d samples)", c[0], c[1], peak, want, r.DelaySamples())
		}
	}
}

func abs16(v int16) int {
	if v < 0 {
		return -int(v)
	}
	return int(v)
}
