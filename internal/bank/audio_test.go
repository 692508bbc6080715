package bank

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/task"
)

func needFlite(tb testing.TB) {
	tb.Helper()
	if _, err := os.Stat(DefaultFlite); err != nil {
		tb.Fatalf("Debian's flite is required (scripts/deps.sh installs it): %v", err)
	}
}

// subset renders the opening of one task per Flite voice: small enough for every test run, and
// it covers slt, rms, awb and kal16.
func subset(tasks []*task.Task) func(Variant) bool {
	pick := map[string]bool{}
	seen := map[string]bool{}
	for _, t := range tasks {
		if v := voiceOf(t); !seen[v] {
			seen[v] = true
			pick[t.ID] = true
		}
	}
	return func(v Variant) bool { return pick[v.Task] && v.Plan == "open" }
}

func TestBuildRendersIdenticalBytesAndSkipsWhatExists(t *testing.T) {
	needFlite(t)
	tasks := mustSuite(t)
	only := subset(tasks)
	a, b := t.TempDir(), t.TempDir()
	var bar bytes.Buffer
	repA, err := Build(context.Background(), tasks, BuildOptions{Dir: a, Only: only, Progress: &bar})
	if err != nil {
		t.Fatal(err)
	}
	if repA.Rendered < 8 || repA.Skipped != 0 {
		t.Fatalf("first build: %+v, want at least 8 rendered (openings of four voices) and none skipped", repA)
	}
	// Not a terminal: a line per tenth of the work, never a \r redraw that would fill a log with one line.
	if strings.Contains(bar.String(), "\r") || !strings.Contains(bar.String(), "] "+strconv.Itoa(repA.Rendered)+"/"+strconv.Itoa(repA.Rendered)) {
		t.Errorf("progress on a non-terminal writer: %q", bar.String())
	}
	if _, err := Build(context.Background(), tasks, BuildOptions{Dir: b, Only: only}); err != nil {
		t.Fatal(err)
	}
	ma, err := LoadManifest(a)
	if err != nil {
		t.Fatal(err)
	}
	if len(ma.Entries) != repA.Rendered || ma.SampleRate != SampleRate {
		t.Fatalf("manifest has %d entries at %d Hz, want %d at %d", len(ma.Entries), ma.SampleRate, repA.Rendered, SampleRate)
	}
	voices := map[string]bool{}
	for _, e := range ma.Entries {
		voices[e.Voice] = true
		pa, pb := filepath.Join(a, e.File), filepath.Join(b, e.File)
		da, _ := os.ReadFile(pa)
		db, _ := os.ReadFile(pb)
		if len(da) == 0 || !bytes.Equal(da, db) {
			t.Errorf("%s: two builds differ (%d and %d bytes)", e.File, len(da), len(db))
		}
		if fileHash(pa) != e.SHA256 {
			t.Errorf("%s: manifest sha256 %s is not the file's", e.File, e.SHA256)
		}
		w, err := audio.ReadWAV(pa)
		if err != nil {
			t.Fatal(err)
		}
		if w.Rate != 24000 || w.Channels != 1 {
			t.Errorf("%s: %d Hz %d channels, want 24000 mono", e.File, w.Rate, w.Channels)
		}
		if got := w.Duration().Milliseconds(); got != e.DurationMS {
			t.Errorf("%s: lasts %d ms, manifest says %d", e.File, got, e.DurationMS)
		}
		if _, reason := checkImported(pa, Variant{Task: e.Task, Plan: e.Plan, Variant: e.Variant, Text: e.Text}); reason != "" {
			t.Errorf("%s: Flite's own rendering fails the import checks: %s", e.File, reason)
		}
		if e.Text == "" || e.Source != SourceFlite || e.Task == "" || e.Plan != "open" || e.Variant < 1 {
			t.Errorf("incomplete manifest entry %+v", e)
		}
	}
	if len(voices) != 4 {
		t.Errorf("voices rendered: %v, want slt, rms, awb and kal16", voices)
	}

	// A second build over the same directory renders nothing.
	again, err := Build(context.Background(), tasks, BuildOptions{Dir: a, Only: only})
	if err != nil {
		t.Fatal(err)
	}
	if again.Rendered != 0 || again.Skipped != repA.Rendered {
		t.Errorf("rebuild: %+v, want everything skipped", again)
	}
	// A damaged file is rendered again.
	os.WriteFile(filepath.Join(a, ma.Entries[0].File), []byte("not audio"), 0o644)
	again, err = Build(context.Background(), tasks, BuildOptions{Dir: a, Only: only})
	if err != nil {
		t.Fatal(err)
	}
	if again.Rendered != 1 {
		t.Errorf("after damaging one file: %+v, want it rendered again", again)
	}
}

