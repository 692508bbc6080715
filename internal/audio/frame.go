package audio

import "time"

// The audio the call moves: every channel is mono 16-bit PCM at RecordRate, cut into frames of
// FrameDuration, one per tick of the media clock.
const (
	// RecordRate is the sample rate of the recording, of the decoded caller audio and of the agent
	// audio the media engine accepts and encodes (every realtime agent API emits 24 kHz PCM16).
	RecordRate = 24000
	// FrameDuration is one tick of the media clock.
	FrameDuration = 40 * time.Millisecond
	// FrameSamples is one frame at RecordRate.
	FrameSamples = RecordRate / 25 // 40 ms
)

// Frame is one tick of one channel at RecordRate.
type Frame [FrameSamples]int16

// SamplesToDuration converts a sample count at rate to media time (rounded down to the nanosecond).
func SamplesToDuration(n int64, rate int) time.Duration {
	return time.Duration(n) * time.Second / time.Duration(rate)
}

// DurationToSamples converts media time to a sample count at rate (rounded down).
func DurationToSamples(d time.Duration, rate int) int64 {
	return int64(d) * int64(rate) / int64(time.Second)
}
