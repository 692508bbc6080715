package web

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/voicebench/humanaudit/internal/audio"
)

// stereoWAVWithList writes a stereo 24 kHz WAV whose fmt chunk is followed by a LIST chunk before
// the data, as audio editors write them: a reader that assumes a 44-byte header reads the LIST
// chunk as samples and loses the alignment of the channels.
func stereoWAVWithList(t *testing.T, path string, left, right []int16) {
	t.Helper()
	list := append([]byte("INFOISFT"), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(list[8:], 9)
	list = append(list, []byte("soundtool")...)
	list = append(list, 0) // pad the odd-sized subchunk
	var b []byte
	chunk := func(id string, body []byte) {
		b = append(b, id...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(body)))
		b = append(b, body...)
		if len(body)%2 == 1 {
			b = append(b, 0)
		}
	}
	fmtBody := make([]byte, 16)
	binary.LittleEndian.PutUint16(fmtBody[0:], 1)
	binary.LittleEndian.PutUint16(fmtBody[2:], 2)
	binary.LittleEndian.PutUint32(fmtBody[4:], audio.RecordRate)
	binary.LittleEndian.PutUint32(fmtBody[8:], audio.RecordRate*4)
	binary.LittleEndian.PutUint16(fmtBody[12:], 4)
	binary.LittleEndian.PutUint16(fmtBody[14:], 16)
	data := make([]byte, 0, 4*len(left))
	for i := range left {
		data = binary.LittleEndian.AppendUint16(data, uint16(left[i]))
		data = binary.LittleEndian.AppendUint16(data, uint16(right[i]))
	}
	chunk("fmt ", fmtBody)
	chunk("LIST", list)
	chunk("data", data)
	out := append([]byte("RIFF"), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(out[4:], uint32(4+len(b)))
	out = append(append(out, "WAVE"...), b...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWAVPeaksSkipsChunksBeforeData(t *testing.T) {
	// 1 s: the caller speaks (a +-20000 square) in the first half, the agent (+-10000) in the second.
	const n = audio.RecordRate
	left, right := make([]int16, n), make([]int16, n)
	for i := range n / 2 {
		left[i] = int16(20000 * (1 - 2*(i/12%2)))
		right[n/2+i] = int16(10000 * (1 - 2*(i/12%2)))
	}
	path := filepath.Join(t.TempDir(), "call.wav")
	stereoWAVWithList(t, path, left, right)
	pk, err := wavPeaks(path, 10)
	if err != nil {
		t.Fatal(err)
	}
	if pk.SampleRate != audio.RecordRate || pk.Samples != n {
		t.Fatalf("rate %d, %d samples; want %d and %d", pk.SampleRate, pk.Samples, audio.RecordRate, n)
	}
	const c, a = float32(20000) / 32768, float32(10000) / 32768
	for b := range 10 {
		wantC, wantA := float32(0), a
		if b < 5 {
			wantC, wantA = c, 0
		}
		if pk.Caller[2*b] != -wantC || pk.Caller[2*b+1] != wantC || pk.Agent[2*b] != -wantA || pk.Agent[2*b+1] != wantA {
			t.Fatalf("bucket %d: caller [%v, %v], agent [%v, %v]; want caller ±%v, agent ±%v",
				b, pk.Caller[2*b], pk.Caller[2*b+1], pk.Agent[2*b], pk.Agent[2*b+1], wantC, wantA)
		}
	}
}
