package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// onlyMode keeps the sessions of one mode.
func onlyMode(in Input, m Mode) Input {
	out := in
	out.Sessions = nil
	for _, s := range in.Sessions {
		if s.Mode == m {
			out.Sessions = append(out.Sessions, s)
		}
	}
	return out
}

func renderFiles(t *testing.T, in Input, opts Options) (*Report, map[string][]byte, map[string]Figure) {
	t.Helper()
	r, err := Build(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	files, err := Render(r)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string][]byte{}
	for _, f := range files {
		byPath[f.Path] = f.Data
	}
	figs, err := Figures(r)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Figure{}
	for _, f := range figs {
		byName[f.Name] = f
	}
	return r, byPath, byName
}

// TestEmptyFiguresSayWhatIsMissing: a figure without its data names what is missing and the
// command that fills it, in the figure itself and beside it in both documents; a figure with
// data says nothing is missing.
func TestEmptyFiguresSayWhatIsMissing(t *testing.T) {
	in := genStudy(studyShape{Systems: 2, Tasks: 4, Seeds: 2, Anchors: 2, Annotators: 3, ItemsPerTask: 2}, 3)
	opts := Options{Seed: 1, Resamples: 100}

	_, files, figs := renderFiles(t, onlyMode(in, Human), opts)
	want := "no synthetic runs yet: audit synth --system sys-a --tasks audit24"
	if got := figs["forest"].Missing; got != want {
		t.Errorf("forest without synthetic runs: missing %q, want %q", got, want)
	}
	if !bytes.Contains(files["figures/forest.svg"], []byte("no synthetic runs yet: audit synth --system sys-a")) {
		t.Error("the empty forest figure does not say what is missing")
	}
	for _, doc := range []string{"report.md", "report.html"} {
		if !bytes.Contains(files[doc], []byte("Empty: "+want+".")) {
			t.Errorf("%s does not say the forest plot is empty and how to fill it", doc)
		}
	}
	if figs["gates"].Missing != "" || figs["ws_latency"].Missing != "" {
		t.Errorf("figures with data marked missing: gates %q, latency %q", figs["gates"].Missing, figs["ws_latency"].Missing)
	}
	// Usage was reported but no price given: the cost figure says how to price it.
	if got := figs["ws_cost"].Missing; got != "no prices given: audit report --study gen --prices prices.json" {
		t.Errorf("cost without prices: %q", got)
	}

	_, _, figs = renderFiles(t, onlyMode(in, Synthetic), opts)
	if got := figs["forest"].Missing; !strings.HasPrefix(got, "no human sessions yet: run study gen with audit serve") {
		t.Errorf("forest without human sessions: %q", got)
	}
	opts.Prices = map[string]Price{"sys-a": {InputText: 4, OutputText: 16, InputAudio: 32, OutputAudio: 64}}
	_, _, figs = renderFiles(t, in, opts)
	for _, name := range []string{"forest", "gates", "ttr_reliability", "ws_latency", "ws_cost"} {
		if f, ok := figs[name]; !ok || f.Missing != "" {
			t.Errorf("full study: figure %s missing=%q present=%v", name, f.Missing, ok)
		}
	}
}

