package phonetic

import (
	"slices"
	"strings"
)

// dm is the state of one Double Metaphone encoding.
type dm struct {
	w             []rune // the word, upper case, padded with spaces
	length, last  int
	primary, alt  strings.Builder
	slavoGermanic bool
	maxLen        int
}

// DoubleMetaphoneCodes returns the primary and alternate Double Metaphone codes of one word (at
// most four characters each; "0" stands for th), after Lawrence Philips (2000).
func DoubleMetaphoneCodes(word string) (primary, alternate string) {
	w := []rune(strings.ToUpper(word))
	if len(w) == 0 {
		return "", ""
	}
	d := &dm{w: append(w, []rune("     ")...), length: len(w), last: len(w) - 1, maxLen: 4}
	d.slavoGermanic = strings.ContainsAny(word, "WKwk") || strings.Contains(strings.ToUpper(word), "CZ") || strings.Contains(strings.ToUpper(word), "WITZ")
	d.encode()
	p, a := d.primary.String(), d.alt.String()
	if len(p) > d.maxLen {
		p = p[:d.maxLen]
	}
	if len(a) > d.maxLen {
		a = a[:d.maxLen]
	}
	return p, a
}

func (d *dm) at(i int) rune {
	if i < 0 || i >= len(d.w) {
		return 0
	}
	return d.w[i]
}

func (d *dm) add(p string, a ...string) {
	d.primary.WriteString(p)
	if len(a) > 0 {
		d.alt.WriteString(a[0])
	} else {
		d.alt.WriteString(p)
	}
}

// is reports whether the n letters from start are one of opts.
func (d *dm) is(start, n int, opts ...string) bool {
	if start < 0 || start+n > len(d.w) {
		return false
	}
	s := string(d.w[start : start+n])
	for _, o := range opts {
		if s == o {
			return true
		}
	}
	return false
}

func (d *dm) vowel(i int) bool {
	switch d.at(i) {
	case 'A', 'E', 'I', 'O', 'U', 'Y':
		return true
	}
	return false
}

