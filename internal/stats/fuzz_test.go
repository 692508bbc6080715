package stats

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// FuzzReadRatings feeds arbitrary bytes through the ratings reader and alpha and Fleiss at every
// level: nothing may panic, and whatever is computed must be a probability-like number or NaN.
func FuzzReadRatings(f *testing.F) {
	f.Add([]byte("unit,rater,value\nu1,a,1\nu1,b,2\nu2,a,2\nu2,b,2\n"))
	f.Add([]byte("value,unit,rater\n3,x,a\n,x,b\n1e308,x,c\n"))
	f.Add([]byte("\ufeffunit,rater,value\n\"u,1\",a,\"x\"\"y\"\nu,1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := ReadRatings(bytes.NewReader(data), "fuzz.csv")
		if err != nil {
			return
		}
		for _, r := range rs {
			if r.Unit == "" || r.Rater == "" || r.Value == "" || r.Line < 2 {
				t.Fatalf("reader returned an incomplete rating %+v", r)
			}
		}
		for _, level := range []Level{LevelNominal, LevelOrdinal, LevelInterval, LevelRatio} {
			res, err := Alpha(rs, level)
			if err != nil {
				continue
			}
			if !math.IsNaN(res.Alpha) && res.Alpha > 1+1e-9 {
				t.Fatalf("%v alpha %v above 1", level, res.Alpha)
			}
		}
		if res, err := Fleiss(rs); err == nil && !math.IsNaN(res.Kappa) && res.Kappa > 1+1e-9 {
			t.Fatalf("kappa %v above 1", res.Kappa)
		}
	})
}

// FuzzReadCounts checks the count-table reader and Fleiss' kappa on arbitrary input.
func FuzzReadCounts(f *testing.F) {
	f.Add([]byte("subject,a,b\ns1,2,1\ns2,0,3\n"))
	f.Add([]byte("s,a\nx,5\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ct, err := ReadCounts(bytes.NewReader(data), "fuzz.csv")
		if err != nil {
			return
		}
		res, err := FleissKappa(ct)
		if err != nil {
			if !errors.Is(err, ErrUnequalRatings) && !errors.Is(err, ErrNoData) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if !math.IsNaN(res.Kappa) && res.Kappa > 1+1e-9 {
			t.Fatalf("kappa %v above 1", res.Kappa)
		}
	})
}

// FuzzReadTaskTable checks the bootstrap table reader and a short bootstrap on arbitrary input.
func FuzzReadTaskTable(f *testing.F) {
	f.Add([]byte("task,value\nt1,0.5\nt2,1\n"))
	f.Add([]byte("task,a,b\nt1,1,0\nt1,,1\nt2,0.5,0.25\n"))
	bs, err := NewClusterBootstrap(50, 0.95, 1)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tt, err := ReadTaskTable(bytes.NewReader(data), "fuzz.csv")
		if err != nil {
			return
		}
		means, err := tt.TaskMeans()
		if err != nil {
			return
		}
		var ci Interval
		if len(means) == 2 {
			ci, err = bs.PairedDifference(means[0], means[1])
		} else {
			ci, err = bs.Mean(means[0])
		}
		if err != nil {
			t.Fatal(err)
		}
		if ci.Low > ci.High {
			t.Fatalf("interval [%v, %v] is reversed", ci.Low, ci.High)
		}
	})
}
