package stats

import (
	"errors"
	"testing"
)

func TestWilsonMatchesNewcombe1998(t *testing.T) {
	// Newcombe, R. G. (1998), "Two-sided confidence intervals for the single proportion:
	// comparison of seven methods", Statistics in Medicine 17:857–872, Table I, method 3 (score
	// interval without continuity correction), 95% level, four decimals.
	cases := []struct {
		name      string
		x, n      int
		low, high float64
	}{
		{"81 of 263 is 0.2553 to 0.3662", 81, 263, 0.2553, 0.3662},
		{"15 of 148 is 0.0624 to 0.1605", 15, 148, 0.0624, 0.1605},
		{"0 of 20 is 0 to 0.1611", 0, 20, 0, 0.1611},
		{"1 of 29 is 0.0061 to 0.1718", 1, 29, 0.0061, 0.1718},
		{"29 of 29 is 0.8830 to 1", 29, 29, 0.8830, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Wilson(tc.x, tc.n, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			assertNear(t, "low", got.Low, tc.low, 4)
			assertNear(t, "high", got.High, tc.high, 4)
			if got.P != float64(tc.x)/float64(tc.n) {
				t.Errorf("p = %v, want %d/%d", got.P, tc.x, tc.n)
			}
		})
	}
	t.Run("bounds are exactly 0 and 1 at the extremes", func(t *testing.T) {
		lo, _ := Wilson(0, 7, 0.9)
		hi, _ := Wilson(7, 7, 0.9)
		if lo.Low != 0 || hi.High != 1 {
			t.Errorf("low %v high %v, want exactly 0 and 1", lo.Low, hi.High)
		}
	})
	t.Run("a higher level gives a wider interval", func(t *testing.T) {
		a, _ := Wilson(81, 263, 0.90)
		b, _ := Wilson(81, 263, 0.99)
		if !(b.Low < a.Low && b.High > a.High) {
			t.Errorf("99%% [%v,%v] not wider than 90%% [%v,%v]", b.Low, b.High, a.Low, a.High)
		}
	})
}

func TestWilsonRejectsBadArguments(t *testing.T) {
	for name, args := range map[string][3]float64{
		"zero trials":           {0, 0, 0.95},
		"more successes than n": {5, 4, 0.95},
		"negative successes":    {-1, 4, 0.95},
		"level of 1":            {1, 4, 1},
		"level of 0":            {1, 4, 0},
	} {
		t.Run(name+" is ErrInvalidArgument", func(t *testing.T) {
			if _, err := Wilson(int(args[0]), int(args[1]), args[2]); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("err = %v, want ErrInvalidArgument", err)
			}
		})
	}
}

func TestNormalQuantile(t *testing.T) {
	// Standard normal table values: z_.975 = 1.959964,
	// z_.8 = 0.841621, z_.995 = 2.575829.
	assertNear(t, "z .975", NormalQuantile(0.975), 1.959964, 6)
	assertNear(t, "z .8", NormalQuantile(0.8), 0.841621, 6)
	assertNear(t, "z .995", NormalQuantile(0.995), 2.575829, 6)
	assertNear(t, "z .025", NormalQuantile(0.025), -1.959964, 6)
	assertNear(t, "Phi(1.959964)", NormalCDF(1.959964), 0.975, 6)
}
