package libopus

import (
	"testing"

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
