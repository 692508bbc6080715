package stats

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// wikipediaFleiss is the worked example of the Wikipedia article "Fleiss' kappa": 10 subjects,
// 5 categories, 14 raters per subject; P̄ = 0.378, P_e = 0.213, κ = 0.210. statsmodels checks
// the same κ (statsmodels/stats/tests/test_inter_rater.py, test_fleiss_kappa).
var wikipediaFleiss = [][]int{
	{0, 0, 0, 0, 14},
	{0, 2, 6, 4, 2},
	{0, 0, 3, 5, 6},
	{0, 3, 9, 2, 0},
	{2, 2, 8, 1, 1},
	{7, 7, 0, 0, 0},
	{3, 2, 6, 3, 0},
	{2, 5, 3, 2, 2},
	{6, 5, 2, 1, 0},
	{0, 2, 2, 3, 7},
}

// fleiss1971Diagnoses is the psychiatric diagnoses data of Fleiss (1971), "Measuring nominal
// scale agreement among many raters": 30 patients, 6 raters each, categories 1 Depression,
// 2 Personality Disorder, 3 Schizophrenia, 4 Neurosis, 5 Other. Subjects × raters as in R irr's
// `diagnoses` data set (transcribed in statsmodels' test_inter_rater.py).
var fleiss1971Diagnoses = [][]int{
	{4, 4, 4, 4, 4, 4}, {2, 2, 2, 5, 5, 5}, {2, 3, 3, 3, 3, 5}, {5, 5, 5, 5, 5, 5}, {2, 2, 2, 4, 4, 4},
	{1, 1, 3, 3, 3, 3}, {3, 3, 3, 3, 5, 5}, {1, 1, 3, 3, 3, 4}, {1, 1, 4, 4, 4, 4}, {5, 5, 5, 5, 5, 5},
	{1, 4, 4, 4, 4, 4}, {1, 2, 4, 4, 4, 4}, {2, 2, 2, 3, 3, 3}, {1, 4, 4, 4, 4, 4}, {2, 2, 4, 4, 4, 5},
	{3, 3, 3, 3, 3, 5}, {1, 1, 1, 4, 5, 5}, {1, 1, 1, 1, 1, 2}, {2, 2, 4, 4, 4, 4}, {1, 3, 3, 5, 5, 5},
	{5, 5, 5, 5, 5, 5}, {2, 4, 4, 4, 4, 4}, {2, 2, 4, 5, 5, 5}, {1, 1, 4, 4, 4, 4}, {1, 4, 4, 4, 4, 5},
	{2, 2, 2, 2, 2, 4}, {1, 1, 1, 1, 5, 5}, {2, 2, 4, 4, 4, 4}, {1, 3, 3, 3, 3, 3}, {5, 5, 5, 5, 5, 5},
}

func countTable(rows [][]int, cats ...string) CountTable {
	t := CountTable{Categories: cats, Counts: rows}
	for i := range rows {
		t.Subjects = append(t.Subjects, string(rune('a'+i%26))+strings.Repeat("'", i/26))
	}
	return t
}

func TestFleissWikipediaExample(t *testing.T) {
	res, err := FleissKappa(countTable(wikipediaFleiss, "1", "2", "3", "4", "5"))
	if err != nil {
		t.Fatal(err)
	}
	assertNear(t, "kappa", res.Kappa, 0.210, 3)
	assertNear(t, "P-bar", res.PBar, 0.378, 3)
	assertNear(t, "P_e", res.PE, 0.213, 3)
	if res.Subjects != 10 || res.Raters != 14 {
		t.Errorf("subjects %d raters %d, want 10 and 14", res.Subjects, res.Raters)
	}
}

func TestFleiss1971Diagnoses(t *testing.T) {
	long, err := Fleiss(subjectRatings(fleiss1971Diagnoses))
	if err != nil {
		t.Fatal(err)
	}
	// The same data as a count table must give the same answer.
	ct, err := CountRatings(subjectRatings(fleiss1971Diagnoses))
	if err != nil {
		t.Fatal(err)
	}
	counts, err := FleissKappa(ct)
	if err != nil {
		t.Fatal(err)
	}
	for name, res := range map[string]FleissResult{"long data": long, "count table": counts} {
		t.Run(name+" matches irr kappam.fleiss", func(t *testing.T) {
			// R irr kappam.fleiss(diagnoses): value 0.4302445, z 17.65183, p-value printed as 0
			// (recorded in statsmodels' test_fleiss_kappa_irr). Fleiss (1971) reports κ = .430.
			assertNear(t, "kappa", res.Kappa, 0.4302445, 7)
			assertNear(t, "z", res.Z, 17.65183, 5)
			if !(res.PValue > 0 && res.PValue < 1e-60) {
				t.Errorf("p-value %v, want positive and below 1e-60", res.PValue)
			}
			// Category kappas .245 .245 .520 .471 .566 as printed by R irr
			// kappam.fleiss(diagnoses, detail = TRUE), to six decimals in JASP's raterAgreement
			// tests (jasp-stats/jaspReliability: 0.244755, 0.244755, 0.52, 0.471127, 0.566118).
			want := []float64{0.244755, 0.244755, 0.52, 0.471127, 0.566118}
			if len(res.PerCategory) != 5 {
				t.Fatalf("%d categories, want 5", len(res.PerCategory))
			}
			for j, w := range want {
				assertNear(t, "kappa of category "+res.PerCategory[j].Category, res.PerCategory[j].Kappa, w, 6)
			}
			// Each category's z uses SE₀ = sqrt(2 / (N n (n−1))) = sqrt(2/900).
			assertNear(t, "z of category 3", res.PerCategory[2].Z, 0.52/math.Sqrt(2.0/900), 9)
		})
	}
}

