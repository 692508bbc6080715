// Package audio is the project's PCM layer, in pure Go with no cgo, so that anything which only
// reads, writes or measures audio (the synthesizer, the recognizer, the caller bank, the web app)
// links no codec: the 24 kHz mono frames the media clock moves, WAV files (read, stream, write,
// record incrementally, repair after a crash), the streaming resampler, the speech endpointer and
// levels.
package audio
