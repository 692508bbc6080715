package power

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// Bar shows a simulation's progress on w, as audit bank build does: on a terminal one bar per
// phase, redrawn in place ("[#########.....] 1200/2000 power at delta -0.150"); on anything else
// (a log file, a pipe) a line for each tenth of a phase, so that a log is not filled with redraws.
type Bar struct {
	w     io.Writer
	tty   bool
	phase string
	tenth int
	open  bool // a redrawn line is waiting for its newline
}

// NewBar returns a progress display writing to w.
func NewBar(w io.Writer) *Bar { return &Bar{w: w, tty: isTerminal(w)} }

// isTerminal reports whether w is a character device.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Update draws p.
func (b *Bar) Update(p Progress) {
	if b.w == nil || p.Total <= 0 {
		return
	}
	if p.Phase != b.phase {
		b.finishLine()
		b.phase, b.tenth = p.Phase, -1
	}
	const width = 30
	filled := min(width, p.Done*width/p.Total)
	line := fmt.Sprintf("[%s%s] %d/%d %s", strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.Done, p.Total, p.Phase)
	if p.Label != "" {
		line += ": " + p.Label
	}
	if b.tty {
		fmt.Fprintf(b.w, "\r%-110s", line)
		b.open = true
		return
	}
	if t := p.Done * 10 / p.Total; t != b.tenth {
		b.tenth = t
		fmt.Fprintln(b.w, line)
	}
}

// Done ends the display (the last redrawn line gets its newline).
func (b *Bar) Done() { b.finishLine() }

func (b *Bar) finishLine() {
	if b.open {
		fmt.Fprintln(b.w)
		b.open = false
	}
}
