package audio

import (
	"fmt"
	"math"
	"time"
)

// Resampler converts a mono 16-bit stream between two rates with a rational ratio (24 kHz to
// 16 kHz is 2/3) by a streaming polyphase windowed-sinc FIR. Its state carries across calls, so
// a stream cut into 40 ms frames converts exactly as if it were processed whole, and its fixed,
// linear-phase delay (Delay) is subtracted once when the output is stamped on the media clock.
type Resampler struct {
	from, to int
	l, m     int         // upsample by l, downsample by m
	taps     int         // coefficients per phase
	coef     [][]float32 // [phase][tap], tap 0 multiplies the newest input sample
	buf      []float32   // the last taps-1 inputs followed by the current block
	next     int64       // index (in the upsampled grid) of the next output sample
	seen     int64       // input samples consumed so far
	half     int         // group delay in upsampled samples (a multiple of l and m)
	delay    time.Duration
}

// resamplerHalfWidth is the filter's half length in zero crossings of the cutoff; with the Kaiser
// window below it gives about 70 dB of stopband and a 0.875 ms delay for 24 kHz to 16 kHz.
const (
	resamplerHalfWidth  = 12
	resamplerKaiserBeta = 7.0
	resamplerPassband   = 0.90 // cutoff as a fraction of the lower Nyquist frequency
)

// NewResampler builds a converter from one sample rate to another.
func NewResampler(from, to int) (*Resampler, error) {
	if from <= 0 || to <= 0 {
		return nil, fmt.Errorf("resampler: %w: rates %d -> %d", ErrBadConfig, from, to)
	}
	g := gcd(from, to)
	l, m := to/g, from/g
	if l > 64 || m > 64 {
		return nil, fmt.Errorf("resampler: %w: ratio %d/%d is not a small rational", ErrBadConfig, l, m)
	}
	up := from * l // rate of the upsampled grid
	fc := resamplerPassband * float64(min(from, to)) / 2 / float64(up)
	// Half length in upsampled samples: resamplerHalfWidth zero crossings of the cutoff, rounded
	// up to a multiple of l and m so the delay is a whole number of input and output samples.
	step := l * m / gcd(l, m)
	half := int(math.Ceil(resamplerHalfWidth/(2*fc)/float64(step))) * step
	k := 2*half + 1 // odd length: integer group delay of half samples
	taps := (k + l - 1) / l
	h := make([]float64, taps*l)
	i0 := bessel0(resamplerKaiserBeta)
	for i := range k {
		x := float64(i - half)
		s := 2 * fc
		if x != 0 {
			s = math.Sin(2*math.Pi*fc*x) / (math.Pi * x)
		}
		r := x / float64(half)
		w := bessel0(resamplerKaiserBeta*math.Sqrt(max(0, 1-r*r))) / i0
		h[i] = s * w * float64(l) // gain l makes up for the zeros inserted by upsampling
	}
	coef := make([][]float32, l)
	for p := range l {
		coef[p] = make([]float32, taps)
		for q := range taps {
			coef[p][q] = float32(h[p+q*l])
		}
	}
	return &Resampler{
		from: from, to: to, l: l, m: m, taps: taps, coef: coef,
		buf:   make([]float32, taps-1, taps-1+from/10),
		half:  half,
		delay: time.Duration(half) * time.Second / time.Duration(up),
	}, nil
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// bessel0 is the zeroth-order modified Bessel function of the first kind (for the Kaiser window).
func bessel0(x float64) float64 {
	sum, term := 1.0, 1.0
	for k := 1; k < 50; k++ {
		term *= (x / 2) / float64(k)
		sum += term * term
		if term*term < 1e-12*sum {
			break
		}
	}
	return sum
}

// Delay is the converter's group delay: output sample n carries the input that was at media time
// n/to − Delay, a whole number of samples at both rates (0.875 ms for 24 kHz to 16 kHz).
func (r *Resampler) Delay() time.Duration { return r.delay }

// DelaySamples is Delay in samples of the output rate (a whole number by construction).
func (r *Resampler) DelaySamples() int { return r.half / r.m }

// OutLen returns how many output samples the next Process call with n input samples produces.
func (r *Resampler) OutLen(n int) int {
	end := (r.seen + int64(n)) * int64(r.l) // outputs at upsampled t < end have their input
	if end <= r.next {
		return 0
	}
	return int((end - r.next + int64(r.m) - 1) / int64(r.m))
}

// Process converts in and appends the output to out[:0], returning it. For 40 ms blocks whose
// length is a multiple of the ratio's denominator every call produces the same number of samples.
// It allocates only when a block is longer than any seen before.
func (r *Resampler) Process(in []int16, out []int16) []int16 {
	out = out[:0]
	hist := r.taps - 1
	r.buf = r.buf[:hist]
	for _, s := range in {
		r.buf = append(r.buf, float32(s))
	}
	base := r.seen - int64(hist) // input index of buf[0]
	r.seen += int64(len(in))
	l, m := int64(r.l), int64(r.m)
	for {
		// Output at upsampled index t uses inputs t/l, t/l-1, …; t/l must already be in.
		t := r.next
		i := t / l
		if i >= r.seen {
			break
		}
		c := r.coef[t%l]
		j := int(i - base) // position of input i in buf
		var acc float32
		for q, cq := range c {
			acc += cq * r.buf[j-q]
		}
		out = append(out, clamp16(acc))
		r.next += m
	}
	// Keep the last taps-1 inputs for the next call.
	copy(r.buf, r.buf[len(r.buf)-hist:])
	r.buf = r.buf[:hist]
	return out
}

// Reset forgets the stream's history (a new, unrelated stream follows).
func (r *Resampler) Reset() {
	r.buf = r.buf[:r.taps-1]
	clear(r.buf)
	r.next, r.seen = 0, 0
}

func clamp16(v float32) int16 {
	switch {
	case v >= 32767:
		return 32767
	case v <= -32768:
		return -32768
	case v >= 0:
		return int16(v + 0.5)
	default:
		return int16(v - 0.5)
	}
}

// ResampleClip converts a whole mono clip between rates, removing the resampler's fixed delay so
// the output starts where the input does and lasts as long.
func ResampleClip(in []int16, from, to int) ([]int16, error) {
	if from == to {
		return append([]int16(nil), in...), nil
	}
	r, err := NewResampler(from, to)
	if err != nil {
		return nil, fmt.Errorf("resample %d Hz to %d Hz: %w", from, to, err)
	}
	delay := r.DelaySamples()
	padded := make([]int16, len(in)+delay*from/to+2)
	copy(padded, in)
	out := r.Process(padded, nil)
	want := int(int64(len(in)) * int64(to) / int64(from))
	if len(out) < delay+want {
		want = len(out) - delay
	}
	return out[delay : delay+want], nil
}
