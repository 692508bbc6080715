package annotate

import (
	"hash/fnv"
	"slices"
	"strconv"
)

// Order returns the item ids in the order one annotator rates them: sorted, then shuffled by a
// generator seeded from the study seed and the annotator's seed position, so each annotator gets
// their own order and the same study gives the same orders on every machine (SplitMix64 and
// Fisher–Yates, fixed here rather than borrowed from math/rand, whose shuffles may change).
func Order(studySeed int64, seedPosition int, ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	h := fnv.New64a()
	h.Write([]byte("annotate/order/" + strconv.Itoa(seedPosition)))
	state := uint64(studySeed)*0x9e3779b97f4a7c15 ^ h.Sum64()
	next := func() uint64 {
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return z ^ (z >> 31)
	}
	for i := len(out) - 1; i > 0; i-- {
		j := int(next() % uint64(i+1))
		out[i], out[j] = out[j], out[i]
	}
	return out
}
