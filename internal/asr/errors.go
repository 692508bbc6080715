package asr

import "errors"

// Sentinel errors of the recognizer; match them with errors.Is.
var (
	// ErrModel means the acoustic model, dictionary or language model could not be loaded.
	ErrModel = errors.New("asr: model not loadable")
	// ErrUnknownWord means a grammar uses a word the pronunciation dictionary lacks.
	ErrUnknownWord = errors.New("asr: word not in the dictionary")
	// ErrGrammar means PocketSphinx rejected a JSGF grammar.
	ErrGrammar = errors.New("asr: grammar rejected")
	// ErrDecode means the decoder failed on an utterance.
	ErrDecode = errors.New("asr: decoding failed")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("asr: recognizer closed")
	// ErrBadAudio marks audio the recognizer cannot take (a rate it cannot convert, a bad segment).
	ErrBadAudio = errors.New("asr: bad audio")
)
