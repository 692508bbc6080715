package refagent

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/voicebench/humanaudit/internal/asr"
	"github.com/voicebench/humanaudit/internal/refagent/dialog"
)

// hear recognizes one caller turn (PCM16 24 kHz) against the question asked and understands it.
// The open-vocabulary transcript (for the trace, corrections, free text and which grammars are
// worth decoding) comes from the turn's stream when it was decoded while the caller spoke
// (streamed non-nil), else it is decoded now. Then the turn is decoded whole with each grammar the
// question names (the asked field's, every other open field's, yes/no, filler), concurrently on
// the recognizer's decoders, and the dialogue chooses among the readings by score. A turn that
// answers a name asked is also read with the names directory alongside; one that may give a name
// otherwise (its read-back answered) only once it is understood to, and is understood again. A
// turn that answers an e-mail address asked or read back is also read with the e-mail directory
// alongside. An address a verify or lookup tool takes, once understood, is read again with the
// address grammar for the tool's retries.
func hear(ctx context.Context, rec *asr.Recognizer, q dialog.Question, pcm []int16, streamed *asr.Result) dialog.Heard {
	var lm asr.Result
	if streamed != nil {
		lm = *streamed
	} else if r, err := rec.Recognize(ctx, pcm, 24000, nil); err == nil {
		lm = r
	}
	slots := q.Grammars(lm)
	readings := make([]dialog.Reading, len(slots))
	ok := make([]bool, len(slots))
	var wg sync.WaitGroup
	for i, s := range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ans, err := rec.RecognizeSlot(ctx, pcm, 24000, s)
			readings[i], ok[i] = dialog.Reading{Slot: s, Answer: ans}, err == nil
		}()
	}
	var names *asr.Result
	if q.NamesAhead() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r, err := rec.RecognizeNames(ctx, pcm, 24000); err == nil {
				names = &r
			}
		}()
	}
	var mail *asr.Result
	if q.WantsMail() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r, err := rec.RecognizeMail(ctx, pcm, 24000); err == nil {
				mail = &r
			}
		}()
	}
	wg.Wait()
	var got []dialog.Reading
	for i := range readings {
		if ok[i] {
			got = append(got, readings[i])
		}
	}
	u := dialog.Utterance{Open: lm, Readings: got, Spoken: true, Reread: reread(rec, pcm), Names: names, Mail: mail}
	h := q.Understand(ctx, u)
	if names == nil && q.NeedsNames(h) {
		if r, err := rec.RecognizeNames(ctx, pcm, 24000); err == nil {
			u.Names = &r
			h = q.Understand(ctx, u)
		}
	}
	if slot, ok := q.AddressReread(h, lm); ok {
		if ans, err := rec.RecognizeSlot(ctx, pcm, 24000, slot); err == nil {
			h = q.WithAddressReading(h, ans)
		}
	}
	return h
}

// reread decodes the turn's audio from a word's end on with another grammar, when at least a
// tenth of a second follows it. A decode is made once: the turn may be understood twice (see
// NeedsNames).
func reread(rec *asr.Recognizer, pcm []int16) func(context.Context, time.Duration, asr.Slot) (asr.Answer, bool) {
	type decoded struct {
		ans asr.Answer
		ok  bool
	}
	var mu sync.Mutex
	done := map[string]decoded{}
	return func(ctx context.Context, from time.Duration, slot asr.Slot) (asr.Answer, bool) {
		i := int(from * 24000 / time.Second)
		if len(pcm) == 0 || i >= len(pcm)-2400 {
			return asr.Answer{}, false
		}
		key := fmt.Sprintf("%d|%+v", i, slot)
		mu.Lock()
		d, seen := done[key]
		mu.Unlock()
		if !seen {
			ans, err := rec.RecognizeSlot(ctx, pcm[i:], 24000, slot)
			d = decoded{ans, err == nil}
			if ctx.Err() == nil {
				mu.Lock()
				done[key] = d
				mu.Unlock()
			}
		}
		return d.ans, d.ok
	}
}
