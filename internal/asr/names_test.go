package asr

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
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

// TestNamesModelSharedByContent: recognizers with one dictionary share one model file, which
// outlives a recognizer's Close and is written again when it goes missing, so that processes
// that never close (test binaries, a killed server) do not each leave a copy behind.
func TestNamesModelSharedByContent(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	dict := map[string]string{"gustavo": "G UW S T AA V OW", "ferreira": "F EH R EH R AH", "my": "M AY", "is": "IH Z"}
	a, b := &Recognizer{dict: dict}, &Recognizer{dict: dict}
	pa, err := a.namesModel()
	if err != nil {
		t.Fatal(err)
	}
	pb, err := b.namesModel()
	if err != nil {
		t.Fatal(err)
	}
	if pa != pb || filepath.Dir(pa) != dir {
		t.Errorf("two recognizers wrote %s and %s, want one file in %s", pa, pb, dir)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pb); err != nil {
		t.Errorf("the model another recognizer uses was removed on Close: %v", err)
	}
	os.Remove(pa)
	if p, err := b.namesModel(); err != nil || p != pb {
		t.Fatalf("model written again at %s (%v), want %s", p, err, pb)
	}
	got, err := os.ReadFile(pb)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(got, []byte("\\data\\\nngram 1=6\n")) || !bytes.Contains(got, []byte(" ferreira\n")) {
		t.Errorf("model rewritten as %q", got)
	}
	if files, _ := os.ReadDir(dir); len(files) != 1 {
		t.Errorf("%d files in the temp dir, want the one model", len(files))
	}
	// Another dictionary is another model.
	c := &Recognizer{dict: map[string]string{"okafor": "OW K AA F ER"}}
	if pc, err := c.namesModel(); err != nil || pc == pa {
		t.Errorf("another dictionary's model at %s (%v), want a path other than %s", pc, err, pa)
	}
}

// TestMailDirectoryOnRecordedAudio: the e-mail directory hears the "dot"s of an address dictated
// among names and letters, which the open vocabulary hears as "doctor", "dog" and "got"; the
// addresses the bank's callers dictate, in the four caller voices.
func TestMailDirectoryOnRecordedAudio(t *testing.T) {
	needFlite(t)
	r := mustRecognizer(t)
	said := []string{
		"t dot marchetti at outlook dot example.",
		"D dot Vasquez, V A S Q U E Z, at albrecht dot example.",
		"Um, J S W dot dev, D E V, at protonmail dot example.",
		"My email is anders dot n o at fjordmail dot example.",
	}
	dots := func(s string) int { return strings.Count(" "+s+" ", " dot ") }
	var want, mail, open int
	for _, s := range said {
		for _, voice := range callerVoices {
			pcm := flite24k(t, voice, s)
			m, err := r.RecognizeMail(context.Background(), pcm, 24000)
			if err != nil {
				t.Fatal(err)
			}
			o := recognize(t, r, pcm, nil)
			if m.Grammar != "mail" {
				t.Errorf("mail reading's grammar %q, want mail", m.Grammar)
			}
			want += dots(strings.ToLower(s))
			mail += min(dots(m.Text), dots(strings.ToLower(s)))
			open += min(dots(o.Text), dots(strings.ToLower(s)))
			t.Logf("%s %q: mail %q, open %q", voice, s, m.Text, o.Text)
			// In the spelling the caller spells (the common one, spelling.go).
			if voice == "rms" && strings.HasPrefix(s, "D dot") && !strings.Contains(m.Text, "vasquez v a s q u e z at albrecht dot") {
				t.Errorf("rms %q: mail directory heard %q, want the name, its spelling and the domain", s, m.Text)
			}
		}
	}
	t.Logf("dots said %d, heard by the mail directory %d, by the open vocabulary %d", want, mail, open)
	if mail*10 < want*9 {
		t.Errorf("the mail directory heard %d of %d dots, want nine in ten", mail, want)
	}
}

// TestHomophones: the dictionary's other spellings of a word's sound.
func TestHomophones(t *testing.T) {
	r := mustRecognizer(t)
	for w, want := range map[string]string{"vasquez": "vazquez", "harbor": "harbour", "vazquez": "vasquez"} {
		if got := r.Homophones(w); !slices.Contains(got, want) || slices.Contains(got, w) {
			t.Errorf("homophones of %s: %q, want %s among them and not %s", w, got, want, w)
		}
	}
	if got := r.Homophones("zzqx"); got != nil {
		t.Errorf("homophones of a word the dictionary lacks: %q", got)
	}
}
