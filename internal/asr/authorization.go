package asr

import (
	"context"
	"math"
	"strings"
)

// Authorization is what a caller's answer to an approval request decides.
type Authorization string

// Authorizations. Only Approve lets the environment mint an approval token; anything the
// classifier cannot read as a clear approval is Decline or Unclear, never Approve.
const (
	Approve Authorization = "approve"
	Decline Authorization = "decline"
	Unclear Authorization = "unclear"
)

// AuthorizationReading is the recognizer's reading of one answer to an approval request.
type AuthorizationReading struct {
	Decision Authorization
	// Words is the transcript the decision was read from.
	Words string
	// Confidence is the recognizer's posterior probability, in [0, 1], of the deciding phrase's
	// words (the lowest of them); of the whole transcript when unclear.
	Confidence float64
	// Phrase is the grammar phrase that decided (the first refusing phrase of a decline, the
	// first approving phrase of an approval); empty when unclear.
	Phrase string
}

// Phrases of the authorization grammar, lower case, as the recognizer spells words. A refusal
// anywhere in the answer outweighs any approval in it ("yes … actually, wait, no"): being wrong
// the other way would let an agent act on what the caller refused.
var (
	approvePhrases = []string{
		"yes", "yeah", "yep", "yup", "sure", "okay", "ok", "go ahead", "that's right", "that is right",
		"sounds right", "sounds good", "sounds great", "correct", "please do", "do it", "approve", "approved",
		"my approval", "my permission", "proceed", "that works", "fine", "perfect", "absolutely",
	}
	declinePhrases = []string{
		"no", "nope", "not", "don't", "do not", "wait", "hold on", "hold off", "hang on", "not yet", "that's wrong",
		"that is wrong", "wrong", "stop", "cancel that", "scratch that", "never mind", "take it back", "withdraw",
		"withdrawing", "rather not", "won't", "isn't", "incorrect", "mistake", "let me check",
		// What PocketSphinx makes of refusals in the Flite voices through Opus (make
		// approval-confusion): "no" as "know", "no, don't" as "nailed down", "don't" as "down",
		// "hold off/on" as "sold off"/"held on", "scratch that" as "scratch at", "cancel" itself.
		"know", "nailed", "down", "sold off", "held on", "held off", "scratch", "cancel",
	}
	// leadingNo is how "no" at the start of an answer comes out ("now leave it", "and now I think",
	// "h m m now please"): "now" among the first words is read as a refusal; an approval that starts
	// with "now" is rare, and reading one as a refusal only makes the agent ask again.
	leadingNo = 3
)

// ClassifyAuthorization reads words (a transcript) as an answer to an approval request: Decline
// when any refusing phrase occurs, else Approve when an approving one does, else Unclear. It
// returns the deciding phrase.
func ClassifyAuthorization(words string) (Authorization, string) {
	w := " " + strings.Join(strings.Fields(strings.NewReplacer(",", " ", ".", " ", "?", " ", "!", " ", ";", " ", "—", " ").
		Replace(strings.ToLower(words))), " ") + " "
	if p := firstPhrase(w, declinePhrases); p != "" {
		return Decline, p
	}
	for i, f := range strings.Fields(w) {
		if i >= leadingNo {
			break
		}
		if f == "now" {
			return Decline, "now"
		}
	}
	if p := firstPhrase(w, approvePhrases); p != "" {
		return Approve, p
	}
	return Unclear, ""
}

// firstPhrase returns the phrase of list that occurs earliest in w (" word word "), as whole words.
func firstPhrase(w string, list []string) string {
	best, at := "", len(w)
	for _, p := range list {
		if i := strings.Index(w, " "+p+" "); i >= 0 && (i < at || i == at && len(p) > len(best)) {
			best, at = p, i
		}
	}
	return best
}

// RecognizeAuthorization decodes an answer to an approval request (mono PCM16 at rate Hz) with
// the open vocabulary and reads it with the authorization grammar (ClassifyAuthorization). The
// open vocabulary is used rather than a JSGF grammar of the phrases because a grammar forces any
// answer onto its nearest phrase: "no, the date is wrong" can come out as an approval.
func (r *Recognizer) RecognizeAuthorization(ctx context.Context, pcm []int16, rate int) (AuthorizationReading, error) {
	res, err := r.recognize(ctx, pcm, rate, nil, 0, true)
	if err != nil {
		return AuthorizationReading{}, err
	}
	d, p := ClassifyAuthorization(res.Text)
	conf := res.Posterior
	if p != "" {
		conf = phrasePosterior(res.Words, strings.Fields(p))
	}
	return AuthorizationReading{Decision: d, Words: res.Text, Phrase: p, Confidence: math.Round(conf*1000) / 1000}, nil
}

// phrasePosterior is the lowest word posterior of the first occurrence of phrase in words.
func phrasePosterior(words []Word, phrase []string) float64 {
	for i := 0; i+len(phrase) <= len(words); i++ {
		match := true
		for j, p := range phrase {
			if words[i+j].Text != p {
				match = false
				break
			}
		}
		if match {
			low := 1.0
			for j := range phrase {
				low = min(low, words[i+j].Posterior)
			}
			return low
		}
	}
	return 0
}
