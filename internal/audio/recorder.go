package audio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"
)

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
// its writer goroutine; it writes every RecorderFlushInterval of audio.
func CreateRecorder(path string, rate int) (*Recorder, error) {
	return CreateRecorderFlushing(path, rate, RecorderFlushInterval)
}

// CreateRecorderFlushing is CreateRecorder with another flush interval (benchmarks compare the
// interval with the one second the recorder had before).
func CreateRecorderFlushing(path string, rate int, every time.Duration) (*Recorder, error) {
	if every <= 0 {
		return nil, fmt.Errorf("create recorder: %w: flush interval %v", ErrBadConfig, every)
	}
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
	n := len(r.cur)
	r.cur = slices.Grow(r.cur, 4*len(left))[:n+4*len(left)]
	out := r.cur[n:]
	for i, l := range left {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(uint16(l))|uint32(uint16(right[i]))<<16)
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
