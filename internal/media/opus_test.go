package media

import (
	"math/rand"
	"testing"

	"github.com/voicebench/humanaudit/internal/audio"
)

func TestOpusPacketSamples48(t *testing.T) {
	for _, c := range []struct {
		name string
		pkt  []byte
		want int
	}{
		{"silk 20ms", []byte{1 << 3}, 960},
		{"silk 60ms", []byte{3 << 3}, 2880},
		{"hybrid 20ms x2", []byte{13<<3 | 1}, 1920},
		{"celt 20ms (chrome default)", []byte{31 << 3, 0xaa}, 960},
		{"celt 2.5ms x3 code 3", []byte{16<<3 | 3, 3}, 360},
		{"celt 20ms x3 code 3", []byte{31<<3 | 3, 3}, 2880},
	} {
		got, err := opusPacketSamples48(c.pkt)
		if err != nil || got != c.want {
			t.Errorf("%s: got %d, %v; want %d", c.name, got, err, c.want)
		}
	}
	for name, bad := range map[string][]byte{
		"empty":          nil,
		"code3 no count": {31<<3 | 3},
		"code3 zero":     {31<<3 | 3, 0},
		"over 120 ms":    {3<<3 | 3, 3}, // 3 × 60 ms
	} {
		if _, err := opusPacketSamples48(bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestOpusRoundTripAndSilenceRepeat(t *testing.T) {
	enc, err := newOpusEncoder(32000)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.close()
	dec, err := newOpusDecoder(nil)
	if err != nil {
		t.Fatal(err)
	}
	// 1 s of voice, 1 s of silence, 1 s of voice.
	src := append(append(speechLike(audio.RecordRate, audio.RecordRate, 1), make([]int16, audio.RecordRate)...), speechLike(audio.RecordRate, audio.RecordRate, 2)...)
	var out []int16
	for off := 0; off < len(src); off += packetSamples {
		pkt, err := enc.encode(nil, src[off:off+packetSamples])
		if err != nil {
			t.Fatal(err)
		}
		pcm, err := dec.decode(pkt)
		if err != nil {
			t.Fatal(err)
		}
		if len(pcm) != packetSamples {
			t.Fatalf("decoded %d samples, want %d", len(pcm), packetSamples)
		}
		out = append(out, pcm...)
	}
	// 50 silent packets: 3 encoded to warm up, the rest repeated.
	if enc.repeated.Load() != 50-silenceWarmBlocks || enc.encoded.Load() != 100+silenceWarmBlocks {
		t.Fatalf("encoded %d, repeated %d; want %d and %d", enc.encoded.Load(), enc.repeated.Load(), 100+silenceWarmBlocks, 50-silenceWarmBlocks)
	}
	if peak := maxAbs(out[audio.RecordRate+4800 : 2*audio.RecordRate]); peak > 64 {
		t.Fatalf("repeated silence decodes to peak %d", peak)
	}
	for i, seg := range [][2]int{{2400, audio.RecordRate}, {2*audio.RecordRate + 2400, 3 * audio.RecordRate}} {
		lag, c := bestLag(src[seg[0]:seg[1]-400], out[seg[0]:seg[1]], 400)
		t.Logf("voice segment %d: codec delay %d samples (%.2f ms), correlation %.3f", i, lag, float64(lag)/24, c)
		if c < 0.8 || lag < 140 || lag > 170 {
			t.Fatalf("segment %d: lag %d corr %.3f; want about the 6.5 ms libopus delay and corr >= 0.8", i, lag, c)
		}
	}
}

func TestOpusDecoderSurvivesGarbage(t *testing.T) {
	dec, err := newOpusDecoder(nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(7))
	for i := range 2000 {
		p := make([]byte, 1+r.Intn(200))
		r.Read(p)
		if pcm, err := dec.decode(p); err == nil && len(pcm) > audio.RecordRate*120/1000 {
			t.Fatalf("packet %d decoded to %d samples", i, len(pcm))
		}
	}
}

func BenchmarkOpusEncode20ms(b *testing.B) {
	enc, err := newOpusEncoder(32000)
	if err != nil {
		b.Fatal(err)
	}
	defer enc.close()
	src := speechLike(audio.RecordRate, audio.RecordRate, 1)
	for off := 0; off < len(src); off += packetSamples { // warm up
		enc.encode(nil, src[off:off+packetSamples])
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		off := (i % 50) * packetSamples
		if _, err := enc.encode(nil, src[off:off+packetSamples]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkOpusDecode20ms(b *testing.B) {
	enc, _ := newOpusEncoder(32000)
	src := speechLike(audio.RecordRate, audio.RecordRate, 1)
	var pkts [][]byte
	for off := 0; off < len(src); off += packetSamples {
		p, _ := enc.encode(nil, src[off:off+packetSamples])
		pkts = append(pkts, p)
	}
	enc.close()
	dec, _ := newOpusDecoder(nil)
	for _, p := range pkts { // warm up the decoder's buffers
		dec.decode(p)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := dec.decode(pkts[i%len(pkts)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
