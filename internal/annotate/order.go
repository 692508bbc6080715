package annotate

import (
	"slices"
	"strconv"

	"github.com/voicebench/humanaudit/internal/rng"
)

// Order returns the item ids in the order one annotator rates them: sorted, then shuffled by a
// stream seeded from the study seed and the annotator's seed position, so each annotator gets
// their own order and the same study gives the same orders on every machine (internal/rng).
func Order(studySeed int64, seedPosition int, ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	rng.New(studySeed, "annotate/order/"+strconv.Itoa(seedPosition)).Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
