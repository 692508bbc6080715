package audio

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// rampBlock fills a stereo block whose samples encode their own frame index, so any lost,
// duplicated or shifted sample shows up.
func rampBlock(start int64, n int) (left, right []int16) {
	left, right = make([]int16, n), make([]int16, n)
	for i := range n {
		v := start + int64(i)
		left[i] = int16(v % 30011)
		right[i] = -int16(v % 29989)
	}
	return left, right
}

func checkRamp(t *testing.T, w *WAV, frames int) {
	t.Helper()
	if w.Channels != 2 || w.Rate != 24000 {
		t.Fatalf("got %d channels at %d Hz, want 2 at 24000", w.Channels, w.Rate)
	}
	if w.Frames() != frames {
		t.Fatalf("got %d frames, want %d", w.Frames(), frames)
	}
	l, r := rampBlock(0, frames)
	for i := range frames {
		if w.Samples[2*i] != l[i] || w.Samples[2*i+1] != r[i] {
			t.Fatalf("frame %d: got (%d,%d), want (%d,%d)", i, w.Samples[2*i], w.Samples[2*i+1], l[i], r[i])
		}
	}
}

func TestRecorderWritesAlignedStereo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "call.wav")
	rec, err := CreateRecorder(path, 24000)
	if err != nil {
		t.Fatal(err)
	}
	const ticks = 60 // 2.4 s: two full flushes and a partial second at Close
	for n := range int64(ticks) {
		l, r := rampBlock(n*960, 960)
		if err := rec.Write(l, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if err := rec.Write(make([]int16, 1), make([]int16, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after close: got %v, want ErrClosed", err)
	}
	w, err := ReadWAV(path)
	if err != nil {
		t.Fatal(err)
	}
	checkRamp(t, w, ticks*960)
	rep, err := RepairWAV(path)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Changed {
		t.Fatalf("repair changed a cleanly closed file: %+v", rep)
	}
}

func TestRecorderRejectsUnequalChannels(t *testing.T) {
	rec, err := CreateRecorder(filepath.Join(t.TempDir(), "x.wav"), 24000)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	if err := rec.Write(make([]int16, 3), make([]int16, 2)); err == nil {
		t.Fatal("unequal channel lengths accepted")
	}
}

// TestRecorderCrashRecovery kills a process that is recording (SIGKILL, no Close) and checks that
// RepairWAV restores every second that reached the writer, losing at most RecorderFlushInterval.
func TestRecorderCrashRecovery(t *testing.T) {
	if os.Getenv("MEDIA_CRASH_RECORDER") != "" {
		crashingRecorder()
		return
	}
	path := filepath.Join(t.TempDir(), "crash.wav")
	cmd := exec.Command(os.Args[0], "-test.run=^TestRecorderCrashRecovery$")
	cmd.Env = append(os.Environ(), "MEDIA_CRASH_RECORDER="+path)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("helper did not die by SIGKILL: %v\n%s", err, out)
	}
	rep, err := RepairWAV(path)
	if err != nil {
		t.Fatal(err)
	}
	const written = 3*24000 + 12000 // 3.5 s handed to the recorder before the kill
	lost := time.Duration(written)*time.Second/24000 - rep.Duration()
	t.Logf("repair: declared %v, recovered %v, dropped %d bytes, lost %v", rep.DeclaredDuration(), rep.Duration(), rep.DroppedBytes, lost)
	if !rep.Changed || lost < 0 || lost > RecorderFlushInterval {
		t.Fatalf("repair %+v lost %v, want a change losing at most %v", rep, lost, RecorderFlushInterval)
	}
	w, err := ReadWAV(path)
	if err != nil {
		t.Fatal(err)
	}
	checkRamp(t, w, w.Frames())
	if again, err := RepairWAV(path); err != nil || again.Changed {
		t.Fatalf("second repair: %+v, %v; want unchanged", again, err)
	}
}

// crashingRecorder records 3.5 s, waits until the writer has put at least three seconds on disk
// (the flushes up to the last full RecorderFlushInterval), and kills its own process without
// closing the recorder.
func crashingRecorder() {
	path := os.Getenv("MEDIA_CRASH_RECORDER")
	rec, err := CreateRecorder(path, 24000)
	if err != nil {
		panic(err)
	}
	for n := range int64(3*25 + 12) {
		l, r := rampBlock(n*960, 960)
		if err := rec.Write(l, r); err != nil {
			panic(err)
		}
	}
	l, r := rampBlock(87*960, 480)
	if err := rec.Write(l, r); err != nil {
		panic(err)
	}
	// Wait for every full flush interval handed over (3.36 s of the 3.5 s) to reach the disk: the
	// writer goroutine runs behind on a loaded machine, and what it had not written yet is not what
	// the test measures.
	interval := int64(RecorderFlushInterval * 24000 / time.Second)
	want := int64(wavHeaderSize) + (3*24000+12000)/interval*interval*4
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if st, err := os.Stat(path); err == nil && st.Size() >= want && headerDataSize(path) >= want-wavHeaderSize {
			break
		}
	}
	// Simulate a torn write: two stray bytes of a frame that never completed.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	_, _ = f.Write([]byte{1, 2})
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

func headerDataSize(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil || len(b) < wavHeaderSize {
		return -1
	}
	return int64(binary.LittleEndian.Uint32(b[40:44]))
}

// TestRepairWAVExtendsStaleHeader covers a crash between writing a second of audio and patching
// the header: the header claims less (here: nothing) than the file holds.
func TestRepairWAVExtendsStaleHeader(t *testing.T) {
	p := filepath.Join(t.TempDir(), "stale.wav")
	l, r := rampBlock(0, 24000)
	st := make([]int16, 0, 48000)
	for i := range l {
		st = append(st, l[i], r[i])
	}
	if err := WriteWAV(p, 24000, 2, st); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	putWAVHeader(b, 24000, 2, 0) // the header as CreateRecorder first writes it
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := RepairWAV(p)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Changed || rep.DeclaredBytes != 0 || rep.DataBytes != 96000 || rep.DroppedBytes != 0 {
		t.Fatalf("repair = %+v, want declared 0 -> 96000 bytes", rep)
	}
	w, err := ReadWAV(p)
	if err != nil {
		t.Fatal(err)
	}
	checkRamp(t, w, 24000)
}

func TestRepairWAVRejectsGarbage(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string][]byte{
		"empty":   nil,
		"text":    []byte("this is not audio at all, just text"),
		"float32": floatWAVHeader(),
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name+".wav")
			if err := os.WriteFile(p, body, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := RepairWAV(p); !errors.Is(err, ErrBadWAV) {
				t.Fatalf("got %v, want ErrBadWAV", err)
			}
		})
	}
}

