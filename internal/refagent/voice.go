package refagent

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"

	"github.com/voicebench/humanaudit/internal/audio"
)

// DefaultVoice is the Flite voice of the reference agent. The synthetic callers' personas use slt,
// rms, awb and kal16; kal (an 8 kHz diphone voice) is the one Debian's flite has left, so the
// agent never sounds like its caller.
const DefaultVoice = "kal"

// voice synthesizes the agent's speech with Debian's flite, at 24 kHz.
type voice struct {
	name string
	mu   sync.Mutex
	memo map[string][]int16
}

// durationStretch speeds Flite's kal voice up a little (1 is its default pace, slower than a
// service agent's).
const durationStretch = "0.9"

// maxVoiceMemo bounds the cache of synthesized sentences (agents repeat themselves).
const maxVoiceMemo = 512

func newVoice(name string) (*voice, error) {
	out, err := exec.Command("flite", "-lv").Output()
	if err != nil {
		return nil, fmt.Errorf("%w: flite: %v (install it with scripts/deps.sh)", ErrNoVoice, err)
	}
	if !strings.Contains(" "+strings.TrimSpace(strings.TrimPrefix(string(out), "Voices available:"))+" ", " "+name+" ") {
		return nil, fmt.Errorf("%w: flite has no voice %q (it has: %s)", ErrNoVoice, name, strings.TrimSpace(string(out)))
	}
	return &voice{name: name, memo: map[string][]int16{}}, nil
}

// speak returns one sentence as PCM16 24 kHz mono.
func (v *voice) speak(ctx context.Context, text string) ([]int16, error) {
	v.mu.Lock()
	pcm, ok := v.memo[text]
	v.mu.Unlock()
	if ok {
		return pcm, nil
	}
	out, err := exec.CommandContext(ctx, "flite", "-voice", v.name, "--setf", "duration_stretch="+durationStretch,
		"-t", text, "-o", "/dev/stdout").Output()
	if err != nil {
		return nil, fmt.Errorf("flite: %w", err)
	}
	raw, rate, err := wavPCM(out)
	if err != nil {
		return nil, fmt.Errorf("flite output: %w", err)
	}
	if rate != 24000 {
		rs, err := audio.NewResampler(rate, 24000)
		if err != nil {
			return nil, err
		}
		raw = rs.Process(append(raw, make([]int16, rate/50)...), nil)
		if d := rs.DelaySamples(); d < len(raw) {
			raw = raw[d:]
		}
	}
	v.mu.Lock()
	if len(v.memo) >= maxVoiceMemo {
		clear(v.memo)
	}
	v.memo[text] = raw
	v.mu.Unlock()
	return raw, nil
}

// wavPCM reads the mono 16-bit PCM of flite's RIFF/WAVE output and its rate.
func wavPCM(b []byte) ([]int16, int, error) {
	w, err := audio.DecodeWAV(b)
	if err != nil {
		return nil, 0, err
	}
	if w.Channels != 1 {
		return nil, 0, fmt.Errorf("%d channels, want mono", w.Channels)
	}
	return w.Samples, w.Rate, nil
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
