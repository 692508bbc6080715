package session

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/flow"
	"github.com/voicebench/humanaudit/internal/media"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

func firingOf(t *testing.T, tk *task.Task, id string) flow.Firing {
	t.Helper()
	for i := range tk.Events {
		if ev := &tk.Events[i]; ev.ID == id {
			f := flow.Firing{Event: ev, CueID: id}
			if ev.Fact != "" && ev.Kind != task.Approval && ev.Kind != task.Revocation {
				f.Reveals = &trace.FactRef{Fact: ev.Fact, Version: max(ev.Version, 1)}
			}
			return f
		}
	}
	t.Fatalf("no event %s", id)
	return flow.Firing{}
}

// A list fact ("VPN; Outlook; SharePoint; Teams") is applied when the agent records the same set,
// as a JSON array or as text, in any order; not when an item is missing.
func TestCueAppliedComparesListsAsTheGraderDoes(t *testing.T) {
	tk := loadTask(t, "it-vpn-incident")
	f := firingOf(t, tk, "teams_down")
	for _, c := range []struct {
		value string
		want  bool
	}{
		{`["VPN","Outlook","SharePoint","Teams"]`, true},
		{`["teams","vpn","outlook","sharepoint"]`, true},
		{`"VPN, Outlook, SharePoint and Teams"`, true},
		{`["VPN","Outlook","SharePoint"]`, false},
	} {
		e := trace.Event{Type: trace.ArtifactUpdate, Field: "affected_systems", Value: json.RawMessage(c.value)}
		if got := cuedChange(tk, f, e); got != c.want {
			t.Errorf("cue applied by %s = %v, want %v", c.value, got, c.want)
		}
	}
}

func TestCueSpokenCarriesTheCuedContent(t *testing.T) {
	vpn := loadTask(t, "it-vpn-incident")
	glass := loadTask(t, "fnol-auto-glass")
	for _, c := range []struct {
		name  string
		tk    *task.Task
		event string
		heard Heard
		want  bool
	}{
		{"list correction names the added item", vpn, "teams_down", Heard{Words: "oh and teams stopped working too"}, true},
		{"list correction without it", vpn, "teams_down", Heard{Words: "the vpn is still down"}, false},
		{"corrected phone number", glass, "phone_fix", Heard{Words: "sorry my number is five oh three five five five oh one seven four"}, true},
		{"the old phone number", glass, "phone_fix", Heard{Words: "my number is five oh three five five five oh one four seven"}, false},
		{"an amount", glass, "shop_text", Heard{Words: "they quoted six hundred twelve dollars and forty cents"}, true},
		{"approval", glass, "approve_submit", Heard{Words: "yes go ahead", Approval: ApprovalApprove}, true},
		{"a correction instead of an approval", glass, "approve_submit", Heard{Words: "no that's wrong", Approval: ApprovalDecline}, false},
	} {
		got, _ := carriesCue(c.tk, firingOf(t, c.tk, c.event), c.heard)
		if got != c.want {
			t.Errorf("%s: %q carries %s = %v, want %v", c.name, c.heard.Words, c.event, got, c.want)
		}
	}
}

func TestCallerAudioSpan(t *testing.T) {
	var a callerAudio
	frame := make([]int16, 640) // 40 ms at 16 kHz
	for i := range 10 {
		for j := range frame {
			frame[j] = int16(i)
		}
		a.add(trace40ms(i), 16000, frame)
	}
	pcm, rate := a.span(trace40ms(2), trace40ms(4))
	if rate != 16000 || len(pcm) != 1280 || pcm[0] != 2 || pcm[len(pcm)-1] != 3 {
		t.Fatalf("span: rate %d, %d samples, first %d last %d", rate, len(pcm), pcm[0], pcm[len(pcm)-1])
	}
}

func trace40ms(i int) time.Duration { return time.Duration(i) * 40 * time.Millisecond }

// In a human call the caller's speech answers a cue only once the cue was shown: speech that began
// after the cue was issued but before the participant's browser showed it (30.26 s issued, 30.4 s
// shown, speech from 30.276 s, as a rehearsal's demo call had it) is not the cue's, nor a
// revocation (a nil workspace would panic if it were taken as one). In a synthetic call, with no
// browser, the issue is the reference.
func TestCueAnsweredOnlyAfterItWasShown(t *testing.T) {
	vpn := loadTask(t, "it-vpn-incident")
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, c := range []struct {
		mode        Mode
		kind        task.EventKind
		shown       time.Duration
		onsets      []time.Duration
		wantOnset   time.Duration
		description string
	}{
		{Human, task.Correction, ms(30400), []time.Duration{ms(30276), ms(31000)}, ms(31000), "speech before it was shown"},
		{Human, task.Revocation, ms(30400), []time.Duration{ms(30276)}, -1, "a revocation before it was shown"},
		{Human, task.Correction, -1, []time.Duration{ms(30276), ms(31000)}, -1, "never shown"},
		{Synthetic, task.Correction, -1, []time.Duration{ms(30276)}, ms(30276), "synthetic: after the issue"},
	} {
		f := firingOf(t, vpn, "teams_down")
		ev := *f.Event
		ev.Kind = c.kind
		f.Event = &ev
		s := &Session{cfg: Config{Mode: c.mode, ServerTurnDetection: true}, call: &media.Call{}}
		cue := &cueState{firing: f, issued: ms(30260), shown: c.shown, onset: -1}
		s.cues = []*cueState{cue}
		for _, at := range c.onsets {
			s.callerOnset(at)
		}
		if cue.onset != c.wantOnset {
			t.Errorf("%s: the cue's onset is %v, want %v", c.description, cue.onset, c.wantOnset)
		}
	}
}