func (d *dm) encode() {
	cur := 0
	if d.is(0, 2, "GN", "KN", "PN", "WR", "PS") {
		cur = 1
	}
	if d.at(0) == 'X' {
		d.add("S")
		cur = 1
	}
	for (d.primary.Len() < d.maxLen || d.alt.Len() < d.maxLen) && cur < d.length {
		switch c := d.at(cur); c {
		case 'A', 'E', 'I', 'O', 'U', 'Y':
			if cur == 0 {
				d.add("A")
			}
			cur++
		case 'B':
			d.add("P")
			cur += d.skip(cur, 'B')
		case 'Ç':
			d.add("S")
			cur++
		case 'C':
			cur = d.c(cur)
		case 'D':
			switch {
			case d.is(cur, 2, "DG"):
				if d.is(cur+2, 1, "I", "E", "Y") {
					d.add("J")
					cur += 3
				} else {
					d.add("TK")
					cur += 2
				}
			case d.is(cur, 2, "DT", "DD"):
				d.add("T")
				cur += 2
			default:
				d.add("T")
				cur++
			}
		case 'F':
			d.add("F")
			cur += d.skip(cur, 'F')
		case 'G':
			cur = d.g(cur)
		case 'H':
			if (cur == 0 || d.vowel(cur-1)) && d.vowel(cur+1) {
				d.add("H")
				cur += 2
			} else {
				cur++
			}
		case 'J':
			cur = d.j(cur)
		case 'K':
			d.add("K")
			cur += d.skip(cur, 'K')
		case 'L':
			if d.at(cur+1) == 'L' {
				if (cur == d.length-3 && d.is(cur-1, 4, "ILLO", "ILLA", "ALLE")) ||
					((d.is(d.last-1, 2, "AS", "OS") || d.is(d.last, 1, "A", "O")) && d.is(cur-1, 4, "ALLE")) {
					d.add("L", "") // Spanish -illo, -alle
				} else {
					d.add("L")
				}
				cur += 2
			} else {
				d.add("L")
				cur++
			}
		case 'M':
			d.add("M")
			if (d.is(cur-1, 3, "UMB") && (cur+1 == d.last || d.is(cur+2, 2, "ER"))) || d.at(cur+1) == 'M' {
				cur += 2
			} else {
				cur++
			}
		case 'N':
			d.add("N")
			cur += d.skip(cur, 'N')
		case 'Ñ':
			d.add("N")
			cur++
		case 'P':
			if d.at(cur+1) == 'H' {
				d.add("F")
				cur += 2
			} else {
				d.add("P")
				cur += d.skip(cur, 'P', 'B')
			}
		case 'Q':
			d.add("K")
			cur += d.skip(cur, 'Q')
		case 'R':
			if cur == d.last && !d.slavoGermanic && d.is(cur-2, 2, "IE") && !d.is(cur-4, 2, "ME", "MA") {
				d.add("", "R") // French final -ier
			} else {
				d.add("R")
			}
			cur += d.skip(cur, 'R')
		case 'S':
			cur = d.s(cur)
		case 'T':
			switch {
			case d.is(cur, 4, "TION"), d.is(cur, 3, "TIA", "TCH"):
				d.add("X")
				cur += 3
			case d.is(cur, 2, "TH") || d.is(cur, 3, "TTH"):
				if d.is(cur+2, 2, "OM", "AM") || d.is(0, 4, "VAN ", "VON ") || d.is(0, 3, "SCH") {
					d.add("T")
				} else {
					d.add("0", "T")
				}
				cur += 2
			default:
				d.add("T")
				cur += d.skip(cur, 'T', 'D')
			}
		case 'V':
			d.add("F")
			cur += d.skip(cur, 'V')
		case 'W':
			if d.is(cur, 2, "WR") {
				d.add("R")
				cur += 2
				break
			}
			if cur == 0 && (d.vowel(cur+1) || d.is(cur, 2, "WH")) {
				if d.vowel(cur + 1) {
					d.add("A", "F")
				} else {
					d.add("A")
				}
			}
			if (cur == d.last && d.vowel(cur-1)) || d.is(cur-1, 5, "EWSKI", "EWSKY", "OWSKI", "OWSKY") || d.is(0, 3, "SCH") {
				d.add("", "F")
				cur++
				break
			}
			if d.is(cur, 4, "WICZ", "WITZ") {
				d.add("TS", "FX")
				cur += 4
				break
			}
			cur++
		case 'X':
			if !(cur == d.last && (d.is(cur-3, 3, "IAU", "EAU") || d.is(cur-2, 2, "AU", "OU"))) {
				d.add("KS")
			}
			cur += d.skip(cur, 'C', 'X')
		case 'Z':
			switch {
			case d.at(cur+1) == 'H':
				d.add("J")
				cur += 2
			default:
				if d.is(cur+1, 2, "ZO", "ZI", "ZA") || (d.slavoGermanic && cur > 0 && d.at(cur-1) != 'T') {
					d.add("S", "TS")
				} else {
					d.add("S")
				}
				cur += d.skip(cur, 'Z')
			}
		default:
			cur++
		}
	}
}

// skip is 2 when the next letter doubles the current one, else 1.
func (d *dm) skip(cur int, next ...rune) int {
	if slices.Contains(next, d.at(cur+1)) {
		return 2
	}
	return 1
}

