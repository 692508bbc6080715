package condition

import (
	"context"
	"math"
	"math/cmplx"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/tts"
)

func TestParseAndString(t *testing.T) {
	tests := []struct {
		in, want string
		name     string
		level    string
	}{
		{"quiet", "quiet", "quiet", ""},
		{"phone_line", "phone_line", "phone_line", ""},
		{"background_tv", "background_tv@10", "background_tv", "10"},
		{"Background_TV@5dB", "background_tv@5", "background_tv", "5"},
		{"background_tv+phone_line@0", "phone_line+background_tv@0", "phone_line+background_tv", "0"},
		{" babble @ -3 ", "babble@-3", "babble", "-3"},
		{"street@12.5", "street@12.5", "street", "12.5"},
	}
	for _, tt := range tests {
		s, err := Parse(tt.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.in, err)
		}
		if s.String() != tt.want || s.Name() != tt.name || s.Level() != tt.level {
			t.Errorf("Parse(%q) = %q (name %q, level %q), want %q (%q, %q)", tt.in, s, s.Name(), s.Level(), tt.want, tt.name, tt.level)
		}
		back, err := Parse(s.String())
		if err != nil || back != s {
			t.Errorf("round trip of %q: %v %v", s, back, err)
		}
	}
	for _, bad := range []string{"", "loud", "quiet+babble", "babble+street", "phone_line+phone_line", "phone_line@10", "quiet@3", "babble@x", "babble@99"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q): no error", bad)
		}
	}
	if l, err := ParseList("quiet, background_tv@10"); err != nil || len(l) != 2 || l[1].SNR != 10 {
		t.Errorf("ParseList: %v %v", l, err)
	}
	if _, err := ParseList("babble,babble@10"); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate condition: %v", err)
	}
}

func TestULaw(t *testing.T) {
	if ulawEncode(0) != 0xFF || ulawDecode(0xFF) != 0 {
		t.Errorf("zero: %#x → %d", ulawEncode(0), ulawDecode(0xFF))
	}
	if got := ulawDecode(ulawEncode(32767)); got != 32124 {
		t.Errorf("full scale decodes to %d, want 32124", got)
	}
	if got := ulawDecode(ulawEncode(-32768)); got != -32124 {
		t.Errorf("negative full scale decodes to %d, want -32124", got)
	}
	// Logarithmic: the relative error stays below 1/32 above the first segments.
	for _, x := range []int16{100, 1000, 5000, 20000, -7000} {
		got := ulawDecode(ulawEncode(x))
		if rel := math.Abs(float64(got-x)) / math.Abs(float64(x)); rel > 1.0/16 {
			t.Errorf("%d decodes to %d (error %.3f)", x, got, rel)
		}
	}
	// Every code decodes and re-encodes to itself (except the two zeros).
	for c := 0; c < 256; c++ {
		if c == 0x7F {
			continue // negative zero encodes as positive zero
		}
		if back := ulawEncode(ulawDecode(byte(c))); back != byte(c) {
			t.Errorf("code %#x → %d → %#x", c, ulawDecode(byte(c)), back)
		}
	}
}

// spectrum returns the power spectrum of x (Hann window), bin k at k·Rate/len(x).
func spectrum(x []float64) []float64 {
	n := len(x)
	a := make([]complex128, n)
	for i, v := range x {
		w := 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(n))
		a[i] = complex(v*w, 0)
	}
	fft(a)
	p := make([]float64, n/2)
	for k := range p {
		p[k] = cmplx.Abs(a[k]) * cmplx.Abs(a[k])
	}
	return p
}

