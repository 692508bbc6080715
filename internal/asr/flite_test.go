package asr

import (
	"bytes"
	"context"
	"encoding/binary"
	"os/exec"
	"sync"
	"testing"

	"github.com/voicebench/humanaudit/internal/audio"
)

// The synthetic callers' Flite voices (personas use all four).
var callerVoices = []string{"slt", "rms", "awb", "kal16"}

var fliteCache sync.Map

// flite24k renders text with a Flite voice and converts it to 24 kHz, the rate caller audio has
// on the wire, so tests exercise the same 24→16 kHz conversion as a call.
func flite24k(tb testing.TB, voice, text string) []int16 {
	tb.Helper()
	key := voice + "\x00" + text
	if v, ok := fliteCache.Load(key); ok {
		return v.([]int16)
	}
	out, err := exec.Command("flite", "-voice", voice, "-t", text, "-o", "/dev/stdout").Output()
	if err != nil {
		tb.Fatalf("flite: %v", err)
	}
	if len(out) < 44 {
		tb.Fatalf("flite wrote %d bytes", len(out))
	}
	pcm := make([]int16, (len(out)-44)/2)
	binary.Read(bytes.NewReader(out[44:]), binary.LittleEndian, pcm)
	rs, err := audio.NewResampler(16000, 24000)
	if err != nil {
		tb.Fatal(err)
	}
	up := rs.Process(append(pcm, make([]int16, 320)...), nil)
	fliteCache.Store(key, up)
	return up
}

func needFlite(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("flite"); err != nil {
		tb.Skip("flite not installed (scripts/deps.sh installs it)")
	}
}

var (
	sharedOnce sync.Once
	shared     *Recognizer
	sharedErr  error
)

// mustRecognizer returns one recognizer shared by the package's tests (the model takes a moment
// to load).
func mustRecognizer(tb testing.TB) *Recognizer {
	tb.Helper()
	sharedOnce.Do(func() { shared, sharedErr = New(Config{}) })
	if sharedErr != nil {
		tb.Fatalf("load recognizer: %v", sharedErr)
	}
	return shared
}

func recognize(tb testing.TB, r *Recognizer, pcm []int16, g *Grammar) Result {
	tb.Helper()
	res, err := r.Recognize(context.Background(), pcm, 24000, g)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}
