package condition

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// rng is SplitMix64: small, fast and the same everywhere, so a recipe's seed fixes every draw.
type rng struct{ s uint64 }

func newRNG(seed uint64) *rng { return &rng{s: seed} }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// float is uniform in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// between is uniform in [lo, hi).
func (r *rng) between(lo, hi float64) float64 { return lo + (hi-lo)*r.float() }

// intn is uniform in [0, n).
func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

// noise is uniform white noise in [-1, 1).
func (r *rng) noise() float64 { return 2*r.float() - 1 }

// generator builds one bed.
type generator struct {
	ctx context.Context
	r   Recipe
	sp  Speaker
	rng *rng
	n   int // samples
}

// sentences of every recipe text, in order.
func (g *generator) sentences() []string {
	var out []string
	for _, id := range g.r.Texts {
		out = append(out, splitSentences(publicDomain[id])...)
	}
	return out
}

func splitSentences(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		if c := text[i]; c == '.' || c == '?' || c == '!' || c == ';' {
			if s := strings.Join(strings.Fields(text[start:i+1]), " "); len(s) > 3 {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.Join(strings.Fields(text[start:]), " "); len(s) > 3 {
		out = append(out, s)
	}
	return out
}

// voice splits "slt@1.12" into the Flite voice and the speed it is played at.
func voice(v string) (string, float64) {
	name, speed, ok := strings.Cut(v, "@")
	if !ok {
		return v, 1
	}
	f, err := strconv.ParseFloat(speed, 64)
	if err != nil || f <= 0 {
		return name, 1
	}
	return name, f
}

// speak returns one sentence in a voice as floats, played at its speed (a tape-speed change:
// pitch and tempo together, a different-sounding talker).
func (g *generator) speak(v, text string) ([]float64, error) {
	if g.sp == nil {
		return nil, fmt.Errorf("%w: no speaker to read %q", ErrNoBed, text)
	}
	name, speed := voice(v)
	pcm, err := g.sp.Speak(g.ctx, name, text)
	if err != nil {
		return nil, err
	}
	x := make([]float64, len(pcm))
	for i, s := range pcm {
		x[i] = float64(s)
	}
	if speed == 1 {
		return x, nil
	}
	n := int(float64(len(x)) / speed)
	out := make([]float64, n)
	for i := range out {
		p := float64(i) * speed
		j := int(p)
		f := p - float64(j)
		a := x[min(j, len(x)-1)]
		b := x[min(j+1, len(x)-1)]
		out[i] = a + f*(b-a)
	}
	return out, nil
}

// talker reads sentences from start (round the list) in voice v, with pauses, until the track
// holds n samples; the track is normalised to unit RMS over its speech.
func (g *generator) talker(v string, sents []string, start, n int, minPause, maxPause float64) ([]float64, error) {
	track := make([]float64, 0, n)
	for i := start; len(track) < n; i++ {
		x, err := g.speak(v, sents[i%len(sents)])
		if err != nil {
			return nil, err
		}
		track = append(track, x...)
		pause := int(g.rng.between(minPause, maxPause) * Rate)
		track = append(track, make([]float64, pause)...)
	}
	track = track[:n]
	normalise(track, 0)
	return track, nil
}

// normalise scales x to an RMS of level dBFS (0 dBFS: full-scale sine RMS of 32768).
func normalise(x []float64, level float64) {
	var s float64
	for _, v := range x {
		s += v * v
	}
	if s == 0 {
		return
	}
	r := math.Sqrt(s / float64(len(x)))
	k := 32768 * math.Pow(10, level/20) / r
	for i := range x {
		x[i] *= k
	}
}

func addScaled(dst, src []float64, at int, gain float64) {
	for i, v := range src {
		if j := at + i; j >= 0 && j < len(dst) {
			dst[j] += gain * v
		}
	}
}

func filter(x []float64, sections ...biquad) {
	for i, v := range x {
		for k := range sections {
			v = sections[k].step(v)
		}
		x[i] = v
	}
}

func lowpass(f, q, fs float64) biquad {
	w := 2 * math.Pi * f / fs
	alpha := math.Sin(w) / (2 * q)
	cw := math.Cos(w)
	a0 := 1 + alpha
	return biquad{b0: (1 - cw) / 2 / a0, b1: (1 - cw) / a0, b2: (1 - cw) / 2 / a0, a1: -2 * cw / a0, a2: (1 - alpha) / a0}
}

func bandpass(f, q, fs float64) biquad {
	w := 2 * math.Pi * f / fs
	alpha := math.Sin(w) / (2 * q)
	cw := math.Cos(w)
	a0 := 1 + alpha
	return biquad{b0: alpha / a0, b1: 0, b2: -alpha / a0, a1: -2 * cw / a0, a2: (1 - alpha) / a0}
}

// babble: several talkers at once, each reading from a different place in the texts.
func (g *generator) babble() ([]float64, error) {
	sents := g.sentences()
	out := make([]float64, g.n)
	for k, v := range g.r.Voices {
		t, err := g.talker(v, sents, k*len(sents)/len(g.r.Voices), g.n, 0.15, 0.6)
		if err != nil {
			return nil, err
		}
		addScaled(out, t, 0, 1)
	}
	return out, nil
}

// television: talk, jingles and applause in a random order, music under some of the talk, all
// through a small loudspeaker's band.
func (g *generator) television() ([]float64, error) {
	sents := g.sentences()
	out := make([]float64, g.n)
	next := g.rng.intn(len(sents))
	for at := 0; at < g.n; {
		switch p := g.rng.float(); {
		case p < 0.6: // talk: two presenters taking turns
			dur := int(g.rng.between(6, 14) * Rate)
			talk := make([]float64, 0, dur)
			turn := g.rng.intn(2)
			for len(talk) < dur {
				v := g.r.Voices[turn%2+2*g.rng.intn(len(g.r.Voices)/2)]
				for k := 1 + g.rng.intn(2); k > 0 && len(talk) < dur; k-- {
					x, err := g.speak(v, sents[next%len(sents)])
					if err != nil {
						return nil, err
					}
					next++
					talk = append(talk, x...)
					talk = append(talk, make([]float64, int(g.rng.between(0.1, 0.35)*Rate))...)
				}
				turn++
			}
			normalise(talk, 0)
			addScaled(out, talk, at, 1)
			if g.rng.float() < 0.3 {
				addScaled(out, g.music(len(talk)), at, 0.2)
			}
			at += len(talk)
		case p < 0.85:
			m := g.music(int(g.rng.between(4, 8) * Rate))
			addScaled(out, m, at, 0.9)
			at += len(m)
		default:
			a := g.applause(int(g.rng.between(2.5, 5) * Rate))
			addScaled(out, a, at, 0.8)
			at += len(a)
		}
		at += int(g.rng.between(0.05, 0.3) * Rate)
	}
	filter(out, highpass(150, 0.707, Rate), lowpass(7000, 0.707, Rate))
	return out, nil
}

// music is a jingle: a I–V–vi–IV progression of harmonic-tone chords with a bass note and a
// pentatonic melody, at a random tempo; unit RMS.
func (g *generator) music(n int) []float64 {
	out := make([]float64, n)
	bpm := g.rng.between(96, 132)
	beat := int(60 / bpm * Rate)
	root := 48 + g.rng.intn(7) // MIDI note of the key
	chords := [][3]int{{0, 4, 7}, {7, 11, 14}, {9, 12, 16}, {5, 9, 12}}
	penta := []int{0, 2, 4, 7, 9, 12, 14, 16}
	mel := g.rng.intn(len(penta))
	for b, at := 0, 0; at < n; b, at = b+1, at+beat {
		ch := chords[(b/4)%len(chords)]
		for _, iv := range ch {
			tone(out, at, 4*beat, midiHz(root+12+iv), 0.18, 0.05, 1.5)
		}
		if b%2 == 0 {
			tone(out, at, 2*beat, midiHz(root-12+ch[0]), 0.35, 0.01, 3)
		}
		mel = max(0, min(len(penta)-1, mel+g.rng.intn(5)-2))
		if g.rng.float() < 0.8 {
			tone(out, at, beat, midiHz(root+24+penta[mel]), 0.3, 0.005, 6)
		}
	}
	normalise(out, 0)
	return out
}

func midiHz(note int) float64 { return 440 * math.Pow(2, float64(note-69)/12) }

// tone adds a note of n samples from at: three harmonics, attack of attackS seconds, then an
// exponential decay of rate decay per second.
func tone(dst []float64, at, n int, hz, amp, attackS, decay float64) {
	att := max(1, int(attackS*Rate))
	for i := 0; i < n && at+i < len(dst); i++ {
		t := float64(i) / Rate
		env := math.Exp(-decay * t)
		if i < att {
			env *= float64(i) / float64(att)
		}
		if rem := n - i; rem < 240 { // 10 ms release: no click
			env *= float64(rem) / 240
		}
		w := 2 * math.Pi * hz * t
		dst[at+i] += amp * env * (math.Sin(w) + 0.5*math.Sin(2*w) + 0.25*math.Sin(3*w))
	}
}

// applause is a crowd clapping: many short noise bursts through resonances of hands, their rate
// swelling and dying away; unit RMS.
func (g *generator) applause(n int) []float64 {
	out := make([]float64, n)
	rise, fall := 0.3*Rate, 0.8*Rate
	rate := g.rng.between(35, 60) // claps a second at full swell
	for i := 0; i < n; {
		env := 1.0
		if float64(i) < rise {
			env = float64(i) / rise
		}
		if rem := float64(n - i); rem < fall {
			env = min(env, rem/fall)
		}
		gap := -math.Log(1-g.rng.float()) / (rate * max(env, 0.05)) * Rate
		i += max(1, int(gap))
		if i >= n {
			break
		}
		clapLen := int(g.rng.between(0.008, 0.025) * Rate)
		bp := bandpass(g.rng.between(700, 2500), g.rng.between(1, 3), Rate)
		amp := g.rng.between(0.5, 1) * env
		for k := 0; k < clapLen && i+k < n; k++ {
			v := bp.step(g.rng.noise() * math.Exp(-float64(k)/float64(clapLen)*4))
			out[i+k] += amp * v
		}
	}
	normalise(out, 0)
	return out
}

// street: traffic rumble, passing vehicles, horns and two distant talkers.
func (g *generator) street() ([]float64, error) {
	out := make([]float64, g.n)
	// Rumble: leaky-integrated white noise, low-passed, slowly swelling.
	lp := lowpass(200, 0.707, Rate)
	rumble := make([]float64, g.n)
	brown := 0.0
	modHz, modPh := g.rng.between(0.05, 0.2), g.rng.between(0, 2*math.Pi)
	for i := range rumble {
		brown = 0.995*brown + 0.1*g.rng.noise()
		rumble[i] = lp.step(brown) * (1 + 0.4*math.Sin(2*math.Pi*modHz*float64(i)/Rate+modPh))
	}
	normalise(rumble, 0)
	addScaled(out, rumble, 0, 0.6)
	// Vehicles passing.
	for at := int(g.rng.between(0, 3) * Rate); at < g.n; at += int(g.rng.between(3, 9) * Rate) {
		n := int(g.rng.between(3, 6) * Rate)
		v := make([]float64, n)
		engine := g.rng.between(40, 90)
		ph := 0.0
		for i := range v {
			pos := float64(i) / float64(n) // 0 → 1: approach, pass, recede
			env := 0.5 - 0.5*math.Cos(2*math.Pi*pos)
			doppler := 1 + 0.05*math.Tanh(6*(0.5-pos)) // pitch falls as it passes
			ph += 2 * math.Pi * engine * doppler / Rate
			hum := math.Sin(ph) + 0.5*math.Sin(2*ph) + 0.3*math.Sin(3*ph)
			v[i] = env * (0.7*g.rng.noise()*env + 0.3*hum) // tyre noise brightens as it nears
		}
		filter(v, lowpass(1200, 0.707, Rate))
		normalise(v, 0)
		addScaled(out, v, at, g.rng.between(0.5, 1.1))
	}
	// Horns.
	for at := int(g.rng.between(5, 20) * Rate); at < g.n; at += int(g.rng.between(15, 40) * Rate) {
		n := int(g.rng.between(0.3, 0.8) * Rate)
		h := make([]float64, n)
		tone(h, 0, n, g.rng.between(380, 440), 0.5, 0.01, 0.5)
		tone(h, 0, n, g.rng.between(470, 520), 0.5, 0.01, 0.5)
		normalise(h, 0)
		addScaled(out, h, at, 0.7)
	}
	// Distant talkers.
	sents := g.sentences()
	for k, v := range g.r.Voices {
		t, err := g.talker(v, sents, (2*k+1)*len(sents)/(2*len(g.r.Voices)), g.n, 0.5, 2.5)
		if err != nil {
			return nil, err
		}
		filter(t, lowpass(3000, 0.707, Rate))
		addScaled(out, t, 0, 0.15)
	}
	return out, nil
}
