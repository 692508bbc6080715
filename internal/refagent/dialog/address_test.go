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
