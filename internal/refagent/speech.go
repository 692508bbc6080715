package refagent

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/voicebench/humanaudit/internal/tts"
)

// DefaultVoice is the Flite voice of the reference agent. The synthetic callers' personas use slt,
// rms, awb and kal16; kal (an 8 kHz diphone voice) is the one Debian's flite has left, so the
// agent never sounds like its caller.
const DefaultVoice = "kal"

// durationStretch speeds Flite's kal voice up a little (1 is its default pace, slower than a
// service agent's).
const durationStretch = 0.9

// newSpeaker returns the agent's voice: Flite at the protocol's 24 kHz, refusing a voice Flite
// lacks (Flite itself would silently speak with its default).
func newSpeaker(voice string) (*tts.Flite, error) {
	vs, err := tts.Voices(context.Background(), "")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoVoice, err)
	}
	if !slices.Contains(vs, voice) {
		return nil, fmt.Errorf("%w: flite has no voice %q (it has: %s)", ErrNoVoice, voice, strings.Join(vs, " "))
	}
	return &tts.Flite{Rate: 24000, Stretch: durationStretch}, nil
}

// sentences splits an utterance so each sentence's audio goes out as soon as it is synthesized.
func sentences(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		if (c == '.' || c == '?' || c == '!') && (i+1 == len(text) || text[i+1] == ' ') {
			if s := strings.TrimSpace(text[start : i+1]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(text[start:]); s != "" {
		out = append(out, s)
	}
	return out
}
