// Package audiotest makes the test signals the audio and media tests share (speech-like voice,
// tones, level steps) and compares them; deterministic for a seed, so a failure reproduces.
package audiotest

import (
	"math"
	"math/rand"
)

// SpeechLike is a pitched harmonic signal with a wandering pitch and some noise, so a codec or an
// endpointer works the way it does on voice.
func SpeechLike(rate, n int, seed int64) []int16 {
	r := rand.New(rand.NewSource(seed))
	out := make([]int16, n)
	ph := 0.0
	for i := range out {
		tt := float64(i) / float64(rate)
		f0 := 140 + 40*math.Sin(2*math.Pi*1.3*tt)
		ph += 2 * math.Pi * f0 / float64(rate)
		v := 0.0
		for h := 1; h <= 8; h++ {
			v += math.Sin(float64(h)*ph) / float64(h)
		}
		out[i] = int16(5000*v + 300*r.NormFloat64())
	}
	return out
}

// Sine is n samples of a tone of hz at peak amplitude amp.
func Sine(rate, n int, hz, amp float64) []int16 {
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(amp * math.Sin(2*math.Pi*hz*float64(i)/float64(rate)))
	}
	return out
}

// Segments builds audio from (duration ms, RMS level dBFS) pieces of a 300 Hz tone; a level at or
// below -100 is digital silence.
func Segments(rate int, parts ...[2]float64) []int16 {
	var out []int16
	for _, p := range parts {
		n := int(p[0] * float64(rate) / 1000)
		amp := 0.0
		if p[1] > -100 {
			amp = 32768 * math.Pow(10, p[1]/20) * math.Sqrt2
		}
		for i := range n {
			out = append(out, int16(amp*math.Sin(2*math.Pi*300*float64(i)/float64(rate))))
		}
	}
	return out
}

// MaxAbs returns the largest sample magnitude (0 for digital silence).
func MaxAbs(x []int16) int {
	m := 0
	for _, v := range x {
		m = max(m, abs(int(v)))
	}
	return m
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// BestLag finds the lag (0..maxLag) at which y best matches x, and the normalized correlation.
func BestLag(x, y []int16, maxLag int) (int, float64) {
	best, bl := -2.0, 0
	for lag := 0; lag <= maxLag; lag++ {
		var num, dx, dy float64
		for i := 0; i+lag < len(y) && i < len(x); i++ {
			a, b := float64(x[i]), float64(y[i+lag])
			num += a * b
			dx += a * a
			dy += b * b
		}
		if c := num / math.Sqrt(dx*dy+1e-9); c > best {
			best, bl = c, lag
		}
	}
	return bl, best
}
