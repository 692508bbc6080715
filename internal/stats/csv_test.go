package stats

import (
	"errors"
	"strings"
	"testing"
)

func TestReadRatings(t *testing.T) {
	t.Run("reads columns by name and skips empty values", func(t *testing.T) {
		in := "\ufeffRater, Unit ,value,comment\nA,u1,3,ok\nB,u1,,missing\nB,u2,4,\n"
		rs, err := ReadRatings(strings.NewReader(in), "r.csv")
		if err != nil {
			t.Fatal(err)
		}
		want := []Rating{{Unit: "u1", Rater: "A", Value: "3", Line: 2}, {Unit: "u2", Rater: "B", Value: "4", Line: 4}}
		if len(rs) != len(want) || rs[0] != want[0] || rs[1] != want[1] {
			t.Errorf("got %+v, want %+v", rs, want)
		}
	})
	errCases := []struct {
		name, in string
		is       error
		mention  []string
	}{
		{"missing column names it", "unit,coder,value\nu1,a,1\n", ErrBadCSV, []string{"r.csv", "line 1", `lacks column "rater"`}},
		{"ragged row names its line", "unit,rater,value\nu1,a,1\nu2,b\n", ErrBadCSV, []string{"r.csv", "line 3"}},
		{"bad quoting names line and column", "unit,rater,value\nu1,a,\"1\nu\"2,b,2\n", ErrBadCSV, []string{"r.csv", "line"}},
		{"empty unit names line and column", "unit,rater,value\n,a,1\n", ErrInvalidValue, []string{"r.csv", "line 2", `column "unit"`}},
		{"header only is ErrNoData", "unit,rater,value\n", ErrNoData, []string{"r.csv", "no ratings"}},
		{"empty file is ErrNoData", "", ErrNoData, []string{"r.csv", "empty"}},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadRatings(strings.NewReader(tc.in), "r.csv")
			if !errors.Is(err, tc.is) {
				t.Fatalf("err = %v, want %v", err, tc.is)
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

func TestReadCounts(t *testing.T) {
	t.Run("reads a table with category headers", func(t *testing.T) {
		ct, err := ReadCounts(strings.NewReader("subject,yes,no\ns1,2,1\ns2,0,3\n"), "c.csv")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(ct.Categories, ",") != "yes,no" || len(ct.Subjects) != 2 || ct.Counts[1][1] != 3 {
			t.Errorf("got %+v", ct)
		}
	})
	t.Run("bad count names file, line, column and value", func(t *testing.T) {
		_, err := ReadCounts(strings.NewReader("subject,yes,no\ns1,2,1\ns2,x,3\n"), "c.csv")
		if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), `c.csv: line 3, column "yes": count "x"`) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("negative count is an error", func(t *testing.T) {
		_, err := ReadCounts(strings.NewReader("subject,yes,no\ns1,-2,1\n"), "c.csv")
		if !errors.Is(err, ErrInvalidValue) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("no category column is an error", func(t *testing.T) {
		_, err := ReadCounts(strings.NewReader("subject\ns1\n"), "c.csv")
		if !errors.Is(err, ErrBadCSV) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestReadTrials(t *testing.T) {
	t.Run("accepts 1/0 and true/false", func(t *testing.T) {
		tr, err := ReadTrials(strings.NewReader("task,trial,success\na,1,1\na,2,FALSE\nb,1,true\n"), "t.csv")
		if err != nil {
			t.Fatal(err)
		}
		if len(tr) != 3 || !tr[0].Success || tr[1].Success || !tr[2].Success || tr[2].Line != 4 {
			t.Errorf("got %+v", tr)
		}
	})
	t.Run("bad success flag names line and value", func(t *testing.T) {
		_, err := ReadTrials(strings.NewReader("task,trial,success\na,1,maybe\n"), "t.csv")
		if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), `t.csv: line 2, column "success": "maybe"`) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestReadTaskTable(t *testing.T) {
	t.Run("paired table with repeats and gaps", func(t *testing.T) {
		tt, err := ReadTaskTable(strings.NewReader("task,human,synthetic\nt1,1,0\nt1,0,\nt2,1,1\n"), "b.csv")
		if err != nil {
			t.Fatal(err)
		}
		means, err := tt.TaskMeans()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(tt.Measures, ",") != "human,synthetic" || means[0][0] != 0.5 || means[1][0] != 0 || means[1][1] != 1 {
			t.Errorf("table %+v means %v", tt, means)
		}
	})
	t.Run("task without a value of a measure is named", func(t *testing.T) {
		tt, err := ReadTaskTable(strings.NewReader("task,a,b\nt1,1,0\nt2,1,\n"), "b.csv")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tt.TaskMeans(); !errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), `task "t2" has no b value`) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("non-number names line and column", func(t *testing.T) {
		_, err := ReadTaskTable(strings.NewReader("task,value\nt1,0.5\nt2,NaN\n"), "b.csv")
		if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), `b.csv: line 3, column "value": "NaN"`) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("wrong header is ErrBadCSV", func(t *testing.T) {
		for _, in := range []string{"unit,value\nt,1\n", "task\nt\n", "task,a,b,c\nt,1,2,3\n"} {
			if _, err := ReadTaskTable(strings.NewReader(in), "b.csv"); !errors.Is(err, ErrBadCSV) {
				t.Errorf("%q: err = %v", in, err)
			}
		}
	})
}
