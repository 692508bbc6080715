package asr

import (
	"slices"
	"strings"
	"testing"
)

// The street's words are the ones after the house number, up to its type or unit (all of them
// when none was heard); the words the open vocabulary writes for the house number's digits are
// not street words; every word after the house number may be one of the rest.
func TestAddressParts(t *testing.T) {
	for _, c := range []struct {
		heard        string
		street, tail []string
	}{
		{"fourteen eighteen alter court unit three d in eugene", []string{"alter"}, []string{"alter", "eugene"}},
		{"fifteen or two magnolia boulevard units mine burbank nine one five or six", []string{"magnolia"}, []string{"magnolia", "units", "mine", "burbank", "or"}},
		{"fifty five twenty one north can our avenue apartment three w chicago", []string{"can", "our"}, []string{"can", "our", "chicago"}},
		{"fourteen eighteen older color department freebie eugene", []string{"older", "color", "department", "freebie", "eugene"}, []string{"older", "color", "department", "freebie", "eugene"}},
	} {
		street, tail := addressParts(strings.Fields(c.heard))
		if !slices.Equal(street, c.street) || !slices.Equal(tail, c.tail) {
			t.Errorf("addressParts(%q) = %q, %q; want %q, %q", c.heard, street, tail, c.street, c.tail)
		}
	}
}

// A heard word's sound-alikes are the dictionary's words one phone away: "alter" (AO L T ER) has
// "alder" (AO L D ER), the voiced stop for the voiceless one, first.
func TestSoundAlikes(t *testing.T) {
	r := &Recognizer{dict: map[string]string{"alter": "AO L T ER", "alder": "AO L D ER", "altar": "AO L T ER",
		"older": "OW L D ER", "halter": "HH AO L T ER", "elder": "EH L D ER", "alters": "AO L T ER Z"}}
	got := r.soundAlikes([]string{"alter"})
	if len(got) == 0 || got[0] != "alter" || !slices.Contains(got, "alder") {
		t.Fatalf("soundAlikes(alter) = %q, want alter and alder among them", got)
	}
	for _, far := range []string{"older", "halter", "elder", "alters"} {
		if slices.Contains(got, far) {
			t.Errorf("soundAlikes(alter) = %q holds %s, more than one phone away", got, far)
		}
	}
	if slices.Index(got, "alder") > 1 {
		t.Errorf("soundAlikes(alter) = %q: alder (T to D, voicing only) should come first", got)
	}
}
