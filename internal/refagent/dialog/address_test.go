package dialog

import (
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
		// Number words the open vocabulary wrote as other words: "two" as "to", "four" as "for",
		// a unit's "oh" as "and" (kept after "hundred").
		"twenty to forty pleasant avenue apartment five f":                             "2240 Pleasant Ave Unit 5F",
		"forty four seventeen chowen avenue unit two minneapolis five five for one oh": "4417 Chowen Ave Unit 2 Minneapolis MN 55410",
		"eight eighty marquette avenue apartment fourteen and seven":                   "880 Marquette Ave Unit 1407",
		"one hundred and five main street":                                             "105 Main St",
		"twelve elm street go to the back door":                                        "12 Elm St GO TO Back Door",
		// A street name spelled after it is written as spelled, and once.
		"uh forty four seventeen chowen c h o w e n avenue south unit two in minneapolis five five four one oh": "4417 Chowen Ave S Unit 2 Minneapolis MN 55410",
		"forty four seventeen chow in c h o w e n avenue south unit two":                                        "4417 Chowen Ave S Unit 2",
	} {
		ws := words(said)
		if got := addressText(ws); got != want {
			t.Errorf("%q: address %q, want %q", said, got, want)
		}
	}
}

// TestSpelledNameAgainstTheWordHeard: spelled letters that differ from the word the open
// vocabulary heard only by letters a recognizer confuses (m/n, the E-set), or a long spelling
// garbled in several letters, spell that word; a spelling one letter more, fewer or other is the
// caller's own.
func TestSpelledNameAgainstTheWordHeard(t *testing.T) {
	f := &field{Name: "account_holder", Kind: kindName}
	l := &listener{}
	for said, want := range map[string]string{
		"anders nakamura that's a m g e r s": "Anders Nakamura",
		"matthew that's m a t h e w":         "Mathew",
		"killian that's c i l l i a n":       "Cillian",
		"anders that's a n d e r s":          "Anders",
		"albrecht that's j l d r e g h t":    "Albrecht",
		// A long spelling misheard beyond its letters' classes is still the word heard; one
		// letter off is the caller's own spelling.
		"lindquist that's l i n t k v i s t": "Lindquist",
		"price that's p r y c e":             "Pryce",
		"vasquez albrecht hyphenated":        "Vasquez-Albrecht",
		"salazar whitfield with a hyphen":    "Salazar-Whitfield",
		// Letters much shorter than the name heard, spelling none of its words, are a fragment of
		// a spelling misheard, not the name ("Chd" for Vasquez-Albrecht).
		"vasquez albrecht hyphenated be a rescue you easy money i'll be on the c h d": "Vasquez-Albrecht",
		"priya p r i y a":   "Priya",
		"premium p r i y a": "Priya",
		// Letters that spell the start of a word said confirm it ("Gwen" was written for it).
		"gwendolyn g w e n pryce adeyemi": "Gwendolyn Pryce Adeyemi",
	} {
		ws := words(said)
		v, ok := l.nameValue(f, ws, Utterance{Open: asr.Result{Text: said, Words: ws}})
		if !ok || v.value != want {
			t.Errorf("%q: name %v (%v), want %q", said, v.value, ok, want)
		}
	}
}

// TestNameAlternativeIsTheOpenReading: when the spelling grammar's letters are taken for a name,
// the open vocabulary's reading of it is kept as the other candidate a failed verification tries.
func TestNameAlternativeIsTheOpenReading(t *testing.T) {
	f := &field{Name: "last_name", Kind: kindName}
	l := &listener{}
	open := words("vasquez that's the las que")
	spelled := words("vasquez that's v l a s q")
	u := Utterance{Open: asr.Result{Words: open}, Spoken: true,
		Readings: []Reading{{Slot: asr.Slot{Kind: asr.KindSpelling}, Answer: asr.Answer{Result: asr.Result{Words: spelled}, OK: true}}}}
	v, ok := l.nameValue(f, open, u)
	if !ok || v.value != "Vasquez Vlasq" {
		t.Fatalf("name %v (%v), want the spelled reading Vasquez Vlasq", v.value, ok)
	}
	if len(v.alts) != 1 || v.alts[0].value != "Vasquez" {
		t.Errorf("alternatives %v, want the open reading Vasquez", v.alts)
	}
}

// TestShortTextEndsAtAClause: a short answer ends where the caller goes on about it, pause or
// not ("one cat, she'll hide under the bed").
func TestShortTextEndsAtAClause(t *testing.T) {
	for said, want := range map[string]string{
		"just one cat he'll hide under the bed": "one cat",
		"the lifetime fitness on lake street":   "lifetime fitness on lake street",
	} {
		ws := words(said)
		if got := shortText(ws, nil); got != want {
			t.Errorf("%q: %q, want %q", said, got, want)
		}
	}
}

