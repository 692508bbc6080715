package asr

import (
	"context"
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

// A street word heard with a glide or an h before its vowel ("walter" for "alder" after
// "fourteen eighteen", rms streamed) has the word without that onset, and that word's one-phone
// neighbours, among its sound-alikes, after the one-phone neighbours of what was heard.
func TestSoundAlikesWithoutTheOnset(t *testing.T) {
	r := &Recognizer{dict: map[string]string{"walter": "W AO L T ER", "walder": "W AO L D ER", "alter": "AO L T ER",
		"alder": "AO L D ER", "older": "OW L D ER", "welter": "W EH L T ER", "halter": "HH AO L T ER"}}
	got := r.soundAlikes([]string{"walter"})
	for _, want := range []string{"walder", "alter", "alder"} {
		if !slices.Contains(got, want) {
			t.Errorf("soundAlikes(walter) = %q, want %s among them", got, want)
		}
	}
	if slices.Contains(got, "older") {
		t.Errorf("soundAlikes(walter) = %q holds older, two phones from alter", got)
	}
	if slices.Index(got, "alder") < slices.Index(got, "walder") || slices.Index(got, "alter") < slices.Index(got, "walder") {
		t.Errorf("soundAlikes(walter) = %q: what was heard, one phone changed, comes first", got)
	}
	// A word that starts with a vowel has no onset to lose.
	if got := r.soundAlikes([]string{"alter"}); slices.Contains(got, "walter") {
		t.Errorf("soundAlikes(alter) = %q holds walter, a phone added", got)
	}
}

// A caller asked again for an address says the same street, however it was heard: the street
// words heard for it the round before (Slot.Street) stand in the grammar beside this turn's. The
// rms and awb voices' "Alder Court" streamed as "walter court" reads "walder" (a sound-alike of
// walter) on its own, and "alder" with the round before's "older" and "alder".
func TestAddressReadWithTheStreetHeardBefore(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes recorded speech")
	}
	needFlite(t)
	r := mustRecognizer(t)
	heard := strings.Fields("fourteen eighteen walter court unit three d")
	for _, voice := range []string{"rms", "awb"} {
		pcm := flite24k(t, voice, "Fourteen eighteen Alder Court. Unit three B.")
		alone, err := r.RecognizeSlot(context.Background(), pcm, 24000, Slot{Kind: KindAddress, Words: heard})
		if err != nil {
			t.Fatal(err)
		}
		ans, err := r.RecognizeSlot(context.Background(), pcm, 24000, Slot{Kind: KindAddress, Words: heard, Street: []string{"older", "alder"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: alone %q, with the street heard before %q", voice, alone.Value.Text, ans.Value.Text)
		if ans.Value.Text != "fourteen eighteen alder court unit three b" {
			t.Errorf("%s: read %q with the street heard before (older, alder), want fourteen eighteen alder court unit three b", voice, ans.Value.Text)
		}
	}
}
