package refagent

import (
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/audio"
)

// TestReplyStartsWithItsVoice: a reply's audio begins with its voice, not with the silence Flite
// puts before every utterance (about 180 ms for kal before its onset ramp), which the caller would wait through as
// response latency.
func TestReplyStartsWithItsVoice(t *testing.T) {
	s := startServer(t, Config{AudioLead: -1})
	a := dial(t, s, false)
	callerTurn(t, a, say(t, "rms", "Hi, I need help with my laptop."))
	var pcm []int16
	deadline := time.After(30 * time.Second)
	for done := false; !done; {
		select {
		case ev := <-a.Events():
			switch ev.Type {
			case agent.EventAudioDelta:
				pcm = append(pcm, ev.Audio...)
			case agent.EventResponseDone:
				done = len(pcm) > 0
			case agent.EventError:
				t.Fatalf("agent error: %+v", ev.Err)
			}
		case <-deadline:
			t.Fatal("no reply within 30 s")
		}
	}
	// The media endpointer's voiced threshold, in its 10 ms blocks.
	const block = 240
	onset := -1
	for off := 0; off+block <= len(pcm); off += block {
		if audio.RMSDBFS(pcm[off:off+block]) >= -45 {
			onset = off
			break
		}
	}
	if onset < 0 {
		t.Fatalf("the reply (%d ms) has no voiced block", len(pcm)*1000/24000)
	}
	// Flite's onset ramp (fricatives, breath) is kept: about 30-90 ms before the voiced block.
	if ms := onset * 1000 / 24000; ms > 120 {
		t.Errorf("the reply's voice starts %d ms into its audio, want at most 120", ms)
	}
	// The preroll is kept: the voice does not start on the first sample.
	if audio.RMSDBFS(pcm[:leadPreroll/2]) >= leadFloorDBFS {
		t.Errorf("the reply's first %d ms are at %.0f dBFS: the onset was cut", leadPreroll/2*1000/24000, audio.RMSDBFS(pcm[:leadPreroll/2]))
	}
}
