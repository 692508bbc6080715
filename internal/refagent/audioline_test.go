package refagent

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	mdopus "github.com/pion/mediadevices/pkg/codec/opus"
	mdaudio "github.com/pion/mediadevices/pkg/io/audio"
	"github.com/pion/mediadevices/pkg/prop"
	"github.com/pion/mediadevices/pkg/wave"
	"github.com/pion/opus"

	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/media"
	"github.com/voicebench/humanaudit/internal/session"
	"github.com/voicebench/humanaudit/internal/trace"
)

// throughOpus passes 24 kHz caller audio through the codec path of a browser call: up to the
// 48 kHz a browser captures at, libopus in 20 ms packets at 32 kbit/s (as Chrome sends speech),
// and pion's decoder back to the 24 kHz the media engine hands the agent.
func throughOpus(pcm []int16) ([]int16, error) {
	up, err := audio.ResampleClip(pcm, 24000, 48000)
	if err != nil {
		return nil, err
	}
	const frame = 960 // 20 ms at 48 kHz
	if r := len(up) % frame; r != 0 {
		up = append(up, make([]int16, frame-r)...)
	}
	chunk := wave.NewInt16Interleaved(wave.ChunkInfo{Len: frame, Channels: 1, SamplingRate: 48000})
	pos := 0
	reader := mdaudio.ReaderFunc(func() (wave.Audio, func(), error) {
		copy(chunk.Data, up[pos:pos+frame])
		pos += frame
		return chunk, func() {}, nil
	})
	params, err := mdopus.NewParams()
	if err != nil {
		return nil, err
	}
	params.BitRate = 32000
	enc, err := params.BuildAudioEncoder(reader, prop.Media{Audio: prop.Audio{SampleRate: 48000, ChannelCount: 1}})
	if err != nil {
		return nil, err
	}
	defer enc.Close()
	dec, err := opus.NewDecoderWithOutput(24000, 1)
	if err != nil {
		return nil, err
	}
	buf := make([]int16, 24000*120/1000)
	out := make([]int16, 0, len(pcm)+480)
	for pos+frame <= len(up) {
		pkt, _, err := enc.Read()
		if err != nil {
			return nil, fmt.Errorf("opus encode: %w", err)
		}
		n, err := dec.DecodeToInt16(pkt, buf)
		if err != nil {
			return nil, fmt.Errorf("opus decode: %w", err)
		}
		out = append(out, buf[:n]...)
	}
	return out, nil
}

// opusLine is a synthetic caller heard through Opus: each utterance of voice goes through
// throughOpus before it reaches the media engine.
type opusLine struct {
	voice session.CallerVoice
	mu    sync.Mutex
	memo  map[string][]int16
}

func (l *opusLine) Speak(ctx context.Context, p trace.Plan) (string, string, []int16, error) {
	text, source, pcm, err := l.voice.Speak(ctx, p)
	if err != nil {
		return "", "", nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if coded, ok := l.memo[text]; ok {
		return text, source, coded, nil
	}
	coded, err := throughOpus(pcm)
	if err != nil {
		return "", "", nil, err
	}
	if l.memo == nil {
		l.memo = map[string][]int16{}
	}
	l.memo[text] = coded
	return text, source, coded, nil
}

// spoken renders a caller's words in a Flite voice and passes them through Opus: recorded caller
// audio as the agent receives it in a browser call.
func spoken(tb testing.TB, voice, text string) []int16 {
	tb.Helper()
	key := "opus|" + voice + "|" + text
	if v, ok := fliteMemo.Load(key); ok {
		return v.([]int16)
	}
	coded, err := throughOpus(say(tb, voice, text))
	if err != nil {
		tb.Fatal(err)
	}
	fliteMemo.Store(key, coded)
	return coded
}

// speedClock is a media clock that runs speed times faster than real time, so that a suite of
// synthetic calls finishes sooner. Media time (what the trace and the grader see) is the tick
// count as always; only the wall time between ticks shrinks. The agent's own work (recognition,
// synthesis) still takes wall time, which suiteLatencies accounts for.
type speedClock struct {
	speed float64
	start time.Time

	mu    sync.Mutex
	shift time.Duration
	stop  chan struct{}
	once  sync.Once
}

func newSpeedClock(speed float64) *speedClock {
	return &speedClock{speed: speed, start: time.Now(), stop: make(chan struct{})}
}

func (c *speedClock) Due(n int64) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.start.Add(time.Duration(float64(time.Duration(n)*media.TickDuration)/c.speed) + c.shift)
}

func (c *speedClock) Shift(d time.Duration) {
	c.mu.Lock()
	c.shift += d
	c.mu.Unlock()
}

func (c *speedClock) Next(n int64) (media.Tick, error) {
	due := c.Due(n)
	if err := c.WaitUntil(due); err != nil {
		return media.Tick{}, err
	}
	return media.Tick{N: n, Due: due, Start: time.Now()}, nil
}

func (c *speedClock) WaitUntil(t time.Time) error {
	select {
	case <-c.stop:
		return media.ErrClosed
	default:
	}
	wait := time.Until(t)
	if wait <= 0 {
		return nil
	}
	tm := time.NewTimer(wait)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-c.stop:
		return media.ErrClosed
	}
}

func (c *speedClock) Stop() { c.once.Do(func() { close(c.stop) }) }

var _ media.MediaClock = (*speedClock)(nil)

// TestThroughOpus: the codec path keeps the audio's length (to a packet) and its speech.
func TestThroughOpus(t *testing.T) {
	needTools(t)
	pcm := say(t, "slt", "five oh three, five five five, oh one four seven")
	coded, err := throughOpus(pcm)
	if err != nil {
		t.Fatal(err)
	}
	if d := len(coded) - len(pcm); d < 0 || d > 480 {
		t.Errorf("%d samples in, %d out", len(pcm), len(coded))
	}
	if audio.RMSDBFS(coded) < audio.RMSDBFS(pcm)-3 {
		t.Errorf("level %.1f dBFS after Opus, %.1f before", audio.RMSDBFS(coded), audio.RMSDBFS(pcm))
	}
	if slices.Equal(coded[:len(pcm)], pcm) {
		t.Error("Opus left the samples untouched: not a lossy codec path")
	}
}