func floatWAVHeader() []byte {
	b := make([]byte, wavHeaderSize)
	putWAVHeader(b, 48000, 1, 0)
	binary.LittleEndian.PutUint16(b[20:22], 3) // IEEE float
	binary.LittleEndian.PutUint16(b[34:36], 32)
	return b
}

func TestWriteReadWAVRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.wav")
	in := []int16{0, 1, -1, 32767, -32768, 1234}
	if err := WriteWAV(p, 16000, 1, in); err != nil {
		t.Fatal(err)
	}
	w, err := ReadWAV(p)
	if err != nil {
		t.Fatal(err)
	}
	if w.Rate != 16000 || w.Channels != 1 || len(w.Samples) != len(in) {
		t.Fatalf("got %d Hz %d ch %d samples", w.Rate, w.Channels, len(w.Samples))
	}
	for i := range in {
		if w.Samples[i] != in[i] {
			t.Fatalf("sample %d: %d != %d", i, w.Samples[i], in[i])
		}
	}
}

// BenchmarkRecorderSessionSecond records one second of a call (25 ticks of stereo at 24 kHz) per
// op and reports the process CPU (tick and writer goroutine) per session-second, for the 1 s flush
// the recorder had and the RecorderFlushInterval it has, in the same process under the same load.
func BenchmarkRecorderSessionSecond(b *testing.B) {
	dir, err := os.MkdirTemp("/dev/shm", "rec-bench-")
	if err != nil {
		dir = b.TempDir()
	}
	defer os.RemoveAll(dir)
	for _, every := range []time.Duration{time.Second, RecorderFlushInterval} {
		b.Run("flush="+every.String(), func(b *testing.B) {
			rec, err := CreateRecorderFlushing(filepath.Join(dir, every.String()+".wav"), RecordRate, every)
			if err != nil {
				b.Fatal(err)
			}
			l, r := rampBlock(0, FrameSamples)
			cpu0 := processCPUTime()
			seconds := 0
			for b.Loop() {
				for range 25 {
					if err := rec.Write(l, r); err != nil {
						b.Fatal(err)
					}
				}
				seconds++
			}
			if err := rec.Close(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64((processCPUTime()-cpu0).Microseconds())/float64(seconds), "cpu_us_per_session_s")
		})
	}
}

func processCPUTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestRecorderKeepsAtMost200msOffDisk: at every tick, the audio not yet written to the file (what
// a kill would lose; the kernel keeps what was written) is at most 200 ms once the writer had a
// moment, and the header always describes a playable prefix.
func TestRecorderKeepsAtMost200msOffDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.wav")
	rec, err := CreateRecorder(path, RecordRate)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	const bound = 200 * time.Millisecond
	for n := range int64(60) {
		l, r := rampBlock(n*FrameSamples, FrameSamples)
		if err := rec.Write(l, r); err != nil {
			t.Fatal(err)
		}
		want := rec.Frames() - int64(bound/time.Millisecond)*RecordRate/1000
		deadline := time.Now().Add(2 * time.Second)
		for {
			declared := headerDataSize(path) / 4
			if declared >= want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after %d ticks %v recorded but only %v in the file's header", n+1,
					time.Duration(rec.Frames())*time.Second/RecordRate, time.Duration(declared)*time.Second/RecordRate)
			}
			time.Sleep(2 * time.Millisecond)
		}
		declared := headerDataSize(path) // before the size: the writer writes data, then the header
		if st, _ := os.Stat(path); st.Size()-wavHeaderSize < declared {
			t.Fatalf("header claims %d bytes, the file holds %d", declared, st.Size()-wavHeaderSize)
		}
	}
}
