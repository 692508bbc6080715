package stats

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Rating is one rater's value for one unit: a row of long-format reliability data.
type Rating struct {
	Unit  string
	Rater string
	Value string
	// Line is the 1-based line of the source file the rating came from, used in error
	// messages; 0 when the rating was built in memory.
	Line int
}

// where names a rating in error messages: its line when it came from a file.
func (r Rating) where() string {
	if r.Line > 0 {
		return fmt.Sprintf("line %d", r.Line)
	}
	return fmt.Sprintf("unit %q rater %q", r.Unit, r.Rater)
}

// whereValue names a rating's value cell in error messages.
func (r Rating) whereValue() string {
	if r.Line > 0 {
		return fmt.Sprintf("line %d, column \"value\"", r.Line)
	}
	return r.where()
}

// Level is the level of measurement of the rated values; it chooses alpha's difference function.
type Level int

// Levels of measurement (Krippendorff 2011, section "difference functions").
const (
	LevelNominal  Level = iota + 1 // unordered labels: any two different values disagree equally
	LevelOrdinal                   // ranks: disagreement grows with how many values lie between
	LevelInterval                  // numbers: squared difference
	LevelRatio                     // non-negative numbers with a true zero: squared relative difference
)

// ParseLevel parses "nominal", "ordinal", "interval" or "ratio".
func ParseLevel(s string) (Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "nominal":
		return LevelNominal, nil
	case "ordinal":
		return LevelOrdinal, nil
	case "interval":
		return LevelInterval, nil
	case "ratio":
		return LevelRatio, nil
	}
	return 0, fmt.Errorf("level %q: want nominal, ordinal, interval or ratio: %w", s, ErrInvalidArgument)
}

// String returns the level's name as ParseLevel accepts it.
func (l Level) String() string {
	switch l {
	case LevelNominal:
		return "nominal"
	case LevelOrdinal:
		return "ordinal"
	case LevelInterval:
		return "interval"
	case LevelRatio:
		return "ratio"
	}
	return "Level(" + strconv.Itoa(int(l)) + ")"
}

// AlphaResult is Krippendorff's alpha with the quantities it is made of.
type AlphaResult struct {
	Level Level
	// Alpha is 1 - ObservedDisagreement/ExpectedDisagreement; NaN when undefined (Note says why).
	Alpha                float64
	ObservedDisagreement float64 // D_o
	ExpectedDisagreement float64 // D_e
	Units                int     // pairable units: units with two or more ratings
	PairableValues       int     // n: the ratings in pairable units
	DroppedUnits         int     // units with a single rating, left out
	Values               int     // distinct values among the pairable ratings
	Note                 string  // why alpha is undefined, or a caution; empty otherwise
}

// ReliabilityData is long-format ratings prepared for Krippendorff's alpha: the pairable units'
// contributions to the coincidence matrix, kept per unit so that alpha can be recomputed for any
// multiset of units (the unit bootstrap) without allocating. Not safe for concurrent use.
type ReliabilityData struct {
	level   Level
	values  []string  // distinct pairable values, in metric order
	nums    []float64 // their numbers (not for nominal)
	dropped int

	// Pairable unit u holds value val[e] cnt[e] times, for e in [vstart[u], vstart[u+1]).
	vstart []int32
	val    []int32
	cnt    []float64
	// Unit u adds weight[e] to o_ck + o_kc for the value pair c = pc[e] < k = pk[e], for e in
	// [pstart[u], pstart[u+1]). The diagonal is never needed: δ²_cc = 0 at every level.
	pstart []int32
	pc, pk []int32
	weight []float64
	// unitDo[u] is unit u's share of n·D_o for the metrics that do not depend on the marginals
	// (all but ordinal), so a resample sums one number per unit.
	unitDo []float64

	nc    []float64 // scratch: marginal sums n_c of the coincidence matrix
	cum   []float64 // scratch: cumulative marginals for the ordinal metric
	ident []int     // 0..units-1
}

