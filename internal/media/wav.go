package media

import (
	"encoding/binary"
	"errors"
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

// ReadWAV reads a 16-bit PCM WAV file. A header that declares more data than the file holds is an
// error (run RepairWAV on a recording left by a crash first).
func ReadWAV(path string) (*WAV, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read wav: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read wav %s: %w", path, err)
	}
	l, err := parseWAVHeader(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("read wav %s: %w", path, err)
	}
	if l.dataOffset+l.dataSize > st.Size() {
		return nil, fmt.Errorf("read wav %s: %w: data chunk declares %d bytes but the file holds %d (run audit recover)",
			path, ErrBadWAV, l.dataSize, st.Size()-l.dataOffset)
	}
	n := l.dataSize - l.dataSize%l.blockAlign()
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, l.dataOffset); err != nil {
		return nil, fmt.Errorf("read wav %s: %w", path, err)
	}
	w := &WAV{Rate: l.rate, Channels: l.channels, Samples: make([]int16, n/2)}
	for i := range w.Samples {
		w.Samples[i] = int16(binary.LittleEndian.Uint16(buf[2*i:]))
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

// RecorderFlushInterval is how much audio the Recorder buffers before writing it and patching the
// header sizes (four 40 ms ticks): a crash of the console loses at most this much (the kernel keeps
// what was written), and RepairWAV repairs a header cut short between the two writes.
const RecorderFlushInterval = 160 * time.Millisecond

// recorderSlack is how much audio may wait for a stalled disk before Write blocks the tick.
const recorderSlack = 8 * time.Second

// Recorder writes a stereo 16-bit PCM WAV incrementally. The caller (the media tick) appends one
// block per tick without touching the disk; a writer goroutine writes each RecorderFlushInterval of
// audio and then patches the RIFF and data sizes, so a crash leaves a playable file short of at
// most that much.
type Recorder struct {
	path       string
	f          *os.File
	rate       int
	flushBytes int
	hdr        [wavHeaderSize]byte // the header, whose sizes the writer patches (writer goroutine only)

	cur    []byte        // being filled by Write (tick goroutine only)
	full   chan []byte   // filled buffers to the writer
	free   chan []byte   // written buffers back for reuse
	done   chan struct{} // closed when the writer exits
	frames int64         // sample frames accepted by Write
	closed bool
	werr   error // first writer error; read after done is closed
}

// CreateRecorder creates (truncating) a stereo WAV at path with the given sample rate and starts
// its writer goroutine.
func CreateRecorder(path string, rate int) (*Recorder, error) {
	return createRecorder(path, rate, recorderFlush)
}

// recorderFlush is the flush interval CreateRecorder uses: RecorderFlushInterval, which this
// package's benchmarks compare with the one second the recorder had before.
var recorderFlush = RecorderFlushInterval

// createRecorder is CreateRecorder with another flush interval (benchmarks compare them).
func createRecorder(path string, rate int, every time.Duration) (*Recorder, error) {
	if rate <= 0 {
		return nil, fmt.Errorf("create recorder: %w: rate %d", ErrBadConfig, rate)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create recorder: %w", err)
	}
	var hdr [wavHeaderSize]byte
	putWAVHeader(hdr[:], rate, 2, 0)
	if _, err := f.Write(hdr[:]); err != nil {
		f.Close()
		return nil, fmt.Errorf("create recorder %s: %w", path, err)
	}
	flush := int(int64(rate)*int64(every)/int64(time.Second)) * 4
	slack := int(recorderSlack / every)
	r := &Recorder{
		path:       path,
		f:          f,
		rate:       rate,
		flushBytes: flush,
		cur:        make([]byte, 0, flush+flush/4),
		full:       make(chan []byte, slack),
		free:       make(chan []byte, slack),
		done:       make(chan struct{}),
		hdr:        hdr,
	}
	go r.writeLoop()
	return r, nil
}

// Path returns the file the recorder writes.
func (r *Recorder) Path() string { return r.path }

// Rate returns the sample rate.
func (r *Recorder) Rate() int { return r.rate }

// Frames returns the number of stereo sample frames written so far (the recording's length).
func (r *Recorder) Frames() int64 { return r.frames }

// Write appends one block of both channels, which must have the same length. It does no I/O
// except handing each RecorderFlushInterval of audio to the writer goroutine. Not safe for
// concurrent use.
func (r *Recorder) Write(left, right []int16) error {
	if r.closed {
		return ErrClosed
	}
	if len(left) != len(right) {
		return fmt.Errorf("record: left has %d samples, right %d", len(left), len(right))
	}
	for i := range left {
		r.cur = binary.LittleEndian.AppendUint16(r.cur, uint16(left[i]))
		r.cur = binary.LittleEndian.AppendUint16(r.cur, uint16(right[i]))
	}
	r.frames += int64(len(left))
	if len(r.cur) >= r.flushBytes {
		r.handOff()
	}
	return nil
}

func (r *Recorder) handOff() {
	r.full <- r.cur
	select {
	case b := <-r.free:
		r.cur = b[:0]
	default:
		r.cur = make([]byte, 0, r.flushBytes+r.flushBytes/4)
	}
}

func (r *Recorder) writeLoop() {
	defer close(r.done)
	written := int64(0)
	for buf := range r.full {
		if r.werr == nil {
			if _, err := r.f.Write(buf); err != nil {
				r.werr = fmt.Errorf("record %s: %w", r.path, err)
			} else {
				written += int64(len(buf))
				r.werr = r.patchSizes(written)
			}
		}
		select {
		case r.free <- buf:
		default:
		}
	}
}

// patchSizes rewrites the RIFF and data sizes for the data written so far. Data is written first,
// so the header never claims samples that are not in the file; both sizes go in one write of the
// header's bytes 4 to 44 (one sector), so a killed process leaves both old or both new.
func (r *Recorder) patchSizes(dataBytes int64) error {
	binary.LittleEndian.PutUint32(r.hdr[4:8], uint32(36+dataBytes))
	binary.LittleEndian.PutUint32(r.hdr[40:44], uint32(dataBytes))
	if _, err := r.f.WriteAt(r.hdr[4:], 4); err != nil {
		return fmt.Errorf("record %s: patch header: %w", r.path, err)
	}
	return nil
}

// Close writes what is buffered, finalizes the header and closes the file. It waits for the
// writer goroutine and reports the first write error. Closing twice is a no-op.
func (r *Recorder) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if len(r.cur) > 0 {
		r.full <- r.cur
		r.cur = nil
	}
	close(r.full)
	<-r.done
	err := r.werr
	if err == nil {
		err = r.f.Sync()
	}
	return errors.Join(err, r.f.Close())
}