// TestChoiceSaidInTwoWords: an enumeration value written as one word is named by its two words
// ("pick up" for pickup).
func TestChoiceSaidInTwoWords(t *testing.T) {
	f := &field{Name: "pickup_option", Kind: kindChoice, Enum: []string{"pickup", "delivery"}}
	v, ok := (&listener{}).choiceMention(f, "pick up i'll pick it up")
	if !ok || v.value != "pickup" {
		t.Errorf("choice %v (%v), want pickup", v.value, ok)
	}
}

// TestSpelledRunAgainstTheOpenTranscript: a spelled run the spelling grammar read without the
// word it spells is reconciled with that word as the open vocabulary heard it.
func TestSpelledRunAgainstTheOpenTranscript(t *testing.T) {
	f := &field{Name: "last_name", Kind: kindName}
	open := words("albrecht then they'll be r u c h t")
	u := Utterance{Open: asr.Result{Words: open}, Spoken: true,
		Readings: []Reading{{Slot: asr.Slot{Kind: asr.KindSpelling}, Answer: asr.Answer{Result: asr.Result{Words: words("then j l d r e g h t")}, OK: true}}}}
	if v, ok := (&listener{}).nameValue(f, open, u); !ok || v.value != "Albrecht" {
		t.Errorf("name %v (%v), want Albrecht", v.value, ok)
	}
}

// TestChoiceNamedByItsOwnWord: a long word that only one value has names it ("delivered" for
// delivered_not_received); a short or shared one does not.
func TestChoiceNamedByItsOwnWord(t *testing.T) {
	f := &field{Name: "claim_type", Kind: kindChoice, Enum: []string{"delivered_not_received", "damaged", "lost_in_transit"}}
	for text, want := range map[string]string{
		"it says delivered but i never got a like the apps as delivered and there's nothing there": "delivered_not_received",
		"it arrived damaged":          "damaged",
		"i think it got lost":         "", // "lost" is too short to stand for lost in transit
		"it was delivered damaged":    "damaged",
		"nothing that i can think of": "",
	} {
		v, ok := (&listener{}).choiceMention(f, text)
		if got, _ := v.value.(string); !ok && want != "" || ok && got != want {
			t.Errorf("%q: %v (%v), want %q", text, v.value, ok, want)
		}
	}
}

// TestMisheardSpellingEndsTheName: with the name heard whole by the open vocabulary, a spelling
// reading whose letters spell none of its words is a spelling misheard: neither its letters nor the
// words among them join the name (other-voice turn suite, travel-rebook-cancelled: "Vasquez-Albrecht
// Rescue U Easy That", read back letter by letter as "B A, A L B R E C H T").
func TestMisheardSpellingEndsTheName(t *testing.T) {
	f := &field{Name: "last_name", Kind: kindName}
	l := &listener{}
	for _, c := range []struct{ open, spelling, want string }{
		{"vasquez albrecht hyphenated be a rescue you easy money i'll be on the c h d",
			"vasquez albrecht hyphenated b a rescue you easy money i'll b on the c h d", "Vasquez-Albrecht"},
		{"vasquez albrecht be a rescue you easy i'll be on t c h d",
			"vasquez albrecht b a rescue you easy i'll b on t c h d", "Vasquez Albrecht"},
	} {
		u := Utterance{Open: asr.Result{Text: c.open, Words: words(c.open)}, Spoken: true,
			Readings: []Reading{{Slot: asr.Slot{Kind: asr.KindSpelling}, Answer: asr.Answer{OK: true, Result: asr.Result{Text: c.spelling, Words: words(c.spelling)}}}}}
		v, ok := l.nameValue(f, words(c.open), u)
		if !ok || v.value != c.want || len(v.spelled) != 0 {
			t.Errorf("%q: name %v spelled %v (%v), want %q spelled as nothing", c.spelling, v.value, v.spelled, ok, c.want)
		}
	}
}

// An address's street line (with its unit) is what an agent keys to find the record: the city,
// state and ZIP after it are left out.
func TestStreetLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"1418 Alder Ct Unit 3B Eugene", "1418 Alder Ct Unit 3B"},
		{"1502 Magnolia Blvd Unit 9 Burbank CA 91506", "1502 Magnolia Blvd Unit 9"},
		{"5521 N Kenmore Ave Unit 3W Chicago IL 60640", "5521 N Kenmore Ave Unit 3W"},
		{"4417 Chowen Ave S Unit 2 Minneapolis", "4417 Chowen Ave S Unit 2"},
		{"1418 Alder Ct Unit 3B", ""},
		{"1418 All Purports Unit 3D Eugene", ""},
	} {
		if got := streetLine(c.in); got != c.want {
			t.Errorf("streetLine(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