// NewReliabilityData checks and prepares ratings for alpha at level. Errors: a rater rating a
// unit twice (ErrDuplicate), a value that is not a finite number at ordinal, interval or ratio
// level or negative at ratio level (ErrInvalidValue), no ratings (ErrNoData), no unit with two
// ratings (ErrNoPairable). Units with a single rating are dropped, as alpha prescribes.
func NewReliabilityData(ratings []Rating, level Level) (*ReliabilityData, error) {
	if level < LevelNominal || level > LevelRatio {
		return nil, fmt.Errorf("alpha: %v: %w", level, ErrInvalidArgument)
	}
	if len(ratings) == 0 {
		return nil, fmt.Errorf("alpha: no ratings: %w", ErrNoData)
	}
	type key struct{ unit, rater string }
	seen := make(map[key]int, len(ratings))
	unitPos := map[string]int{}
	var unitRatings [][]int // indices into ratings, per unit in order of first appearance
	nums := make([]float64, len(ratings))
	for i, r := range ratings {
		k := key{r.Unit, r.Rater}
		if j, dup := seen[k]; dup {
			return nil, fmt.Errorf("%s: rater %q rated unit %q twice (also %s): %w",
				r.where(), r.Rater, r.Unit, ratings[j].where(), ErrDuplicate)
		}
		seen[k] = i
		if level != LevelNominal {
			v, err := parseFinite(r.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: value %q is not a number, as %s level needs: %w",
					r.whereValue(), r.Value, level, ErrInvalidValue)
			}
			if level == LevelRatio && v < 0 {
				return nil, fmt.Errorf("%s: value %q is negative; ratio level needs values >= 0: %w",
					r.whereValue(), r.Value, ErrInvalidValue)
			}
			nums[i] = v
		}
		u, ok := unitPos[r.Unit]
		if !ok {
			u = len(unitRatings)
			unitPos[r.Unit] = u
			unitRatings = append(unitRatings, nil)
		}
		unitRatings[u] = append(unitRatings[u], i)
	}

	d := &ReliabilityData{level: level}
	// Distinct values among pairable ratings, in metric order. Numeric levels identify values by
	// number, so "1" and "1.0" are the same value; nominal compares labels exactly.
	valueIndex := map[string]int{}
	numIndex := map[float64]int{}
	for _, idx := range unitRatings {
		if len(idx) < 2 {
			d.dropped++
			continue
		}
		for _, i := range idx {
			if level == LevelNominal {
				if _, ok := valueIndex[ratings[i].Value]; !ok {
					valueIndex[ratings[i].Value] = 0
					d.values = append(d.values, ratings[i].Value)
				}
			} else if _, ok := numIndex[nums[i]]; !ok {
				numIndex[nums[i]] = 0
				d.nums = append(d.nums, nums[i])
				d.values = append(d.values, strconv.FormatFloat(nums[i], 'g', -1, 64))
			}
		}
	}
	if len(d.values) == 0 {
		return nil, fmt.Errorf("alpha: all %d units have a single rating: %w", len(unitRatings), ErrNoPairable)
	}
	if level == LevelNominal {
		slices.Sort(d.values)
		for i, v := range d.values {
			valueIndex[v] = i
		}
	} else {
		slices.Sort(d.nums)
		for i, v := range d.nums {
			numIndex[v] = i
			d.values[i] = strconv.FormatFloat(v, 'g', -1, 64)
		}
	}
	V := len(d.values)

	counts := make([]float64, V)
	var present []int
	d.vstart = append(d.vstart, 0)
	d.pstart = append(d.pstart, 0)
	for _, idx := range unitRatings {
		if len(idx) < 2 {
			continue
		}
		present = present[:0]
		for _, i := range idx {
			var c int
			if level == LevelNominal {
				c = valueIndex[ratings[i].Value]
			} else {
				c = numIndex[nums[i]]
			}
			if counts[c] == 0 {
				present = append(present, c)
			}
			counts[c]++
		}
		slices.Sort(present)
		// Krippendorff (2011): o_ck = Σ_u (number of c-k pairs in unit u)/(m_u − 1).
		m1 := float64(len(idx) - 1)
		unitDo := 0.0
		for _, c := range present {
			d.val = append(d.val, int32(c))
			d.cnt = append(d.cnt, counts[c])
			for _, k := range present {
				if k <= c {
					continue
				}
				w := 2 * counts[c] * counts[k] / m1 // o_ck and o_kc
				d.pc = append(d.pc, int32(c))
				d.pk = append(d.pk, int32(k))
				d.weight = append(d.weight, w)
				if level != LevelOrdinal {
					unitDo += w * d.difference(c, k)
				}
			}
		}
		for _, c := range present {
			counts[c] = 0
		}
		d.vstart = append(d.vstart, int32(len(d.val)))
		d.pstart = append(d.pstart, int32(len(d.pc)))
		d.unitDo = append(d.unitDo, unitDo)
	}

	d.nc = make([]float64, V)
	d.cum = make([]float64, V+1)
	d.ident = make([]int, d.Units())
	for i := range d.ident {
		d.ident[i] = i
	}
	return d, nil
}

// difference is the squared difference function delta²_ck for the fixed metrics.
func (d *ReliabilityData) difference(c, k int) float64 {
	if c == k {
		return 0
	}
	switch d.level {
	case LevelInterval:
		x := d.nums[c] - d.nums[k]
		return x * x
	case LevelRatio:
		s := d.nums[c] + d.nums[k]
		if s == 0 {
			return 0
		}
		x := (d.nums[c] - d.nums[k]) / s
		return x * x
	default: // LevelNominal
		return 1
	}
}

// Units returns the number of pairable units, the clusters the alpha bootstrap resamples.
func (d *ReliabilityData) Units() int { return len(d.vstart) - 1 }

