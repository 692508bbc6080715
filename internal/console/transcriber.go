package console

import (
	"context"
	"sync"

	"github.com/voicebench/humanaudit/internal/asr"
	"github.com/voicebench/humanaudit/internal/session"
)

// Recognizer transcribes recorded channels after a call with the offline recognizer
// (PocketSphinx), loading its model on first use and sharing it between sessions.
type Recognizer struct {
	once sync.Once
	r    *asr.Recognizer
	err  error
}

var _ session.Transcriber = (*Recognizer)(nil)

// TranscribeChannel implements session.Transcriber.
func (t *Recognizer) TranscribeChannel(ctx context.Context, wavPath string, channel int, spans []session.Span) ([]session.Transcript, error) {
	t.once.Do(func() { t.r, t.err = asr.New(asr.Config{}) })
	if t.err != nil {
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
func (t *Recognizer) load() { t.once.Do(func() { t.r, t.err = asr.New(asr.Config{}) }) }

// Warm loads the model in the background.
func (t *Recognizer) Warm() { go t.load() }

// Close frees the recognizer's model.
func (t *Recognizer) Close() error {
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
