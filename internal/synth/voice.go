package synth

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/bank"
	"github.com/voicebench/humanaudit/internal/session"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
	"github.com/voicebench/humanaudit/internal/tts"
)

// Sources recorded in caller.utterance events: where the caller's audio came from.
const (
	SourceBank   = "bank"   // the frozen bank's rendered audio file
	SourceRender = "render" // rendered at run time (no bank audio for this plan or no bank built)
)

// Renderer turns text into 24 kHz mono speech in a given voice, for plans the bank has no audio
// for.
type Renderer interface {
	Render(ctx context.Context, voice, text string) ([]int16, error)
}

// BankVoice is the frozen synthetic caller of one call: each plan is said with the variant the
// bank's deterministic selector picks for (task, seed, plan) (a plan said again moves on to the
// next variant), played from the bank's rendered audio under Dir. It implements
// session.CallerVoice.
type BankVoice struct {
	Task *task.Task
	Seed int64
	// Dir is the rendered bank (audit_data/bank): Dir/<bank.FileName(variant)>.
	Dir string
	// Render, when set, renders what the bank has no audio for (source "render"); nil makes a
	// missing file an error, so a frozen run never silently changes its caller.
	Render Renderer

	once    sync.Once
	speaker func(trace.Plan) string
}

var _ session.CallerVoice = (*BankVoice)(nil)

// ErrNoBankAudio means the rendered bank lacks a variant's audio (run `audit bank build`).
var ErrNoBankAudio = errors.New("no bank audio")

// Speak implements session.CallerVoice.
func (v *BankVoice) Speak(ctx context.Context, p trace.Plan) (string, string, []int16, error) {
	v.once.Do(func() { v.speaker = bank.Speaker(v.Task, v.Seed) })
	text := v.speaker(p)
	variant := 0
	for i, s := range v.Task.Bank[p.ID] {
		if s == text {
			variant = i + 1
			break
		}
	}
	if variant > 0 && v.Dir != "" {
		path := filepath.Join(v.Dir, filepath.FromSlash(bank.FileName(bank.Variant{Task: v.Task.ID, Plan: p.ID, Variant: variant})))
		w, err := audio.ReadWAV(path)
		switch {
		case err == nil:
			if w.Rate != audio.RecordRate || w.Channels != 1 {
				return "", "", nil, fmt.Errorf("bank audio %s: %d Hz × %d channels, want %d Hz mono", path, w.Rate, w.Channels, audio.RecordRate)
			}
			return text, SourceBank, w.Samples, nil
		case !errors.Is(err, os.ErrNotExist):
			return "", "", nil, fmt.Errorf("bank audio: %w", err)
		}
	}
	if v.Render == nil {
		return "", "", nil, fmt.Errorf("task %s plan %s variant %d: %w (run audit bank build, or allow rendering)", v.Task.ID, p.ID, variant, ErrNoBankAudio)
	}
	pcm, err := v.Render.Render(ctx, v.Task.User.Persona.Voice, text)
	if err != nil {
		return "", "", nil, err
	}
	return text, SourceRender, pcm, nil
}

// Flite renders speech with Debian's flite through the shared tts package, at 24 kHz, caching
// recent sentences. An empty voice is slt. Safe for concurrent use.
type Flite struct{ tts tts.Flite }

// Render implements Renderer.
func (f *Flite) Render(ctx context.Context, voice, text string) ([]int16, error) {
	if voice == "" {
		voice = "slt"
	}
	return f.tts.Speak(ctx, voice, text)
}
