// Package tts speaks text with Debian's CMU Flite, deterministically: the same voice and text give
// the same samples, resampled in process (with the resampler's delay removed) to the rate asked
// for. The frozen caller bank, the reference agent, synthetic callers and browser tests all speak
// through it: it is the project's one Flite wrapper.
package tts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/voicebench/humanaudit/internal/audio"
)

// DefaultBinary is Debian's Flite.
const DefaultBinary = "/usr/bin/flite"

// ErrNoVoice is returned for a voice Flite does not have, or when Flite is missing.
var ErrNoVoice = errors.New("no such flite voice")

// Voices lists the voices of the Flite binary (DefaultBinary when empty).
func Voices(ctx context.Context, binary string) ([]string, error) {
	if binary == "" {
		binary = DefaultBinary
	}
	out, err := exec.CommandContext(ctx, binary, "-lv").Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s -lv: %v (scripts/deps.sh installs flite)", ErrNoVoice, binary, err)
	}
	return strings.Fields(strings.TrimPrefix(strings.TrimSpace(string(out)), "Voices available:")), nil
}

// Flite speaks with one Flite binary at one output rate, remembering recent sentences (speakers
// repeat themselves). The zero value speaks at 24 kHz with DefaultBinary. It is safe for
// concurrent use.
type Flite struct {
	Binary    string // default DefaultBinary
	Rate      int    // output rate, default audio.RecordRate (24 kHz)
	MemoLimit int    // sentences remembered, default 512; negative remembers none
	// Stretch is Flite's duration_stretch: below 1 speaks faster than the voice's own pace, above
	// 1 slower; 0 keeps the voice's pace.
	Stretch float64

	mu     sync.Mutex
	memo   map[[2]string][]int16
	voices []string
}

// checkVoice refuses a voice the binary lacks: Flite itself would silently use its default.
func (f *Flite) checkVoice(ctx context.Context, binary, voice string) error {
	f.mu.Lock()
	vs := f.voices
	f.mu.Unlock()
	if vs == nil {
		var err error
		if vs, err = Voices(ctx, binary); err != nil {
			return err
		}
		f.mu.Lock()
		f.voices = vs
		f.mu.Unlock()
	}
	for _, v := range vs {
		if v == voice {
			return nil
		}
	}
	return fmt.Errorf("%w %q (flite has: %s)", ErrNoVoice, voice, strings.Join(vs, " "))
}

// Speak returns text in voice as mono PCM16 at f.Rate. The slice is shared with later calls for
// the same sentence: do not modify it.
func (f *Flite) Speak(ctx context.Context, voice, text string) ([]int16, error) {
	key := [2]string{voice, text}
	f.mu.Lock()
	pcm, ok := f.memo[key]
	f.mu.Unlock()
	if ok {
		return pcm, nil
	}
	binary, rate := f.Binary, f.Rate
	if binary == "" {
		binary = DefaultBinary
	}
	if rate == 0 {
		rate = audio.RecordRate
	}
	if err := f.checkVoice(ctx, binary, voice); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "tts-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "say.wav")
	args := []string{"-voice", voice}
	if f.Stretch > 0 {
		args = append(args, "--setf", fmt.Sprintf("duration_stretch=%g", f.Stretch))
	}
	cmd := exec.CommandContext(ctx, binary, append(args, "-t", text, "-o", out)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("flite -voice %s: %w: %s", voice, err, strings.TrimSpace(stderr.String()))
	}
	w, err := audio.ReadWAV(out)
	if err != nil {
		return nil, fmt.Errorf("flite output: %w", err)
	}
	if w.Channels != 1 {
		return nil, fmt.Errorf("flite wrote %d channels, want mono", w.Channels)
	}
	if pcm, err = audio.ResampleClip(w.Samples, w.Rate, rate); err != nil {
		return nil, err
	}
	limit := f.MemoLimit
	if limit == 0 {
		limit = 512
	}
	if limit > 0 {
		f.mu.Lock()
		if f.memo == nil || len(f.memo) >= limit {
			f.memo = map[[2]string][]int16{}
		}
		f.memo[key] = pcm
		f.mu.Unlock()
	}
	return pcm, nil
}
