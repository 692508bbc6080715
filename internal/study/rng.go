package study

import "hash/fnv"

// stream is a deterministic pseudo-random stream (SplitMix64). Plans must be reproducible from
// their seed on any machine and Go version, so the planner uses this fixed algorithm rather than
// math/rand, whose shuffles are not promised to stay the same.
type stream struct{ s uint64 }

// newStream derives an independent stream for one purpose of the planner from the seed, so that a
// change in how one decision draws numbers does not reshuffle the others.
func newStream(seed int64, purpose string) *stream {
	h := fnv.New64a()
	h.Write([]byte(purpose))
	return &stream{s: uint64(seed)*0x9e3779b97f4a7c15 ^ h.Sum64()}
}

func (r *stream) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a number in [0, n) (n > 0). The modulo bias is below 2^-50 for the sizes here.
func (r *stream) intn(n int) int { return int(r.next() % uint64(n)) }

// shuffle permutes n elements with Fisher–Yates.
func (r *stream) shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, r.intn(i+1))
	}
}

// perm returns a random permutation of 0..n-1.
func (r *stream) perm(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	r.shuffle(n, func(i, j int) { p[i], p[j] = p[j], p[i] })
	return p
}
