package asr

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/audio"
)

// Free-text caller turns (as the synthetic callers say them), written as spoken.
var freeText = []string{
	"I can't connect to the v p n from home since this morning",
	"a rock hit the windshield on the driver's side and the chip spread into a crack maybe ten inches long",
	"the supply line under the upstairs toilet burst",
	"the upstairs bathroom floor the kitchen ceiling right below it and the kitchen cabinets",
	"yes I shut off the main valve right away",
	"restarted the laptop then reinstalled the v p n client then switched to my phone hotspot",
	"my whole team has the same problem",
	"email and text message",
	"no that's everything thanks bye",
	"sorry I don't have that",
	"hi I'm calling because I need to report a cracked windshield",
	"sorry I need to correct something my callback number is actually five oh three five five five oh one seven four",
}

func normWords(s string) []string {
	s = strings.ToLower(strings.NewReplacer(",", " ", ".", " ", "?", " ", "!", " ").Replace(s))
	return strings.Fields(s)
}

// wordErrors is the word-level edit distance between reference and hypothesis.
func wordErrors(ref, hyp []string) int {
	prev := make([]int, len(hyp)+1)
	cur := make([]int, len(hyp)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ref); i++ {
		cur[0] = i
		for j := 1; j <= len(hyp); j++ {
			sub := prev[j-1]
			if ref[i-1] != hyp[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(hyp)]
}

func TestWordErrors(t *testing.T) {
	for _, c := range []struct {
		ref, hyp string
		want     int
	}{
		{"a b c", "a b c", 0}, {"a b c", "a x c", 1}, {"a b c", "a c", 1}, {"a b", "a b c d", 2}, {"", "a", 1}, {"a", "", 1},
	} {
		if got := wordErrors(normWords(c.ref), normWords(c.hyp)); got != c.want {
			t.Errorf("wordErrors(%q, %q) = %d, want %d", c.ref, c.hyp, got, c.want)
		}
	}
}

// TestOpenVocabularyWER measures the word error rate of the open-vocabulary model on Flite
// renderings of caller turns in every caller voice. The bound only catches a broken pipeline;
// the figure is logged for reports.
func TestOpenVocabularyWER(t *testing.T) {
	needFlite(t)
	if testing.Short() {
		t.Skip("decodes 48 utterances with the language model")
	}
	r := mustRecognizer(t)
	var errs, words, streamErrs int
	perVoice := map[string][2]int{}
	var audio, took time.Duration
	for _, v := range callerVoices {
		ch, err := r.OpenChannel() // one caller per voice, as in a call
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range freeText {
			pcm := flite24k(t, v, text)
			res := recognize(t, r, pcm, nil)
			ref := normWords(text)
			e := wordErrors(ref, normWords(res.Text))
			errs += e
			s, err := ch.Stream(24000, nil)
			if err != nil {
				t.Fatal(err)
			}
			for off := 0; off < len(pcm); off += 960 {
				s.Write(pcm[off:min(off+960, len(pcm))])
			}
			sres, err := s.Finish()
			if err != nil {
				t.Fatal(err)
			}
			streamErrs += wordErrors(ref, normWords(sres.Text))
			words += len(ref)
			pv := perVoice[v]
			perVoice[v] = [2]int{pv[0] + e, pv[1] + len(ref)}
			audio += time.Duration(len(pcm)) * time.Second / 24000
			took += res.Elapsed
			if e*3 > len(ref) {
				t.Logf("%-5s ref %q\n      hyp %q", v, text, res.Text)
			}
		}
		ch.Close()
	}
	wer := float64(errs) / float64(words)
	var per []string
	for _, v := range callerVoices {
		per = append(per, fmt.Sprintf("%s %.1f%%", v, 100*float64(perVoice[v][0])/float64(perVoice[v][1])))
	}
	t.Logf("open-vocabulary WER %.1f%% (%d/%d words; %s); real-time factor %.2f; streamed in 40 ms frames: WER %.1f%%",
		100*wer, errs, words, strings.Join(per, ", "), took.Seconds()/audio.Seconds(), 100*float64(streamErrs)/float64(words))
	if wer > 0.40 || float64(streamErrs)/float64(words) > 0.40 {
		t.Errorf("WER %.1f%% (streamed %d errors) is above 40%%: recognition is broken", 100*wer, streamErrs)
	}
}

// slotCases are answers to typed questions, as callers say them, with the value they mean.
var slotCases = []struct {
	slot Slot
	text string
	want string
}{
	{Slot{Kind: KindDigits}, "It's four one seven.", "417"},
	{Slot{Kind: KindDigits, Subject: "zip code"}, "My zip code is nine seven four oh two.", "97402"},
	{Slot{Kind: KindPhone}, "It's five oh three, five five five, oh one four seven.", "503-555-0147"},
	{Slot{Kind: KindPhone}, "It's six one two, five five five, oh one nine three.", "612-555-0193"},
	{Slot{Kind: KindPhone, Subject: "callback number"}, "My callback number is four one five, five five five, two six eight one.", "415-555-2681"},
	{Slot{Kind: KindDate}, "March fourteenth, nineteen seventy-nine.", "1979-03-14"},
	{Slot{Kind: KindDate}, "It's Tuesday, November twenty-fourth, twenty twenty-six.", "2026-11-24"},
	{Slot{Kind: KindDate}, "It's December fifth.", "--12-05"},
	{Slot{Kind: KindDate}, "The ninth of July, nineteen eighty-eight.", "1988-07-09"},
	{Slot{Kind: KindDateRange}, "From December eighteenth to January second.", "--12-18 to --01-02"},
	{Slot{Kind: KindNumber}, "It's six hundred twelve dollars and forty cents.", "612.4"},
	{Slot{Kind: KindNumber}, "Four.", "4"},
	{Slot{Kind: KindNumber}, "About twelve hundred dollars.", "1200"},
	{Slot{Kind: KindYesNo}, "Yes, go ahead.", "yes"},
	{Slot{Kind: KindYesNo}, "Yes, that's right.", "yes"},
	{Slot{Kind: KindYesNo}, "No, please don't do that.", "no"},
	{Slot{Kind: KindYesNo}, "Yes, go ahead. Actually, wait. No, don't go ahead with that. I'm withdrawing my approval.", "no"},
	{Slot{Kind: KindChoice, Choices: []string{"morning", "afternoon", "evening"}}, "Afternoons, after one.", "afternoon"},
	{Slot{Kind: KindChoice, Choices: []string{"glass", "collision", "comprehensive"}}, "It's a glass claim.", "glass"},
	{Slot{Kind: KindIdentifier, Subject: "policy number"}, "It's P A, two zero, four four seven one eight.", "PA2044718"},
	{Slot{Kind: KindIdentifier, Subject: "account number"}, "It's eight eight four one, oh three nine two, five seven.", "8841039257"},
	{Slot{Kind: KindIdentifier}, "C C four four one nine.", "CC4419"},
}

// TestSlotAccuracy measures constrained recognition: each answer is decoded with its slot's
// grammar in every caller voice and parsed to a value. Digits, phone numbers, dates, amounts and
// yes/no must be right at least 75% of the time to be useful to an agent; identifiers that mix
// letters and digits are reported only.
func TestSlotAccuracy(t *testing.T) {
	needFlite(t)
	r := mustRecognizer(t)
	type tally struct{ ok, n int }
	byKind := map[Kind]*tally{}
	var took, audio time.Duration
	for _, c := range slotCases {
		for _, v := range callerVoices {
			pcm := flite24k(t, v, c.text)
			ans, err := r.RecognizeSlot(context.Background(), pcm, 24000, c.slot)
			if err != nil {
				t.Fatal(err)
			}
			res, val, ok := ans.Result, ans.Value, ans.OK
			took += res.Elapsed
			audio += time.Duration(len(pcm)) * time.Second / 24000
			k := byKind[c.slot.Kind]
			if k == nil {
				k = &tally{}
				byKind[c.slot.Kind] = k
			}
			k.n++
			if ok && val.Text == c.want {
				k.ok++
			} else {
				t.Logf("%-5s %-10s %q heard %q → %q, want %q", v, c.slot.Kind, c.text, res.Text, val.Text, c.want)
			}
		}
	}
	var kinds []string
	for k := range byKind {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	var line []string
	for _, k := range kinds {
		tl := byKind[Kind(k)]
		line = append(line, fmt.Sprintf("%s %d/%d", k, tl.ok, tl.n))
	}
	t.Logf("slot accuracy: %s; grammar real-time factor %.2f", strings.Join(line, ", "), took.Seconds()/audio.Seconds())
	for _, k := range []Kind{KindDigits, KindPhone, KindDate, KindDateRange, KindNumber, KindYesNo, KindChoice} {
		tl := byKind[k]
		if tl == nil || tl.ok*4 < tl.n*3 {
			t.Errorf("%s accuracy %d/%d is below 75%%", k, tl.ok, tl.n)
		}
	}
}

// TestParse checks the value readers on written words (no audio).
func TestParse(t *testing.T) {
	for _, c := range []struct {
		slot Slot
		text string
		want string
		ok   bool
	}{
		{Slot{Kind: KindPhone}, "it's five oh three five five five oh one four seven", "503-555-0147", true},
		{Slot{Kind: KindPhone}, "one five oh three five five five oh one four seven", "503-555-0147", true},
		{Slot{Kind: KindPhone}, "five five five", "", false},
		{Slot{Kind: KindDigits, Digits: 4}, "double four one nine", "4419", true},
		// "of", "to" and "for" among a code's digits are oh, two and four.
		{Slot{Kind: KindIdentifier, Subject: "account number"}, "my account number is eight eight four one of three nine to five seven", "8841039257", true},
		// The run the caller settled on, when the turn holds other numbers too.
		{Slot{Kind: KindDigits, Digits: 5}, "six eight five sorry six eight five oh six that's lincoln", "68506", true},
		{Slot{Kind: KindDigits, Digits: 5}, "sorry no the zip code we have on file my old one is six eight five oh six not that", "68506", true},
		{Slot{Kind: KindDigits, Digits: 5}, "my old one is six eight five", "", false},
		{Slot{Kind: KindPhone}, "no the one i gave you is five oh three five five five oh one four seven", "503-555-0147", true},
		{Slot{Kind: KindPhone}, "i flipped the last two digits it's kind of three five five five one seven four", "", false},
		{Slot{Kind: KindIdentifier}, "h oh three seven seven three one oh five eight six", "HO377310586", true},
		{Slot{Kind: KindIdentifier}, "it's oh f g nine one two", "OFG912", true},
		{Slot{Kind: KindIdentifier}, "oh four one seven", "0417", true},
		{Slot{Kind: KindIdentifier}, "zero x eight zero zero seven two e e seven", "0x80072EE7", true},
		{Slot{Kind: KindIdentifier, Subject: "policy number"}, "my policy number is p a two zero", "PA20", true},
		{Slot{Kind: KindIdentifier}, "it's", "", false},
		// "I always have to think" is the caller, not the letter I.
		{Slot{Kind: KindIdentifier}, "mine is uh sorry i always have to think e m p oh two two nine one", "EMPO2291", true},
		{Slot{Kind: KindDate}, "tuesday february ninth", "--02-09", true},
		{Slot{Kind: KindDate}, "march fourteenth nineteen seventy nine", "1979-03-14", true},
		{Slot{Kind: KindDate}, "february thirty first", "", false},
		{Slot{Kind: KindDate}, "yes", "", false},
		{Slot{Kind: KindDateRange}, "from december eighteenth to january second", "--12-18 to --01-02", true},
		{Slot{Kind: KindDateRange}, "the week of december seventh so december seventh through december eleventh", "--12-07 to --12-11", true},
		{Slot{Kind: KindNumber}, "it's six hundred twelve dollars and forty cents", "612.4", true},
		{Slot{Kind: KindNumber}, "it's three", "3", true},
		{Slot{Kind: KindNumber}, "their estimate was six hundred twelve dollars and forty cents", "612.4", true},
		{Slot{Kind: KindNumber}, "about twelve hundred and fifty dollars i think", "1250", true},
		{Slot{Kind: KindYesNo}, "no don't go ahead", "no", true},
		{Slot{Kind: KindYesNo}, "yes go ahead", "yes", true},
		{Slot{Kind: KindYesNo}, "sounds good", "yes", true},
		{Slot{Kind: KindYesNo}, "the kitchen", "", false},
		{Slot{Kind: KindChoice, Choices: []string{"single user", "team", "site"}}, "my whole team has the same problem", "team", true},
		{Slot{Kind: KindChoice, Choices: []string{"frozen pipe", "storm"}}, "a frozen pipes", "frozen pipe", true},
		{Slot{Kind: KindChoice, Choices: []string{"frozen pipe", "storm"}}, "a leak", "", false},
		{Slot{Kind: KindChoice, Choices: []string{"pickup", "delivery"}}, "pick up please", "pickup", true},
		{Slot{Kind: KindChoice, Choices: []string{"morning", "afternoon", "evening"}}, "afternoons after one i'm driving the kids around in the morning", "afternoon", true},
		{Slot{Kind: KindChoice, Choices: []string{"morning", "afternoon", "evening"}}, "not the morning evenings are better", "evening", true},
	} {
		v, ok := c.slot.Parse(c.text)
		if ok != c.ok || (ok && v.Text != c.want) {
			t.Errorf("%s.Parse(%q) = %q, %v; want %q, %v", c.slot.Kind, c.text, v.Text, ok, c.want, c.ok)
		}
	}
}

func TestGrammarErrors(t *testing.T) {
	r := mustRecognizer(t)
	g := Slot{Kind: KindChoice, Choices: []string{"morning", "qzxwvtt"}}.Grammar()
	if err := r.Check(g); !errors.Is(err, ErrUnknownWord) || !strings.Contains(err.Error(), "qzxwvtt") {
		t.Errorf("Check of a grammar with an unknown word: %v", err)
	}
	_, err := r.Recognize(context.Background(), make([]int16, 16000), 16000, g)
	if !errors.Is(err, ErrUnknownWord) {
		t.Errorf("Recognize with an unknown word: %v", err)
	}
	if _, err := r.Recognize(context.Background(), make([]int16, 100), 44100*3, nil); !errors.Is(err, ErrBadAudio) {
		t.Errorf("Recognize at an unconvertible rate: %v", err)
	}
	if !r.Known("windshield") || r.Known("qzxwvtt") {
		t.Error("Known disagrees with the dictionary")
	}
	// Silence decodes to nothing, under the language model and a grammar.
	for _, g := range []*Grammar{nil, Slot{Kind: KindPhone}.Grammar()} {
		res, err := r.Recognize(context.Background(), make([]int16, 24000), 24000, g)
		if err != nil {
			t.Fatal(err)
		}
		if g == nil && res.Text != "" {
			t.Errorf("silence recognized as %q", res.Text)
		}
	}
}

func TestModelErrors(t *testing.T) {
	if _, err := New(Config{ModelDir: t.TempDir()}); !errors.Is(err, ErrModel) {
		t.Errorf("New with an empty model dir: %v", err)
	}
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Recognize(context.Background(), make([]int16, 1600), 16000, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Recognize after Close: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A context that ends while every decoder is busy stops the wait.
func TestRecognizeWaitsForDecoderWithinContext(t *testing.T) {
	r := mustRecognizer(t)
	d, err := r.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = r.Recognize(ctx, make([]int16, 1600), 16000, nil)
	r.release(d)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Recognize with every decoder busy: %v", err)
	}
}

// TestTranscribeWAV is the post-call path: a stereo recording whose left channel has two caller
// turns separated by silence is segmented with the endpointer and transcribed per segment.
func TestTranscribeWAV(t *testing.T) {
	needFlite(t)
	r := mustRecognizer(t)
	a := flite24k(t, "slt", "yes that's right")
	b := flite24k(t, "slt", "march fourteenth nineteen seventy nine")
	gap := make([]int16, 24000*3/2)
	left := append(append(append(append([]int16{}, gap...), a...), gap...), b...)
	left = append(left, gap...)
	stereo := make([]int16, 2*len(left))
	for i, s := range left {
		stereo[2*i] = s
	}
	path := filepath.Join(t.TempDir(), "call.wav")
	if err := audio.WriteWAV(path, 24000, 2, stereo); err != nil {
		t.Fatal(err)
	}
	utts, err := r.TranscribeWAV(context.Background(), path, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(utts) != 2 {
		t.Fatalf("found %d segments, want 2: %+v", len(utts), utts)
	}
	if !strings.Contains(utts[0].Text, "right") || !strings.Contains(utts[1].Text, "march") {
		t.Errorf("transcripts %q, %q", utts[0].Text, utts[1].Text)
	}
	if s := utts[1].Start; s < 1400*time.Millisecond+time.Duration(len(a))*time.Second/24000 {
		t.Errorf("second segment starts at %v, before the second turn", s)
	}
	if w := utts[1].Words; len(w) == 0 || w[0].Start < utts[1].Start {
		t.Errorf("word times not on the channel's clock: %+v", w)
	}
	// The right (agent) channel is silent: no segments.
	if u, err := r.TranscribeWAV(context.Background(), path, 1, nil); err != nil || len(u) != 0 {
		t.Errorf("silent channel: %v %v", u, err)
	}
	if _, err := r.TranscribeWAV(context.Background(), path, 2, nil); !errors.Is(err, ErrBadAudio) {
		t.Errorf("channel 2: %v", err)
	}
	if _, err := r.Transcribe(context.Background(), left, 24000, []Segment{{Start: time.Hour, End: 2 * time.Hour}}); !errors.Is(err, ErrBadAudio) {
		t.Errorf("segment outside the audio: %v", err)
	}
}

// Streaming a caller's utterances through a Channel in 40 ms frames gives (for these clear
// utterances) nearly the same hypotheses as decoding them whole (live normalization cannot see an
// utterance's end), and a second channel fed the same audio decodes it exactly the same way, with
// whole-utterance decodes in between: a call's recognition depends only on its own audio.
func TestChannelStreams(t *testing.T) {
	needFlite(t)
	r := mustRecognizer(t)
	utts := []struct {
		text string
		g    *Grammar
	}{
		{"yes I shut off the main valve right away", nil},
		{"It's five oh three, five five five, oh one four seven.", Slot{Kind: KindPhone}.Grammar()},
		{"hi I'm calling because I need to report a cracked windshield", nil},
	}
	run := func() []Result {
		ch, err := r.OpenChannel()
		if err != nil {
			t.Fatal(err)
		}
		defer ch.Close()
		var out []Result
		for _, u := range utts {
			pcm := flite24k(t, "rms", u.text)
			recognize(t, r, flite24k(t, "slt", "something else entirely"), nil) // other work in between
			s, err := ch.Stream(24000, u.g)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ch.Stream(24000, nil); err == nil {
				t.Error("a second utterance streamed while the first was open")
			}
			for off := 0; off < len(pcm); off += 960 {
				if err := s.Write(pcm[off:min(off+960, len(pcm))]); err != nil {
					t.Fatal(err)
				}
			}
			res, err := s.Finish()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Finish(); !errors.Is(err, ErrClosed) {
				t.Errorf("second Finish: %v", err)
			}
			batch := recognize(t, r, pcm, u.g)
			if d := wordErrors(normWords(batch.Text), normWords(res.Text)); d > 1 {
				t.Errorf("streamed %q, whole %q", res.Text, batch.Text)
			}
			out = append(out, res)
		}
		return out
	}
	first, second := run(), run()
	for i := range first {
		if first[i].Text != second[i].Text || first[i].Score != second[i].Score {
			t.Errorf("utterance %d: %q (%d), then %q (%d)", i, first[i].Text, first[i].Score, second[i].Text, second[i].Score)
		}
	}
	// An aborted utterance frees the channel; a closed channel refuses.
	ch, err := r.OpenChannel()
	if err != nil {
		t.Fatal(err)
	}
	s, err := ch.Stream(16000, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Abort()
	if s, err = ch.Stream(16000, nil); err != nil {
		t.Fatalf("Stream after Abort: %v", err)
	}
	s.Abort()
	ch.Close()
	if _, err := ch.Stream(16000, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Stream on a closed channel: %v", err)
	}
}

// Whole-utterance decodes do not depend on what the decoder decoded before.
func TestRecognizeIsHistoryFree(t *testing.T) {
	needFlite(t)
	r := mustRecognizer(t)
	pcm := flite24k(t, "awb", "the upstairs bathroom floor the kitchen ceiling and the kitchen cabinets")
	a := recognize(t, r, pcm, nil)
	recognize(t, r, flite24k(t, "kal16", "It's zero x eight zero zero seven two E E seven."), Slot{Kind: KindIdentifier}.Grammar())
	recognize(t, r, flite24k(t, "slt", "sorry I don't have that"), nil)
	if b := recognize(t, r, pcm, nil); a.Text != b.Text || a.Score != b.Score {
		t.Errorf("same audio decoded %q (%d), then %q (%d)", a.Text, a.Score, b.Text, b.Score)
	}
}

// TestKnownWhileDecodersBusy: Known answers from the dictionary as the decoder does, without
// waiting for a decoder (a call's form is built from many look-ups while other calls decode).
func TestKnownWhileDecodersBusy(t *testing.T) {
	r := mustRecognizer(t)
	d, err := r.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"windshield", "qzxwvtt", "tualatin", "papa", "seventy", "'bout", "cillian", "zzzq"}
	var fromDecoder []bool
	for _, w := range words {
		fromDecoder = append(fromDecoder, d.known(w))
	}
	done := make(chan []bool)
	go func() {
		var got []bool
		for _, w := range words {
			got = append(got, r.Known(w))
		}
		done <- got
	}()
	select {
	case got := <-done:
		for i, w := range words {
			if got[i] != fromDecoder[i] {
				t.Errorf("Known(%q) = %v, the decoder says %v", w, got[i], fromDecoder[i])
			}
		}
	case <-time.After(time.Minute):
		t.Fatal("Known waited for the busy decoder")
	}
	r.release(d)
}

// TestCompoundWords: a word the dictionary lacks that is two of its words run together is
// learned and heard by a grammar (a clinic location "Edgewater" in Flite voices through Opus);
// one that splits into nothing, or only into short pieces, stays unknown.
func TestCompoundWords(t *testing.T) {
	needFlite(t)
	r := mustRecognizer(t)
	if d, err := r.acquire(context.Background()); err == nil {
		known := d.known("edgewater")
		r.release(d)
		if known {
			t.Skip("the dictionary has edgewater: the test needs a compound it lacks")
		}
	}
	for w, want := range map[string]bool{"edgewater": true, "fjordmail": true, "qzxwvtt": false, "kwo": false, "aoife": false} {
		if got := r.Known(w); got != want {
			t.Errorf("Known(%q) = %v, want %v", w, got, want)
		}
	}
	slot := Slot{Kind: KindChoice, Choices: []string{"edgewater", "loop", "evanston"}}
	for _, v := range callerVoices {
		ans, err := r.RecognizeSlot(context.Background(), opusPath(t, flite24k(t, v, "Edgewater.")), 24000, slot)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if ans.Value.Text != "edgewater" {
			t.Errorf("%s voice: heard %q (%q), want edgewater", v, ans.Value.Text, ans.Text)
		}
	}
}

// TestChoiceInContext: a choice said among other words is read, and a turn that names no choice
// is no answer, on the bank's choice answers and non-answers in the four Flite voices through
// Opus. Every non-answer must be refused. One answer is known to go wrong: in slt, "both" is
// heard as "that's" and "mailing" is there to be found ("that's mailing only on it for yes").
func TestChoiceInContext(t *testing.T) {
	needFlite(t)
	r := mustRecognizer(t)
	r.Known("edgewater")
	seat := []string{"aisle", "window", "no preference"}
	location := []string{"edgewater", "loop", "evanston"}
	for _, c := range []struct {
		said    string
		choices []string
		want    string // "" for no answer
		wrongIn string // voices known to read it wrong (logged, not failed)
	}{
		{"Aisle if you've got it.", seat, "aisle", ""},
		{"Aisle.", seat, "aisle", ""},
		{"Window, please.", seat, "window", ""},
		{"The Edgewater office, please. It's closest to me.", location, "edgewater", ""},
		{"Edgewater, if possible.", location, "edgewater", ""},
		{"By check, please.", []string{"ach", "check", "card"}, "check", ""},
		{"Afternoons, after one. I'm driving the kids around in the morning.", []string{"morning", "afternoon", "evening"}, "afternoon", ""},
		{"Both. Mailing and home address.", []string{"mailing only", "both"}, "both", "slt"},
		// A choice of two items said with "and".
		{"Read and write, she'll need to edit the workbooks.", []string{"read", "read write"}, "read write", ""},
		{"Of course, take your time.", []string{"ach", "check", "card"}, "", ""},
		{"Fine.", []string{"emergency", "urgent", "routine"}, "", ""},
		{"Okay.", []string{"emergency", "urgent", "routine"}, "", ""},
		{"Sorry to cut in, um, I didn't hear that over the dog. Could you say it again?", []string{"delivered not received", "damaged", "lost in transit"}, "", ""},
	} {
		for _, v := range callerVoices {
			ans, err := r.RecognizeSlot(context.Background(), opusPath(t, flite24k(t, v, c.said)), 24000,
				Slot{Kind: KindChoiceInContext, Choices: c.choices})
			if err != nil {
				t.Fatalf("%s: %v", v, err)
			}
			got := ""
			if ans.OK {
				got = ans.Value.Text
			}
			switch {
			case got != c.want && strings.Contains(c.wrongIn, v):
				t.Logf("%s voice, %q: read %q (heard %q), a known error", v, c.said, got, ans.Text)
			case got != c.want:
				t.Errorf("%s voice, %q: read %q (heard %q), want %q", v, c.said, got, ans.Text, c.want)
			case strings.Contains(c.wrongIn, v):
				t.Errorf("%s voice, %q: read right now; drop it from wrongIn", v, c.said)
			}
		}
	}
}

// TestCountWithItsUnit: a count said with what it counts is read as the count. Before the number
// grammar had unit words, "Four years." was forced into "forty eight" (screening-forklift-supervisor's
// years_supervising in the turn suite).
func TestCountWithItsUnit(t *testing.T) {
	needFlite(t)
	r := mustRecognizer(t)
	cases := []struct{ text, want string }{
		{"Four years.", "4"},
		{"About ten inches.", "10"},
		{"Two kids.", "2"},
		{"Six months.", "6"},
	}
	for _, c := range cases {
		for _, v := range callerVoices {
			ans, err := r.RecognizeSlot(context.Background(), flite24k(t, v, c.text), 24000, Slot{Kind: KindNumber})
			if err != nil {
				t.Fatal(err)
			}
			if !ans.OK || ans.Value.Text != c.want {
				t.Errorf("%s %q heard %q → %q (ok %v), want %s", v, c.text, ans.Result.Text, ans.Value.Text, ans.OK, c.want)
			}
		}
	}
}

// TestSubjectSaidTheCallersWay: "our account is …" and "my customer account number is …" before a
// code are the carrier, not letters of the code: the code grammar read them as R M S, N R A Z and
// the like before it, in every caller voice.
func TestSubjectSaidTheCallersWay(t *testing.T) {
	needFlite(t)
	r := mustRecognizer(t)
	slot := Slot{Kind: KindIdentifier, Subject: "customer account", Single: true}
	for _, voice := range callerVoices {
		for _, said := range []string{"Our account is H P R G, oh four one three.", "My customer account number is H P R G, zero four one three."} {
			ans, err := r.RecognizeSlot(context.Background(), flite24k(t, voice, said), 24000, slot)
			if err != nil {
				t.Fatal(err)
			}
			// HPRG0413, or a letter or digit misheard: not the carrier made into letters.
			if !ans.OK || len(ans.Value.Text) > 9 {
				t.Errorf("%s: %q read as %q (%s)", voice, said, ans.Value.Text, ans.Text)
			}
		}
	}
}

// TestSubjectContracted: "Account's eight eight four one, …" starts with the subject and "is" run
// together; without the contraction among the carriers the code grammars made "account's eight
// eight" into "account number is three r one" (rms) or dropped the eights (kal16), in every voice.
func TestSubjectContracted(t *testing.T) {
	needFlite(t)
	r := mustRecognizer(t)
	slot := Slot{Kind: KindIdentifier, Subject: "account number", Contractions: []string{"account's", "number's"}, Alternatives: 3}
	readInEveryVoice(t, r, slot, "Account's eight eight four one, oh three nine two, five seven.", "8841039257")
	if g := slot.Grammar().JSGF; !strings.Contains(g, "| account's |") || !strings.Contains(g, "| their number's |") {
		t.Errorf("the contractions are not carriers:\n%s", g)
	}
}

// TestDigitsReadingKeepsItsDigits: once a code's digits-only reading fits the audio clearly better
// than the letters-and-digits one, the confusion lattice (which weighs letters and digits alike)
// may not put a letter back: "eight eight four one" was read 8H41… (rms) and 8841L39Q57 (slt)
// although the digits-only reading had been taken.
func TestDigitsReadingKeepsItsDigits(t *testing.T) {
	slot := Slot{Kind: KindIdentifier, Subject: "account number", Alternatives: 3}
	nbest := []Hypothesis{{Text: "eight h four one", Score: -7900}, {Text: "eight eight four one", Score: -7941}, {Text: "h h four one", Score: -8000}}
	res := Result{Text: "eight h four one", Score: -10600, NBest: nbest}
	alt := Result{Text: "eight eight four one", Score: -7941, NBest: nbest}
	ans := slot.Answer(res, &alt)
	if ans.Value.Text != "8841" {
		t.Errorf("read %q, want the digits-only reading 8841", ans.Value.Text)
	}
	if len(ans.Alternatives) == 0 || ans.Alternatives[0].Text != "8H41" {
		t.Errorf("alternatives %v: the lattice's best reading should be the first retry", ans.Alternatives)
	}
	// A lattice path of digits only still replaces the first pass's.
	nbest[0] = Hypothesis{Text: "eight eight four four", Score: -7800}
	if ans := slot.Answer(res, &alt); ans.Value.Text != "8844" {
		t.Errorf("read %q, want the lattice's all-digit best path 8844", ans.Value.Text)
	}
	// Without the digits-only reading taken, the lattice's best path stands, letters and all.
	far := Result{Text: "eight eight four one", Score: -10000, NBest: nbest}
	nbest[0] = Hypothesis{Text: "eight h four one", Score: -7900}
	if ans := slot.Answer(res, &far); ans.Value.Text != "8H41" {
		t.Errorf("read %q, want the lattice's best path 8H41", ans.Value.Text)
	}

	needFlite(t)
	r := mustRecognizer(t)
	readInEveryVoice(t, r, slot, "Eight eight four one, oh three nine two, five seven.", "8841039257")
}

// TestLetteredCodeKeepsItsLetters: "It's P A, two zero, four four seven one eight" is heard by the
// digits-only grammar as "it's the eight two zero …", which fits the audio better by more than
// the margin in every caller voice; a letters-and-digits reading that begins with two letters
// before its digits is a lettered code's, and the digits-only reading is not taken over it.
func TestLetteredCodeKeepsItsLetters(t *testing.T) {
	slot := Slot{Kind: KindIdentifier, Subject: "policy number"}
	res := Result{Text: "it's p a two zero four four seven one eight", Score: -9275}
	alt := Result{Text: "it's the eight two zero four four seven one eight", Score: -8024}
	if ans := slot.Answer(res, &alt); ans.Value.Text != "PA2044718" {
		t.Errorf("read %q, want the lettered reading PA2044718", ans.Value.Text)
	}
	// One letter before the digits is no lettered code's shape ("T4917" for "two two four nine one
	// seven"): the digits-only reading is taken by its margin.
	res = Result{Text: "t four nine one seven", Score: -6412}
	alt = Result{Text: "two two four nine one seven", Score: -5208}
	if ans := slot.Answer(res, &alt); ans.Value.Text != "224917" {
		t.Errorf("read %q, want the digits-only reading 224917", ans.Value.Text)
	}
	// Nor are letters that are the grammar's words for "eight" ("account's h h four one …").
	res = Result{Text: "h h four one oh three nine two five seven", Score: -10600}
	alt = Result{Text: "eight eight four one oh three nine two five seven", Score: -7941}
	if ans := slot.Answer(res, &alt); ans.Value.Text != "8841039257" {
		t.Errorf("read %q, want the digits-only reading 8841039257", ans.Value.Text)
	}

	needFlite(t)
	r := mustRecognizer(t)
	const said = "It's P A, two zero, four four seven one eight."
	for _, voice := range callerVoices {
		ans, err := r.RecognizeSlot(context.Background(), flite24k(t, voice, said), 24000, slot)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(ans.Value.Text, "PA") {
			t.Errorf("%s: %q read as %q (%s), want the letters PA in it", voice, said, ans.Value.Text, ans.Text)
		}
	}
}

// A caller who fetches the card first ("Let me grab my card. Okay, P as in Paul, …") has the
// code read from after the fetching: the grammar's lead-ins hold it, where the fetching was read
// as letters and digits ("eleven a dash d mike r d l k eight p as in paul …", "one three").
func TestCodeReadAfterFetchingTheCard(t *testing.T) {
	needFlite(t)
	r := mustRecognizer(t)
	const said = "Let me grab my card. Okay, P as in Paul, A, then two zero, four four seven one eight."
	slot := Slot{Kind: KindIdentifier, Subject: "policy number"}
	clean := 0
	for _, voice := range callerVoices {
		ans, err := r.RecognizeSlot(context.Background(), flite24k(t, voice, said), 24000, slot)
		if err != nil {
			t.Fatal(err)
		}
		v := ans.Value.Text
		// The code is nine symbols; one more is a letter misheard, not the fetching.
		if strings.Contains(ans.Text, "grab my card") && strings.Contains(v, "4471") && len(v) <= 10 {
			clean++
		}
		t.Logf("%s: read %q (%s)", voice, v, ans.Text)
	}
	if clean < 3 {
		t.Errorf("%d of %d voices read the code alone, want 3 at least", clean, len(callerVoices))
	}
}

// TestCodeReadWithTheCardInHand: a caller who has fetched what the code is written on says so
// before reading it ("Got the bottle. Number's six oh two three …"); the code grammar forced that
// into letters and digits ("2209R60231148" in the turn suite; here, without the lead-ins, 5 of
// these 12 readings were the code alone).
func TestCodeReadWithTheCardInHand(t *testing.T) {
	needFlite(t)
	r := mustRecognizer(t)
	// No "number's" among the subject's contractions: "the number" is said of any code.
	slot := Slot{Kind: KindIdentifier, Subject: "prescription"}
	alone, n := 0, 0
	for _, said := range []string{
		"Got the bottle. Number's six oh two three, one one four eight.",
		"Okay, found it. It's six oh two three, one one four eight.",
		"Here it is. Six oh two three, one one four eight.",
	} {
		for _, voice := range callerVoices {
			ans, err := r.RecognizeSlot(context.Background(), flite24k(t, voice, said), 24000, slot)
			if err != nil {
				t.Fatal(err)
			}
			n++
			if ans.Value.Text == "60231148" {
				alone++
			}
			t.Logf("%s, %q: read %q (%s)", voice, said, ans.Value.Text, ans.Text)
		}
	}
	if alone < 10 {
		t.Errorf("%d of %d readings are the code alone, want 10 at least", alone, n)
	}
}

// readInEveryVoice checks that what each caller voice says is read as want.
func readInEveryVoice(t *testing.T, r *Recognizer, slot Slot, said, want string) {
	t.Helper()
	for _, voice := range callerVoices {
		ans, err := r.RecognizeSlot(context.Background(), flite24k(t, voice, said), 24000, slot)
		if err != nil {
			t.Fatal(err)
		}
		if !ans.OK || ans.Value.Text != want {
			t.Errorf("%s: %q read as %q (%s), want %s", voice, said, ans.Value.Text, ans.Text, want)
		}
	}
}

// TestAndThenIsNoLetter: "… K Q two zero, and then four" ends in the digit four; the code grammar
// forced "and" into the letter N or M before it in every caller voice.
func TestAndThenIsNoLetter(t *testing.T) {
	needFlite(t)
	r := mustRecognizer(t)
	slot := Slot{Kind: KindIdentifier, Subject: "tracking number", Single: true}
	const said = "S L P, seven seven eight one, then K Q two zero, and then four."
	forced := 0
	for _, voice := range callerVoices {
		ans, err := r.RecognizeSlot(context.Background(), flite24k(t, voice, said), 24000, slot)
		if err != nil {
			t.Fatal(err)
		}
		if v := ans.Value.Text; strings.HasSuffix(v, "N4") || strings.HasSuffix(v, "M4") {
			forced++
			t.Logf("%s: %q read as %q (%s)", voice, said, v, ans.Text)
		}
	}
	if forced > 1 {
		t.Errorf("\"and then\" read as a letter in %d of %d voices", forced, len(callerVoices))
	}
}

// TestRepairCarrier: a caller repairing a code read back to them says more than the code ("Um,
// actually, that's wrong. I said …", "Sorry, no, my policy number is …, not that"); the code
// grammar takes those words as the carrier, so what it reads is about as long as the code. It
// made them into letters and digits before (AXI7CTR20931A for CTR20931).
func TestRepairCarrier(t *testing.T) {
	needFlite(t)
	r := mustRecognizer(t)
	for _, c := range []struct{ said, code string }{
		{"Um, actually, that's wrong. I said C T R, two oh nine three one.", "CTR20931"},
		{"Sorry, no, my policy number is H O three, seven seven three one, oh five eight six, not that.", "HO377310586"},
	} {
		slot := Slot{Kind: KindIdentifier, Subject: "policy number", Single: true}
		off := 0
		for _, voice := range callerVoices {
			ans, err := r.RecognizeSlot(context.Background(), flite24k(t, voice, c.said), 24000, slot)
			if err != nil {
				t.Fatal(err)
			}
			if d := len(ans.Value.Text) - len(c.code); !ans.OK || d > 1 || d < -1 {
				off++
				t.Logf("%s: %q read as %q (%s)", voice, c.said, ans.Value.Text, ans.Text)
			}
		}
		if off > 1 {
			t.Errorf("%q: the reading is not the code's length in %d of %d voices", c.said, off, len(callerVoices))
		}
	}
}

// TestSeveralChoices: a Several slot takes every choice said, in order, each once, a plural or
// possessive for its choice, none refused by the word before it; its grammar lets "or" and the
// context words stand between choices.
func TestSeveralChoices(t *testing.T) {
	days := []string{"monday", "tuesday", "thursday", "tuesdays", "thursdays"}
	for said, want := range map[string]string{
		"only tuesdays or thursdays i'm afraid":  "tuesday, thursday",
		"tuesday's or thursday's please":         "tuesday, thursday",
		"thursday or tuesday or thursday again":  "thursday, tuesday",
		"any day but not monday tuesday is best": "tuesday",
		"let me check my calendar":               "",
	} {
		v, ok := (Slot{Kind: KindChoiceInContext, Choices: days, Several: true}).Parse(said)
		if got := map[bool]string{true: v.Text}[ok]; got != want {
			t.Errorf("%q: %q (%v), want %q", said, v.Text, ok, want)
		}
	}
	multi := MatchChoices(strings.Fields("read and write and no preference"), []string{"read", "read and write", "no preference"})
	if !slices.Equal(multi, []string{"read and write", "no preference"}) {
		t.Errorf("the longest choice at each word: %v", multi)
	}
	g := (Slot{Kind: KindChoiceInContext, Choices: days, Several: true}).Grammar().JSGF
	for _, want := range []string{"<c>* <ch> (<c>* <ch>)* <c>*", "| or;"} {
		if !strings.Contains(g, want) {
			t.Errorf("grammar lacks %q:\n%s", want, g)
		}
	}
}