func TestFleissEdgeCases(t *testing.T) {
	t.Run("unequal ratings per subject names the subject", func(t *testing.T) {
		rs := subjectRatings([][]int{{1, 1, 2}, {2, 2, 2}})
		rs = append(rs, Rating{Unit: "s2", Rater: "r9", Value: "1"})
		_, err := Fleiss(rs)
		if !errors.Is(err, ErrUnequalRatings) || !strings.Contains(err.Error(), `subject "s2" has 4 ratings`) {
			t.Errorf("err = %v, want ErrUnequalRatings naming s2", err)
		}
	})
	t.Run("a single category is undefined", func(t *testing.T) {
		res, err := Fleiss(subjectRatings([][]int{{3, 3, 3}, {3, 3, 3}}))
		if err != nil {
			t.Fatal(err)
		}
		if !math.IsNaN(res.Kappa) || !math.IsNaN(res.Z) || res.PBar != 1 || res.PE != 1 {
			t.Errorf("got %+v, want NaN kappa with P-bar = P_e = 1", res)
		}
		if !strings.Contains(res.Note, "undefined") || !math.IsNaN(res.PerCategory[0].Kappa) {
			t.Errorf("note %q, category kappa %v; want an explanation and NaN", res.Note, res.PerCategory[0].Kappa)
		}
	})
	t.Run("perfect agreement over two categories is 1", func(t *testing.T) {
		res, err := Fleiss(subjectRatings([][]int{{1, 1, 1}, {2, 2, 2}, {1, 1, 1}}))
		if err != nil {
			t.Fatal(err)
		}
		if res.Kappa != 1 || res.Note != "" {
			t.Errorf("kappa %v note %q, want 1 and no note", res.Kappa, res.Note)
		}
	})
	t.Run("one subject is computed", func(t *testing.T) {
		// P̄ = (2·1)/(3·2) = 1/3, p = (2/3, 1/3), P_e = 5/9, κ = (1/3 − 5/9)/(4/9) = −1/2.
		res, err := FleissKappa(countTable([][]int{{2, 1}}, "x", "y"))
		if err != nil {
			t.Fatal(err)
		}
		assertNear(t, "kappa", res.Kappa, -0.5, 12)
	})
	t.Run("unused category has no kappa", func(t *testing.T) {
		res, err := FleissKappa(countTable([][]int{{2, 0, 1}, {1, 0, 2}}, "x", "unused", "y"))
		if err != nil {
			t.Fatal(err)
		}
		if !math.IsNaN(res.PerCategory[1].Kappa) || math.IsNaN(res.Kappa) {
			t.Errorf("per category %+v, kappa %v; want NaN only for the unused category", res.PerCategory, res.Kappa)
		}
	})
	t.Run("one rating per subject is an error", func(t *testing.T) {
		_, err := FleissKappa(countTable([][]int{{1, 0}, {0, 1}}, "x", "y"))
		if !errors.Is(err, ErrUnequalRatings) {
			t.Errorf("err = %v, want ErrUnequalRatings", err)
		}
	})
	t.Run("empty input is ErrNoData", func(t *testing.T) {
		if _, err := Fleiss(nil); !errors.Is(err, ErrNoData) {
			t.Errorf("err = %v, want ErrNoData", err)
		}
		if _, err := FleissKappa(CountTable{}); !errors.Is(err, ErrNoData) {
			t.Errorf("err = %v, want ErrNoData", err)
		}
	})
	t.Run("duplicate rater on a unit is ErrDuplicate", func(t *testing.T) {
		_, err := Fleiss([]Rating{{Unit: "s", Rater: "a", Value: "1"}, {Unit: "s", Rater: "a", Value: "2"}})
		if !errors.Is(err, ErrDuplicate) {
			t.Errorf("err = %v, want ErrDuplicate", err)
		}
	})
}
