package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// statsFile writes a CSV fixture into a temporary directory and returns its path.
func statsFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// statsRun runs the audit command line and returns stdout, stderr and the error.
func statsRun(args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

// statsJSON runs the command, requires success and decodes its JSON output.
func statsJSON(t *testing.T, args ...string) (map[string]any, string) {
	t.Helper()
	out, errOut, err := statsRun(args...)
	if err != nil {
		t.Fatalf("audit %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	return m, out
}

func statsField(t *testing.T, m map[string]any, key string) float64 {
	t.Helper()
	v, ok := m[key]
	if !ok {
		t.Fatalf("output lacks %q: %v", key, m)
	}
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("%q = %v (%T), want a number", key, v, v)
	}
	return f
}

func statsWantNum(t *testing.T, m map[string]any, key string, want float64, decimals int) {
	t.Helper()
	if got := statsField(t, m, key); math.Abs(got-want) >= 0.5*math.Pow(10, -float64(decimals)) {
		t.Errorf("%s = %v, want %.*f", key, got, decimals, want)
	}
}

// statsKrippendorff2011CSV is the 4 observers × 12 units reliability data of Krippendorff (2011),
// "Computing Krippendorff's Alpha-Reliability", in long form (missing ratings absent).
const statsKrippendorff2011CSV = `unit,rater,value
1,A,1
1,B,1
1,D,1
2,A,2
2,B,2
2,C,3
2,D,2
3,A,3
3,B,3
3,C,3
3,D,3
4,A,3
4,B,3
4,C,3
4,D,3
5,A,2
5,B,2
5,C,2
5,D,2
6,A,1
6,B,2
6,C,3
6,D,4
7,A,4
7,B,4
7,C,4
7,D,4
8,A,1
8,B,1
8,C,2
8,D,1
9,A,2
9,B,2
9,C,2
9,D,2
10,B,5
10,C,5
10,D,5
11,C,1
11,D,1
12,B,3
`

func TestStatsAlphaPrintsPublishedValues(t *testing.T) {
	path := statsFile(t, "k2011.csv", statsKrippendorff2011CSV)
	// Krippendorff (2011): nominal .743, ordinal .815, interval .849, ratio .797; 11 pairable
	// units, 40 pairable values.
	for _, tc := range []struct {
		level string
		alpha float64
	}{{"nominal", 0.743}, {"ordinal", 0.815}, {"interval", 0.849}, {"ratio", 0.797}} {
		t.Run(tc.level+" alpha is "+fmt.Sprint(tc.alpha), func(t *testing.T) {
			m, _ := statsJSON(t, "stats", "alpha", "--level", tc.level, path)
			statsWantNum(t, m, "alpha", tc.alpha, 3)
			statsWantNum(t, m, "units", 11, 9)
			statsWantNum(t, m, "pairable_values", 40, 9)
			if a := 1 - statsField(t, m, "observed_disagreement")/statsField(t, m, "expected_disagreement"); math.Abs(a-statsField(t, m, "alpha")) > 1e-12 {
				t.Errorf("alpha is not 1 - D_o/D_e (%v)", a)
			}
			if _, ok := m["ci_low"]; ok {
				t.Error("ci_low printed without --bootstrap")
			}
		})
	}
}

func TestStatsAlphaBootstrap(t *testing.T) {
	path := statsFile(t, "k2011.csv", statsKrippendorff2011CSV)
	args := []string{"stats", "alpha", path, "--level", "interval", "--bootstrap", "2000", "--seed", "9"}
	m, first := statsJSON(t, args...)
	t.Run("adds a CI around alpha with the resample count", func(t *testing.T) {
		lo, hi, a := statsField(t, m, "ci_low"), statsField(t, m, "ci_high"), statsField(t, m, "alpha")
		if !(lo < a && a < hi) {
			t.Errorf("CI [%v, %v] does not bracket alpha %v", lo, hi, a)
		}
		statsWantNum(t, m, "resamples", 2000, 9)
		statsWantNum(t, m, "seed", 9, 9)
	})
	t.Run("same seed prints the same bytes", func(t *testing.T) {
		if _, again := statsJSON(t, args...); again != first {
			t.Errorf("second run differs:\n%s\n%s", first, again)
		}
	})
}

func TestStatsAlphaEdgeCases(t *testing.T) {
	t.Run("one value everywhere prints alpha null with a note", func(t *testing.T) {
		path := statsFile(t, "agree.csv", "unit,rater,value\n1,a,4\n1,b,4\n2,a,4\n2,b,4\n2,c,4\n")
		m, raw := statsJSON(t, "stats", "alpha", "--level", "ordinal", path)
		if m["alpha"] != nil || !strings.Contains(raw, `"alpha": null`) {
			t.Errorf("alpha = %v, want null:\n%s", m["alpha"], raw)
		}
		if note, _ := m["note"].(string); !strings.Contains(note, "undefined") || !strings.Contains(note, "expected disagreement is 0") {
			t.Errorf("note %q does not explain why", note)
		}
	})
	t.Run("perfect agreement with variation prints alpha 1", func(t *testing.T) {
		path := statsFile(t, "perfect.csv", "unit,rater,value\n1,a,4\n1,b,4\n2,a,2\n2,b,2\n")
		m, _ := statsJSON(t, "stats", "alpha", "--level", "interval", path)
		statsWantNum(t, m, "alpha", 1, 12)
	})
	t.Run("one unit is computed with a caution", func(t *testing.T) {
		path := statsFile(t, "one.csv", "unit,rater,value\n1,a,1\n1,b,3\n")
		m, _ := statsJSON(t, "stats", "alpha", "--level", "nominal", path)
		statsWantNum(t, m, "alpha", 0, 12)
		if note, _ := m["note"].(string); !strings.Contains(note, "one pairable unit") {
			t.Errorf("note %q", note)
		}
	})
	errCases := []struct {
		name, file string
		args       []string
		mention    []string
	}{
		{"non-numeric interval value names file, line and value", "unit,rater,value\n1,a,2\n1,b,high\n",
			[]string{"--level", "interval"}, []string{"bad.csv: line 3", `column "value"`, `"high"`, "interval"}},
		{"header-only file is empty input", "unit,rater,value\n",
			[]string{"--level", "nominal"}, []string{"bad.csv", "no ratings"}},
		{"missing column names the header", "unit,coder,value\n1,a,2\n",
			[]string{"--level", "nominal"}, []string{"bad.csv: line 1", `lacks column "rater"`}},
		{"only single ratings has no pairable unit", "unit,rater,value\n1,a,2\n2,a,3\n",
			[]string{"--level", "nominal"}, []string{"bad.csv", "single rating"}},
		{"unknown level is refused", "unit,rater,value\n1,a,2\n1,b,3\n",
			[]string{"--level", "circular"}, []string{`level "circular"`}},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			path := statsFile(t, "bad.csv", tc.file)
			out, _, err := statsRun(append([]string{"stats", "alpha", path}, tc.args...)...)
			if err == nil {
				t.Fatalf("succeeded with %s", out)
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
	t.Run("missing level is a usage error", func(t *testing.T) {
		path := statsFile(t, "k.csv", statsKrippendorff2011CSV)
		_, errOut, err := statsRun("stats", "alpha", path)
		if !errors.Is(err, errUsage) || !strings.Contains(errOut, "--level is required") {
			t.Errorf("err = %v, stderr %q", err, errOut)
		}
	})
	t.Run("missing file is a usage error", func(t *testing.T) {
		if _, _, err := statsRun("stats", "alpha", "--level", "nominal"); !errors.Is(err, errUsage) {
			t.Errorf("err = %v", err)
		}
	})
}

// statsWikipediaFleissCSV is the Wikipedia "Fleiss' kappa" worked example as a count table: 10
// subjects, 5 categories, 14 raters; κ = 0.210, P̄ = 0.378, P_e = 0.213.
const statsWikipediaFleissCSV = `subject,c1,c2,c3,c4,c5
1,0,0,0,0,14
2,0,2,6,4,2
3,0,0,3,5,6
4,0,3,9,2,0
5,2,2,8,1,1
6,7,7,0,0,0
7,3,2,6,3,0
8,2,5,3,2,2
9,6,5,2,1,0
10,0,2,2,3,7
`

// statsDiagnosesCSV writes Fleiss' (1971) psychiatric diagnoses (R irr `diagnoses`: 30 subjects × 6
// raters, categories 1–5) as long data.
func statsDiagnosesCSV() string {
	rows := []string{
		"444444", "222555", "233335", "555555", "222444", "113333", "333355", "113334", "114444", "555555",
		"144444", "124444", "222333", "144444", "224445", "333335", "111455", "111112", "224444", "133555",
		"555555", "244444", "224555", "114444", "144445", "222224", "111155", "224444", "133333", "555555",
	}
	var b strings.Builder
	b.WriteString("unit,rater,value\n")
	for s, row := range rows {
		for r, v := range row {
			fmt.Fprintf(&b, "p%d,rater%d,%c\n", s+1, r+1, v)
		}
	}
	return b.String()
}

func TestStatsFleiss(t *testing.T) {
	t.Run("counts table matches the Wikipedia example", func(t *testing.T) {
		m, _ := statsJSON(t, "stats", "fleiss", "--counts", statsFile(t, "w.csv", statsWikipediaFleissCSV))
		statsWantNum(t, m, "kappa", 0.210, 3)
		statsWantNum(t, m, "p_bar", 0.378, 3)
		statsWantNum(t, m, "p_e", 0.213, 3)
		if pc, _ := m["per_category"].(map[string]any); len(pc) != 5 || pc["c5"] == nil {
			t.Errorf("per_category = %v, want five categories", m["per_category"])
		}
		statsField(t, m, "z")
		statsField(t, m, "p_value")
	})
	t.Run("long data matches irr on Fleiss 1971", func(t *testing.T) {
		// R irr kappam.fleiss(diagnoses): kappa 0.4302445, z 17.65183; detail = TRUE category
		// kappas .245 .245 .520 .471 .566.
		m, _ := statsJSON(t, "stats", "fleiss", statsFile(t, "d.csv", statsDiagnosesCSV()))
		statsWantNum(t, m, "kappa", 0.4302445, 7)
		statsWantNum(t, m, "z", 17.65183, 5)
		pc, _ := m["per_category"].(map[string]any)
		for cat, want := range map[string]float64{"1": 0.245, "2": 0.245, "3": 0.520, "4": 0.471, "5": 0.566} {
			statsWantNum(t, pc, cat, want, 3)
		}
	})
	t.Run("different numbers of ratings names the unit", func(t *testing.T) {
		path := statsFile(t, "u.csv", "unit,rater,value\nx,a,1\nx,b,1\ny,a,2\ny,b,1\ny,c,2\n")
		_, _, err := statsRun("stats", "fleiss", path)
		if err == nil || !strings.Contains(err.Error(), `"y" has 3 ratings`) || !strings.Contains(err.Error(), "u.csv") {
			t.Errorf("err = %v, want the file and unit y named", err)
		}
	})
	t.Run("a single category prints kappa null with a note", func(t *testing.T) {
		m, _ := statsJSON(t, "stats", "fleiss", statsFile(t, "s.csv", "unit,rater,value\nx,a,no\nx,b,no\ny,a,no\ny,b,no\n"))
		if m["kappa"] != nil || m["z"] != nil || m["note"] == nil {
			t.Errorf("got %v, want null kappa and z with a note", m)
		}
	})
	t.Run("bad count names file, line and column", func(t *testing.T) {
		_, _, err := statsRun("stats", "fleiss", "--counts", statsFile(t, "c.csv", "subject,a,b\ns1,1,1\ns2,one,1\n"))
		if err == nil || !strings.Contains(err.Error(), `c.csv: line 3, column "a": count "one"`) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestStatsWilson(t *testing.T) {
	t.Run("81 of 263 matches Newcombe 1998", func(t *testing.T) {
		m, _ := statsJSON(t, "stats", "wilson", "--successes", "81", "--n", "263")
		statsWantNum(t, m, "low", 0.2553, 4)
		statsWantNum(t, m, "high", 0.3662, 4)
		statsWantNum(t, m, "p", 81.0/263, 12)
	})
	t.Run("level widens the interval", func(t *testing.T) {
		m, _ := statsJSON(t, "stats", "wilson", "--successes", "81", "--n", "263", "--level", "0.99")
		if statsField(t, m, "low") >= 0.2553 || statsField(t, m, "high") <= 0.3662 {
			t.Errorf("99%% interval %v not wider than the 95%% one", m)
		}
	})
	t.Run("missing n is a usage error", func(t *testing.T) {
		if _, _, err := statsRun("stats", "wilson", "--successes", "3"); !errors.Is(err, errUsage) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("more successes than trials is refused", func(t *testing.T) {
		if _, _, err := statsRun("stats", "wilson", "--successes", "5", "--n", "4"); err == nil || !strings.Contains(err.Error(), "5 successes out of 4") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestStatsPassK(t *testing.T) {
	csv := "task,trial,success\na,1,1\na,2,1\na,3,0\nb,1,0\nb,2,0\nb,3,1\n"
	t.Run("averages the unbiased estimators over tasks", func(t *testing.T) {
		m, _ := statsJSON(t, "stats", "passk", "--k", "2", statsFile(t, "p.csv", csv))
		// a: n=3 c=2 → pass@2 = 1, pass^2 = 1/3; b: c=1 → pass@2 = 2/3, pass^2 = 0.
		statsWantNum(t, m, "pass_at_k", (1+2.0/3)/2, 12)
		statsWantNum(t, m, "pass_hat_k", (1.0/3)/2, 12)
		if pt, _ := m["per_task"].([]any); len(pt) != 2 {
			t.Errorf("per_task = %v", m["per_task"])
		}
	})
	t.Run("task with fewer than k trials is named", func(t *testing.T) {
		_, _, err := statsRun("stats", "passk", "--k", "3", statsFile(t, "p.csv", csv+"c,1,1\n"))
		if err == nil || !strings.Contains(err.Error(), `task "c" has 1 trial`) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("missing k is a usage error", func(t *testing.T) {
		if _, _, err := statsRun("stats", "passk", statsFile(t, "p.csv", csv)); !errors.Is(err, errUsage) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestStatsBootstrap(t *testing.T) {
	t.Run("per-task mean", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("task,value\n")
		for i := range 24 {
			fmt.Fprintf(&b, "t%d,%d\n", i, i%2)
		}
		path := statsFile(t, "m.csv", b.String())
		args := []string{"stats", "bootstrap", path, "--resamples", "10000", "--seed", "3"}
		m, first := statsJSON(t, args...)
		// 0/1 per task: resampled means are Binomial(24, 1/2)/24, whose 2.5% and 97.5%
		// quantiles are 7/24 and 17/24 (see the stats package test).
		statsWantNum(t, m, "estimate", 0.5, 12)
		statsWantNum(t, m, "ci_low", 7.0/24, 12)
		statsWantNum(t, m, "ci_high", 17.0/24, 12)
		statsWantNum(t, m, "resamples", 10000, 9)
		statsWantNum(t, m, "tasks", 24, 9)
		if m["statistic"] != "mean" {
			t.Errorf("statistic = %v", m["statistic"])
		}
		if _, again := statsJSON(t, args...); again != first {
			t.Error("same seed printed different output")
		}
	})
	t.Run("paired difference of per-task means", func(t *testing.T) {
		path := statsFile(t, "p.csv", "task,human,synthetic\nt1,1,0\nt1,0,\nt2,1,1\nt3,0,0\n")
		m, _ := statsJSON(t, "stats", "bootstrap", path, "--resamples", "500")
		// Per-task differences 0.5, 0, 0.
		statsWantNum(t, m, "estimate", 0.5/3, 12)
		if m["statistic"] != "paired_difference" || statsField(t, m, "ci_low") < 0 || statsField(t, m, "ci_high") > 0.5 {
			t.Errorf("got %v", m)
		}
	})
	t.Run("non-number names file, line and column", func(t *testing.T) {
		_, _, err := statsRun("stats", "bootstrap", statsFile(t, "x.csv", "task,value\nt1,0.5\nt2,abc\n"))
		if err == nil || !strings.Contains(err.Error(), `x.csv: line 3, column "value": "abc"`) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestStatsListsStatistics(t *testing.T) {
	out, _, err := statsRun("stats")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"alpha", "fleiss", "wilson", "passk", "bootstrap"} {
		if !strings.Contains(out, "  "+name+" ") {
			t.Errorf("listing lacks %s:\n%s", name, out)
		}
	}
	if _, _, err := statsRun("stats", "median"); !errors.Is(err, errUsage) {
		t.Errorf("unknown statistic: err = %v", err)
	}
}
