package canon

import (
	"strconv"
	"strings"
)

// quantityWords may surround a dictated quantity without changing it: hedges ("about", "roughly"),
// fillers, currencies, percent, and the units a caller names ("three weeks", "fifty-seven
// degrees", "four payments").
var quantityWords = map[string]bool{
	// hedges
	"about": true, "around": true, "approximately": true, "approx": true, "roughly": true, "like": true,
	"maybe": true, "say": true, "circa": true, "ca": true, "some": true, "nearly": true, "almost": true,
	"~": true, "just": true, "under": true, "over": true, "estimated": true, "est": true, "probably": true,
	"give": true, "take": true, "ish": true, "something": true, "ballpark": true, "more": true, "less": true,
	"exactly": true, "precisely": true, "only": true, "total": true, "altogether": true, "in": true,
	"guess": true, "think": true, "i'd": true, "i": true, "believe": true,
	// fillers
	"a": true, "an": true, "the": true, "it's": true, "its": true, "it": true, "is": true, "was": true,
	"that's": true, "that": true, "uh": true, "um": true, "er": true, "erm": true, "so": true, "well": true,
	"yeah": true, "yes": true, "okay": true, "ok": true, "be": true, "would": true, "of": true, "for": true,
	"each": true, "per": true, "and": true, "sure": true, "um,": true,
	// currencies and percent
	"$": true, "€": true, "£": true, "usd": true, "eur": true, "gbp": true, "dollars": true, "dollar": true,
	"bucks": true, "buck": true, "euros": true, "euro": true, "pounds": true, "%": true, "percent": true,
	"pct": true, "cent": true, "cents": true, "plus": true,
	// units
	"month": true, "months": true, "monthly": true, "week": true, "weeks": true, "weekly": true, "year": true,
	"years": true, "yearly": true, "annually": true, "annual": true, "day": true, "days": true, "daily": true,
	"hour": true, "hours": true, "hr": true, "hrs": true, "minute": true, "minutes": true, "min": true,
	"mins": true, "night": true, "nights": true, "mile": true, "miles": true, "degree": true, "degrees": true,
	"deg": true, "°": true, "fahrenheit": true, "celsius": true, "unit": true, "units": true, "case": true,
	"cases": true, "box": true, "boxes": true, "item": true, "items": true, "piece": true, "pieces": true,
	"pack": true, "packs": true, "payment": true, "payments": true, "installment": true, "installments": true,
	"instalment": true, "instalments": true, "paycheck": true, "paychecks": true, "pay": true, "period": true,
	"people": true, "person": true, "persons": true, "inch": true, "inches": true, "foot": true, "feet": true,
	"ft": true, "lb": true, "lbs": true, "kg": true, "mg": true, "old": true,
}

// zeroWords say "nothing" for an amount: a fee that is waived is 0.
var zeroWords = map[string]bool{"free": true, "waived": true, "nothing": true, "none": true, "nil": true}

// scaleAfter multiplies a written number: "185 thousand", "1.5 million", "two grand".
var scaleAfter = map[string]float64{
	"hundred": 100, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "grand": 1e3, "dozen": 12,
}

// suffixScale multiplies a number written with a suffix: "185k", "1.2m", "20ish".
var suffixScale = map[string]float64{"k": 1e3, "m": 1e6, "mm": 1e6, "bn": 1e9, "ish": 1}

type quantity struct {
	val        float64
	start, end int // token span [start, end)
	cents      bool
}

// parseNumeral reads a written number, thousands commas allowed.
func parseNumeral(w string) (float64, bool) {
	if strings.IndexByte(w, ',') >= 0 {
		w = strings.ReplaceAll(w, ",", "")
	}
	f, err := strconv.ParseFloat(w, 64)
	return f, err == nil
}

// readQuantity reads one quantity starting at toks[i] of digitized tokens: a written number
// ("1,284.17", "12", "0.5"), a decimal said with "point", a suffix ("185k"), then a scale word
// ("185 thousand"), a fraction ("and a half") and "cents".
func readQuantity(toks []string, i int) (quantity, bool) {
	w := toks[i]
	q := quantity{start: i}
	j := i + 1
	switch {
	case isNumeral(w):
		q.val, _ = parseNumeral(w)
		if j+1 < len(toks) && (toks[j] == "point" || toks[j] == ".") && IsDigits(toks[j+1]) && strings.IndexByte(w, '.') < 0 {
			q.val, _ = parseNumeral(w + "." + toks[j+1])
			j += 2
		}
	case w == "point" && j < len(toks) && IsDigits(toks[j]):
		q.val, _ = parseNumeral("0." + toks[j])
		j++
	default:
		k := len(w)
		for k > 0 && (w[k-1] < '0' || w[k-1] > '9') {
			k--
		}
		m, ok := suffixScale[w[k:]]
		if k == 0 || !ok || !isNumeral(w[:k]) {
			return q, false
		}
		q.val, _ = parseNumeral(w[:k])
		q.val *= m
	}
	// Scale words after a written number, each larger than the one before: "5 hundred thousand".
	prev := 0.0
	for j < len(toks) {
		m, ok := scaleAfter[toks[j]]
		if !ok || m <= prev || toks[j] == "hundred" && prev > 0 {
			break
		}
		q.val *= m
		prev = m
		j++
	}
	// "and a half", "and a quarter", "and three quarters".
	if j+2 < len(toks) && toks[j] == "and" {
		switch n, f := toks[j+1], toks[j+2]; {
		case (n == "a" || n == "1") && f == "half":
			q.val += 0.5
			j += 3
		case (n == "a" || n == "1") && f == "quarter":
			q.val += 0.25
			j += 3
		case n == "3" && f == "quarters":
			q.val += 0.75
			j += 3
		}
	}
	if j < len(toks) && (toks[j] == "cents" || toks[j] == "cent") {
		q.cents = true
	}
	q.end = j
	return q, true
}