// TestHeadlineTable: per system and mode, WS with its Wilson interval and n, the median response
// latency and the mean cost per call, as the system results have them, in the document and in
// headline.csv.
func TestHeadlineTable(t *testing.T) {
	in := genStudy(studyShape{Systems: 2, Tasks: 4, Seeds: 2, Anchors: 2, Annotators: 3, ItemsPerTask: 2}, 3)
	r, files, _ := renderFiles(t, in, Options{Seed: 1, Resamples: 100, Prices: map[string]Price{"sys-a": {InputText: 4, OutputText: 16, InputAudio: 32, OutputAudio: 64}}})
	rows := Headline(r)
	if len(rows) != 2*len(r.Systems) {
		t.Fatalf("%d headline rows, want %d", len(rows), 2*len(r.Systems))
	}
	md := string(files["report.md"])
	csvText := string(files["headline.csv"])
	for i, h := range rows {
		sr := r.Systems[i/2]
		res := sr.Human
		if h.Mode == Synthetic {
			res = sr.Synthetic
		}
		if h.System != sr.System.Label || h.WS != res.WS || h.LatencyMS != res.Latency.MedianMS || !sameNum(h.USDPerCall, res.Cost.USDPerCall) {
			t.Errorf("row %d %+v does not match the system's %s results", i, h, h.Mode)
		}
		line := fmt.Sprintf("| %s | %s | %d | %s | [%s, %s] | %s | %s |", h.System, h.Mode, res.WS.N, res.WS.P.fixed(3), res.WS.Low.fixed(3), res.WS.High.fixed(3),
			res.Latency.MedianMS.fixed(0), res.Cost.USDPerCall.fixed(4))
		if !strings.Contains(md, line) {
			t.Errorf("report.md lacks the headline row %q", line)
		}
		row := fmt.Sprintf("%s,%s,%d,%d,%s,%s,%s,%s,%s", h.System, h.Mode, res.WS.Successes, res.WS.N, res.WS.P.csv(), res.WS.Low.csv(), res.WS.High.csv(),
			res.Latency.MedianMS.csv(), res.Cost.USDPerCall.csv())
		if !strings.Contains(csvText, row+"\n") {
			t.Errorf("headline.csv lacks %q:\n%s", row, csvText)
		}
	}
	if r.Systems[0].Synthetic.Cost.USDPerCall.IsNaN() || !r.Systems[1].Synthetic.Cost.USDPerCall.IsNaN() {
		t.Errorf("only sys-a is priced: %v %v", r.Systems[0].Synthetic.Cost.USDPerCall, r.Systems[1].Synthetic.Cost.USDPerCall)
	}
}

func sameNum(a, b Num) bool { return a == b || a.IsNaN() && b.IsNaN() }

// TestAnchorAgreementNeedsAnchorRepeats: sessions of an anchor task by two participants are no
// anchor pair unless the plan made the second a repeat; the report says the plan has none.
func TestAnchorAgreementNeedsAnchorRepeats(t *testing.T) {
	in := genStudy(studyShape{Systems: 2, Tasks: 4, Seeds: 2, Anchors: 2, Annotators: 3, ItemsPerTask: 2}, 3)
	r, _, _ := renderFiles(t, in, Options{Seed: 1, Resamples: 100})
	if len(r.Anchor) == 0 || r.AnchorRepeats == 0 {
		t.Fatalf("a study with anchor repeats has no agreement: %d rows, %d repeats", len(r.Anchor), r.AnchorRepeats)
	}
	// The same sessions, all planned as first runs: no anchor design.
	flat := in
	flat.Sessions = append([]Session(nil), in.Sessions...)
	for i := range flat.Sessions {
		if flat.Sessions[i].Repeat == 2 {
			flat.Sessions[i].Repeat = 1
		}
	}
	r, files, _ := renderFiles(t, flat, Options{Seed: 1, Resamples: 100})
	if len(r.Anchor) != 0 || r.AnchorRepeats != 0 {
		t.Fatalf("agreement computed without anchor repeats: %+v", r.Anchor)
	}
	if !bytes.Contains(files["report.md"], []byte("Study gen's plan has no anchor repeats")) {
		t.Error("report.md does not say the plan has no anchor repeats")
	}
	if rows := bytes.Count(files["anchor.csv"], []byte("\n")); rows != 1 {
		t.Errorf("anchor.csv has %d lines, want the header only", rows)
	}
}

// TestPluralsAgree: counts of one read in the singular.
func TestPluralsAgree(t *testing.T) {
	in := genStudy(studyShape{Systems: 1, Tasks: 3, Seeds: 1, Anchors: 1, Annotators: 1, ItemsPerTask: 1}, 4)
	_, files, _ := renderFiles(t, in, Options{Seed: 1, Resamples: 50})
	md := string(files["report.md"])
	for _, bad := range []string{"item(s)", "session(s)", "row(s)", "rating(s)", "task(s)", "1 annotators", "1 ratings", "1 items", "1 tasks", "1 sessions excluded"} {
		if strings.Contains(md, bad) {
			t.Errorf("report.md says %q", bad)
		}
	}
	if !strings.Contains(md, "by 1 annotator.") {
		t.Errorf("report.md does not count its one annotator in the singular:\n%s", md)
	}
	if plural(1, "rating", "ratings") != "1 rating" || plural(0, "rating", "ratings") != "0 ratings" || plural(2, "item was", "items were") != "2 items were" {
		t.Error("plural")
	}
}
