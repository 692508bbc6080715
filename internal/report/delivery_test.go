package report

import (
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/trace"
)

func TestMeasureDeliveryCountsTalkOverlapsAndBargeIns(t *testing.T) {
	ev := func(typ trace.Type, at int64) trace.Event { return trace.Event{Type: typ, T: at} }
	events := []trace.Event{
		ev(trace.CallerSpeechStart, 0), ev(trace.CallerSpeechEnd, 2000),
		ev(trace.AgentSpeechStart, 2600),  // 600 ms latency
		ev(trace.CallerSpeechStart, 4000), // the caller cuts in
		{Type: trace.MediaBargeIn, T: 4100, Source: "caller"},
		ev(trace.AgentSpeechEnd, 4200), ev(trace.CallerSpeechEnd, 5000),
		ev(trace.AgentSpeechStart, 5500),
		{Type: trace.MediaBargeIn, T: 5600, Source: "provider"}, // not the caller's
		ev(trace.AgentSpeechEnd, 6500),
		ev(trace.AgentSpeechStart, 7000), // still speaking when the trace ends
		{Type: trace.SessionEnd, T: 7400},
	}
	d := MeasureDelivery(events)
	want := SessionDelivery{CallerTalkMS: 3000, AgentTalkMS: 1600 + 1000 + 400, Overlaps: 1, OverlapMS: 200, BargeIns: 1}
	if d != want {
		t.Errorf("delivery %+v, want %+v", d, want)
	}
	if m := Measure(events); m.Delivery != want || len(m.LatenciesMS) != 2 || m.LatenciesMS[0] != 600 || m.LatenciesMS[1] != 500 {
		t.Errorf("Measure: %+v", m)
	}
}

// The report has a delivery row per system and mode over the included sessions, in report.json and
// in report.md.
func TestReportHasDeliveryPerSystemAndMode(t *testing.T) {
	in := genStudy(studyShape{Systems: 2, Tasks: 4, Seeds: 2, Anchors: 1, Annotators: 2, ItemsPerTask: 1}, 3)
	for i := range in.Sessions {
		s := &in.Sessions[i]
		s.Measures.Delivery = SessionDelivery{CallerTalkMS: 30000, AgentTalkMS: 50000, Overlaps: 2, OverlapMS: 800, BargeIns: 1}
		if s.Mode == Synthetic {
			s.Measures.Delivery.BargeIns = 0
		}
	}
	r, err := Build(in, Options{Seed: 1, Resamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Delivery) != 2*len(r.Systems) {
		t.Fatalf("%d delivery rows for %d systems, want one per system and mode: %+v", len(r.Delivery), len(r.Systems), r.Delivery)
	}
	for _, row := range r.Delivery {
		var want int
		for _, sr := range r.Systems {
			if sr.System.Label == row.System {
				want = sr.Human.Sessions
				if row.Mode == Synthetic {
					want = sr.Synthetic.Sessions
				}
			}
		}
		if row.Sessions != want || row.Overlaps != 2 || row.AgentTalkS != 50 || row.CallerShare != 0.375 {
			t.Errorf("row %+v: want %d sessions, 2 overlaps, 50 s agent talk, caller share 0.375", row, want)
		}
		if wantB := map[Mode]Num{Human: 1, Synthetic: 0}[row.Mode]; row.BargeIns != wantB {
			t.Errorf("%s %s barge-ins %v, want %v", row.System, row.Mode, row.BargeIns, wantB)
		}
	}
	files, err := Render(r)
	if err != nil {
		t.Fatal(err)
	}
	if md := string(files[0].Data); !strings.Contains(md, "## Delivery: turn-taking per system and mode") || !strings.Contains(md, "caller talk s") {
		t.Error("report.md has no delivery table")
	}
}
