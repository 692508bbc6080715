package dialog

import (
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/asr"
)

// TestAddressTextStart: the house number is the first number of the address, not "oh" in "oh,
// wait" nor a unit number said before the address.
func TestAddressTextStart(t *testing.T) {
	for said, want := range map[string]string{
		"oh wait sorry i just checked my lease the unit is nineteen fifteen oh two magnolia boulevard unit nineteen burbank nine one five oh six": "1502 Magnolia Blvd Unit 19 Burbank CA 91506",
		"it's twenty one fifty southwest borland road tualatin nine seven oh six two":                                                             "2150 SW Borland Rd Tualatin OR 97062",
		// A ZIP code said right after the unit's number, the unit after the city.
		"fifteen oh two magnolia boulevard in burbank unit nine nine one five oh six": "1502 Magnolia Blvd Unit 9 Burbank CA 91506",
	} {
		var ws []asr.Word
		for _, w := range strings.Fields(said) {
			ws = append(ws, asr.Word{Text: w})
		}
		if got := addressText(ws); got != want {
			t.Errorf("%q: address %q, want %q", said, got, want)
		}
	}
}

// TestSpelledNameAgainstTheWordHeard: spelled letters that differ from the word the open
// vocabulary heard only by letters a recognizer confuses (m/n, the E-set) spell that word; a
// spelling with a letter more or fewer, or another letter, is the caller's own.
func TestSpelledNameAgainstTheWordHeard(t *testing.T) {
	f := &field{Name: "account_holder", Kind: kindName}
	l := &listener{}
	for said, want := range map[string]string{
		"anders nakamura that's a m g e r s": "Anders Nakamura",
		"matthew that's m a t h e w":         "Mathew",
		"killian that's c i l l i a n":       "Cillian",
		"anders that's a n d e r s":          "Anders",
	} {
		var ws []asr.Word
		for _, w := range strings.Fields(said) {
			ws = append(ws, asr.Word{Text: w})
		}
		v, ok := l.nameValue(f, ws, Utterance{Open: asr.Result{Text: said, Words: ws}})
		if !ok || v.value != want {
			t.Errorf("%q: name %v (%v), want %q", said, v.value, ok, want)
		}
	}
}
