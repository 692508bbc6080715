// Package rng is the project's one deterministic pseudo-random generator, SplitMix64, fixed here
// so that a seed gives the same study plans, annotator orders and power simulations on every
// machine and Go version (math/rand promises neither its shuffles nor its derivations of a seed).
package rng

import "hash/fnv"

// gamma is SplitMix64's increment, the golden ratio in 64-bit fixed point.
const gamma = 0x9e3779b97f4a7c15

// Stream is a SplitMix64 stream. The zero value is a valid stream (of seed 0, no purpose); a
// Stream is not safe for concurrent use.
type Stream struct{ s uint64 }

// New derives an independent stream for one purpose from a seed, so that a change in how one
// decision draws numbers does not reshuffle the others drawn from the same seed.
func New(seed int64, purpose string) *Stream {
	h := fnv.New64a()
	h.Write([]byte(purpose))
	return &Stream{s: uint64(seed)*gamma ^ h.Sum64()}
}

// Uint64 returns the next number of the stream.
func (r *Stream) Uint64() uint64 {
	r.s += gamma
	return Mix(r.s)
}

// Intn returns a number in [0, n) (n > 0). The modulo bias is below 2^-50 for the sizes the
// project draws (fewer than 2^14 choices).
func (r *Stream) Intn(n int) int { return int(r.Uint64() % uint64(n)) }

// Shuffle permutes n elements with Fisher–Yates, calling swap for each exchange.
func (r *Stream) Shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, r.Intn(i+1))
	}
}

// Perm returns a random permutation of 0..n-1.
func (r *Stream) Perm(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	r.Shuffle(n, func(i, j int) { p[i], p[j] = p[j], p[i] })
	return p
}

// Mix is SplitMix64's output function: a bijection of 64-bit words that spreads every input bit
// over the output, used on its own to derive one seed from another.
func Mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Derive returns the i-th seed derived from seed (i ≥ 0): the (i+1)-th number of a stream whose
// state starts at seed, so that derived seeds are as independent as the stream's numbers.
func Derive(seed uint64, i int) uint64 { return Mix(seed + uint64(i+1)*gamma) }
