package asr

import (
	"context"
	"testing"
)

// BenchmarkRecognize reports decoding time per second of audio (the real-time factor) for the
// open-vocabulary model and for a slot grammar, on a 3-second caller answer.
func BenchmarkRecognize(b *testing.B) {
	needFlite(b)
	r := mustRecognizer(b)
	pcm := flite24k(b, "rms", "It's five oh three, five five five, oh one four seven.")
	sec := float64(len(pcm)) / 24000
	for _, bc := range []struct {
		name string
		g    *Grammar
	}{{"open_vocabulary", nil}, {"phone_grammar", Slot{Kind: KindPhone}.Grammar()}} {
		b.Run(bc.name, func(b *testing.B) {
			var total float64
			for b.Loop() {
				res, err := r.Recognize(context.Background(), pcm, 24000, bc.g)
				if err != nil {
					b.Fatal(err)
				}
				total += res.Elapsed.Seconds()
			}
			b.ReportMetric(total/float64(b.N)/sec, "rtf")
			b.ReportMetric(total/float64(b.N)*1000, "decode_ms")
		})
	}
}
