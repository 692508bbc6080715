package audio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"time"
)

// wavHeaderSize is the size of the canonical header the Recorder writes: RIFF, fmt (16 bytes of
// PCM format) and the data chunk header.
const wavHeaderSize = 44

// WAV is a decoded 16-bit PCM WAV file: interleaved samples, as tests and tools need them.
type WAV struct {
	Rate     int     // samples per second per channel
	Channels int     // 1 or 2
	Samples  []int16 // interleaved, len = Frames()*Channels
}

// Frames returns the number of sample frames (one sample per channel).
func (w *WAV) Frames() int {
	if w.Channels == 0 {
		return 0
	}
	return len(w.Samples) / w.Channels
}

// Channel returns one channel de-interleaved (0 = left).
func (w *WAV) Channel(ch int) []int16 {
	out := make([]int16, w.Frames())
	for i := range out {
		out[i] = w.Samples[i*w.Channels+ch]
	}
	return out
}

// Duration returns the audio length.
func (w *WAV) Duration() time.Duration {
	if w.Rate == 0 {
		return 0
	}
	return time.Duration(w.Frames()) * time.Second / time.Duration(w.Rate)
}

// wavLayout is what a RIFF/WAVE header says about a file: its PCM format and where the data is.
type wavLayout struct {
	rate, channels int
	dataOffset     int64 // file offset of the first sample
	dataSize       int64 // declared size of the data chunk
	riffSize       int64 // declared RIFF size
}

func (l wavLayout) blockAlign() int64 { return int64(l.channels) * 2 }

// parseWAVHeader walks the RIFF chunks up to the data chunk. It accepts any chunk order that
// puts fmt before data and skips chunks it does not know (LIST, fact, …).
func parseWAVHeader(r io.ReaderAt, size int64) (wavLayout, error) {
	var l wavLayout
	var hdr [12]byte
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return l, fmt.Errorf("%w: file of %d bytes is too short for a RIFF header", ErrBadWAV, size)
	}
	if string(hdr[0:4]) != "RIFF" || string(hdr[8:12]) != "WAVE" {
		return l, fmt.Errorf("%w: missing RIFF/WAVE signature (got %q/%q)", ErrBadWAV, hdr[0:4], hdr[8:12])
	}
	l.riffSize = int64(binary.LittleEndian.Uint32(hdr[4:8]))
	off := int64(12)
	haveFmt := false
	for {
		var ch [8]byte
		if _, err := r.ReadAt(ch[:], off); err != nil {
			return l, fmt.Errorf("%w: no data chunk before end of file at byte %d", ErrBadWAV, off)
		}
		id, n := string(ch[0:4]), int64(binary.LittleEndian.Uint32(ch[4:8]))
		body := off + 8
		switch id {
		case "fmt ":
			if n < 16 {
				return l, fmt.Errorf("%w: fmt chunk of %d bytes, want at least 16", ErrBadWAV, n)
			}
			var f [16]byte
			if _, err := r.ReadAt(f[:], body); err != nil {
				return l, fmt.Errorf("%w: truncated fmt chunk", ErrBadWAV)
			}
			format := binary.LittleEndian.Uint16(f[0:2])
			l.channels = int(binary.LittleEndian.Uint16(f[2:4]))
			l.rate = int(binary.LittleEndian.Uint32(f[4:8]))
			bits := binary.LittleEndian.Uint16(f[14:16])
			// 0xFFFE is WAVE_FORMAT_EXTENSIBLE; its subformat is PCM for the files we read.
			if (format != 1 && format != 0xFFFE) || bits != 16 || l.channels < 1 || l.channels > 2 || l.rate <= 0 {
				return l, fmt.Errorf("%w: format %d, %d bits, %d channels, %d Hz; want PCM, 16 bits, 1 or 2 channels",
					ErrBadWAV, format, bits, l.channels, l.rate)
			}
			haveFmt = true
		case "data":
			if !haveFmt {
				return l, fmt.Errorf("%w: data chunk before fmt chunk", ErrBadWAV)
			}
			l.dataOffset, l.dataSize = body, n
			return l, nil
		}
		off = body + n + n&1 // chunks are padded to an even size
	}
}

