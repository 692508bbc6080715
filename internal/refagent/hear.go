package refagent

import (
	"context"
	"sync"
	"time"

	"github.com/voicebench/humanaudit/internal/asr"
	"github.com/voicebench/humanaudit/internal/refagent/dialog"
)

// hear recognizes one caller turn (PCM16 24 kHz) against the question asked and understands it.
// The open-vocabulary transcript (for the trace, corrections and unsolicited news) comes from the
// turn's stream when it was decoded while the caller spoke (streamed non-nil), else it is decoded
// now; when the question has a typed answer, the question's grammar decodes the whole turn,
// concurrently.
func hear(ctx context.Context, rec *asr.Recognizer, q dialog.Question, pcm []int16, streamed *asr.Result) dialog.Heard {
	slot := q.Slot()
	var lm asr.Result
	var ans asr.Answer
	var lmErr, slotErr error
	var wg sync.WaitGroup
	if slot != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ans, slotErr = rec.RecognizeSlot(ctx, pcm, 24000, *slot)
		}()
	}
	if streamed != nil {
		lm = *streamed
	} else {
		lm, lmErr = rec.Recognize(ctx, pcm, 24000, nil)
	}
	wg.Wait()
	if lmErr != nil {
		lm = asr.Result{}
	}
	if slotErr != nil {
		ans = asr.Answer{}
	}
	return q.Understand(ctx, dialog.Utterance{Open: lm, Typed: slot != nil, Answer: ans, Reread: reread(rec, pcm)})
}

// reread decodes the turn's audio from a word's end on with another grammar, when at least a
// tenth of a second follows it.
func reread(rec *asr.Recognizer, pcm []int16) func(context.Context, time.Duration, asr.Slot) (asr.Answer, bool) {
	return func(ctx context.Context, from time.Duration, slot asr.Slot) (asr.Answer, bool) {
		i := int(from * 24000 / time.Second)
		if len(pcm) == 0 || i >= len(pcm)-2400 {
			return asr.Answer{}, false
		}
		ans, err := rec.RecognizeSlot(ctx, pcm[i:], 24000, slot)
		return ans, err == nil
	}
}
