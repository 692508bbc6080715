package study

import (
	"fmt"
	"slices"

	"github.com/voicebench/humanaudit/internal/rng"
)

// family is the set of base system sequences that groups of participants cycle through. A base is
// a sequence of K residues (systems numbered 0..n-1); a group of n participants runs the base
// shifted by 0..n-1, a cyclic Latin rectangle, so every system appears once at every position in
// every group, and an ordered pair (a, b) follows each other once for every step of the base whose
// difference is b−a. Carry-over is therefore balanced exactly when the family's steps use every
// non-zero difference equally often.
type family struct {
	bases [][]int
	// exact says the steps of one full cycle of the family use every non-zero difference equally
	// often (so whole cycles of groups balance first-order carry-over exactly).
	exact  bool
	method string
}

// williamsBase is the first row of the standard Williams square: 0, 1, n−1, 2, n−2, … Its steps
// are +1, −2, +3, −4, …, all different modulo n when n is even.
func williamsBase(n int) []int {
	b := make([]int, n)
	lo, hi := 1, n-1
	for i := 1; i < n; i++ {
		if i%2 == 1 {
			b[i] = lo
			lo++
		} else {
			b[i] = hi
			hi--
		}
	}
	return b
}

// buildFamily returns the base sequences for n systems, K sessions per participant and g complete
// groups. Group j runs base j mod F, so carry-over is exactly balanced when the steps of the bases
// the groups actually use cover every non-zero difference equally often; the family is chosen to
// make that true for the g groups at hand where the numbers allow, and nearly true otherwise.
func buildFamily(n, k, g int) family {
	switch {
	case n == 1:
		return family{bases: [][]int{make([]int, k)}, exact: true, method: "one system: every session uses it"}
	case k == 1:
		return family{bases: [][]int{{0}}, exact: true, method: "one session per participant: no order to balance"}
	}
	g = max(g, 1)
	if k == n {
		b := williamsBase(n)
		if n%2 == 0 {
			return family{bases: [][]int{b}, exact: true,
				method: fmt.Sprintf("Williams square for %d systems (even: one square balances position and carry-over)", n)}
		}
		m := make([]int, n)
		for i := range b {
			m[i] = b[n-1-i]
		}
		if g%2 == 0 {
			return family{bases: [][]int{b, m}, exact: true,
				method: fmt.Sprintf("Williams design for %d systems (odd: the square and its mirror image, used by alternate groups)", n)}
		}
	}
	// Exactly equal use of the n−1 differences needs F bases with (n−1) | F(K−1); the groups use
	// them evenly when F divides g. Try such F that divide g (smallest first).
	ideal := (n - 1) / gcd(k-1, n-1)
	exact := func(f int) ([][]int, bool) { return searchBases(n, k, f, f*(k-1)/(n-1), f*(k-1)/(n-1)) }
	for f := ideal; f <= g; f += ideal {
		if g%f != 0 {
			continue
		}
		if bases, ok := exact(f); ok {
			return family{bases: bases, exact: true,
				method: fmt.Sprintf("%d base sequence(s) of length %d over %d systems whose steps use each of the %d differences %d times (generalised Williams rectangles)", f, k, n, n-1, f*(k-1)/(n-1))}
		}
	}
	// Otherwise cycle the smallest exact family over as many whole cycles as the groups allow and
	// give the remaining groups bases that use the differences as evenly as possible, so the
	// counts differ by little.
	var cycle [][]int
	if k == n {
		b := williamsBase(n)
		m := make([]int, n)
		for i := range b {
			m[i] = b[n-1-i]
		}
		cycle = [][]int{b, m}
		if n%2 == 0 {
			cycle = cycle[:1]
		}
	} else {
		for f := ideal; f <= 2*n && cycle == nil; f += ideal {
			cycle, _ = exact(f)
		}
	}
	var bases [][]int
	rest := g
	if cycle != nil && len(cycle) <= g {
		for len(bases)+len(cycle) <= g {
			bases = append(bases, cycle...)
		}
		rest = g - len(bases)
	}
	if rest > 0 {
		bases = append(bases, evenBases(n, k, rest)...)
	}
	return family{bases: bases, exact: false,
		method: fmt.Sprintf("%d base sequence(s) of length %d over %d systems, one per group, whose steps use the %d differences as evenly as the numbers allow (Williams-style rectangles)", len(bases), k, n, n-1)}
}

// evenBases finds f bases whose steps use every difference within one of the mean, widening the
// allowed range until the search succeeds.
func evenBases(n, k, f int) [][]int {
	lo, hi := f*(k-1)/(n-1), ceilDiv(f*(k-1), n-1)
	for extra := 0; ; extra++ {
		if bases, ok := searchBases(n, k, f, max(0, lo-extra), hi+extra); ok {
			return bases
		}
	}
}

// searchLimit bounds the depth-first search for base sequences (nodes visited).
const searchLimit = 400_000

