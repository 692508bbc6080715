package asr

import (
	"context"
	"fmt"
	"time"

	"github.com/voicebench/humanaudit/internal/audio"
)

// Segment is a span of speech in a recorded channel, in time from the channel's first sample.
type Segment struct {
	Start, End time.Duration
}

// Utterance is the transcript of one segment. Word times are relative to the channel (the
// segment's start added).
type Utterance struct {
	Segment
	Result
}

// FindSegments finds the speech segments of a channel with the media endpointer (the same
// detector that ends callers' turns), each widened by the endpointer's prefix padding at the
// start and 200 ms at the end so no word is clipped.
func FindSegments(pcm []int16, rate int, cfg audio.EndpointerConfig) ([]Segment, error) {
	ep, err := audio.NewEndpointer(cfg)
	if err != nil {
		return nil, fmt.Errorf("find segments: %w", err)
	}
	var segs []Segment
	var open *Segment
	ep.Process(pcm, rate, 0, func(ev audio.SpeechEvent) {
		if ev.Start {
			open = &Segment{Start: ev.Padded}
			return
		}
		if open != nil {
			open.End = ev.At + 200*time.Millisecond
			segs = append(segs, *open)
			open = nil
		}
	})
	total := time.Duration(len(pcm)) * time.Second / time.Duration(rate)
	if open != nil {
		open.End = total
		segs = append(segs, *open)
	}
	for i := range segs {
		segs[i].End = min(segs[i].End, total)
	}
	return segs, nil
}

// Transcribe recognizes each segment of a mono channel (PCM16 at rate Hz) with the
// open-vocabulary model, in order. Segments outside the audio are an error wrapping ErrBadAudio.
func (r *Recognizer) Transcribe(ctx context.Context, pcm []int16, rate int, segs []Segment) ([]Utterance, error) {
	total := time.Duration(len(pcm)) * time.Second / time.Duration(max(rate, 1))
	out := make([]Utterance, 0, len(segs))
	for i, s := range segs {
		if s.Start < 0 || s.End <= s.Start || s.Start >= total {
			return nil, fmt.Errorf("%w: segment %d (%v–%v) outside the %v channel", ErrBadAudio, i, s.Start, s.End, total)
		}
		a := int(s.Start * time.Duration(rate) / time.Second)
		b := min(len(pcm), int(s.End*time.Duration(rate)/time.Second))
		res, err := r.Recognize(ctx, pcm[a:b], rate, nil)
		if err != nil {
			return nil, fmt.Errorf("segment %d: %w", i, err)
		}
		for j := range res.Words {
			res.Words[j].Start += s.Start
			res.Words[j].End += s.Start
		}
		out = append(out, Utterance{Segment: s, Result: res})
	}
	return out, nil
}

// TranscribeWAV transcribes one channel of a recording (0 = left = caller, 1 = right = agent in the
// console's stereo recordings). With no segments given, they are found with FindSegments and the
// endpointer's defaults.
func (r *Recognizer) TranscribeWAV(ctx context.Context, path string, channel int, segs []Segment) ([]Utterance, error) {
	w, err := audio.ReadWAV(path)
	if err != nil {
		return nil, fmt.Errorf("transcribe: %w", err)
	}
	if channel < 0 || channel >= w.Channels {
		return nil, fmt.Errorf("transcribe %s: %w: channel %d of a %d-channel file", path, ErrBadAudio, channel, w.Channels)
	}
	pcm := w.Channel(channel)
	if segs == nil {
		if segs, err = FindSegments(pcm, w.Rate, audio.EndpointerConfig{}); err != nil {
			return nil, err
		}
	}
	return r.Transcribe(ctx, pcm, w.Rate, segs)
}
