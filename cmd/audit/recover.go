package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/voicebench/humanaudit/internal/audio"
)

// runRecover repairs each WAV named on the command line and says what it changed. It keeps going
// after a bad file and exits 1 if any file could not be repaired.
func runRecover(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("recover", stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: audit recover FILE.wav [FILE.wav ...]")
		fmt.Fprintln(stderr, "Sets the RIFF and data sizes of a recording to the whole sample frames in the file.")
		fs.PrintDefaults()
	}
	files, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		fs.Usage()
		return errUsage
	}
	failed := false
	for _, path := range files {
		rep, err := audio.RepairWAV(path)
		switch {
		case err != nil:
			failed = true
			fmt.Fprintf(stderr, "audit recover: %v\n", err)
			if errors.Is(err, audio.ErrBadWAV) {
				fmt.Fprintf(stderr, "  %s: expected a 16-bit PCM WAV recording written by a session\n", path)
			}
		case !rep.Changed:
			fmt.Fprintf(stdout, "%s: ok, %s (%d Hz, %d ch), nothing to repair\n",
				path, recoverSeconds(rep.Duration()), rep.Rate, rep.Channels)
		default:
			fmt.Fprintf(stdout, "%s: repaired: header said %s (%d bytes), file holds %s (%d bytes, %d Hz, %d ch)",
				path, recoverSeconds(rep.DeclaredDuration()), rep.DeclaredBytes, recoverSeconds(rep.Duration()), rep.DataBytes, rep.Rate, rep.Channels)
			if rep.DroppedBytes > 0 {
				fmt.Fprintf(stdout, "; cut %d trailing bytes of an incomplete sample frame", rep.DroppedBytes)
			}
			fmt.Fprintln(stdout)
		}
	}
	if failed {
		return exitError{1}
	}
	return nil
}

// recoverSeconds prints a duration as seconds with millisecond precision ("1.500s").
func recoverSeconds(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }
