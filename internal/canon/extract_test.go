package canon

import (
	"reflect"
	"testing"
	"time"
)

func TestFindNumbersInFreeText(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []float64
	}{
		{"You expect two hundred twenty-five dollars and fifty cents back, not 360.", []float64{225.5, 360}},
		{"their estimate was six hundred twelve dollars and forty cents", []float64{612.4}},
		{"minus fifty, then a hundred percent", []float64{-50, 100}},
		{"about twelve hundred and fifty dollars i think", []float64{1250}},
		{"no numbers here", nil},
	} {
		if got := FindNumbers(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("FindNumbers(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestFindDatesKeepsWeekdayAndMissingYear(t *testing.T) {
	ds := FindDates("It's Tuesday, February ninth, or maybe the 18th of December 2026.")
	want := []Date{{Month: 2, Day: 9, Weekday: time.Tuesday, HasWeekday: true}, {Year: 2026, Month: 12, Day: 18}}
	if !reflect.DeepEqual(ds, want) {
		t.Errorf("FindDates = %+v, want %+v", ds, want)
	}
	if ds := FindDates("February thirty-first"); len(ds) != 0 {
		t.Errorf("an impossible day is no date: %v", ds)
	}
}

func TestExtractMentions(t *testing.T) {
	m := Extract("It's five oh three, uh, five five five, oh one four seven. On December fifth, 2026, policy PA-20-44718; " +
		"e-mail priya dot v at northwind dot example or j.s@x.example")
	if !reflect.DeepEqual(m.Dates, []Date{{Year: 2026, Month: 12, Day: 5}}) {
		t.Errorf("dates %v", m.Dates)
	}
	if !reflect.DeepEqual(m.Digits, []string{"5035550147", "2044718"}) {
		t.Errorf("digit sequences %v (a date's day and year are not among them)", m.Digits)
	}
	if !reflect.DeepEqual(m.Codes, []string{"PA2044718"}) {
		t.Errorf("codes %v", m.Codes)
	}
	if !reflect.DeepEqual(m.Emails, []string{"j.s@x.example", "priya.v@northwind.example"}) {
		t.Errorf("emails %v", m.Emails)
	}
}

func TestItemsSplitAtSemicolonsOnly(t *testing.T) {
	for in, want := range map[string][]string{
		"Harbor and Pine; kitchen":          {"Harbor and Pine", "kitchen"},
		"VPN, Outlook, and SharePoint":      {"VPN", "Outlook", "SharePoint"},
		"restarted it, then reinstalled":    {"restarted it", "reinstalled"},
		"read and write; approve; ":         {"read and write", "approve"},
		"Finance shared drive & Workday HR": {"Finance shared drive", "Workday HR"},
	} {
		if got := Items(in); !reflect.DeepEqual(got, want) {
			t.Errorf("Items(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestColumnComparisons(t *testing.T) {
	for _, tc := range []struct {
		compare, a, b string
		same          bool
	}{
		{"identifier", "PA-20-44718", "p a two zero four four seven one eight", true},
		{"identifier", "HO3-77310586", "H03-77310586", true},
		{"identifier", "PA-20-44718", "PA-20-44781", false},
		{"date", "1979-03-14", "March fourteenth, 1979", true},
		{"date", "1979-03-14", "sometime in March", false},
		{"phone", "+1 503 555 0174", "503-555-0174", true},
		{"number", "$1,284.17", "one thousand two hundred eighty-four dollars and seventeen cents", true},
		{"address", "2150 S.W. Borland Rd", "2150 Southwest Borland Road", true},
		{"casefold", "STRASSE", "Straße", true},
		{"exact", " x ", "x", true},
		{"exact", "X", "x", false},
	} {
		if got := Same(tc.compare, tc.a, tc.b); got != tc.same {
			t.Errorf("Same(%s, %q, %q) = %v", tc.compare, tc.a, tc.b, got)
		}
	}
}

func TestEmailAndEnumKey(t *testing.T) {
	if got := Email("anders dot n o at fjordmail dot example"); got != "anders.no@fjordmail.example" {
		t.Errorf("Email = %q", got)
	}
	if got := Email("no address here"); got != "no address here" {
		t.Errorf("Email of plain text = %q", got)
	}
	for _, s := range []string{"High-Deductible Health Plan", "high deductible health plan", "HIGH_DEDUCTIBLE_HEALTH_PLAN", " high -- deductible / health plan. "} {
		if got := EnumKey(s); got != "high deductible health plan" {
			t.Errorf("EnumKey(%q) = %q", s, got)
		}
	}
	if got := EnumKey("Harbor & Pine"); got != "harbor and pine" {
		t.Errorf("EnumKey(&) = %q", got)
	}
}
