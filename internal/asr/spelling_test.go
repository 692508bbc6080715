package asr

import (
	"context"
	"testing"
)

// TestDirectoryWritesTheCommonSpelling: of the words that sound alike, a directory's reading
// writes the one the language model finds commoner, but a spelled letter stays a letter. The e-mail directory read "a p at
// harborpine dot example" as "harbour pyne" in the turn suite (slt, through Opus) and as "the p
// at harbour buying dot example" here (awb): an address no one has.
func TestDirectoryWritesTheCommonSpelling(t *testing.T) {
	needFlite(t)
	r := mustRecognizer(t)
	d, err := r.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	of := r.commonSpellings(d)
	r.release(d)
	for rare, want := range map[string]string{"harbour": "harbor", "pyne": "pine"} {
		if of[rare] != want {
			t.Errorf("common spelling of %q is %q, want %q", rare, of[rare], want)
		}
	}
	for _, common := range []string{"harbor", "pine", "r", "are", "u"} {
		if c, ok := of[common]; ok {
			t.Errorf("%q, the common spelling, is rewritten to %q", common, c)
		}
	}
	for _, said := range []string{"a p at harborpine dot example.", "Send it to a p at harborpine dot example."} {
		for _, v := range callerVoices {
			res, err := r.RecognizeMail(context.Background(), flite24k(t, v, said), 24000)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range res.Words {
				if c, ok := of[w.Text]; ok {
					t.Errorf("%s, %q: the e-mail directory read %q, with %q for %q", v, said, res.Text, w.Text, c)
				}
			}
		}
	}
}
