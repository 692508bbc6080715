package synth

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progress prints the run's progress on stderr: a header, a line per started and finished call
// with the counts so far and an estimate of the time left, and a summary.
type progress struct {
	w       io.Writer
	label   string
	total   int // calls to make in this run
	done    int
	running int
	start   time.Time
	now     func() time.Time
	mu      sync.Mutex
}

func newProgress(w io.Writer, label string, planned, skipped, todo, parallel int, now func() time.Time) *progress {
	p := &progress{w: w, label: label, total: todo, start: now(), now: now}
	p.printf("synth %s: %d pairs planned, %d finished earlier (skipped), %d to run, %d at a time\n", label, planned, skipped, todo, parallel)
	return p
}

func (p *progress) printf(format string, args ...any) {
	if p.w != nil {
		fmt.Fprintf(p.w, format, args...)
	}
}

func (p *progress) started(pr Pair) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running++
	p.printf("[%*d/%d] start %s\n", width(p.total), p.done+p.running, p.total, pr)
}

func (p *progress) finished(o Outcome) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running--
	p.done++
	var what string
	switch {
	case o.Err != nil:
		what = "FAILED: " + o.Err.Error()
	case o.Grade != nil:
		ttr := "unresolved"
		if o.Grade.TTRMS != nil {
			ttr = fmt.Sprintf("TTR %.1fs", float64(*o.Grade.TTRMS)/1000)
		}
		what = fmt.Sprintf("WS=%d AFA=%.2f %s, %s", o.Grade.WS, o.Grade.AFA.Value, ttr, o.Reason)
	default:
		what = "ungraded, " + o.Reason
	}
	if o.Exclusion != "" && o.Err == nil {
		what += ", excluded: " + o.Exclusion
	}
	eta := ""
	if left := p.total - p.done; left > 0 {
		per := p.now().Sub(p.start) / time.Duration(p.done)
		eta = fmt.Sprintf(", about %s left", (per * time.Duration(left)).Round(time.Second))
	}
	p.printf("[%*d/%d] done  %s (%s): %s [%s]%s\n", width(p.total), p.done, p.total, o.Pair, o.Session, what,
		o.Elapsed.Round(100*time.Millisecond), eta)
}

func (p *progress) summary(s Summary) {
	p.printf("synth %s: %d ran (%d excluded), %d failed, %d skipped as finished, in %s\n",
		p.label, s.Ran, s.Excluded, s.Failed, s.Skipped, p.now().Sub(p.start).Round(time.Second))
}

func width(n int) int { return len(fmt.Sprint(n)) }
