package canon

import "strings"

// Phone returns the digits of a phone number, spoken digits included ("five oh three, double
// five five"), with a leading North American country code 1 removed.
func Phone(s string) string {
	d := Digits(s)
	if len(d) == 11 && d[0] == '1' {
		d = d[1:]
	}
	return d
}

// streetWords maps street types, unit designators and place words, written out or abbreviated, to
// their USPS abbreviations (Publication 28), so either form compares equal.
var streetWords = map[string]string{
	"street": "st", "str": "st", "st": "st", "avenue": "ave", "av": "ave", "ave": "ave", "road": "rd", "rd": "rd",
	"boulevard": "blvd", "blvd": "blvd", "drive": "dr", "dr": "dr", "lane": "ln", "ln": "ln", "court": "ct",
	"ct": "ct", "place": "pl", "pl": "pl", "terrace": "ter", "ter": "ter", "highway": "hwy", "hwy": "hwy",
	"parkway": "pkwy", "pkwy": "pkwy", "circle": "cir", "cir": "cir", "square": "sq", "sq": "sq",
	"trail": "trl", "trl": "trl", "way": "way", "wy": "way", "expressway": "expy", "expy": "expy",
	"freeway": "fwy", "fwy": "fwy", "alley": "aly", "aly": "aly", "crescent": "cres", "cres": "cres",
	"center": "ctr", "centre": "ctr", "ctr": "ctr", "plaza": "plz", "plz": "plz", "heights": "hts",
	"hts": "hts", "junction": "jct", "jct": "jct", "crossing": "xing", "xing": "xing", "creek": "crk",
	"crk": "crk", "ridge": "rdg", "rdg": "rdg", "turnpike": "tpke", "tpke": "tpke", "route": "rte", "rte": "rte",
	"causeway": "cswy", "cswy": "cswy", "grove": "grv", "grv": "grv", "harbor": "hbr", "hbr": "hbr",
	"island": "is", "landing": "lndg", "lndg": "lndg", "meadows": "mdws", "mdws": "mdws", "valley": "vly",
	"vly": "vly", "village": "vlg", "vlg": "vlg", "station": "sta", "sta": "sta", "point": "pt", "pt": "pt",
	"mount": "mt", "mt": "mt", "saint": "st", "fort": "ft", "ft": "ft",
	"apartment": "unit", "apt": "unit", "suite": "unit", "ste": "unit", "#": "unit", "number": "unit",
	"no": "unit", "flat": "unit", "unit": "unit", "room": "rm", "rm": "rm", "floor": "fl", "fl": "fl",
	"building": "bldg", "bldg": "bldg",
	"north": "n", "south": "s", "east": "e", "west": "w", "northeast": "ne", "northwest": "nw",
	"southeast": "se", "southwest": "sw",
}

// stateNames maps US state and territory names to their USPS codes; codes map to themselves.
var stateNames = map[string]string{
	"alabama": "al", "alaska": "ak", "arizona": "az", "arkansas": "ar", "california": "ca", "colorado": "co",
	"connecticut": "ct", "delaware": "de", "florida": "fl", "georgia": "ga", "hawaii": "hi", "idaho": "id",
	"illinois": "il", "indiana": "in", "iowa": "ia", "kansas": "ks", "kentucky": "ky", "louisiana": "la",
	"maine": "me", "maryland": "md", "massachusetts": "ma", "michigan": "mi", "minnesota": "mn",
	"mississippi": "ms", "missouri": "mo", "montana": "mt", "nebraska": "ne", "nevada": "nv",
	"new hampshire": "nh", "new jersey": "nj", "new mexico": "nm", "new york": "ny", "north carolina": "nc",
	"north dakota": "nd", "ohio": "oh", "oklahoma": "ok", "oregon": "or", "pennsylvania": "pa",
	"rhode island": "ri", "south carolina": "sc", "south dakota": "sd", "tennessee": "tn", "texas": "tx",
	"utah": "ut", "vermont": "vt", "virginia": "va", "washington": "wa", "west virginia": "wv",
	"wisconsin": "wi", "wyoming": "wy", "district of columbia": "dc", "puerto rico": "pr", "guam": "gu",
}

// countryWords end an address without changing it.
var countryWords = map[string]bool{"usa": true, "us": true, "u.s.a": true, "united states": true, "united states of america": true}

