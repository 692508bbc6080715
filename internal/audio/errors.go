package audio

import "errors"

// Sentinel errors of the audio package; match them with errors.Is.
var (
	// ErrBadConfig marks an invalid setting (endpointer, resampler, recorder); the wrapping message
	// names the field and value.
	ErrBadConfig = errors.New("audio: bad config")
	// ErrBadWAV marks a file that is not a 16-bit PCM RIFF/WAVE file this package can read or repair.
	ErrBadWAV = errors.New("audio: not a 16-bit PCM WAV file")
	// ErrClosed is returned by a closed Recorder.
	ErrClosed = errors.New("audio: closed")
)
