package session

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/voicebench/humanaudit/internal/canon"
	"github.com/voicebench/humanaudit/internal/flow"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// CallerListener recognizes what a human caller said in one utterance. The console backs it with
// the offline recognizer; it is used only for the decisions the environment takes from the
// caller's words (approvals, and whether the first speech after a cue carries the cued content).
type CallerListener interface {
	Listen(ctx context.Context, pcm []int16, rate int) (Heard, error)
}

// Heard is the recognizer's reading of one caller utterance.
type Heard struct {
	Words string
	// Approval reads the words as an answer to an approval request: ApprovalApprove,
	// ApprovalDecline or ApprovalUnclear.
	Approval   string
	Confidence float64
}

// Readings of an answer to an approval request.
const (
	ApprovalApprove = "approve"
	ApprovalDecline = "decline"
	ApprovalUnclear = "unclear"
)

// Audio kept for the recognizer around an utterance.
const (
	heardKeep    = 30 * time.Second       // the longest utterance read whole
	heardPreroll = 300 * time.Millisecond // before the endpointer's onset (soft first syllables)
	listenBudget = 10 * time.Second       // the longest the conductor waits for one reading
)

// callerAudio is the recent caller audio at the agent's input rate, written on the media tick and
// read by the conductor at the end of a caller turn.
type callerAudio struct {
	mu    sync.Mutex
	rate  int
	start time.Duration // media time of pcm[0]
	pcm   []int16
}

func (a *callerAudio) add(start time.Duration, rate int, pcm []int16) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if rate != a.rate || len(a.pcm) == 0 {
		a.rate, a.start, a.pcm = rate, start, a.pcm[:0]
	}
	a.pcm = append(a.pcm, pcm...)
	if keep := int(heardKeep.Seconds()) * rate; len(a.pcm) > 2*keep {
		drop := len(a.pcm) - keep
		a.pcm = append(a.pcm[:0], a.pcm[drop:]...)
		a.start += time.Duration(drop) * time.Second / time.Duration(rate)
	}
}

// span copies the audio from from to to (clamped to what is kept).
func (a *callerAudio) span(from, to time.Duration) ([]int16, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rate == 0 {
		return nil, 0
	}
	idx := func(t time.Duration) int {
		i := int((t - a.start) * time.Duration(a.rate) / time.Second)
		return min(max(i, 0), len(a.pcm))
	}
	i, j := idx(from), idx(to)
	return append([]int16(nil), a.pcm[i:j]...), a.rate
}

// noteApprovalRequested opens an approval request: the caller's next turn answers it.
func (s *Session) noteApprovalRequested(action string) {
	for _, a := range s.asked {
		if a == action {
			return
		}
	}
	s.asked = append(s.asked, action)
}

// callerTurnEnded reads a caller's utterance (onset to offset) when the endpointer ends the turn:
// it answers open approval requests and is the first speech after any cue it follows. handOver
// gives the turn to the agent; for a human caller it runs once the recognizer has read the words
// (off the conductor, which keeps serving media and the agent meanwhile), so an approval exists
// before the agent can act on it.
func (s *Session) callerTurnEnded(onset, offset time.Duration, handOver func()) {
	var cues []*cueState
	for _, c := range s.cues {
		if !c.spoken && c.onset >= 0 && c.onset <= onset {
			c.spoken = true // read once, by this turn
			cues = append(cues, c)
		}
	}
	asked := append([]string(nil), s.asked...)
	if len(asked) == 0 && len(cues) == 0 {
		handOver()
		return
	}
	if s.cfg.Mode != Human {
		s.heardTurn(asked, cues, onset, offset, s.synth.said, s.synth.said.Words != "", "bank")
		handOver()
		return
	}
	if s.cfg.Listener == nil {
		s.heardTurn(asked, cues, onset, offset, Heard{}, false, "asr")
		handOver()
		return
	}
	// An answer to an approval request is read over all the caller's speech since the request was
	// first answered and left unclear: an endpointer that splits "wait, no, not yet" into
	// fragments must not let a lone "yet" (heard as "yeah") approve.
	from := onset
	if len(asked) > 0 {
		if s.answerFrom < 0 {
			s.answerFrom = onset
		}
		from = s.answerFrom
	}
	pcm, rate := s.heard.span(from-heardPreroll, offset)
	s.listening.Add(1)
	s.listenq <- func() {
		defer s.listening.Done()
		h, ok := s.listen(pcm, rate)
		s.do(func() {
			s.heardTurn(asked, cues, onset, offset, h, ok, "asr")
			handOver()
		})
	}
}

// heardTurn records what one caller turn decided: the answers to the approval requests open when
// it ended, and cue.spoken for the cues it is the first speech after.
func (s *Session) heardTurn(asked []string, cues []*cueState, onset, offset time.Duration, heard Heard, listened bool, source string) {
	if s.ending {
		asked = nil // the call is over: no agent can act on an approval any more
	}
	for _, action := range asked {
		s.answerApproval(action, heard, listened, onset, offset)
	}
	// A decline or a clear approval closes the requests it answered; after an unclear answer (or
	// none read) the next turn is read again.
	if len(asked) > 0 && listened && heard.Approval != ApprovalUnclear {
		s.asked = slices.DeleteFunc(s.asked, func(a string) bool { return slices.Contains(asked, a) })
		s.answerFrom = -1
	}
	for _, c := range cues {
		ev := trace.Event{Type: trace.CueSpoken, Actor: trace.ActorCaller, T: offset.Milliseconds(), CueID: c.firing.CueID,
			EventID: c.firing.Event.ID, RefMS: onset.Milliseconds(), DurationMS: (offset - onset).Milliseconds()}
		if listened {
			ev.Text, ev.Source = heard.Words, source
			ok, what := carriesCue(s.cfg.Task, c.firing, heard)
			ev.OK = trace.Bool(ok)
			ev.Meta = map[string]string{"carries": what}
		}
		s.emit(ev)
	}
}

