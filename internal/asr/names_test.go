package asr

import (
	"context"
	"strings"
	"testing"
)

// TestNamesDirectoryOnRecordedAudio: names the dictionary has, which the open vocabulary hears as
// common words, are heard by the names directory (Flite voices, as the bank caller says them).
func TestNamesDirectoryOnRecordedAudio(t *testing.T) {
	needFlite(t)
	r := mustRecognizer(t)
	for _, c := range []struct{ voice, said, name string }{
		{"rms", "Desmond Achterberg.", "desmond achterberg"},               // open: "desmond dekker bird"
		{"slt", "Desmond Achterberg.", "desmond achterberg"},               // open: "desmond actor bird"
		{"awb", "Desmond Achterberg.", "desmond achterberg"},               // open: "desmond activity"
		{"awb", "My manager is Gustavo Ferreira.", "gustavo ferreira"},     // open: "… gustavo favorite"
		{"slt", "Joaquin Salazar Whitfield.", "joaquin salazar whitfield"}, // open: "… salazar wakefield"
	} {
		pcm := flite24k(t, c.voice, c.said)
		open, err := r.Recognize(context.Background(), pcm, 24000, nil)
		if err != nil {
			t.Fatal(err)
		}
		names, err := r.RecognizeNames(context.Background(), pcm, 24000)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(names.Text, c.name) {
			t.Errorf("%q (%s): names directory heard %q, want %q in it", c.said, c.voice, names.Text, c.name)
		}
		if strings.Contains(open.Text, c.name) {
			t.Logf("%q (%s): the open vocabulary heard the name too (%q)", c.said, c.voice, open.Text)
		}
		if names.Grammar != "names" {
			t.Errorf("names reading's grammar %q, want names", names.Grammar)
		}
		// The open vocabulary and the grammars are unaffected by the directory search.
		again, err := r.Recognize(context.Background(), pcm, 24000, nil)
		if err != nil || again.Text != open.Text {
			t.Errorf("open reading after the directory %q (%v), want %q", again.Text, err, open.Text)
		}
	}
}