// TestResampleKeepsTimeAndPitch: a 16 kHz tone resampled to 24 kHz keeps its length, its start
// (the filter delay is removed) and its frequency.
func TestResampleKeepsTimeAndPitch(t *testing.T) {
	const f = 440.0
	in := make([]int16, 16000) // one second, tone starting at 0.25 s
	for i := 4000; i < len(in); i++ {
		in[i] = int16(8000 * math.Sin(2*math.Pi*f*float64(i)/16000))
	}
	out, err := audio.ResampleClip(in, 16000, 24000)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 24000 {
		t.Fatalf("len %d, want 24000", len(out))
	}
	onset := -1
	for i, s := range out {
		if s > 2000 || s < -2000 {
			onset = i
			break
		}
	}
	if onset < 6000-24 || onset > 6000+24 {
		t.Errorf("tone starts at sample %d, want about 6000 (0.25 s)", onset)
	}
	crossings := 0
	for i := 7000; i < 23000; i++ {
		if (out[i-1] < 0) != (out[i] < 0) {
			crossings++
		}
	}
	if got := float64(crossings) / 2 / (16000.0 / 24000); math.Abs(got-f) > 3 {
		t.Errorf("frequency %.1f Hz, want %.0f", got, f)
	}
}

// tinyTask is one task with a two-plan bank, for import tests.
func tinyTask(tb testing.TB) *task.Task {
	tb.Helper()
	tk := mustTask(tb, "hr-leave-request")
	tk.Bank = map[string][]string{
		"affirm": {"Yes, that's right.", "Yes, that's correct."},
		"close":  {"No, that's everything. Thank you so much. Bye.", "That's all, thanks for your help. Have a good day."},
	}
	return tk
}

// speechLike writes a 24 kHz mono clip of d seconds: a vowel-like tone with syllable gaps.
func speechLike(tb testing.TB, path string, rate, channels int, seconds float64, amp float64) {
	tb.Helper()
	n := int(seconds * float64(rate))
	pcm := make([]int16, n*channels)
	for i := 0; i < n; i++ {
		env := 0.0
		if (i/(rate/5))%2 == 0 {
			env = 1
		}
		s := int16(amp * env * math.Sin(2*math.Pi*180*float64(i)/float64(rate)))
		for c := 0; c < channels; c++ {
			pcm[i*channels+c] = s
		}
	}
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := audio.WriteWAV(path, rate, channels, pcm); err != nil {
		tb.Fatal(err)
	}
}

func TestImportChecksEveryVariantThenReplacesFlite(t *testing.T) {
	needFlite(t)
	tk := tinyTask(t)
	tasks := []*task.Task{tk}
	dir := t.TempDir()
	if _, err := Build(context.Background(), tasks, BuildOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	vs := Variants(tk)
	src := t.TempDir()
	for _, v := range vs {
		speechLike(t, filepath.Join(src, FileName(v)), 24000, 1, 0.4*float64(len(strings.Fields(v.Text)))+0.3, 6000)
	}

	bad := t.TempDir()
	for i, v := range vs {
		p := filepath.Join(bad, FileName(v))
		words := float64(len(strings.Fields(v.Text)))
		switch i {
		case 0: // missing
		case 1:
			speechLike(t, p, 16000, 1, 0.4*words+0.3, 6000)
		case 2:
			speechLike(t, p, 24000, 2, 0.4*words+0.3, 6000)
		case 3:
			speechLike(t, p, 24000, 1, 0.4*words+0.3, 20)
		}
	}
	before, _ := LoadManifest(dir)
	_, err := Import(tasks, bad, dir)
	var probs AudioProblems
	if !errors.As(err, &probs) || !errors.Is(err, ErrBadAudio) {
		t.Fatalf("import of bad audio: %v, want AudioProblems", err)
	}
	for _, want := range []string{"missing", "16000 Hz, 1 channels; want 24000 Hz mono", "24000 Hz, 2 channels", "silent"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("problems do not mention %q:\n%v", want, err)
		}
	}
	if after, _ := LoadManifest(dir); len(after.Entries) != len(before.Entries) || after.Entries[0].Source != SourceFlite {
		t.Error("a failed import changed the bank")
	}

	// Too short for the text.
	short := t.TempDir()
	for _, v := range vs {
		speechLike(t, filepath.Join(short, FileName(v)), 24000, 1, 0.4*float64(len(strings.Fields(v.Text)))+0.3, 6000)
	}
	long := vs[len(vs)-1]
	speechLike(t, filepath.Join(short, FileName(long)), 24000, 1, 0.2, 6000)
	if _, err := Import(tasks, short, dir); err == nil || !strings.Contains(err.Error(), "words are said in") {
		t.Errorf("a 0.2 s file for %q was accepted: %v", long.Text, err)
	}

	rep, err := Import(tasks, src, dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Imported != len(vs) {
		t.Errorf("imported %d, want %d", rep.Imported, len(vs))
	}
	m, _ := LoadManifest(dir)
	for _, e := range m.Entries {
		got, _ := os.ReadFile(filepath.Join(dir, e.File))
		want, _ := os.ReadFile(filepath.Join(src, e.File))
		if e.Source != SourceImport || !bytes.Equal(got, want) || fileHash(filepath.Join(dir, e.File)) != e.SHA256 {
			t.Errorf("%s: not replaced by the imported file (source %s)", e.File, e.Source)
		}
	}
	// Later builds keep the imported audio.
	b, err := Build(context.Background(), tasks, BuildOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if b.Rendered != 0 {
		t.Errorf("build after import rendered %d variants over the imported audio", b.Rendered)
	}
	if m2, _ := LoadManifest(dir); m2.Entries[0].Source != SourceImport {
		t.Error("build after import lost the imported source")
	}
}
