package asr

import (
	"context"
	"strings"
)

// confusable lists, for each symbol of a spoken code, the symbols the recognizer mistakes it for
// most: the letters that rhyme (the E-set, "m"/"n", "f"/"s"), the letters that sound like digits
// ("a"/"eight", "q"/"two", "l"/"oh") and the digits that run together ("four four" heard as
// "five four").
var confusable = map[string][]string{
	"zero": {"oh"}, "oh": {"l", "o", "zero"}, "one": {"n"}, "two": {"q", "u", "t"}, "three": {"e"},
	"four": {"five"}, "five": {"four", "i"}, "six": {"s"}, "seven": {"s"}, "eight": {"a", "h"}, "nine": {"n", "i"},
	"a": {"eight", "j"}, "b": {"p", "d", "v", "e"}, "c": {"z", "t"}, "d": {"b", "t", "e"}, "e": {"b", "d", "three"},
	"f": {"s", "x"}, "g": {"j", "z"}, "h": {"eight"}, "i": {"y", "five"}, "j": {"g", "a"}, "k": {"a", "j"},
	"l": {"oh", "o"}, "m": {"n"}, "n": {"m"}, "o": {"oh"}, "p": {"b", "t", "d", "e"}, "q": {"two", "u"},
	"r": {"are"}, "s": {"f", "x"}, "t": {"two", "p", "d"}, "u": {"two", "q"}, "v": {"b", "z"}, "w": {"double"},
	"x": {"s"}, "y": {"i"}, "z": {"g", "v"},
}

// confusionGrammar is a grammar of the readings of a code that differ from hyp in likely
// confusions, one symbol at a time: decoding with it and taking the n-best of its small lattice
// ranks those readings by how well they fit the audio, at a fraction of the cost of an n-best
// search over the code grammar itself. Nil when hyp holds no symbol.
func confusionGrammar(hyp string) *Grammar {
	var slots []string
	syms := 0
	for _, w := range strings.Fields(hyp) {
		alts, ok := confusable[w]
		if !ok {
			slots = append(slots, "["+w+"]") // a carrier word, or one the caller may not have said
			continue
		}
		syms++
		var known []string
		for _, a := range alts {
			if a != "are" && a != "double" {
				known = append(known, a)
			}
		}
		slots = append(slots, "("+strings.Join(append([]string{w}, known...), " | ")+")")
	}
	if syms == 0 {
		return nil
	}
	return &Grammar{Name: "confusions", JSGF: "#JSGF V1.0;\ngrammar confusions;\npublic <utt> = [<pre>] " + strings.Join(slots, " ") +
		" [<post>];\n<pre> = it's | it is | sure | okay | yes | um | uh | that's | that is;\n<post> = thanks | thank you | please;\n"}
}

// alternativeReadings decodes the turn once more with the confusion grammar of its best reading
// and returns up to n distinct readings, best first.
func (r *Recognizer) alternativeReadings(ctx context.Context, pcm []int16, rate int, hyp string, n int) []Hypothesis {
	g := confusionGrammar(hyp)
	if g == nil {
		return nil
	}
	res, err := r.recognize(ctx, pcm, rate, g, n, false)
	if err != nil {
		return nil
	}
	return res.NBest
}