func (d *dm) c(cur int) int {
	switch {
	case cur > 1 && !d.vowel(cur-2) && d.is(cur-1, 3, "ACH") && d.at(cur+2) != 'I' && (d.at(cur+2) != 'E' || d.is(cur-2, 6, "BACHER", "MACHER")):
		d.add("K") // Germanic -ach
		return cur + 2
	case cur == 0 && d.is(cur, 6, "CAESAR"):
		d.add("S")
		return cur + 2
	case d.is(cur, 4, "CHIA"):
		d.add("K")
		return cur + 2
	case d.is(cur, 2, "CH"):
		switch {
		case cur > 0 && d.is(cur, 4, "CHAE"):
			d.add("K", "X")
		case cur == 0 && (d.is(cur+1, 5, "HARAC", "HARIS") || d.is(cur+1, 3, "HOR", "HYM", "HIA", "HEM")) && !d.is(0, 5, "CHORE"):
			d.add("K") // Greek roots: chorus, chemistry
		case d.is(0, 4, "VAN ", "VON ") || d.is(0, 3, "SCH") || d.is(cur-2, 6, "ORCHES", "ARCHIT", "ORCHID") || d.is(cur+2, 1, "T", "S") ||
			((d.is(cur-1, 1, "A", "O", "U", "E") || cur == 0) && d.is(cur+2, 1, "L", "R", "N", "M", "B", "H", "F", "V", "W", " ")):
			d.add("K")
		case cur > 0:
			if d.is(0, 2, "MC") {
				d.add("K")
			} else {
				d.add("X", "K")
			}
		default:
			d.add("X")
		}
		return cur + 2
	case d.is(cur, 2, "CZ") && !d.is(cur-2, 4, "WICZ"):
		d.add("S", "X")
		return cur + 2
	case d.is(cur+1, 3, "CIA"):
		d.add("X")
		return cur + 3
	case d.is(cur, 2, "CC") && !(cur == 1 && d.at(0) == 'M'):
		if d.is(cur+2, 1, "I", "E", "H") && !d.is(cur+2, 2, "HU") {
			if (cur == 1 && d.at(cur-1) == 'A') || d.is(cur-1, 5, "UCCEE", "UCCES") {
				d.add("KS")
			} else {
				d.add("X")
			}
			return cur + 3
		}
		d.add("K")
		return cur + 2
	case d.is(cur, 2, "CK", "CG", "CQ"):
		d.add("K")
		return cur + 2
	case d.is(cur, 2, "CI", "CE", "CY"):
		if d.is(cur, 3, "CIO", "CIE", "CIA") {
			d.add("S", "X")
		} else {
			d.add("S")
		}
		return cur + 2
	}
	d.add("K")
	switch {
	case d.is(cur+1, 2, " C", " Q", " G"):
		return cur + 3
	case d.is(cur+1, 1, "C", "K", "Q") && !d.is(cur+1, 2, "CE", "CI"):
		return cur + 2
	}
	return cur + 1
}

func (d *dm) g(cur int) int {
	switch {
	case d.at(cur+1) == 'H':
		if cur > 0 && !d.vowel(cur-1) {
			d.add("K")
			return cur + 2
		}
		if cur == 0 {
			if d.at(cur+2) == 'I' {
				d.add("J")
			} else {
				d.add("K")
			}
			return cur + 2
		}
		if (cur > 1 && d.is(cur-2, 1, "B", "H", "D")) || (cur > 2 && d.is(cur-3, 1, "B", "H", "D")) || (cur > 3 && d.is(cur-4, 1, "B", "H")) {
			return cur + 2 // silent: bough, broughton
		}
		if cur > 2 && d.at(cur-1) == 'U' && d.is(cur-3, 1, "C", "G", "L", "R", "T") {
			d.add("F") // laugh, tough
		} else if cur > 0 && d.at(cur-1) != 'I' {
			d.add("K")
		}
		return cur + 2
	case d.at(cur+1) == 'N':
		switch {
		case cur == 1 && d.vowel(0) && !d.slavoGermanic:
			d.add("KN", "N")
		case !d.is(cur+2, 2, "EY") && d.at(cur+1) != 'Y' && !d.slavoGermanic:
			d.add("N", "KN")
		default:
			d.add("KN")
		}
		return cur + 2
	case d.is(cur+1, 2, "LI") && !d.slavoGermanic:
		d.add("KL", "L")
		return cur + 2
	case cur == 0 && (d.at(cur+1) == 'Y' || d.is(cur+1, 2, "ES", "EP", "EB", "EL", "EY", "IB", "IL", "IN", "IE", "EI", "ER")):
		d.add("K", "J")
		return cur + 2
	case (d.is(cur+1, 2, "ER") || d.at(cur+1) == 'Y') && !d.is(0, 6, "DANGER", "RANGER", "MANGER") && !d.is(cur-1, 1, "E", "I") && !d.is(cur-1, 3, "RGY", "OGY"):
		d.add("K", "J")
		return cur + 2
	case d.is(cur+1, 1, "E", "I", "Y") || d.is(cur-1, 4, "AGGI", "OGGI"):
		switch {
		case d.is(0, 4, "VAN ", "VON ") || d.is(0, 3, "SCH") || d.is(cur+1, 2, "ET"):
			d.add("K")
		case d.is(cur+1, 4, "IER "):
			d.add("J")
		default:
			d.add("J", "K")
		}
		return cur + 2
	}
	d.add("K")
	return cur + d.skip(cur, 'G')
}

