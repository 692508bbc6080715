package refagent

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/tts"
)

// DefaultVoice is the Flite voice of the reference agent. The synthetic callers' personas use slt,
// rms, awb and kal16; kal (an 8 kHz diphone voice) is the one Debian's flite has left, so the
// agent never sounds like its caller.
const DefaultVoice = "kal"

// durationStretch speeds Flite's kal voice up a little (1 is its default pace, slower than a
// service agent's).
const durationStretch = 0.9

// Flite opens every utterance with silence, about 180 ms for kal (at -60 to -70 dBFS) before its
// onset ramps up, which a caller would wait through as response latency. A reply's first sentence
// starts leadPreroll before its first block at leadFloorDBFS or above: that keeps the ramp (a
// fricative starts there, 5 dB under the media endpointer's voiced threshold) and drops the
// silence. Later sentences keep theirs: it is the pause between them.
const (
	leadFloorDBFS = -50
	leadBlock     = 240 // 10 ms at 24 kHz
	leadPreroll   = 720 // 30 ms
)

// voiceStart is the sample a reply's audio starts at: leadPreroll before the first block of pcm at
// leadFloorDBFS or above, 0 when pcm starts with sound, len(pcm) when it is all silence.
func voiceStart(pcm []int16) int {
	for off := 0; off < len(pcm); off += leadBlock {
		if audio.RMSDBFS(pcm[off:min(off+leadBlock, len(pcm))]) >= leadFloorDBFS {
			return max(0, off-leadPreroll)
		}
	}
	return len(pcm)
}

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
