package tts

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"testing"

	"github.com/voicebench/humanaudit/internal/audio"
)

func needFlite(t *testing.T) {
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed (scripts/deps.sh installs it)")
	}
}

func TestSpeakIsDeterministicAtTheAskedRate(t *testing.T) {
	needFlite(t)
	ctx := context.Background()
	a, err := (&Flite{}).Speak(ctx, "slt", "Four one seven.")
	if err != nil {
		t.Fatal(err)
	}
	b, err := (&Flite{MemoLimit: -1}).Speak(ctx, "slt", "Four one seven.")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Fatal("two renderings of the same sentence differ")
	}
	if d := len(a) * 1000 / audio.RecordRate; d < 500 || d > 3000 {
		t.Fatalf("%d ms of speech for three words", d)
	}
	if audio.RMSDBFS(a) < -40 {
		t.Fatalf("speech level %.1f dBFS", audio.RMSDBFS(a))
	}
	c, err := (&Flite{Rate: 48000}).Speak(ctx, "slt", "Four one seven.")
	if err != nil {
		t.Fatal(err)
	}
	if len(c) != 2*len(a) {
		t.Errorf("48 kHz rendering has %d samples, 24 kHz %d", len(c), len(a))
	}
}

func TestUnknownVoice(t *testing.T) {
	needFlite(t)
	vs, err := Voices(context.Background(), "")
	if err != nil || !slices.Contains(vs, "slt") {
		t.Fatalf("voices %v %v", vs, err)
	}
	if _, err := (&Flite{}).Speak(context.Background(), "no-such-voice", "hello"); err == nil {
		t.Fatal("an unknown voice must fail")
	}
	if _, err := Voices(context.Background(), "/nonexistent/flite"); !errors.Is(err, ErrNoVoice) {
		t.Fatalf("missing binary: %v", err)
	}
}

func TestStretchChangesThePace(t *testing.T) {
	needFlite(t)
	ctx := context.Background()
	plain, err := (&Flite{MemoLimit: -1}).Speak(ctx, "kal", "Thank you for calling. How can I help you today?")
	if err != nil {
		t.Fatal(err)
	}
	fast, err := (&Flite{MemoLimit: -1, Stretch: 0.9}).Speak(ctx, "kal", "Thank you for calling. How can I help you today?")
	if err != nil {
		t.Fatal(err)
	}
	if r := float64(len(fast)) / float64(len(plain)); r < 0.7 || r > 0.95 {
		t.Errorf("stretch 0.9 gives %d samples against %d at the voice's pace (ratio %.2f)", len(fast), len(plain), r)
	}
}
