package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/voicebench/humanaudit/internal/condition"
	"github.com/voicebench/humanaudit/internal/study"
	"github.com/voicebench/humanaudit/internal/tts"
)

// conditionLibrary is the data directory's noise beds, built on first use with Flite.
func conditionLibrary(dataDir string) *condition.Library {
	name := "flite"
	if out, _ := exec.Command(tts.DefaultBinary, "--version").CombinedOutput(); len(out) > 0 { // exits 1 after printing
		for _, l := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "version: "); ok {
				name = strings.Fields(v)[0]
			}
		}
	}
	return &condition.Library{Dir: filepath.Join(dataDir, "conditions"), Speaker: &tts.Flite{}, SpeakerName: name}
}

func runConditionsBuild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("conditions build", stderr)
	data := fs.String("data", "audit_data", "data directory (beds go to DATA/conditions)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "audit conditions build: unexpected argument %q\n", pos[0])
		return errUsage
	}
	lib := conditionLibrary(*data)
	for _, name := range condition.Noises {
		start := time.Now()
		bed, err := lib.Bed(ctx, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %s.wav, %d s, %.1f dBFS, sha256 %s (seed %d; %s) in %s\n", name, filepath.Join(lib.Dir, bed.ID()),
			bed.Recipe.Seconds, bed.RMSDBFS, bed.SHA256, bed.Recipe.Seed, bed.Speaker, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

func runConditionsList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("conditions list", stderr)
	data := fs.String("data", "audit_data", "data directory")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	lib := &condition.Library{Dir: filepath.Join(*data, "conditions")} // no speaker: report, do not build
	fmt.Fprintf(stdout, "%s\tnone\n%s\tG.711 μ-law at 8 kHz, 300–3400 Hz (no bed)\n", condition.Quiet, condition.PhoneLine)
	for _, name := range condition.Noises {
		r, _ := condition.DefaultRecipe(name)
		state := "not built (audit conditions build, or built on first use)"
		if bed, err := lib.Bed(ctx, name); err == nil {
			state = "built, sha256 " + bed.SHA256
		}
		fmt.Fprintf(stdout, "%s\t%s: %s\n", name, r.ID(), state)
	}
	fmt.Fprintf(stdout, "combine with +, level with @ (SNR in dB against %g dBFS): phone_line+background_tv@10\n", condition.ReferenceLevel)
	return nil
}

// canonicalConditions checks a plan's listening conditions and writes them in canonical form.
func canonicalConditions(path string, sessions []study.Session) error {
	for i := range sessions {
		if sessions[i].Condition == "" {
			continue
		}
		spec, err := condition.Parse(sessions[i].Condition)
		if err != nil {
			return fmt.Errorf("%s: row %d (%s position %d): column %s: %w", path, i+1, sessions[i].Participant, sessions[i].Position, study.ConditionColumn, err)
		}
		sessions[i].Condition = spec.String()
	}
	return nil
}
