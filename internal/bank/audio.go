package bank

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/tts"
)

// SampleRate is the rate of every bank WAV: the rate realtime voice agents take.
const SampleRate = 24000

// ManifestFile is the manifest's name inside the bank directory.
const ManifestFile = "manifest.json"

// DefaultFlite is Debian's CMU Flite binary.
const DefaultFlite = "/usr/bin/flite"

// DefaultVoice is used when a persona names no voice.
const DefaultVoice = "slt"

// Audio sources of a manifest entry.
const (
	SourceFlite  = "flite"
	SourceImport = "import"
)

// Entry is one rendered variant in the manifest.
type Entry struct {
	Task       string `json:"task"`
	Plan       string `json:"plan"`
	Variant    int    `json:"variant"`
	Text       string `json:"text"`
	File       string `json:"file"` // relative to the bank directory
	Voice      string `json:"voice"`
	Source     string `json:"source"` // flite or import
	DurationMS int64  `json:"duration_ms"`
	SHA256     string `json:"sha256"`
}

// Manifest lists the bank's audio, one entry per variant, in task, plan and variant order.
type Manifest struct {
	SampleRate int     `json:"sample_rate"`
	Entries    []Entry `json:"entries"`
}

// ErrBadAudio marks imported audio that fails the manifest checks; the wrapping error lists every
// problem.
var ErrBadAudio = errors.New("bank: audio does not match the bank")

// LoadManifest reads dir/manifest.json; a missing manifest is an empty one.
func LoadManifest(dir string) (Manifest, error) {
	m := Manifest{SampleRate: SampleRate}
	data, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("read bank manifest: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("read bank manifest %s: %w", filepath.Join(dir, ManifestFile), err)
	}
	return m, nil
}

func writeManifest(dir string, m Manifest) error {
	sort.SliceStable(m.Entries, func(i, j int) bool { return m.Entries[i].File < m.Entries[j].File })
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, ManifestFile), append(data, '\n'))
}

// voiceOf is the Flite voice of a task's persona.
func voiceOf(t *task.Task) string {
	if v := t.User.Persona.Voice; v != "" {
		return v
	}
	return DefaultVoice
}

// BuildOptions configure Build.
type BuildOptions struct {
	Dir      string    // bank directory (audit_data/bank)
	Flite    string    // flite binary (default DefaultFlite)
	Workers  int       // parallel Flite processes (default 2)
	Progress io.Writer // progress bar (stderr); nil for none
	// Only, when set, limits rendering to the variants it accepts (the manifest keeps the others).
	Only func(Variant) bool
}

// BuildReport says what Build did.
type BuildReport struct {
	Rendered int // variants rendered now
	Skipped  int // variants whose file already had the manifest's hash (Flite or imported audio)
}

