package canon

import (
	"slices"
	"testing"
	"time"
)

func TestSpokenToDigits(t *testing.T) {
	tests := []struct{ in, want string }{
		{"five five five, one two three four", "555 , 1234"},
		{"nineteen eighty-eight", "1988"},
		{"July ninth 1988", "july 9 1988"},
		{"forty two Birch Lane unit four B", "42 birch lane unit 4 b"},
		{"twenty two oh one", "2201"},
		{"one hundred and twelve", "112"},
		{"two thousand five", "2005"},
		{"twenty twenty four", "2024"},
		{"double five oh one", "5501"},
		{"the twenty-first of March", "the 21 of march"},
		{"I'm at oh nine hundred", "i'm at 0900"},
		{"oh, I see", "oh , i see"},
		{"twelve hundred", "1200"},
	}
	for _, tt := range tests {
		if got := SpokenToDigits(tt.in); got != tt.want {
			t.Errorf("SpokenToDigits(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNumber(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"about 20", 20, true},
		{"twenty", 20, true},
		{"$1,284.17", 1284.17, true},
		{"one thousand two hundred eighty four dollars and seventeen cents", 1284.17, true},
		{"12.5%", 12.5, true},
		{"two point five", 2.5, true},
		{"412.80", 412.8, true},
		{"roughly three hundred", 300, true},
		{"twenty or thirty", 0, false},
		{"blue", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := Number(tt.in)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("Number(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseDate(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"1988-07-09", "1988-07-09", true},
		{"July ninth 1988", "1988-07-09", true},
		{"July 9th, 1988", "1988-07-09", true},
		{"9 July 1988", "1988-07-09", true},
		{"the ninth of July, nineteen eighty-eight", "1988-07-09", true},
		{"07/09/1988", "1988-07-09", true},
		{"7/9/88", "1988-07-09", true},
		{"March twenty-first two thousand twenty four", "2024-03-21", true},
		{"Feb 29 2023", "", false},
		{"Feb 29 2024", "2024-02-29", true},
		{"next Tuesday", "", false},
		{"July 1988", "", false},
	}
	for _, tt := range tests {
		d, ok := ParseDate(tt.in)
		if ok != tt.ok || (ok && d.String() != tt.want) {
			t.Errorf("ParseDate(%q) = %v, %v; want %s, %v", tt.in, d, ok, tt.want, tt.ok)
		}
	}
}

func TestPhoneAddressIdentifier(t *testing.T) {
	eq := []struct {
		name string
		f    func(string) string
		a, b string
	}{
		{"phone spoken", Phone, "five five five, one two three four", "555-1234"},
		{"phone country code", Phone, "+1 (503) 555-0147", "503-555-0147"},
		{"phone double", Phone, "five oh three, double five five, oh one four seven", "5035550147"},
		{"address unit", Address, "42 Birch Lane, Apt. 4B", "forty two birch lane unit four b"},
		{"address hash", Address, "1800 NW Glisan Street #210", "1800 Northwest Glisan St, Suite 210"},
		{"identifier separators", Identifier, "CC4419", "CC-4419"},
		{"identifier zeros", Identifier, "HVAC-007", "HVAC-7"},
		{"identifier spoken", Identifier, "c c four four one nine", "cc-4419"},
		{"identifier mixed", Identifier, "AC-4471-0093", "a c four four seven one zero zero nine three"},
	}
	for _, tt := range eq {
		if ga, gb := tt.f(tt.a), tt.f(tt.b); ga != gb {
			t.Errorf("%s: %q -> %q but %q -> %q", tt.name, tt.a, ga, tt.b, gb)
		}
	}
	ne := []struct {
		name string
		f    func(string) string
		a, b string
	}{
		{"phone differs", Phone, "555-1234", "555-1243"},
		{"address unit differs", Address, "42 Birch Lane Apt 4B", "42 Birch Lane Apt 4D"},
		{"identifier differs", Identifier, "CC-4419", "CC-4491"},
		{"identifier zero inside kept", Identifier, "A-1005", "A-15"},
	}
	for _, tt := range ne {
		if ga, gb := tt.f(tt.a), tt.f(tt.b); ga == gb {
			t.Errorf("%s: %q and %q both canonicalise to %q", tt.name, tt.a, tt.b, ga)
		}
	}
	if p := TypePrefix("JOB-2201"); p != "JOB" {
		t.Errorf("TypePrefix(JOB-2201) = %q", p)
	}
	if p := TypePrefix("CC4419"); p != "" {
		t.Errorf("TypePrefix(CC4419) = %q, want none", p)
	}
}

func TestAddressLeads(t *testing.T) {
	got := AddressLeads("1418 Alder Court, Unit 3B, Eugene, OR 97402")
	want := []string{"1418 alder ct", "1418 alder ct unit 3b", "1418 alder ct unit 3b eugene", Address("1418 Alder Court, Unit 3B, Eugene, OR 97402")}
	if !slices.Equal(got, want) {
		t.Errorf("AddressLeads = %q, want %q", got, want)
	}
	if got := AddressLeads("42 Birch Lane"); !slices.Equal(got, []string{"42 birch ln"}) {
		t.Errorf("AddressLeads(one part) = %q", got)
	}
}

func TestFold(t *testing.T) {
	if got := Fold("  Ms. O’Brien-Smith!  "); got != "ms. o'brien-smith" {
		t.Errorf("Fold = %q", got)
	}
}

// The plain-code fast path reads exactly what the general reader reads, or declines.
func TestPlainCodeMatchesTheGeneralReader(t *testing.T) {
	for _, s := range []string{"PA-20-44718", "RX 6023-1148", "HO3-77310586", "5TH-AVE", "21st", "CS 42ND", "A-1005", "oh3", "ONE-2",
		"QX7K2M", "7306ab", "HVS-55120-JA", "acct_88", "x-ray 5", "P as in Paul", "double-e 4", "ab.cd/ef#9", "Alpha 7", "in 5"} {
		code, ok := plainCode(s)
		if !ok {
			continue
		}
		want := spelledCode(s)
		if code != want {
			t.Errorf("plainCode(%q) = %q, the general reader %q", s, code, want)
		}
	}
}

// A date said without a year resolves the way a listener would (moved here from asr with the
// type it tests).
func TestDateResolve(t *testing.T) {
	ref := time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		d    Date
		want string
	}{
		{Date{Month: 12, Day: 5}, "2026-12-05"},                                           // ahead this year
		{Date{Month: 2, Day: 8}, "2027-02-08"},                                            // passed: next year
		{Date{Month: 11, Day: 30}, "2026-11-30"},                                          // today
		{Date{Month: 2, Day: 9, Weekday: time.Tuesday, HasWeekday: true}, "2027-02-09"},   // 2027-02-09 is a Tuesday
		{Date{Month: 11, Day: 24, Weekday: time.Tuesday, HasWeekday: true}, "2026-11-24"}, // the weekday beats "ahead"
		{Date{Year: 1979, Month: 3, Day: 14}, "1979-03-14"},
	} {
		if got := c.d.Resolve(ref).String(); got != c.want {
			t.Errorf("%v.Resolve = %s, want %s", c.d, got, c.want)
		}
	}
	from, to := ResolveRange(Date{Month: 12, Day: 18}, Date{Month: 1, Day: 2}, ref)
	if from.String() != "2026-12-18" || to.String() != "2027-01-02" {
		t.Errorf("range resolved to %s – %s", from, to)
	}
}
