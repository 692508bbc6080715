package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/audio"
)

// crashedRecording records 1.5 s through a real Recorder, then appends 1.5 s more and 3 stray bytes
// behind its back, the way a crash leaves a file whose header lags the data.
func crashedRecording(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "session.wav")
	rec, err := audio.CreateRecorder(path, 24000)
	if err != nil {
		t.Fatal(err)
	}
	block := make([]int16, 960)
	for i := range block {
		block[i] = int16(i)
	}
	for range 37 {
		if err := rec.Write(block, block); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Write(block[:480], block[:480]); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 36000*4+3)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

func TestRecoverRepairsCrashedRecording(t *testing.T) {
	path := crashedRecording(t)
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"recover", path}, &out, &errb); err != nil {
		t.Fatalf("recover: %v\n%s", err, errb.String())
	}
	want := path + ": repaired: header said 1.500s (144000 bytes), file holds 3.000s (288000 bytes, 24000 Hz, 2 ch); cut 3 trailing bytes of an incomplete sample frame\n"
	if out.String() != want {
		t.Fatalf("stdout:\n got %q\nwant %q", out.String(), want)
	}
	w, err := audio.ReadWAV(path)
	if err != nil {
		t.Fatal(err)
	}
	if w.Frames() != 72000 {
		t.Fatalf("repaired file has %d frames, want 72000", w.Frames())
	}

	out.Reset()
	if err := run(context.Background(), []string{"recover", path}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "ok, 3.000s (24000 Hz, 2 ch), nothing to repair") {
		t.Fatalf("second run: %q", out.String())
	}
}

func TestRecoverReportsBadFiles(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "notes.wav")
	if err := os.WriteFile(bad, []byte("not a wav"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := crashedRecording(t)
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"recover", bad, good}, &out, &errb)
	if code := exitCode(err, &errb); code != 1 {
		t.Fatalf("exit code %d, want 1 (err %v)", code, err)
	}
	if !strings.Contains(errb.String(), "notes.wav") || !strings.Contains(errb.String(), "expected a 16-bit PCM WAV") {
		t.Fatalf("stderr does not name the bad file and what was expected: %q", errb.String())
	}
	if !strings.Contains(out.String(), "repaired") {
		t.Fatalf("the good file after a bad one was not repaired: %q", out.String())
	}
	if err := run(context.Background(), []string{"recover"}, &out, &errb); exitCode(err, &errb) != 2 {
		t.Fatalf("no file: got %v, want usage error", err)
	}
}