// Address canonicalises a postal address: spoken numbers to digits, street types, unit
// designators and directionals to their USPS abbreviations (written out, abbreviated or dotted:
// "Southwest", "SW", "S.W." are all "sw"), state names to their codes ("Oregon" and "OR" are both
// "or"), punctuation dropped, and a unit's letter joined to its number ("Unit 4 B" and "Apt. 4b"
// are both "unit 4b"). A trailing country name is dropped.
func Address(s string) string {
	raw := tokens(s)
	// Dotted and spaced letters first: "s . w ." and "s w" are "sw", "p . o ." is "po".
	toks := make([]string, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		w := raw[i]
		if len(w) == 1 && isLetters(w) && i+1 < len(raw) && raw[i+1] == "." {
			run := w
			j := i + 2
			for j < len(raw) && len(raw[j]) == 1 && isLetters(raw[j]) {
				run += raw[j]
				j++
				if j < len(raw) && raw[j] == "." {
					j++
				}
			}
			if len(run) > 1 {
				toks = append(toks, run)
				i = j - 1
				continue
			}
		}
		// A state code before a ZIP is never the word "oh" (zero): "Columbus, OH 43215".
		if w == "oh" && i+1 < len(raw) && IsDigits(raw[i+1]) && len(raw[i+1]) == 5 && i > 0 && raw[i-1] == "," {
			toks = append(toks, "ohio")
			continue
		}
		toks = append(toks, w)
	}
	toks = digitize(toks, nil)
	out := make([]string, 0, len(toks))
	unitNumber := false // the last token written is a unit's number
	for i := 0; i < len(toks); i++ {
		w := strings.Trim(toks[i], ".,")
		if w == "" || w == "-" || w == "," || w == "." || w == "'" {
			continue
		}
		// Multi-word states and countries, before their words read as directionals.
		if name, n := longestName(toks, i); n > 0 {
			if countryWords[name] {
				i += n - 1
				continue
			}
			out = append(out, stateNames[name])
			unitNumber = false
			i += n - 1
			continue
		}
		if c, ok := stateNames[w]; ok {
			w = c
		} else if a, ok := streetWords[w]; ok {
			w = a
		}
		// Two compass points make one: "north east", "s w".
		if len(out) > 0 && (w == "n" || w == "s" || w == "e" || w == "w") {
			if p := out[len(out)-1]; (p == "n" || p == "s") && (w == "e" || w == "w") {
				out[len(out)-1] = p + w
				continue
			}
		}
		// A unit's letter joins its number ("unit 4 b"); elsewhere a single letter joins a number
		// unless it is a compass point ("2150 S Borland").
		if len(w) == 1 && isLetters(w) && len(out) > 0 && IsDigits(out[len(out)-1]) &&
			(unitNumber || (w != "n" && w != "s" && w != "e" && w != "w")) {
			out[len(out)-1] += w
			unitNumber = false
			continue
		}
		if w == "unit" && len(out) > 0 && out[len(out)-1] == "unit" {
			continue
		}
		unitNumber = IsDigits(w) && len(out) > 0 && out[len(out)-1] == "unit"
		out = append(out, w)
	}
	return strings.Join(out, " ")
}

// nameStarts are the first words of the multi-word names and of the country words.
var nameStarts = func() map[string]bool {
	m := map[string]bool{}
	for name := range stateNames {
		if first, _, multi := strings.Cut(name, " "); multi {
			m[first] = true
		}
	}
	for name := range countryWords {
		first, _, _ := strings.Cut(name, " ")
		m[first] = true
	}
	return m
}()

// longestName returns the longest multi-word state or country name starting at toks[i] and how
// many tokens it spans.
func longestName(toks []string, i int) (string, int) {
	if !nameStarts[toks[i]] {
		return "", 0
	}
	best, bestN := "", 0
	name := toks[i]
	for n := 2; n <= 4 && i+n-1 < len(toks); n++ {
		name += " " + toks[i+n-1]
		if _, ok := stateNames[name]; ok {
			best, bestN = name, n
		}
		if countryWords[name] {
			best, bestN = name, n
		}
	}
	if bestN == 0 && countryWords[toks[i]] && (i == len(toks)-1 || toks[i] == "usa") {
		return toks[i], 1
	}
	return best, bestN
}

// AddressLeads returns the keys (Address) of a written address and of its leading parts, cut at
// each comma after the first part, shortest first: "1418 Alder Court, Unit 3B, Eugene, OR 97402"
// gives the keys of "1418 Alder Court", "1418 Alder Court, Unit 3B", "…, Eugene" and the whole.
// A caller verifying an address says its street line, often the unit and city, and seldom the
// state and ZIP; a record is matched on what was said, from the street line on.
func AddressLeads(written string) []string {
	parts := strings.Split(written, ",")
	keys := make([]string, 0, len(parts))
	for n := 1; n <= len(parts); n++ {
		k := Address(strings.Join(parts[:n], ","))
		if k != "" && (len(keys) == 0 || keys[len(keys)-1] != k) {
			keys = append(keys, k)
		}
	}
	return keys
}
