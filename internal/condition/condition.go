// Package condition is the caller's listening condition as a study factor: the background a
// caller calls from (quiet, a television, babble, a street) at a signal-to-noise ratio, and the
// line they call over (a G.711 μ-law telephone line at 8 kHz). It builds the noise beds offline
// from what the machine has (Flite voices reading public-domain text, synthesised tones and
// noise), deterministically from a recorded recipe and seed, and applies a condition to the
// caller's 24 kHz audio frame by frame, the same way for every system, human or synthetic caller.
// It is pure Go and depends on no media package: the call engine applies it through one hook.
package condition

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Rate is the sample rate conditions work at: the media clock's caller channel (24 kHz).
const Rate = 24000

// Condition names.
const (
	Quiet        = "quiet"
	BackgroundTV = "background_tv"
	Babble       = "babble"
	Street       = "street"
	PhoneLine    = "phone_line"
)

// Noises lists the background conditions, in documentation order.
var Noises = []string{BackgroundTV, Babble, Street}

// DefaultSNR is the level of a noise condition written without one.
const DefaultSNR = 10.0

// ReferenceLevel is the nominal active speech level (dBFS) a condition's SNR is set against:
// ITU-T P.56's -26 dBov. The noise is the same for every caller, whatever their own level; the
// session also records the caller's measured speech level and so the effective SNR.
const ReferenceLevel = -26.0

// ErrBadSpec is wrapped by every error of Parse.
var ErrBadSpec = errors.New("bad listening condition")

// Spec is a listening condition: a background noise (or none) at an SNR, optionally heard
// through a telephone line. The zero value is quiet.
type Spec struct {
	Noise string  // "", background_tv, babble or street
	SNR   float64 // dB against ReferenceLevel; meaningful only with Noise
	Phone bool    // G.711 μ-law at 8 kHz, band-limited to 300–3400 Hz
}

// Quiet reports whether the condition changes nothing.
func (s Spec) Quiet() bool { return s.Noise == "" && !s.Phone }

// Name is the condition without its level: "quiet", "background_tv", "phone_line+babble".
func (s Spec) Name() string {
	var parts []string
	if s.Phone {
		parts = append(parts, PhoneLine)
	}
	if s.Noise != "" {
		parts = append(parts, s.Noise)
	}
	if len(parts) == 0 {
		return Quiet
	}
	return strings.Join(parts, "+")
}

// Level is the SNR as written in a condition ("10"), or "" without a noise.
func (s Spec) Level() string {
	if s.Noise == "" {
		return ""
	}
	return strconv.FormatFloat(s.SNR, 'f', -1, 64)
}

// String is the canonical spelling Parse reads back: "quiet", "phone_line",
// "background_tv@10", "phone_line+background_tv@5".
func (s Spec) String() string {
	if l := s.Level(); l != "" {
		return s.Name() + "@" + l
	}
	return s.Name()
}

// Parse reads a condition: names joined by "+" (at most one background noise, phone_line at
// most once; quiet alone), optionally "@" and the SNR in dB ("background_tv@10", "@10dB"). A
// noise without a level takes DefaultSNR; a level without a noise is an error.
func Parse(text string) (Spec, error) {
	t := strings.TrimSpace(text)
	if t == "" {
		return Spec{}, fmt.Errorf("%w: empty (want quiet, %s, %s, %s or %s, combinable with '+', e.g. phone_line+background_tv@10)",
			ErrBadSpec, BackgroundTV, Babble, Street, PhoneLine)
	}
	names, level, hasLevel := strings.Cut(t, "@")
	var s Spec
	for _, n := range strings.Split(names, "+") {
		n = strings.ToLower(strings.TrimSpace(n))
		switch {
		case n == Quiet:
			if len(strings.Split(names, "+")) > 1 {
				return Spec{}, fmt.Errorf("%w %q: quiet cannot be combined", ErrBadSpec, text)
			}
		case n == PhoneLine:
			if s.Phone {
				return Spec{}, fmt.Errorf("%w %q: phone_line given twice", ErrBadSpec, text)
			}
			s.Phone = true
		case isNoise(n):
			if s.Noise != "" {
				return Spec{}, fmt.Errorf("%w %q: two background noises (%s and %s); combine one noise with phone_line", ErrBadSpec, text, s.Noise, n)
			}
			s.Noise = n
		default:
			return Spec{}, fmt.Errorf("%w %q: unknown condition %q (want quiet, %s, %s, %s or %s)", ErrBadSpec, text, n, BackgroundTV, Babble, Street, PhoneLine)
		}
	}
	if hasLevel {
		if s.Noise == "" {
			return Spec{}, fmt.Errorf("%w %q: a level (SNR in dB) needs a background noise", ErrBadSpec, text)
		}
		l := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(level), "dB"), "db")
		v, err := strconv.ParseFloat(strings.TrimSpace(l), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < -20 || v > 60 {
			return Spec{}, fmt.Errorf("%w %q: level %q is not an SNR in dB between -20 and 60", ErrBadSpec, text, level)
		}
		s.SNR = v
	} else if s.Noise != "" {
		s.SNR = DefaultSNR
	}
	return s, nil
}

// MustParse is Parse for literals in code and tests; it panics on a bad spec.
func MustParse(text string) Spec {
	s, err := Parse(text)
	if err != nil {
		panic(err)
	}
	return s
}

func isNoise(n string) bool {
	for _, x := range Noises {
		if x == n {
			return true
		}
	}
	return false
}

// ParseList reads a comma-separated list of conditions ("quiet,background_tv@10"), each once.
func ParseList(text string) ([]Spec, error) {
	var out []Spec
	seen := map[string]bool{}
	for _, part := range strings.Split(text, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		s, err := Parse(part)
		if err != nil {
			return nil, err
		}
		if seen[s.String()] {
			return nil, fmt.Errorf("%w: %s is listed twice", ErrBadSpec, s)
		}
		seen[s.String()] = true
		out = append(out, s)
	}
	return out, nil
}