// negated reports whether the quantity starting at toks[i] is signed negative: "minus fifty",
// "negative 50", "-50" (a dash only before the first number of the text).
func negated(toks []string, i int, first bool) bool {
	if i == 0 {
		return false
	}
	switch toks[i-1] {
	case "minus", "negative":
		return true
	case "-":
		return first && (i == 1 || !isNumeral(toks[i-2]))
	}
	return false
}

// plainNumber is the fast path: "612.40", "-50", "1,284".
func plainNumber(s string) (float64, bool) {
	t := s
	if len(t) > 0 && (t[0] == '-' || t[0] == '+') {
		t = t[1:]
	}
	if !isNumeral(t) {
		return 0, false
	}
	f, ok := parseNumeral(t)
	if s[0] == '-' {
		f = -f
	}
	return f, ok
}

// Number reads a dictated quantity, the whole text being that one quantity: "about 20",
// "twenty", "a hundred", "twelve-hundred", "minus fifty", "$1,284.17", "one thousand two hundred
// eighty four dollars and seventeen cents", "12.5%", "twelve and a half percent", "two point
// five", "185k", "two grand", "three weeks". Hedges, currencies and units are ignored; two
// quantities ("twenty or thirty") or a word that is none of these ("a few") is no reading.
func Number(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	if f, ok := plainNumber(s); ok {
		return f, true
	}
	toks := digitize(tokens(s), nil)
	var qs []quantity
	zero := false
	for i := 0; i < len(toks); i++ {
		w := toks[i]
		if q, ok := readQuantity(toks, i); ok {
			if negated(toks, q.start, len(qs) == 0) {
				q.val = -q.val
			}
			qs = append(qs, q)
			i = q.end - 1
			continue
		}
		switch {
		case quantityWords[w], w == "minus", w == "negative":
		case w == "or" && i+1 < len(toks) && (toks[i+1] == "so" || toks[i+1] == "take"):
		case zeroWords[w]:
			zero = true
		case w == "no" && i+1 < len(toks) && (toks[i+1] == "charge" || toks[i+1] == "fee" || toks[i+1] == "cost"):
			zero = true
			i++
		case len(w) == 1 && !isLetters(w) && !IsDigits(w):
			// punctuation
		default:
			return 0, false
		}
	}
	return combine(qs, zero)
}

// combine reads the quantities of one dictated amount: one number, one number and its cents
// ("612 dollars and 40 cents"), or cents alone.
func combine(qs []quantity, zero bool) (float64, bool) {
	switch {
	case len(qs) == 0:
		return 0, zero
	case len(qs) == 1:
		if qs[0].cents {
			return qs[0].val / 100, true
		}
		return qs[0].val, true
	case len(qs) == 2 && !qs[0].cents && qs[1].cents && qs[1].val < 100:
		c := qs[1].val / 100
		if qs[0].val < 0 {
			c = -c
		}
		return qs[0].val + c, true
	}
	return 0, false
}

// FindNumbers returns every quantity said in a free text, in order, with an amount's cents
// joined to it ("two hundred twenty-five dollars and fifty cents" is 225.5).
func FindNumbers(s string) []float64 {
	toks := digitize(tokens(s), nil)
	var out []float64
	var prev *quantity
	for i := 0; i < len(toks); i++ {
		q, ok := readQuantity(toks, i)
		if !ok {
			continue
		}
		if toks[i] != "-" && i > 0 && (toks[i-1] == "minus" || toks[i-1] == "negative") {
			q.val = -q.val
		}
		if q.cents && prev != nil && !prev.cents && q.val < 100 && onlyAmountWords(toks[prev.end:q.start]) {
			out[len(out)-1] += q.val / 100
		} else if q.cents {
			out = append(out, q.val/100)
		} else {
			out = append(out, q.val)
		}
		qq := q
		prev = &qq
		i = q.end - 1
	}
	return out
}

func onlyAmountWords(ws []string) bool {
	for _, w := range ws {
		if w != "and" && w != "dollars" && w != "dollar" && w != "bucks" && w != "," {
			return false
		}
	}
	return true
}

// FindNumber returns the first quantity said in a free text ("their estimate was six hundred
// twelve dollars and forty cents" is 612.4).
func FindNumber(s string) (float64, bool) {
	ns := FindNumbers(s)
	if len(ns) == 0 {
		return 0, false
	}
	return ns[0], true
}
