package condition

import "math"

// The telephone line: the caller's 24 kHz audio is low-passed and decimated to 8 kHz, high-passed
// at 300 Hz (the 300–3400 Hz telephone band), coded with G.711 μ-law and decoded, and
// interpolated back to 24 kHz through the same low-pass, so the caller channel carries nothing
// above the 8 kHz line's 4 kHz Nyquist frequency (the filter's stopband, from 3.9 kHz, is at
// least 85 dB down).
const (
	phoneRate      = 8000
	phoneFactor    = Rate / phoneRate
	phonePassHz    = 3400.0
	phoneStopHz    = 3900.0
	phoneHighHz    = 300.0
	phoneTaps      = 287 // odd: a whole-sample group delay of 143 samples at 24 kHz
	phoneKaiserAtt = 90.0
)

// PhoneDelay is the fixed delay (24 kHz samples) the telephone line adds to the caller channel:
// the group delay of its two linear-phase filters (the 300 Hz high-pass adds a little more at low
// frequencies, as a real line does).
const PhoneDelay = phoneTaps - 1

// phoneFilter is the low-pass shared by the decimator and the interpolator: a Kaiser-windowed
// sinc at 24 kHz with its cutoff midway between the pass and stop edges.
var phoneFilter = kaiserLowpass(phoneTaps, (phonePassHz+phoneStopHz)/2/Rate, phoneKaiserAtt)

func kaiserLowpass(n int, fc, attDB float64) []float64 {
	beta := 0.1102 * (attDB - 8.7)
	h := make([]float64, n)
	mid := float64(n-1) / 2
	i0 := bessel0(beta)
	sum := 0.0
	for i := range h {
		x := float64(i) - mid
		s := 2 * fc
		if x != 0 {
			s = math.Sin(2*math.Pi*fc*x) / (math.Pi * x)
		}
		r := x / mid
		h[i] = s * bessel0(beta*math.Sqrt(max(0, 1-r*r))) / i0
		sum += h[i]
	}
	for i := range h {
		h[i] /= sum // unity gain at DC
	}
	return h
}

func bessel0(x float64) float64 {
	sum, term := 1.0, 1.0
	for k := 1; k < 64; k++ {
		term *= (x / 2) / float64(k)
		sum += term * term
		if term*term < sum*1e-17 {
			break
		}
	}
	return sum
}

// biquad is one second-order section (direct form I), its state kept across frames.
type biquad struct {
	b0, b1, b2, a1, a2 float64
	x1, x2, y1, y2     float64
}

// highpass returns the RBJ high-pass section at f Hz and quality q for sample rate fs.
func highpass(f, q, fs float64) biquad {
	w := 2 * math.Pi * f / fs
	alpha := math.Sin(w) / (2 * q)
	cw := math.Cos(w)
	a0 := 1 + alpha
	return biquad{b0: (1 + cw) / 2 / a0, b1: -(1 + cw) / a0, b2: (1 + cw) / 2 / a0, a1: -2 * cw / a0, a2: (1 - alpha) / a0}
}

func (b *biquad) step(x float64) float64 {
	y := b.b0*x + b.b1*b.x1 + b.b2*b.x2 - b.a1*b.y1 - b.a2*b.y2
	b.x2, b.x1 = b.x1, x
	b.y2, b.y1 = b.y1, y
	return y
}

// phoneLine is the streaming telephone line of one call.
type phoneLine struct {
	in  []float64 // last phoneTaps 24 kHz input samples (circular)
	pos int
	n   int64 // 24 kHz samples consumed

	hp [2]biquad // 4th-order Butterworth high-pass at 300 Hz, 8 kHz

	up    []float64 // last (phoneTaps+2)/3 8 kHz line samples (circular)
	upPos int
}

func newPhoneLine() *phoneLine {
	return &phoneLine{
		in: make([]float64, phoneTaps),
		hp: [2]biquad{highpass(phoneHighHz, 0.54119610, phoneRate), highpass(phoneHighHz, 1.3065630, phoneRate)},
		up: make([]float64, (phoneTaps+phoneFactor-1)/phoneFactor),
	}
}

// process runs x (24 kHz, any length) through the line in place. The decimation phase follows
// the samples consumed, so frames of any size give the same output.
func (p *phoneLine) process(x []float64) {
	for i, v := range x {
		p.in[p.pos] = v
		p.pos = (p.pos + 1) % len(p.in)
		if p.n%phoneFactor == 0 {
			// One 8 kHz sample: filter and decimate, band-limit, code and decode.
			acc := 0.0
			j := p.pos // oldest sample
			for k := len(phoneFilter) - 1; k >= 0; k-- {
				acc += phoneFilter[k] * p.in[j]
				j++
				if j == len(p.in) {
					j = 0
				}
			}
			acc = p.hp[1].step(p.hp[0].step(acc))
			line := float64(ulawDecode(ulawEncode(clip16(acc))))
			p.up[p.upPos] = line
			p.upPos = (p.upPos + 1) % len(p.up)
		}
		// One 24 kHz output sample: interpolate the line samples (zero-stuffed by 3, gain 3).
		phase := int(p.n % phoneFactor) // samples since the newest line sample
		acc := 0.0
		j := p.upPos - 1
		for k := phase; k < len(phoneFilter); k += phoneFactor {
			if j < 0 {
				j += len(p.up)
			}
			acc += phoneFilter[k] * p.up[j]
			j--
		}
		x[i] = phoneFactor * acc
		p.n++
	}
}

func clip16(v float64) int16 {
	r := math.Round(v)
	switch {
	case r > math.MaxInt16:
		return math.MaxInt16
	case r < math.MinInt16:
		return math.MinInt16
	}
	return int16(r)
}

// G.711 μ-law (ITU-T G.711, the 16-bit form with bias 0x84 and clip 32635).
const (
	ulawBias = 0x84
	ulawClip = 32635
)

// ulawEncode codes one linear sample as a μ-law byte.
func ulawEncode(s int16) byte {
	x := int(s)
	sign := 0
	if x < 0 {
		x, sign = -x, 0x80
	}
	if x > ulawClip {
		x = ulawClip
	}
	x += ulawBias
	exp := 7
	for mask := 0x4000; exp > 0 && x&mask == 0; mask >>= 1 {
		exp--
	}
	mant := (x >> (exp + 3)) & 0x0F
	return ^byte(sign | exp<<4 | mant)
}

// ulawDecode returns the linear sample of a μ-law byte.
func ulawDecode(u byte) int16 {
	u = ^u
	exp := int(u>>4) & 7
	mant := int(u & 0x0F)
	x := ((mant << 3) + ulawBias) << exp
	x -= ulawBias
	if u&0x80 != 0 {
		return int16(-x)
	}
	return int16(x)
}
