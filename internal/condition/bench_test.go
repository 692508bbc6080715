package condition

import "testing"

// BenchmarkCondition is the cost of the heaviest condition (a noise under the telephone line) on
// the media path: per 40 ms frame, and as the share of one core a call takes.
func BenchmarkCondition(b *testing.B) {
	bed := synthBed(BackgroundTV, 4)
	p, err := NewProcessor(MustParse("phone_line+background_tv@10"), bed, 1)
	if err != nil {
		b.Fatal(err)
	}
	frame := whiteNoise(960, 3, 3000)
	buf := make([]int16, len(frame))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		copy(buf, frame)
		p.Condition(buf, int64(i)*960)
	}
	perFrame := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(perFrame/1e3, "µs/frame")
	b.ReportMetric(100*perFrame/40e6, "%core/call")
}
