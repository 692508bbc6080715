package console

import (
	"context"
	"errors"
	"sync"

	"github.com/voicebench/humanaudit/internal/asr"
	"github.com/voicebench/humanaudit/internal/session"
)

// Recognizer transcribes recorded channels after a call with the offline recognizer
// (PocketSphinx), loading its model on first use and sharing it between sessions.
type Recognizer struct {
	// mu is held while the model loads, so a Close during a background Warm waits for the load
	// instead of racing it.
	mu     sync.Mutex
	loaded bool
	closed bool
	r      *asr.Recognizer
	err    error
}

// errRecognizerClosed is what a Recognizer used after Close says.
var errRecognizerClosed = errors.New("console: the offline recognizer is closed")

var _ session.Transcriber = (*Recognizer)(nil)

// TranscribeChannel implements session.Transcriber.
func (t *Recognizer) TranscribeChannel(ctx context.Context, wavPath string, channel int, spans []session.Span) ([]session.Transcript, error) {
	if t.load(); t.err != nil {
		return nil, t.err
	}
	segs := make([]asr.Segment, len(spans))
	for i, s := range spans {
		segs[i] = asr.Segment{Start: s.Start, End: s.End}
	}
	got, err := t.r.TranscribeWAV(ctx, wavPath, channel, segs)
	if err != nil {
		return nil, err
	}
	out := make([]session.Transcript, len(got))
	for i, u := range got {
		out[i] = session.Transcript{Span: session.Span{Start: u.Start, End: u.End}, Text: u.Text}
	}
	return out, nil
}

// load loads the model once; Warm runs it ahead of a call so its first turn is not kept waiting.
func (t *Recognizer) load() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.loaded {
		return
	}
	t.loaded = true
	if t.closed {
		t.err = errRecognizerClosed
		return
	}
	t.r, t.err = asr.New(asr.Config{})
}

// Warm loads the model in the background.
func (t *Recognizer) Warm() { go t.load() }

// Close frees the recognizer's model.
func (t *Recognizer) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	if !t.loaded {
		t.loaded, t.err = true, errRecognizerClosed
	}
	if t.r != nil {
		return t.r.Close()
	}
	return nil
}

var _ session.CallerListener = (*Recognizer)(nil)

// Listen implements session.CallerListener: the utterance's open-vocabulary transcript, read as an
// answer to an approval request.
func (t *Recognizer) Listen(ctx context.Context, pcm []int16, rate int) (session.Heard, error) {
	if t.load(); t.err != nil {
		return session.Heard{}, t.err
	}
	a, err := t.r.RecognizeAuthorization(ctx, pcm, rate)
	if err != nil {
		return session.Heard{}, err
	}
	return session.Heard{Words: a.Words, Approval: string(a.Decision), Confidence: a.Confidence}, nil
}
