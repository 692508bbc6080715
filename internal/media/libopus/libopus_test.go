package libopus

import (
	"math/rand"
	"testing"

	"github.com/pion/opus"

	"github.com/voicebench/humanaudit/internal/audio/audiotest"
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