// Build renders every variant of every task to a 24 kHz mono 16-bit WAV with Flite in the task
// persona's voice, and writes the manifest. Flite writes 16 kHz; the audio is resampled in process,
// so the same text and voice always give the same bytes. A variant whose file already exists with
// the manifest's hash for the same text and voice is skipped, which also keeps imported audio.
func Build(ctx context.Context, tasks []*task.Task, opts BuildOptions) (BuildReport, error) {
	if opts.Flite == "" {
		opts.Flite = DefaultFlite
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return BuildReport{}, fmt.Errorf("bank build: %w", err)
	}
	old, err := LoadManifest(opts.Dir)
	if err != nil {
		return BuildReport{}, err
	}
	prev := map[string]Entry{}
	for _, e := range old.Entries {
		prev[e.File] = e
	}

	type job struct {
		v     Variant
		voice string
	}
	var jobs []job
	var entries []Entry
	var rep BuildReport
	for _, t := range tasks {
		for _, v := range Variants(t) {
			file := FileName(v)
			e, had := prev[file]
			if opts.Only != nil && !opts.Only(v) {
				if had && e.Text == v.Text {
					entries = append(entries, e)
				}
				continue
			}
			if had && e.SHA256 != "" && e.Text == v.Text && (e.Voice == voiceOf(t) || e.Source == SourceImport) && fileHash(filepath.Join(opts.Dir, file)) == e.SHA256 {
				entries = append(entries, e)
				rep.Skipped++
				continue
			}
			jobs = append(jobs, job{v, voiceOf(t)})
		}
	}

	bar := newProgressBar(opts.Progress, len(jobs))
	results := make([]Entry, len(jobs))
	errs := make([]error, len(jobs))
	next := make(chan int)
	speaker := &tts.Flite{Binary: opts.Flite, Rate: SampleRate, MemoLimit: -1}
	var wg sync.WaitGroup
	for w := 0; w < opts.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i], errs[i] = renderVariant(ctx, speaker, jobs[i].v, opts.Dir, jobs[i].voice)
				bar.step(jobs[i].v.Task + " " + jobs[i].v.Plan)
			}
		}()
	}
	for i := range jobs {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	bar.done()
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	for i, err := range errs {
		if err != nil {
			return rep, fmt.Errorf("bank build: %s %s variant %d: %w", jobs[i].v.Task, jobs[i].v.Plan, jobs[i].v.Variant, err)
		}
		entries = append(entries, results[i])
		rep.Rendered++
	}
	return rep, writeManifest(opts.Dir, Manifest{SampleRate: SampleRate, Entries: entries})
}

// renderVariant speaks one variant with Flite and stores it as the bank's WAV.
func renderVariant(ctx context.Context, speaker *tts.Flite, v Variant, dir, voice string) (Entry, error) {
	pcm, err := speaker.Speak(ctx, voice, v.Text)
	if err != nil {
		return Entry{}, err
	}
	file := FileName(v)
	path := filepath.Join(dir, file)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return Entry{}, err
	}
	if err := writeWAVAtomic(path, pcm); err != nil {
		return Entry{}, err
	}
	return Entry{Task: v.Task, Plan: v.Plan, Variant: v.Variant, Text: v.Text, File: file, Voice: voice, Source: SourceFlite,
		DurationMS: int64(len(pcm)) * 1000 / SampleRate, SHA256: fileHash(path)}, nil
}

func writeWAVAtomic(path string, pcm []int16) error {
	tmp := path + ".tmp"
	if err := audio.WriteWAV(tmp, SampleRate, 1, pcm); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// fileHash is the hex SHA-256 of a file, or "" when it cannot be read.
func fileHash(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Audio checks for imported files: the level below which a clip counts as silent, and how fast a
// caller can plausibly speak (words per second, with room for pauses).
const (
	silenceRMS       = 100.0 // about -50 dBFS
	maxWordsPerSec   = 7.0
	minWordsPerSec   = 0.8
	durationSlackSec = 2.0
)

// AudioProblem is one imported file that fails the checks.
type AudioProblem struct {
	Variant Variant
	File    string
	Reason  string
}

func (p AudioProblem) String() string {
	return fmt.Sprintf("%s: %s: %d: %s: %s", p.Variant.Task, p.Variant.Plan, p.Variant.Variant, p.File, p.Reason)
}

// AudioProblems is the list of problems of an import; as an error it prints one per line.
type AudioProblems []AudioProblem

func (ps AudioProblems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

func (ps AudioProblems) Unwrap() error { return ErrBadAudio }

// ImportReport says what Import did.
type ImportReport struct {
	Imported int
}

// Import takes audio rendered elsewhere (a neural TTS voice, a recorded actor) for the same
// variants: src must hold a WAV for every variant under the bank's file name (task/plan.N.wav),
// 24 kHz mono 16-bit, not silent, and of a duration plausible for the text. If any file fails,
// nothing changes and the error (AudioProblems) lists every problem; otherwise the files replace
// Flite's in dir and the manifest marks them imported, so later builds keep them.
func Import(tasks []*task.Task, src, dir string) (ImportReport, error) {
	var probs AudioProblems
	var entries []Entry
	for _, t := range tasks {
		for _, v := range Variants(t) {
			file := FileName(v)
			path := filepath.Join(src, file)
			e, reason := checkImported(path, v)
			if reason != "" {
				probs = append(probs, AudioProblem{Variant: v, File: path, Reason: reason})
				continue
			}
			e.Voice = voiceOf(t)
			entries = append(entries, e)
		}
	}
	if len(probs) > 0 {
		return ImportReport{}, probs
	}
	for i, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.File))
		if err != nil {
			return ImportReport{}, fmt.Errorf("bank import: %w", err)
		}
		dst := filepath.Join(dir, e.File)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return ImportReport{}, fmt.Errorf("bank import: %w", err)
		}
		if err := writeAtomic(dst, data); err != nil {
			return ImportReport{}, fmt.Errorf("bank import: %w", err)
		}
		entries[i].SHA256 = fileHash(dst)
	}
	if err := writeManifest(dir, Manifest{SampleRate: SampleRate, Entries: entries}); err != nil {
		return ImportReport{}, fmt.Errorf("bank import: %w", err)
	}
	return ImportReport{Imported: len(entries)}, nil
}