// WAVReader streams the samples of a 16-bit PCM WAV file, so a long recording (a 15-minute call
// is about 86 MB) can be scanned without holding it in memory. It finds the data chunk by walking
// the RIFF chunks, so extra chunks (LIST, fact, …) before the data are skipped, not read as audio.
type WAVReader struct {
	f       *os.File
	path    string
	layout  wavLayout
	samples int64 // interleaved samples in the data chunk
	pos     int64 // interleaved samples read so far
	buf     []byte
}

// OpenWAV opens a 16-bit PCM WAV file for streaming. A header that declares more data than the
// file holds is an error (run RepairWAV on a recording left by a crash first).
func OpenWAV(path string) (*WAVReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read wav: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read wav %s: %w", path, err)
	}
	l, err := parseWAVHeader(f, st.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read wav %s: %w", path, err)
	}
	if l.dataOffset+l.dataSize > st.Size() {
		f.Close()
		return nil, fmt.Errorf("read wav %s: %w: data chunk declares %d bytes but the file holds %d (run audit recover)",
			path, ErrBadWAV, l.dataSize, st.Size()-l.dataOffset)
	}
	whole := l.dataSize - l.dataSize%l.blockAlign()
	return &WAVReader{f: f, path: path, layout: l, samples: whole / 2}, nil
}

// Rate returns the sample rate.
func (r *WAVReader) Rate() int { return r.layout.rate }

// Channels returns the number of interleaved channels (1 or 2).
func (r *WAVReader) Channels() int { return r.layout.channels }

// Frames returns the number of sample frames (one sample per channel) in the data chunk.
func (r *WAVReader) Frames() int64 { return r.samples / int64(r.layout.channels) }

// Read fills buf with the next interleaved samples and returns how many it read; io.EOF after the
// last one. It reads whole sample frames only, so len(buf) should be a multiple of Channels.
func (r *WAVReader) Read(buf []int16) (int, error) {
	left := r.samples - r.pos
	if left <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(buf)), left)
	n -= n % int64(r.layout.channels)
	if n == 0 {
		return 0, fmt.Errorf("read wav %s: buffer of %d samples holds no whole frame of %d channels", r.path, len(buf), r.layout.channels)
	}
	if cap(r.buf) < int(2*n) {
		r.buf = make([]byte, 2*n)
	}
	b := r.buf[:2*n]
	if _, err := r.f.ReadAt(b, r.layout.dataOffset+2*r.pos); err != nil {
		return 0, fmt.Errorf("read wav %s: %w", r.path, err)
	}
	for i := range n {
		buf[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	r.pos += n
	return int(n), nil
}

// Close closes the file.
func (r *WAVReader) Close() error { return r.f.Close() }

// ReadWAV reads a whole 16-bit PCM WAV file. A header that declares more data than the file holds
// is an error (run RepairWAV on a recording left by a crash first).
func ReadWAV(path string) (*WAV, error) {
	r, err := OpenWAV(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	w := &WAV{Rate: r.Rate(), Channels: r.Channels(), Samples: make([]int16, r.samples)}
	if len(w.Samples) == 0 {
		return w, nil
	}
	if _, err := r.Read(w.Samples); err != nil {
		return nil, err
	}
	return w, nil
}

// DecodeWAV decodes a 16-bit PCM WAV held in memory, such as a synthesizer's output. A WAV written
// to a pipe cannot patch its sizes afterwards, so a data chunk that declares 0 bytes or runs past
// the end of b is read to the end of b.
func DecodeWAV(b []byte) (*WAV, error) {
	l, err := parseWAVHeader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("decode wav: %w", err)
	}
	end := l.dataOffset + l.dataSize
	if l.dataSize == 0 || end > int64(len(b)) {
		end = int64(len(b))
	}
	n := (end - l.dataOffset) / l.blockAlign() * int64(l.channels)
	w := &WAV{Rate: l.rate, Channels: l.channels, Samples: make([]int16, n)}
	data := b[l.dataOffset:]
	for i := range w.Samples {
		w.Samples[i] = int16(binary.LittleEndian.Uint16(data[2*i:]))
	}
	return w, nil
}

// WriteWAV writes interleaved 16-bit samples as a complete WAV file (for test fixtures and tools).
func WriteWAV(path string, rate, channels int, samples []int16) error {
	buf := make([]byte, wavHeaderSize+2*len(samples))
	putWAVHeader(buf, rate, channels, int64(2*len(samples)))
	for i, s := range samples {
		binary.LittleEndian.PutUint16(buf[wavHeaderSize+2*i:], uint16(s))
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		return fmt.Errorf("write wav: %w", err)
	}
	return nil
}

func putWAVHeader(b []byte, rate, channels int, dataSize int64) {
	copy(b[0:4], "RIFF")
	binary.LittleEndian.PutUint32(b[4:8], uint32(36+dataSize))
	copy(b[8:16], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:20], 16)
	binary.LittleEndian.PutUint16(b[20:22], 1) // PCM
	binary.LittleEndian.PutUint16(b[22:24], uint16(channels))
	binary.LittleEndian.PutUint32(b[24:28], uint32(rate))
	binary.LittleEndian.PutUint32(b[28:32], uint32(rate*channels*2))
	binary.LittleEndian.PutUint16(b[32:34], uint16(channels*2))
	binary.LittleEndian.PutUint16(b[34:36], 16)
	copy(b[36:40], "data")
	binary.LittleEndian.PutUint32(b[40:44], uint32(dataSize))
}

