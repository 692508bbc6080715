package audio

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// withListChunk returns a copy of a canonical WAV with an odd-sized LIST chunk between fmt and
// data, where audio editors and some synthesizers put metadata.
func withListChunk(wav []byte) []byte {
	list := []byte("LIST\x07\x00\x00\x00INFOabc\x00") // 7 bytes of body, padded to 8
	out := slices.Concat(wav[:36], list, wav[36:])
	binary.LittleEndian.PutUint32(out[4:], uint32(len(out)-8))
	return out
}

func TestOpenWAVStreamsPastOtherChunks(t *testing.T) {
	dir := t.TempDir()
	l, r := rampBlock(0, 5000)
	inter := make([]int16, 0, 10000)
	for i := range l {
		inter = append(inter, l[i], r[i])
	}
	plain := filepath.Join(dir, "plain.wav")
	if err := WriteWAV(plain, RecordRate, 2, inter); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	listed := filepath.Join(dir, "listed.wav")
	if err := os.WriteFile(listed, withListChunk(b), 0o644); err != nil {
		t.Fatal(err)
	}
	rd, err := OpenWAV(listed)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if rd.Rate() != RecordRate || rd.Channels() != 2 || rd.Frames() != 5000 {
		t.Fatalf("got %d Hz, %d channels, %d frames", rd.Rate(), rd.Channels(), rd.Frames())
	}
	var got []int16
	buf := make([]int16, 777) // an odd size: reads stop at whole stereo frames
	for {
		n, err := rd.Read(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if n%2 != 0 {
			t.Fatalf("read %d samples, not whole stereo frames", n)
		}
		got = append(got, buf[:n]...)
	}
	if !slices.Equal(got, inter) {
		t.Fatal("streamed samples differ from those written")
	}
	w, err := ReadWAV(listed)
	if err != nil {
		t.Fatal(err)
	}
	checkRamp(t, w, 5000)
}

func TestOpenWAVRefusesTruncatedData(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cut.wav")
	if err := WriteWAV(p, RecordRate, 2, make([]int16, 2000)); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, wavHeaderSize+1000); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenWAV(p); !errors.Is(err, ErrBadWAV) {
		t.Fatalf("got %v, want ErrBadWAV (a crash's recording must be repaired first)", err)
	}
}

func TestDecodeWAVReadsPipedOutputToTheEnd(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.wav")
	in := []int16{5, -5, 300, -300, 32767}
	if err := WriteWAV(p, 16000, 1, in); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"sizes written":      b,
		"sizes unknown (0)":  func() []byte { c := slices.Clone(b); binary.LittleEndian.PutUint32(c[40:], 0); return c }(),
		"sizes past the end": func() []byte { c := slices.Clone(b); binary.LittleEndian.PutUint32(c[40:], 0xffffffff); return c }(),
		"with a LIST chunk":  withListChunk(b),
	} {
		w, err := DecodeWAV(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if w.Rate != 16000 || w.Channels != 1 || !slices.Equal(w.Samples, in) {
			t.Fatalf("%s: got %d Hz, %d ch, %v; want 16000 Hz mono %v", name, w.Rate, w.Channels, w.Samples, in)
		}
	}
	if _, err := DecodeWAV([]byte("RIFF\x00\x00\x00\x00WAVEdata\x00\x00\x00\x00")); !errors.Is(err, ErrBadWAV) {
		t.Fatalf("data before fmt: got %v, want ErrBadWAV", err)
	}
}
