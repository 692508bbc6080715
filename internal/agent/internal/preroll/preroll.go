// Package preroll holds caller audio outside a turn in matched turn-taking, keeping only the most
// recent stretch, so that a turn can start with the audio the endpointer needed to confirm the
// onset (its minimum speech plus prefix padding) while nothing else between turns reaches the
// provider.
package preroll

// DefaultMS covers the media endpointer's defaults (100 ms minimum speech + 300 ms padding) with
// a margin.
const DefaultMS = 500

// Buffer holds encoded frames: at least Max samples of the most recent ones, and one frame more
// at most.
type Buffer struct {
	max     int
	frames  [][]byte
	samples []int
	total   int
}

// New returns a buffer of ms milliseconds (DefaultMS when ms <= 0) at rate.
func New(ms, rate int) Buffer {
	if ms <= 0 {
		ms = DefaultMS
	}
	return Buffer{max: ms * rate / 1000}
}

// Push adds one frame of n samples, dropping the oldest frames beyond the bound.
func (b *Buffer) Push(frame []byte, n int) {
	b.frames = append(b.frames, frame)
	b.samples = append(b.samples, n)
	b.total += n
	for len(b.frames) > 1 && b.total-b.samples[0] >= b.max {
		b.total -= b.samples[0]
		b.frames[0] = nil
		b.frames, b.samples = b.frames[1:], b.samples[1:]
	}
}

// Take returns the held frames, oldest first, with their sample count, and empties the buffer.
func (b *Buffer) Take() ([][]byte, int) {
	frames, total := b.frames, b.total
	b.frames, b.samples, b.total = nil, nil, 0
	return frames, total
}