// listenLoop reads caller turns in order, one at a time, off the conductor.
func (s *Session) listenLoop() {
	for {
		select {
		case job := <-s.listenq:
			job()
		case <-s.stop:
			return
		}
	}
}

// listen runs the recognizer on an utterance, bounded by listenBudget.
func (s *Session) listen(pcm []int16, rate int) (Heard, bool) {
	if len(pcm) == 0 {
		return Heard{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), listenBudget)
	defer cancel()
	h, err := s.cfg.Listener.Listen(ctx, pcm, rate)
	if err != nil {
		s.log.Warn("caller speech not recognized", slog.Any("err", err))
		return Heard{}, false
	}
	return h, true
}

// answerApproval records what the caller's answer to an approval request decided: only a clear
// approval mints a token.
func (s *Session) answerApproval(action string, h Heard, listened bool, onset, offset time.Duration) {
	meta := map[string]string{"source": "caller_speech", "span": fmtMS(onset) + "-" + fmtMS(offset)}
	if listened {
		meta["confidence"] = strconv.FormatFloat(h.Confidence, 'f', 3, 64)
	}
	switch {
	case listened && h.Approval == ApprovalApprove:
		s.ws.ApproveSpoken(action, h.Words, meta)
	case listened && h.Approval == ApprovalDecline:
		s.ws.DeclineSpoken(action, h.Words, meta)
	default:
		if !listened {
			meta["reason"] = "no recognizer reading"
		}
		s.emit(trace.Event{Type: trace.AuthApprovalUnclear, Actor: trace.ActorCaller, Action: action, Text: h.Words,
			Source: "caller_speech", RefMS: onset.Milliseconds(), DurationMS: (offset - onset).Milliseconds(), Meta: meta})
	}
}

func fmtMS(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// carriesCue reports whether the caller's words carry what the cue asked them to say, and names
// what was looked for: an approval, a refusal or withdrawal, or the revealed value read the way
// the grader reads values.
func carriesCue(t *task.Task, f flow.Firing, h Heard) (bool, string) {
	switch f.Event.Kind {
	case task.Approval:
		return h.Approval == ApprovalApprove, "approval"
	case task.Revocation:
		return h.Approval == ApprovalDecline, "withdrawal"
	}
	if f.Reveals == nil {
		return strings.TrimSpace(h.Words) != "", "speech"
	}
	fact, ok := t.Fact(f.Reveals.Fact)
	if !ok || f.Reveals.Version > len(fact.Versions) {
		return false, "value"
	}
	v := fact.Versions[f.Reveals.Version-1]
	spec, _ := t.Field(fact.Field)
	grader := gradedAs(t, fact.Field)
	if (grader == "set" || grader == "ordered_list") && f.Reveals.Version > 1 {
		// A list correction carries the items it adds ("and Teams too"), not the whole list.
		return saysItems(addedItems(fact.Versions[f.Reveals.Version-2].Value, v.Value), h.Words), "value"
	}
	return saysValue(spec.Type, grader, v.Value, h.Words), "value"
}

// addedItems are the items of list to that list from lacks, compared case-folded.
func addedItems(from, to string) []string {
	had := map[string]bool{}
	for _, it := range canon.Items(from) {
		had[canon.Fold(it)] = true
	}
	var out []string
	for _, it := range canon.Items(to) {
		if !had[canon.Fold(it)] {
			out = append(out, it)
		}
	}
	return out
}

// saysItems reports whether words name every item (case-folded, as whole words).
func saysItems(items []string, words string) bool {
	have := " " + canon.Fold(words) + " "
	for _, it := range items {
		if !strings.Contains(have, " "+canon.Fold(it)+" ") {
			return false
		}
	}
	return len(items) > 0
}

// gradedAs is the grader type of a field ("" when the task does not grade it).
func gradedAs(t *task.Task, field string) string {
	for _, g := range t.Grader.Fields {
		if g.Field == field {
			return g.Grader
		}
	}
	return ""
}

// saysValue reports whether words (a recognizer transcript) state value, through the grader's
// canonicalisers: dates, numbers, digit strings and codes as canon reads them; lists item by item;
// anything else by its words.
func saysValue(fieldType, grader, value, words string) bool {
	m := canon.Extract(words)
	switch {
	case fieldType == "date" || grader == "date":
		want, ok := canon.ParseDate(value)
		if !ok {
			return false
		}
		for _, d := range m.Dates {
			if d.Month == want.Month && d.Day == want.Day && (d.Year == 0 || d.Year == want.Year) {
				return true
			}
		}
		return false
	case fieldType == "number" || grader == "numeric":
		want, ok := canon.Number(value)
		if !ok {
			return false
		}
		for _, n := range canon.FindNumbers(words) {
			if n == want {
				return true
			}
		}
		return false
	case fieldType == "phone" || grader == "phone":
		want := canon.Phone(value)
		for _, d := range m.Digits {
			if want != "" && (canon.Phone(d) == want || strings.HasSuffix(want, d) && len(d) >= 7) {
				return true
			}
		}
		return false
	case fieldType == "identifier" || grader == "identifier":
		want := canon.Identifier(value)
		if m.Spelled == want || strings.Contains(m.Spelled, want) {
			return true
		}
		for _, c := range append(m.Codes, m.Digits...) {
			if canon.Identifier(c) == want {
				return true
			}
		}
		return false
	case grader == "set" || grader == "ordered_list":
		return saysItems(canon.Items(value), words)
	}
	return strings.Contains(" "+canon.Fold(words)+" ", " "+canon.Fold(value)+" ")
}