// Alpha returns Krippendorff's alpha for all pairable units.
func (d *ReliabilityData) Alpha() AlphaResult {
	do, de, n := d.disagreements(d.ident)
	res := AlphaResult{
		Level:                d.level,
		ObservedDisagreement: do,
		ExpectedDisagreement: de,
		Units:                d.Units(),
		PairableValues:       int(math.Round(n)),
		DroppedUnits:         d.dropped,
		Values:               len(d.values),
	}
	switch {
	case de == 0:
		res.Alpha = math.NaN()
		res.Note = fmt.Sprintf("alpha is undefined: every pairable value is %q, so expected disagreement is 0 "+
			"and agreement cannot be told apart from chance", d.values[0])
	default:
		res.Alpha = 1 - do/de
		switch {
		case res.Units == 1:
			res.Note = "only one pairable unit: alpha is computed but says little about reliability"
		case do == 0:
			res.Note = fmt.Sprintf("perfect agreement with %d distinct values present: alpha is 1", len(d.values))
		}
	}
	return res
}

// AlphaOf returns alpha computed from the multiset of pairable units whose indices (in
// [0, Units())) are given, repeats counting again; NaN when only one value occurs in them. It
// does not allocate: it is the statistic the unit bootstrap evaluates for every resample.
func (d *ReliabilityData) AlphaOf(units []int) float64 {
	do, de, _ := d.disagreements(units)
	if de == 0 {
		return math.NaN()
	}
	return 1 - do/de
}

// disagreements returns D_o, D_e and n for the given multiset of units, where
// D_o = (1/n) Σ_c Σ_k o_ck δ²_ck and D_e = 1/(n(n−1)) Σ_c Σ_k n_c n_k δ²_ck (Krippendorff 2011).
// It never forms the V×V coincidence matrix, so continuous data with many distinct values costs
// memory linear in the data: D_o sums the units' off-diagonal coincidences, and D_e has closed
// forms at nominal and interval level (a loop over pairs of occurring values otherwise).
func (d *ReliabilityData) disagreements(units []int) (do, de, n float64) {
	clear(d.nc)
	for _, u := range units {
		for e := d.vstart[u]; e < d.vstart[u+1]; e++ {
			d.nc[d.val[e]] += d.cnt[e]
		}
	}
	occurring := 0
	for _, x := range d.nc {
		n += x
		if x > 0 {
			occurring++
		}
	}
	if occurring < 2 {
		// One value only: no pair can disagree, and chance cannot either.
		return 0, 0, n
	}
	if d.level == LevelOrdinal {
		d.cum[0] = 0
		for g, x := range d.nc {
			d.cum[g+1] = d.cum[g] + x
		}
		for _, u := range units {
			for e := d.pstart[u]; e < d.pstart[u+1]; e++ {
				do += d.weight[e] * d.ordinalDifference(int(d.pc[e]), int(d.pk[e]))
			}
		}
	} else {
		for _, u := range units {
			do += d.unitDo[u]
		}
	}
	return do / n, d.expectedPairs(n) / (n * (n - 1)), n
}

// expectedPairs is Σ_c Σ_k n_c n_k δ²_ck for the current marginals.
func (d *ReliabilityData) expectedPairs(n float64) float64 {
	switch d.level {
	case LevelNominal:
		// Σ_{c≠k} n_c n_k = n² − Σ n_c²
		s := 0.0
		for _, x := range d.nc {
			s += x * x
		}
		return n*n - s
	case LevelInterval:
		// Σ_c Σ_k n_c n_k (v_c − v_k)² = 2n Σ_c n_c (v_c − mean)², centred for accuracy.
		mean := 0.0
		for c, x := range d.nc {
			mean += x * d.nums[c]
		}
		mean /= n
		s := 0.0
		for c, x := range d.nc {
			dv := d.nums[c] - mean
			s += x * dv * dv
		}
		return 2 * n * s
	}
	s := 0.0
	for c, xc := range d.nc {
		if xc == 0 {
			continue
		}
		for k := c + 1; k < len(d.nc); k++ {
			if xk := d.nc[k]; xk != 0 {
				if d.level == LevelOrdinal {
					s += xc * xk * d.ordinalDifference(c, k)
				} else {
					s += xc * xk * d.difference(c, k)
				}
			}
		}
	}
	return 2 * s
}

// ordinalDifference is Krippendorff's (2011) ordinal metric, which depends on the marginal sums
// of the coincidence matrix: δ²_ck = (Σ_{g=c..k} n_g − (n_c + n_k)/2)². It needs cum filled.
func (d *ReliabilityData) ordinalDifference(c, k int) float64 {
	if c > k {
		c, k = k, c
	}
	x := d.cum[k+1] - d.cum[c] - (d.nc[c]+d.nc[k])/2
	return x * x
}

// Alpha computes Krippendorff's alpha at level from long-format ratings; see NewReliabilityData
// for the errors.
func Alpha(ratings []Rating, level Level) (AlphaResult, error) {
	d, err := NewReliabilityData(ratings, level)
	if err != nil {
		return AlphaResult{}, err
	}
	return d.Alpha(), nil
}

// BootstrapAlpha is a percentile interval for alpha from resampling pairable units with
// replacement (the units are the clusters). Resamples in which only one value occurs have no
// alpha and are counted in Interval.Undefined.
func (d *ReliabilityData) BootstrapAlpha(b *ClusterBootstrap) (Interval, error) {
	return b.Interval(d.Units(), d.AlphaOf)
}
