package libopus

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/pion/opus"

	"github.com/voicebench/humanaudit/internal/audio/audiotest"
	"github.com/voicebench/humanaudit/internal/tts"
)

func TestEncoderMakesOpusPackets(t *testing.T) {
	e, err := NewEncoder(32000)
	if err != nil {
		t.Fatal(err)
	}
	voice := audiotest.SpeechLike(24000, 10*BlockSamples, 1)
	dst := make([]byte, 0, 1500)
	for off := 0; off < len(voice); off += BlockSamples {
		pkt, err := e.Encode(dst, voice[off:off+BlockSamples])
		if err != nil {
			t.Fatal(err)
		}
		// One frame (TOC code 0) of a sensible size for 20 ms at 32 kb/s, written into dst.
		if len(pkt) < 10 || len(pkt) > 200 || pkt[0]&3 != 0 || &pkt[0] != &dst[:1][0] {
			t.Fatalf("block %d: packet of %d bytes, TOC %#x (or not written into dst)", off/BlockSamples, len(pkt), pkt[0])
		}
	}
	if _, err := e.Encode(nil, voice[:100]); err == nil {
		t.Fatal("a 100-sample block was accepted")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := e.Encode(nil, voice[:BlockSamples]); err == nil {
		t.Fatal("encode after close accepted")
	}
}

// TestDecoderDecodesWhatTheEncoderMade: libopus decodes 2 s of voice as the pure-Go pion decoder
// does (the engine's default; the two are conformant decoders of one bitstream), a reset starts a
// new stream, malformed packets are errors and never a crash, and a closed decoder refuses work.
func TestDecoderDecodesWhatTheEncoderMade(t *testing.T) {
	e, err := NewEncoder(32000)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	voice := audiotest.SpeechLike(24000, 100*BlockSamples, 3)
	var pkts [][]byte
	for off := 0; off < len(voice); off += BlockSamples {
		p, err := e.Encode(nil, voice[off:off+BlockSamples])
		if err != nil {
			t.Fatal(err)
		}
		pkts = append(pkts, p)
	}
	d, err := NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	ref, err := opus.NewDecoderWithOutput(24000, 1)
	if err != nil {
		t.Fatal(err)
	}
	buf, want := make([]int16, 2880), make([]int16, 2880)
	var got, exp []int16
	for i, p := range pkts {
		n, err := d.Decode(buf, p)
		if err != nil || n != BlockSamples {
			t.Fatalf("packet %d: %d samples, %v", i, n, err)
		}
		m, err := ref.DecodeToInt16(p, want)
		if err != nil || m != n {
			t.Fatalf("packet %d: pion decoded %d samples (%v)", i, m, err)
		}
		got, exp = append(got, buf[:n]...), append(exp, want[:m]...)
	}
	if lag, corr := audiotest.BestLag(exp, got, 0); corr < 0.99 {
		t.Fatalf("libopus and pion decodes differ: correlation %.4f at lag %d", corr, lag)
	}
	// The encoder's look-ahead delays the audio: the decoded voice matches the input a few ms on.
	if lag, corr := audiotest.BestLag(voice, got, 480); corr < 0.8 {
		t.Fatalf("decoded voice does not match the input (corr %.2f at lag %d)", corr, lag)
	}
	if err := d.Reset(); err != nil {
		t.Fatal(err)
	}
	if n, err := d.Decode(buf, pkts[0]); err != nil || n != BlockSamples {
		t.Fatalf("after reset: %d samples, %v", n, err)
	}
	r := rand.New(rand.NewSource(1))
	bad := 0
	for range 2000 {
		p := make([]byte, 1+r.Intn(300))
		r.Read(p)
		if _, err := d.Decode(buf, p); err != nil {
			bad++
		}
	}
	if bad == 0 {
		t.Fatal("2000 random packets all decoded: malformed ones are not refused")
	}
	if _, err := d.Decode(buf, nil); err == nil {
		t.Fatal("an empty packet was decoded")
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := d.Decode(buf, pkts[0]); err == nil {
		t.Fatal("decode after close accepted")
	}
}

// BenchmarkEncodeByComplexity is the cost of one 20 ms encode at each complexity (the engine uses
// Complexity), on a Flite voice, as the thread's CPU time per encode (cpu_us/op), which other work
// on a shared machine does not inflate as it does the wall-clock ns/op.
func BenchmarkEncodeByComplexity(b *testing.B) {
	voice := fliteVoice(b)
	for _, c := range []int{10, 9, 7, 5, 3} {
		b.Run(fmt.Sprintf("complexity=%d", c), func(b *testing.B) {
			e, err := newEncoder(32000, c)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			dst := make([]byte, 0, maxPacket)
			blocks := len(voice) / BlockSamples
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0 := threadCPU()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				off := (i % blocks) * BlockSamples
				if _, err := e.Encode(dst, voice[off:off+BlockSamples]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(threadCPU()-cpu0)/float64(time.Microsecond)/float64(i), "cpu_us/op")
		})
	}
}

// threadCPU is the calling thread's CPU time (user + system).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_THREAD, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fliteVoice is a sentence in Flite's slt voice at 24 kHz, cut to whole blocks.
func fliteVoice(tb testing.TB) []int16 {
	tb.Helper()
	said, err := (&tts.Flite{}).Speak(context.Background(), "slt", "Your policy number is P eight two zero four four seven one H, and the claim was filed on March third.")
	if err != nil {
		tb.Fatal(err)
	}
	return append([]int16(nil), said[:len(said)/BlockSamples*BlockSamples]...)
}

// TestComplexityKeepsTheVoice: the engine's encoder complexity costs the participant almost
// nothing in what they hear. On a Flite voice, its log-spectral distance from the source in 20 ms
// frames of speech is within 0.3 dB of the full-complexity encoder's.
func TestComplexityKeepsTheVoice(t *testing.T) {
	voice := fliteVoice(t)
	lsd := func(complexity int) float64 {
		e, err := newEncoder(32000, complexity)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		d, err := NewDecoder()
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		var out []int16
		buf := make([]int16, 2880)
		for off := 0; off < len(voice); off += BlockSamples {
			p, err := e.Encode(nil, voice[off:off+BlockSamples])
			if err != nil {
				t.Fatal(err)
			}
			n, err := d.Decode(buf, p)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, buf[:n]...)
		}
		return logSpectralDistance(voice, out[decoderDelay:], BlockSamples)
	}
	full, engine, zero := lsd(10), lsd(Complexity), lsd(0)
	t.Logf("log-spectral distance from the source: complexity 10 %.2f dB, %d (the engine's) %.2f dB, 0 %.2f dB", full, Complexity, engine, zero)
	if engine > full+0.3 {
		t.Errorf("complexity %d is %.2f dB from the source, complexity 10 %.2f dB: more than 0.3 dB worse", Complexity, engine, full)
	}
	if zero <= full {
		t.Errorf("complexity 0 (%.2f dB) is no worse than 10 (%.2f dB): the measure cannot tell encoders apart", zero, full)
	}
}

// decoderDelay is libopus's algorithmic delay at 24 kHz in the VoIP application (6.5 ms).
const decoderDelay = 156

// logSpectralDistance is the mean, over frames of the reference with voice in them, of the RMS
// difference in dB between the two signals' power spectra up to 8 kHz (a naive DFT; short inputs only).
func logSpectralDistance(ref, got []int16, frame int) float64 {
	var sum float64
	var frames int
	for off := 0; off+frame <= len(ref) && off+frame <= len(got); off += frame {
		var energy float64
		for _, s := range ref[off : off+frame] {
			energy += float64(s) * float64(s)
		}
		if energy/float64(frame) < 100*100 { // quieter than about -50 dBFS: no voice to compare
			continue
		}
		// Bins up to 8 kHz (where speech carries), each floored 60 dB below the frame's peak so
		// that coding noise in empty bins does not dominate.
		bins := frame / 3
		pa, pb := make([]float64, bins), make([]float64, bins)
		var peak float64
		for k := 1; k < bins; k++ {
			var ar, ai, br, bi float64
			for n := range frame {
				w := 0.5 - 0.5*math.Cos(2*math.Pi*float64(n)/float64(frame))
				c, s := math.Cos(2*math.Pi*float64(k*n)/float64(frame)), math.Sin(2*math.Pi*float64(k*n)/float64(frame))
				x, y := w*float64(ref[off+n]), w*float64(got[off+n])
				ar, ai = ar+x*c, ai-x*s
				br, bi = br+y*c, bi-y*s
			}
			pa[k], pb[k] = ar*ar+ai*ai, br*br+bi*bi
			peak = max(peak, pa[k])
		}
		floor := peak * 1e-6
		var d2 float64
		for k := 1; k < bins; k++ {
			diff := 10 * math.Log10(max(pa[k], floor)/max(pb[k], floor))
			d2 += diff * diff
		}
		sum += math.Sqrt(d2 / float64(bins-1))
		frames++
	}
	return sum / float64(frames)
}
