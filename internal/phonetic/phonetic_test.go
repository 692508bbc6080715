package phonetic

import "testing"

func TestSoundex(t *testing.T) {
	for in, want := range map[string]string{
		"Robert": "R163", "Rupert": "R163", "Rubin": "R150", "Ashcraft": "A261", "Ashcroft": "A261",
		"Tymczak": "T522", "Pfister": "P236", "Honeyman": "H555", "Lee": "L000", "Gutierrez": "G362",
		"Jackson": "J250", "Kearney": "K650", "Carney": "C650", "O'Brien": "O165",
	} {
		if got := SoundexCode(words(in)[0]); got != want {
			t.Errorf("Soundex(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestDoubleMetaphone(t *testing.T) {
	tests := []struct{ in, p, a string }{
		{"Smith", "SM0", "XMT"},
		{"Schmidt", "XMT", "SMT"},
		{"Thompson", "TMPS", "TMPS"},
		{"Thomson", "TMSN", "TMSN"},
		{"Jose", "HS", "HS"},
		{"Catherine", "K0RN", "KTRN"},
		{"Knight", "NT", "NT"},
		{"Xavier", "SF", "SFR"},
		{"Kearney", "KRN", "KRN"},
		{"Carney", "KRN", "KRN"},
		{"Phillips", "FLPS", "FLPS"},
		{"Gnagy", "NK", "NJ"},
		{"Caesar", "SSR", "SSR"},
		{"Michael", "MKL", "MXL"},
		{"Siobhan", "SPN", "XPN"},
		{"Wierzbicki", "ARSP", "FRTS"},
	}
	for _, tt := range tests {
		if p, a := DoubleMetaphoneCodes(tt.in); p != tt.p || a != tt.a {
			t.Errorf("DoubleMetaphone(%s) = %s/%s, want %s/%s", tt.in, p, a, tt.p, tt.a)
		}
	}
}

func TestSoundAlike(t *testing.T) {
	tests := []struct {
		alg, a, b string
		want      bool
	}{
		{DoubleMetaphone, "Kearney", "Carney", true},
		{Soundex, "Kearney", "Carney", false}, // Soundex keeps the first letter
		{Soundex, "Siobhan Kearney", "siobhan kearny", true},
		{Soundex, "Kearney", "Kearney Smith", false},
		{DoubleMetaphone, "Thomson", "Tomson", true},
		{DoubleMetaphone, "Brennan", "Bremner", false},
		{Soundex, "", "", false},
		{"nysiis", "a", "a", false},
	}
	for _, tt := range tests {
		if got := SoundAlike(tt.alg, tt.a, tt.b); got != tt.want {
			t.Errorf("SoundAlike(%s, %q, %q) = %v, want %v", tt.alg, tt.a, tt.b, got, tt.want)
		}
	}
}