// checkImported reads one imported file and returns its manifest entry, or why it is refused.
func checkImported(path string, v Variant) (Entry, string) {
	if _, err := os.Stat(path); err != nil {
		return Entry{}, "missing (every variant needs a file)"
	}
	w, err := audio.ReadWAV(path)
	if err != nil {
		return Entry{}, "not a 16-bit PCM WAV file: " + err.Error()
	}
	if w.Rate != SampleRate || w.Channels != 1 {
		return Entry{}, fmt.Sprintf("%d Hz, %d channels; want %d Hz mono", w.Rate, w.Channels, SampleRate)
	}
	if rms(w.Samples) < silenceRMS {
		return Entry{}, fmt.Sprintf("silent (RMS %.0f, want at least %.0f)", rms(w.Samples), silenceRMS)
	}
	dur := w.Duration()
	words := float64(len(strings.Fields(v.Text)))
	lo := time.Duration(words / maxWordsPerSec * float64(time.Second))
	hi := time.Duration((words/minWordsPerSec + durationSlackSec) * float64(time.Second))
	if dur < lo || dur > hi {
		return Entry{}, fmt.Sprintf("lasts %.2f s; %d words are said in %.2f to %.2f s", dur.Seconds(), int(words), lo.Seconds(), hi.Seconds())
	}
	return Entry{Task: v.Task, Plan: v.Plan, Variant: v.Variant, Text: v.Text, File: FileName(v), Source: SourceImport,
		DurationMS: dur.Milliseconds(), SHA256: fileHash(path)}, ""
}

func rms(s []int16) float64 {
	if len(s) == 0 {
		return 0
	}
	var sum float64
	for _, x := range s {
		sum += float64(x) * float64(x)
	}
	return math.Sqrt(sum / float64(len(s)))
}

// progressBar draws "[#####.....] 120/1406 task plan" on one terminal line.
type progressBar struct {
	tty   bool
	mu    sync.Mutex
	w     io.Writer
	total int
	n     int
}

func newProgressBar(w io.Writer, total int) *progressBar {
	return &progressBar{w: w, total: total, tty: isTerminal(w)}
}

// isTerminal reports whether w is a character device: a bar redrawn with \r suits a terminal, a
// log file gets a line per tenth instead.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (p *progressBar) step(label string) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	const width = 30
	filled := width
	if p.total > 0 {
		filled = p.n * width / p.total
	}
	if len(label) > 48 {
		label = label[:48]
	}
	if !p.tty {
		if p.total > 0 && (p.n*10/p.total != (p.n-1)*10/p.total || p.n == p.total) {
			fmt.Fprintf(p.w, "[%s%s] %d/%d %s\n", strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.n, p.total, label)
		}
		return
	}
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d %-48s", strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.n, p.total, label)
}

func (p *progressBar) done() {
	if p.w == nil || p.total == 0 || !p.tty {
		return
	}
	fmt.Fprintln(p.w)
}
