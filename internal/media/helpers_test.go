package media

import (
	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/audio/audiotest"
	"github.com/voicebench/humanaudit/internal/media/libopus"
)

// Test signals and comparisons shared with the audio tests.
var (
	speechLike = audiotest.SpeechLike
	sine       = audiotest.Sine
	bestLag    = audiotest.BestLag
	maxAbs     = audiotest.MaxAbs
)

// segments builds 24 kHz audio from (duration ms, level dBFS) pieces; level <= -100 means silence.
func segments(parts ...[2]float64) []int16 { return audiotest.Segments(audio.RecordRate, parts...) }

// testEncoders is the real libopus encoder, as the console configures it.
var testEncoders = Encoders(libopus.NewEncoder)

// testDecoders is libopus's decoder, as the console configures it.
var testDecoders = Decoders(libopus.NewDecoder)

// newOpusEncoder is the engine's silence-skipping encoder over a real libopus encoder.
func newOpusEncoder(bitrate int) (*opusEncoder, error) {
	e, err := libopus.NewEncoder(bitrate)
	if err != nil {
		return nil, err
	}
	return newAgentEncoder(e), nil
}