// WAVRepair says what RepairWAV found and changed.
type WAVRepair struct {
	Rate, Channels int   // the file's format
	DeclaredBytes  int64 // data size the header claimed
	DataBytes      int64 // data size after repair (whole sample frames present in the file)
	DroppedBytes   int64 // trailing bytes of an incomplete sample frame that were cut off
	Changed        bool  // false when the header already matched the file
}

// Duration returns the audio length after repair.
func (r WAVRepair) Duration() time.Duration {
	return bytesToDuration(r.DataBytes, r.Rate, r.Channels)
}

// DeclaredDuration returns the audio length the header claimed before repair.
func (r WAVRepair) DeclaredDuration() time.Duration {
	return bytesToDuration(r.DeclaredBytes, r.Rate, r.Channels)
}

func bytesToDuration(n int64, rate, channels int) time.Duration {
	if rate == 0 || channels == 0 {
		return 0
	}
	return time.Duration(n/int64(2*channels)) * time.Second / time.Duration(rate)
}

// RepairWAV makes the header of a recording left by a crash match the samples in the file: it
// sets the RIFF and data sizes to the whole sample frames present and cuts a trailing partial
// frame. The Recorder's data is always the last chunk, so everything after the data header is audio.
// A file whose header already matches is left untouched.
func RepairWAV(path string) (WAVRepair, error) {
	var rep WAVRepair
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return rep, fmt.Errorf("repair wav: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return rep, fmt.Errorf("repair wav %s: %w", path, err)
	}
	size := st.Size()
	l, err := parseWAVHeader(f, size)
	if err != nil {
		return rep, fmt.Errorf("repair wav %s: %w", path, err)
	}
	rep.Rate, rep.Channels, rep.DeclaredBytes = l.rate, l.channels, l.dataSize
	avail := size - l.dataOffset
	whole := avail - avail%l.blockAlign()
	// The Recorder patches the data size before the RIFF size, so a RIFF size that matches the
	// file proves the header is complete (a file may also carry chunks after data; ours never does).
	if l.riffSize == size-8 && l.dataSize <= avail && l.dataSize%l.blockAlign() == 0 {
		rep.DataBytes = l.dataSize
		return rep, nil
	}
	rep.DataBytes, rep.DroppedBytes, rep.Changed = whole, avail-whole, true
	if rep.DroppedBytes > 0 {
		if err := f.Truncate(l.dataOffset + whole); err != nil {
			return rep, fmt.Errorf("repair wav %s: %w", path, err)
		}
	}
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(l.dataOffset+whole-8))
	if _, err := f.WriteAt(b[:], 4); err != nil {
		return rep, fmt.Errorf("repair wav %s: %w", path, err)
	}
	binary.LittleEndian.PutUint32(b[:], uint32(whole))
	if _, err := f.WriteAt(b[:], l.dataOffset-4); err != nil {
		return rep, fmt.Errorf("repair wav %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return rep, fmt.Errorf("repair wav %s: %w", path, err)
	}
	return rep, nil
}