func (d *dm) j(cur int) int {
	if d.is(cur, 4, "JOSE") || d.is(0, 4, "SAN ") {
		if (cur == 0 && d.at(cur+4) == ' ') || d.is(0, 4, "SAN ") {
			d.add("H") // Spanish José, San Jacinto
		} else {
			d.add("J", "H")
		}
		return cur + 1
	}
	switch {
	case cur == 0 && !d.is(cur, 4, "JOSE"):
		d.add("J", "A") // Jankelowicz
	case d.vowel(cur-1) && !d.slavoGermanic && (d.at(cur+1) == 'A' || d.at(cur+1) == 'O'):
		d.add("J", "H")
	case cur == d.last:
		d.add("J", "")
	case !d.is(cur+1, 1, "L", "T", "K", "S", "N", "M", "B", "Z") && !d.is(cur-1, 1, "S", "K", "L"):
		d.add("J")
	}
	return cur + d.skip(cur, 'J')
}

func (d *dm) s(cur int) int {
	switch {
	case d.is(cur-1, 3, "ISL", "YSL"):
		return cur + 1 // island, carlisle
	case cur == 0 && d.is(cur, 5, "SUGAR"):
		d.add("X", "S")
		return cur + 1
	case d.is(cur, 2, "SH"):
		if d.is(cur+1, 4, "HEIM", "HOEK", "HOLM", "HOLZ") {
			d.add("S")
		} else {
			d.add("X")
		}
		return cur + 2
	case d.is(cur, 3, "SIO", "SIA") || d.is(cur, 4, "SIAN"):
		if d.slavoGermanic {
			d.add("S")
		} else {
			d.add("S", "X")
		}
		return cur + 3
	case (cur == 0 && d.is(cur+1, 1, "M", "N", "L", "W")) || d.is(cur+1, 1, "Z"):
		d.add("S", "X")
		return cur + d.skip(cur, 'Z')
	case d.is(cur, 2, "SC"):
		if d.at(cur+2) == 'H' {
			if d.is(cur+3, 2, "OO", "ER", "EN", "UY", "ED", "EM") {
				if d.is(cur+3, 2, "ER", "EN") {
					d.add("X", "SK")
				} else {
					d.add("SK")
				}
			} else if cur == 0 && !d.vowel(3) && d.at(3) != 'W' {
				d.add("X", "S")
			} else {
				d.add("X")
			}
			return cur + 3
		}
		if d.is(cur+2, 1, "I", "E", "Y") {
			d.add("S")
		} else {
			d.add("SK")
		}
		return cur + 3
	}
	if cur == d.last && d.is(cur-2, 2, "AI", "OI") {
		d.add("", "S") // French -ais, -ois
	} else {
		d.add("S")
	}
	return cur + d.skip(cur, 'S', 'Z')
}