// searchBases looks for f sequences of length k over residues 0..n-1, each starting at 0, in
// which every residue appears ⌊k/n⌋ or ⌈k/n⌉ times (so nobody meets a system more than ⌈k/n⌉
// times), no residue follows itself, and every non-zero step difference is used at least floor
// and at most budget times over all f sequences.
func searchBases(n, k, f, floor, budget int) ([][]int, bool) {
	hi, lo := ceilDiv(k, n), k/n
	used := make([]int, n)
	bases := make([][]int, f)
	for i := range bases {
		bases[i] = make([]int, k)
	}
	count := make([]int, n)
	nodes := 0
	var place func(b, p int) bool
	place = func(b, p int) bool {
		nodes++
		if nodes > searchLimit {
			return false
		}
		if p == k {
			if b+1 == f {
				return true
			}
			// The steps left must still lift every difference to floor.
			short := 0
			for d := 1; d < n; d++ {
				short += max(0, floor-used[d])
			}
			if short > (f-b-1)*(k-1) {
				return false
			}
			clear(count)
			count[0] = 1
			bases[b+1][0] = 0
			ok := place(b+1, 1)
			if !ok {
				// restore the counts of base b for the caller's bookkeeping
				clear(count)
				for _, x := range bases[b] {
					count[x]++
				}
			}
			return ok
		}
		prev := bases[b][p-1]
		for step := 1; step < n; step++ {
			x := (prev + step) % n
			if count[x] >= hi || used[step] >= budget {
				continue
			}
			count[x]++
			used[step]++
			// Every residue must still reach ⌊k/n⌋ in this base's positions left, and every
			// difference must still reach floor in the steps left.
			deficit, short := 0, 0
			for _, c := range count {
				deficit += max(0, lo-c)
			}
			for d := 1; d < n; d++ {
				short += max(0, floor-used[d])
			}
			if deficit <= k-p-1 && short <= (k-1-p)+(f-b-1)*(k-1) {
				bases[b][p] = x
				if place(b, p+1) {
					return true
				}
			}
			used[step]--
			count[x]--
			if nodes > searchLimit {
				return false
			}
		}
		return false
	}
	count[0] = 1
	if place(0, 1) {
		return bases, true
	}
	return nil, false
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	if a == 0 {
		return 1
	}
	return a
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// shifted is base with every residue moved by k (mod n): one row of a group.
func shifted(base []int, k, n int) []int {
	row := make([]int, len(base))
	for i, x := range base {
		row[i] = (x + k) % n
	}
	return row
}

// partialRows chooses the r rows of the incomplete last group. Every system must appear equally
// often over them (each system has exactly as many cells as sessions), so it searches the family's
// (base, shift) rows for r with equal system totals and keeps the choice that, added to the
// complete groups' rows, leaves the position counts and then first-order carry-over most even. If no such choice exists it
// reads r windows of length K off a tape repeating a Williams row, which always has equal totals
// because r·K is a multiple of n.
func partialRows(fam family, n, k, r int, full [][]int, rs *rng.Stream) [][]int {
	if r == 0 {
		return nil
	}
	carry := make([]int, n*n)
	at := make([]int, n*k) // sessions of system x at position p: at[x*k+p]
	for _, row := range full {
		for p := 1; p < len(row); p++ {
			carry[row[p-1]*n+row[p]]++
		}
		for p, x := range row {
			at[x*k+p]++
		}
	}
	var cands [][]int
	seen := map[string]bool{}
	for _, b := range fam.bases {
		for _, s := range rs.Perm(n) {
			row := shifted(b, s, n)
			if key := fmt.Sprint(row); !seen[key] {
				seen[key] = true
				cands = append(cands, row)
			}
		}
	}
	target := r * k / n
	total := make([]int, n)
	var pick, best []int
	bestPos, bestSpread, bestSquares := -1, -1, 0
	nodes := 0
	var choose func(from int)
	choose = func(from int) {
		nodes++
		if len(pick) == r {
			for _, t := range total {
				if t != target {
					return
				}
			}
			lo, hi, squares := -1, 0, 0
			for a := 0; a < n; a++ {
				for b := 0; b < n; b++ {
					if a == b && n > 1 {
						continue
					}
					c := carry[a*n+b]
					if lo < 0 || c < lo {
						lo = c
					}
					hi, squares = max(hi, c), squares+c*c
				}
			}
			posSpread := 0
			for p := 0; p < k; p++ {
				plo, phi := -1, 0
				for x := 0; x < n; x++ {
					c := at[x*k+p]
					if plo < 0 || c < plo {
						plo = c
					}
					phi = max(phi, c)
				}
				posSpread = max(posSpread, phi-plo)
			}
			if better := bestPos < 0 || posSpread < bestPos ||
				posSpread == bestPos && (hi-lo < bestSpread || hi-lo == bestSpread && squares < bestSquares); better {
				bestPos, bestSpread, bestSquares, best = posSpread, hi-lo, squares, slices.Clone(pick)
			}
			return
		}
		for i := from; i < len(cands) && nodes < searchLimit/4; i++ {
			row := cands[i]
			ok := true
			for _, x := range row {
				total[x]++
				ok = ok && total[x] <= target
			}
			if ok {
				for p := 1; p < k; p++ {
					carry[row[p-1]*n+row[p]]++
				}
				for p, x := range row {
					at[x*k+p]++
				}
				pick = append(pick, i)
				choose(i + 1)
				pick = pick[:len(pick)-1]
				for p := 1; p < k; p++ {
					carry[row[p-1]*n+row[p]]--
				}
				for p, x := range row {
					at[x*k+p]--
				}
			}
			for _, x := range row {
				total[x]--
			}
		}
	}
	choose(0)
	rows := make([][]int, r)
	if best != nil {
		for i, c := range best {
			rows[i] = slices.Clone(cands[c])
		}
		return rows
	}
	w := williamsBase(n)
	for i := range rows {
		rows[i] = make([]int, k)
		for p := range rows[i] {
			rows[i][p] = w[(i*k+p)%n]
		}
	}
	return rows
}
