package stats

import (
	"fmt"
	"math"
	"slices"
)

// CountTable is a subjects × categories table of counts: Counts[i][j] raters put subject i in
// category j. It is the input of Fleiss' kappa.
type CountTable struct {
	Subjects   []string
	Categories []string
	Counts     [][]int
}

// CountRatings tabulates long-format ratings into a CountTable, one column per observed value
// (categories sorted, subjects in order of first appearance). A rater rating a unit twice is an
// error.
func CountRatings(ratings []Rating) (CountTable, error) {
	if len(ratings) == 0 {
		return CountTable{}, fmt.Errorf("fleiss: no ratings: %w", ErrNoData)
	}
	type key struct{ unit, rater string }
	seen := make(map[key]int, len(ratings))
	catSet := map[string]int{}
	var t CountTable
	subj := map[string]int{}
	for i, r := range ratings {
		k := key{r.Unit, r.Rater}
		if j, dup := seen[k]; dup {
			return CountTable{}, fmt.Errorf("%s: rater %q rated unit %q twice (also %s): %w",
				r.where(), r.Rater, r.Unit, ratings[j].where(), ErrDuplicate)
		}
		seen[k] = i
		if _, ok := catSet[r.Value]; !ok {
			catSet[r.Value] = 0
			t.Categories = append(t.Categories, r.Value)
		}
		if _, ok := subj[r.Unit]; !ok {
			subj[r.Unit] = len(t.Subjects)
			t.Subjects = append(t.Subjects, r.Unit)
		}
	}
	slices.Sort(t.Categories)
	for j, c := range t.Categories {
		catSet[c] = j
	}
	t.Counts = make([][]int, len(t.Subjects))
	for i := range t.Counts {
		t.Counts[i] = make([]int, len(t.Categories))
	}
	for _, r := range ratings {
		t.Counts[subj[r.Unit]][catSet[r.Value]]++
	}
	return t, nil
}

// CategoryKappa is the kappa for one category against all others (Fleiss 1971), with
// its z statistic under the null hypothesis of chance agreement.
type CategoryKappa struct {
	Category string
	Kappa    float64 // NaN when the category was used by no rating or by all
	Z        float64
	PValue   float64
}

// FleissResult is Fleiss' kappa with its parts and its test against chance agreement.
type FleissResult struct {
	Kappa       float64 // (P̄ − P_e)/(1 − P_e); NaN when P_e = 1 (Note says why)
	PBar        float64 // mean observed agreement P̄
	PE          float64 // chance agreement P_e = Σ p_j²
	Z           float64 // Kappa / SE₀, SE₀ from Fleiss, Levin & Paik (2003) under κ = 0
	PValue      float64 // two-sided, as irr's kappam.fleiss reports it
	Subjects    int
	Raters      int // ratings per subject
	PerCategory []CategoryKappa
	Note        string
}

// FleissKappa computes Fleiss' kappa from a count table. Every subject must have the same number
// of ratings, at least two (ErrUnequalRatings names the first subject that differs).
func FleissKappa(t CountTable) (FleissResult, error) {
	N, K := len(t.Counts), len(t.Categories)
	if N == 0 || K == 0 {
		return FleissResult{}, fmt.Errorf("fleiss: empty count table: %w", ErrNoData)
	}
	raters := -1
	for i, row := range t.Counts {
		if len(row) != K {
			return FleissResult{}, fmt.Errorf("fleiss: subject %q has %d counts for %d categories: %w", t.Subjects[i], len(row), K, ErrInvalidArgument)
		}
		s := 0
		for j, x := range row {
			if x < 0 {
				return FleissResult{}, fmt.Errorf("fleiss: subject %q category %q: negative count %d: %w", t.Subjects[i], t.Categories[j], x, ErrInvalidValue)
			}
			s += x
		}
		if raters < 0 {
			raters = s
			if s < 2 {
				return FleissResult{}, fmt.Errorf("fleiss: subject %q has %d rating(s); each subject needs at least 2: %w", t.Subjects[i], s, ErrUnequalRatings)
			}
		} else if s != raters {
			return FleissResult{}, fmt.Errorf("fleiss: subject %q has %d ratings but subject %q has %d; Fleiss' kappa needs the same number for every subject: %w",
				t.Subjects[i], s, t.Subjects[0], raters, ErrUnequalRatings)
		}
	}

	n := float64(raters)
	nf := float64(N)
	p := make([]float64, K)
	pbar := 0.0
	for _, row := range t.Counts {
		agree := 0.0
		for j, x := range row {
			p[j] += float64(x)
			agree += float64(x) * float64(x-1)
		}
		pbar += agree / (n * (n - 1))
	}
	pbar /= nf
	pe, sumPQ, sumPQQP := 0.0, 0.0, 0.0
	for j := range p {
		p[j] /= nf * n
		q := 1 - p[j]
		pe += p[j] * p[j]
		sumPQ += p[j] * q
		sumPQQP += p[j] * q * (q - p[j])
	}
	res := FleissResult{PBar: pbar, PE: pe, Subjects: N, Raters: raters}

	// Fleiss, Levin & Paik (2003, ch. 18): variance of kappa under the null hypothesis.
	denom := nf * n * (n - 1)
	if sumPQ == 0 {
		res.Kappa, res.Z, res.PValue = math.NaN(), math.NaN(), math.NaN()
		used := ""
		for j, x := range p {
			if x > 0 {
				used = t.Categories[j]
			}
		}
		res.Note = fmt.Sprintf("kappa is undefined: every rating is %q, so chance agreement P_e is 1", used)
	} else {
		res.Kappa = (pbar - pe) / (1 - pe)
		se0 := math.Sqrt(2/(denom*sumPQ*sumPQ)) * math.Sqrt(sumPQ*sumPQ-sumPQQP)
		res.Z = res.Kappa / se0
		res.PValue = twoSidedP(res.Z)
	}

	seCat := math.Sqrt(2 / denom)
	for j, c := range t.Categories {
		ck := CategoryKappa{Category: c}
		pq := p[j] * (1 - p[j])
		if pq == 0 {
			ck.Kappa, ck.Z, ck.PValue = math.NaN(), math.NaN(), math.NaN()
		} else {
			dis := 0.0
			for _, row := range t.Counts {
				dis += float64(row[j]) * float64(raters-row[j])
			}
			ck.Kappa = 1 - dis/(denom*pq)
			ck.Z = ck.Kappa / seCat
			ck.PValue = twoSidedP(ck.Z)
		}
		res.PerCategory = append(res.PerCategory, ck)
	}
	return res, nil
}

// Fleiss computes Fleiss' kappa from long-format ratings (each value a category).
func Fleiss(ratings []Rating) (FleissResult, error) {
	t, err := CountRatings(ratings)
	if err != nil {
		return FleissResult{}, err
	}
	return FleissKappa(t)
}

// twoSidedP is the two-sided normal p-value 2(1 − Φ(|z|)), computed with erfc so that it stays
// accurate (non-zero) far in the tail.
func twoSidedP(z float64) float64 {
	return math.Erfc(math.Abs(z) / math.Sqrt2)
}