func fft(a []complex128) {
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

// bandShare is the fraction of x's power between lo and hi Hz.
func bandShare(x []int16, lo, hi float64) float64 {
	const n = 8192
	var in, all float64
	for off := 0; off+n <= len(x); off += n {
		f := make([]float64, n)
		for i := range f {
			f[i] = float64(x[off+i])
		}
		for k, p := range spectrum(f) {
			hz := float64(k) * Rate / n
			all += p
			if hz >= lo && hz < hi {
				in += p
			}
		}
	}
	return in / all
}

func whiteNoise(n int, seed uint64, amp float64) []int16 {
	r := newRNG(seed)
	x := make([]int16, n)
	for i := range x {
		x[i] = int16(amp * r.noise())
	}
	return x
}

// frames runs pcm through p in 40 ms frames, as the media tick does.
func frames(p *Processor, pcm []int16) []int16 {
	out := slices.Clone(pcm)
	for i := 0; i < len(out); i += 960 {
		p.Condition(out[i:min(i+960, len(out))], int64(i))
	}
	return out
}

func TestPhoneLineHasNoEnergyAbove4kHz(t *testing.T) {
	in := whiteNoise(8*Rate, 1, 8000) // flat to 12 kHz: two thirds of its power is above 4 kHz
	if share := bandShare(in, 4000, Rate/2); share < 0.6 {
		t.Fatalf("input share above 4 kHz %.3f", share)
	}
	p, err := NewProcessor(MustParse("phone_line"), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	out := frames(p, in)
	above := bandShare(out, 4000, Rate/2)
	band := bandShare(out, 300, 3400)
	t.Logf("phone line: share above 4 kHz %.2e (%.1f dB), in 300–3400 Hz %.3f", above, 10*math.Log10(above), band)
	if above > 1e-6 {
		t.Errorf("share of power above 4 kHz %.2e, want below 1e-6 (-60 dB)", above)
	}
	if band < 0.9 {
		t.Errorf("share of power in the telephone band %.3f, want at least 0.9", band)
	}
	if low := bandShare(out, 0, 150); low > 0.01 {
		t.Errorf("share below 150 Hz %.3f: the 300 Hz high-pass does not cut", low)
	}
}

func TestPhoneLinePassesSpeechBandWithFixedDelay(t *testing.T) {
	// A 1 kHz tone comes out at its level (within μ-law's error).
	n := Rate
	in := make([]int16, n)
	for i := range in {
		in[i] = int16(10000 * math.Sin(2*math.Pi*1000*float64(i)/Rate))
	}
	p, _ := NewProcessor(MustParse("phone_line"), nil, 1)
	out := frames(p, in)
	if gain := math.Pow(10, (rmsDBFS(out[n/2:])-rmsDBFS(in[n/2:]))/20); math.Abs(gain-1) > 0.03 {
		t.Errorf("gain at 1 kHz %.3f, want about 1", gain)
	}
	// Broadband speech-like noise arrives PhoneDelay samples late (the high-pass adds a little).
	noise := whiteNoise(n, 5, 6000)
	p, _ = NewProcessor(MustParse("phone_line"), nil, 1)
	out = frames(p, noise)
	best, lag := -1.0, 0
	for l := 0; l < 600; l++ {
		var c float64
		for i := l; i < n; i++ {
			c += float64(out[i]) * float64(noise[i-l])
		}
		if c > best {
			best, lag = c, l
		}
	}
	if lag < PhoneDelay || lag > PhoneDelay+24 {
		t.Errorf("delay %d samples, want %d to %d", lag, PhoneDelay, PhoneDelay+24)
	}
}

// synthBed is a bed of code-made noise (no speaker), for tests of the mixing.
func synthBed(name string, seconds int) *Bed {
	pcm := whiteNoise(seconds*Rate, 7, 6000)
	r, _ := DefaultRecipe(name)
	r.Seconds = seconds
	return &Bed{Recipe: r, PCM: pcm, SHA256: samplesSHA(pcm), RMSDBFS: rmsDBFS(pcm)}
}

func TestNoiseMixedAtItsSNR(t *testing.T) {
	bed := synthBed(BackgroundTV, 4)
	for _, snr := range []float64{0, 10, 20} {
		spec := Spec{Noise: BackgroundTV, SNR: snr}
		p, err := NewProcessor(spec, bed, 3)
		if err != nil {
			t.Fatal(err)
		}
		out := frames(p, make([]int16, 6*Rate)) // longer than the bed: it loops
		want := ReferenceLevel - snr
		if got := rmsDBFS(out); math.Abs(got-want) > 0.2 {
			t.Errorf("noise at %g dB SNR: %.2f dBFS, want %.2f", snr, got, want)
		}
		if a := p.Applied(3); a.NoiseDBFS != want || a.BedSHA256 != bed.SHA256 || a.Meta()["condition_level_db"] != spec.Level() {
			t.Errorf("applied %+v", a)
		}
	}
}

func TestConditionIsBitIdenticalForTheSameSeed(t *testing.T) {
	bed := synthBed(Babble, 3)
	speech := whiteNoise(5*Rate, 11, 3000)
	spec := MustParse("phone_line+babble@5")
	run := func(seed int64) []int16 {
		p, err := NewProcessor(spec, bed, seed)
		if err != nil {
			t.Fatal(err)
		}
		return frames(p, speech)
	}
	a, b := run(42), run(42)
	if !slices.Equal(a, b) {
		t.Fatal("two processors with the same condition and seed differ")
	}
	if slices.Equal(a, run(43)) {
		t.Fatal("another seed gives the same noise")
	}
	if slices.Equal(a, speech) {
		t.Fatal("the condition changed nothing")
	}
	// Quiet changes nothing.
	q, _ := NewProcessor(MustParse("quiet"), nil, 1)
	if out := frames(q, speech); !slices.Equal(out, speech) {
		t.Fatal("quiet changed the audio")
	}
}

func TestNoBedIsAnError(t *testing.T) {
	if _, err := NewProcessor(MustParse("street@10"), nil, 1); err == nil {
		t.Fatal("a noise condition without its bed was accepted")
	}
	if _, err := NewProcessor(MustParse("street@10"), synthBed(Babble, 1), 1); err == nil {
		t.Fatal("the babble bed was accepted for street")
	}
	l := &Library{Dir: t.TempDir()}
	if _, err := l.Bed(context.Background(), Street); err == nil || !strings.Contains(err.Error(), "audit conditions build") {
		t.Fatalf("missing bed without a speaker: %v", err)
	}
}

func TestBedSaveLoadChecksHash(t *testing.T) {
	dir := t.TempDir()
	bed := synthBed(Street, 1)
	if err := Save(dir, bed); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir, bed.Recipe)
	if err != nil || !slices.Equal(got.PCM, bed.PCM) || got.SHA256 != bed.SHA256 {
		t.Fatalf("load: %v", err)
	}
	other := bed.Recipe
	other.Seed++
	if _, err := Load(dir, other); err == nil {
		t.Fatal("a bed of another recipe was loaded")
	}
}

// fakeSpeaker speaks a sentence as a tone whose pitch follows the voice and whose length
// follows the text, deterministically (no Flite needed).
type fakeSpeaker struct{ calls int }

func (f *fakeSpeaker) Speak(_ context.Context, voice, text string) ([]int16, error) {
	f.calls++
	hz := 100 + 20*float64(len(voice)) + float64(text[0]%16)*5
	n := len(text) * Rate / 15
	pcm := make([]int16, n)
	for i := range pcm {
		pcm[i] = int16(5000 * math.Sin(2*math.Pi*hz*float64(i)/Rate))
	}
	return pcm, nil
}

func TestBuildIsDeterministic(t *testing.T) {
	for _, name := range Noises {
		r, _ := DefaultRecipe(name)
		r.Seconds = 20
		a, err := Build(context.Background(), r, &fakeSpeaker{}, "fake")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Build(context.Background(), r, &fakeSpeaker{}, "fake")
		if a.SHA256 != b.SHA256 || len(a.PCM) != 20*Rate {
			t.Errorf("%s: two builds differ (%s, %s) or wrong length %d", name, a.SHA256[:8], b.SHA256[:8], len(a.PCM))
		}
		if math.Abs(a.RMSDBFS-r.LevelDBFS) > 0.1 {
			t.Errorf("%s: bed level %.2f dBFS, want %.2f", name, a.RMSDBFS, r.LevelDBFS)
		}
		r.Seed++
		c, _ := Build(context.Background(), r, &fakeSpeaker{}, "fake")
		if c.SHA256 == a.SHA256 {
			t.Errorf("%s: another seed builds the same bed", name)
		}
	}
}

// TestTelevisionHasItsLayers checks that the television bed holds speech-band talk, tones and
// broadband applause: its spectrum is not that of any one of them.
func TestTelevisionHasItsLayers(t *testing.T) {
	r, _ := DefaultRecipe(BackgroundTV)
	r.Seconds = 60
	sp := &fakeSpeaker{}
	bed, err := Build(context.Background(), r, sp, "fake")
	if err != nil {
		t.Fatal(err)
	}
	if sp.calls == 0 {
		t.Fatal("no talk in the television bed")
	}
	if hi := bandShare(bed.PCM, 2000, 7000); hi < 0.005 {
		t.Errorf("share of 2–7 kHz %.4f: no applause-like noise", hi)
	}
	if lo := bandShare(bed.PCM, 0, 100); lo > 0.05 {
		t.Errorf("share below 100 Hz %.3f: the loudspeaker band does not cut", lo)
	}
}

func TestFliteBedsBuild(t *testing.T) {
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed (scripts/deps.sh installs it)")
	}
	if testing.Short() {
		t.Skip("builds beds with Flite")
	}
	sp := &tts.Flite{}
	r, _ := DefaultRecipe(Babble)
	r.Seconds = 8
	a, err := Build(context.Background(), r, sp, "flite")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(context.Background(), r, sp, "flite")
	if err != nil {
		t.Fatal(err)
	}
	if a.SHA256 != b.SHA256 {
		t.Fatal("two Flite builds of one recipe differ")
	}
	if share := bandShare(a.PCM, 100, 4000); share < 0.7 {
		t.Errorf("babble: %.2f of its power in the speech band", share)
	}
}
