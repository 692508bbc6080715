package condition

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
)

// Speaker speaks text in one of the machine's voices as mono PCM16 at Rate (tts.Flite does).
type Speaker interface {
	Speak(ctx context.Context, voice, text string) ([]int16, error)
}

// GeneratorVersion changes whenever a generator's output for the same recipe changes; it is
// part of every recipe, so a bed is never silently replaced by a different one under one name.
const GeneratorVersion = 1

// Recipe is how a noise bed is made. Its hash names the bed, and it is recorded beside the bed
// and in the trace of every call that heard it.
type Recipe struct {
	Name      string   `json:"name"` // background_tv, babble or street
	Generator int      `json:"generator_version"`
	Seed      uint64   `json:"seed"`
	Seconds   int      `json:"seconds"` // the bed's length; calls loop it
	Rate      int      `json:"rate"`
	Voices    []string `json:"voices"` // Flite voices (a "@1.12" suffix plays a voice faster, like a different talker)
	Texts     []string `json:"texts"`  // ids of the public-domain passages read (texts.go)
	// LevelDBFS is the RMS the bed is normalised to before it is rounded to 16 bits.
	LevelDBFS float64 `json:"level_dbfs"`
	Mix       string  `json:"mix"` // what the generator layers, in words
}

// Hash is the SHA-256 of the recipe's JSON.
func (r Recipe) Hash() string {
	b, _ := json.Marshal(r)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ID names the bed of a recipe: "background_tv-<first 12 hex digits of the hash>".
func (r Recipe) ID() string { return r.Name + "-" + r.Hash()[:12] }

// DefaultRecipe is the recipe the console uses for a noise condition.
func DefaultRecipe(name string) (Recipe, error) {
	r := Recipe{Name: name, Generator: GeneratorVersion, Seed: 19, Seconds: 120, Rate: Rate, LevelDBFS: -20}
	switch name {
	case Babble:
		r.Voices = []string{"kal", "awb", "rms", "slt", "kal16", "slt@1.12", "awb@0.9", "rms@1.08"}
		r.Texts = textIDs()
		r.Mix = "eight talkers (Flite voices, three of them played faster or slower) each reading different public-domain passages with short pauses, equal in level, summed"
	case BackgroundTV:
		r.Voices = []string{"kal16", "slt", "awb", "rms"}
		r.Texts = textIDs()
		r.Mix = "a television: dialogue of two alternating Flite voices through a 150 Hz–7 kHz speaker band, music-like jingles (chords, bass and a pentatonic melody of harmonic tones), applause-like bursts of filtered noise clicks, and music under some of the talk"
	case Street:
		r.Voices = []string{"rms", "slt"}
		r.Texts = textIDs()
		r.Mix = "street: low-passed brown-noise traffic rumble, passing vehicles (swept low-passed noise with an engine tone rising and falling in pitch), occasional two-tone horns, two distant talkers low-passed at 3 kHz"
	default:
		return Recipe{}, fmt.Errorf("%w: no noise bed for %q", ErrBadSpec, name)
	}
	return r, nil
}

// Bed is a noise bed: Seconds of mono PCM16 at Rate, made from its recipe.
type Bed struct {
	Recipe  Recipe  `json:"recipe"`
	SHA256  string  `json:"sha256"`   // of the samples, little-endian
	RMSDBFS float64 `json:"rms_dbfs"` // of the samples as stored
	Speaker string  `json:"speaker"`  // what spoke (flite version and voices)
	PCM     []int16 `json:"-"`
}

// ID is the recipe's ID.
func (b *Bed) ID() string { return b.Recipe.ID() }

func samplesSHA(pcm []int16) string {
	h := sha256.New()
	buf := make([]byte, 2*4096)
	for len(pcm) > 0 {
		n := min(len(pcm), 4096)
		for i, s := range pcm[:n] {
			binary.LittleEndian.PutUint16(buf[2*i:], uint16(s))
		}
		h.Write(buf[:2*n])
		pcm = pcm[n:]
	}
	return hex.EncodeToString(h.Sum(nil))
}

func rmsDBFS(pcm []int16) float64 {
	if len(pcm) == 0 {
		return -120
	}
	var s float64
	for _, v := range pcm {
		s += float64(v) * float64(v)
	}
	r := math.Sqrt(s / float64(len(pcm)))
	if r < 1e-9 {
		return -120
	}
	return 20 * math.Log10(r/32768)
}

// Build makes the bed of a recipe. The same recipe and speaker give the same samples.
func Build(ctx context.Context, r Recipe, sp Speaker, speakerName string) (*Bed, error) {
	if r.Rate != Rate {
		return nil, fmt.Errorf("recipe %s: rate %d, want %d", r.Name, r.Rate, Rate)
	}
	if r.Seconds < 1 {
		return nil, fmt.Errorf("recipe %s: seconds %d, want at least 1", r.Name, r.Seconds)
	}
	g := &generator{ctx: ctx, r: r, sp: sp, rng: newRNG(r.Seed), n: r.Seconds * Rate}
	var x []float64
	var err error
	switch r.Name {
	case Babble:
		x, err = g.babble()
	case BackgroundTV:
		x, err = g.television()
	case Street:
		x, err = g.street()
	default:
		return nil, fmt.Errorf("%w: no noise bed for %q", ErrBadSpec, r.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("build %s bed: %w", r.Name, err)
	}
	normalise(x, r.LevelDBFS)
	pcm := make([]int16, len(x))
	for i, v := range x {
		pcm[i] = clip16(v)
	}
	return &Bed{Recipe: r, PCM: pcm, SHA256: samplesSHA(pcm), RMSDBFS: rmsDBFS(pcm), Speaker: speakerName}, nil
}

// Library keeps the noise beds of a data directory (Dir/<bed id>.wav with a .json beside it),
// building a missing one with Speaker. It is safe for concurrent use.
type Library struct {
	Dir         string
	Speaker     Speaker
	SpeakerName string // recorded with beds it builds ("flite 2.2, voices …")

	mu   sync.Mutex
	beds map[string]*Bed
}

// ErrNoBed means a bed is neither on disk nor buildable (no speaker).
var ErrNoBed = errors.New("noise bed not built")

// Bed returns the bed of a noise condition: cached, read from Dir, or built and saved.
func (l *Library) Bed(ctx context.Context, name string) (*Bed, error) {
	r, err := DefaultRecipe(name)
	if err != nil {
		return nil, err
	}
	return l.BedOf(ctx, r)
}

// BedOf is Bed for any recipe.
func (l *Library) BedOf(ctx context.Context, r Recipe) (*Bed, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.beds[r.ID()]; ok {
		return b, nil
	}
	b, err := Load(l.Dir, r)
	if errors.Is(err, os.ErrNotExist) {
		if l.Speaker == nil {
			return nil, fmt.Errorf("%w: %s (run audit conditions build)", ErrNoBed, filepath.Join(l.Dir, r.ID()+".wav"))
		}
		if b, err = Build(ctx, r, l.Speaker, l.SpeakerName); err == nil {
			err = Save(l.Dir, b)
		}
	}
	if err != nil {
		return nil, err
	}
	if l.beds == nil {
		l.beds = map[string]*Bed{}
	}
	l.beds[r.ID()] = b
	return b, nil
}

// Processor prepares spec for one call with seed, reading or building its bed.
func (l *Library) Processor(ctx context.Context, spec Spec, seed int64) (*Processor, error) {
	var bed *Bed
	if spec.Noise != "" {
		var err error
		if bed, err = l.Bed(ctx, spec.Noise); err != nil {
			return nil, err
		}
	}
	return NewProcessor(spec, bed, seed)
}

// Save writes bed as Dir/<id>.wav (mono, 16 bit) and Dir/<id>.json (recipe, hash, level).
func Save(dir string, bed *Bed) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(dir, bed.ID())
	if err := writeFileAtomic(base+".wav", wavBytes(bed.PCM)); err != nil {
		return err
	}
	meta, err := json.MarshalIndent(bed, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(base+".json", append(meta, '\n'))
}

// Load reads the bed of recipe r from dir and checks its samples against the recorded hash.
func Load(dir string, r Recipe) (*Bed, error) {
	base := filepath.Join(dir, r.ID())
	meta, err := os.ReadFile(base + ".json")
	if err != nil {
		return nil, err
	}
	var b Bed
	if err := json.Unmarshal(meta, &b); err != nil {
		return nil, fmt.Errorf("%s.json: %w", base, err)
	}
	if b.Recipe.Hash() != r.Hash() {
		return nil, fmt.Errorf("%s.json: recipe differs from the one asked for (hash %s, want %s)", base, b.Recipe.Hash()[:12], r.Hash()[:12])
	}
	data, err := os.ReadFile(base + ".wav")
	if err != nil {
		return nil, err
	}
	if b.PCM, err = parseWAV(data); err != nil {
		return nil, fmt.Errorf("%s.wav: %w", base, err)
	}
	if got := samplesSHA(b.PCM); got != b.SHA256 {
		return nil, fmt.Errorf("%s.wav: samples hash %s, recorded %s: the file changed since it was built", base, got[:12], b.SHA256[:12])
	}
	return &b, nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// wavBytes is a mono 16-bit WAV of pcm at Rate.
func wavBytes(pcm []int16) []byte {
	var b bytes.Buffer
	data := uint32(2 * len(pcm))
	b.WriteString("RIFF")
	binary.Write(&b, binary.LittleEndian, 36+data)
	b.WriteString("WAVEfmt ")
	binary.Write(&b, binary.LittleEndian, uint32(16))
	binary.Write(&b, binary.LittleEndian, uint16(1)) // PCM
	binary.Write(&b, binary.LittleEndian, uint16(1)) // mono
	binary.Write(&b, binary.LittleEndian, uint32(Rate))
	binary.Write(&b, binary.LittleEndian, uint32(2*Rate))
	binary.Write(&b, binary.LittleEndian, uint16(2))
	binary.Write(&b, binary.LittleEndian, uint16(16))
	b.WriteString("data")
	binary.Write(&b, binary.LittleEndian, data)
	binary.Write(&b, binary.LittleEndian, pcm)
	return b.Bytes()
}

// parseWAV reads the mono 16-bit WAV wavBytes writes.
func parseWAV(data []byte) ([]int16, error) {
	if len(data) < 44 || string(data[:4]) != "RIFF" || string(data[8:16]) != "WAVEfmt " || string(data[36:40]) != "data" {
		return nil, errors.New("not a WAV file written by the condition package")
	}
	if ch, bits, rate := binary.LittleEndian.Uint16(data[22:]), binary.LittleEndian.Uint16(data[34:]), binary.LittleEndian.Uint32(data[24:]); ch != 1 || bits != 16 || rate != Rate {
		return nil, fmt.Errorf("%d channels, %d bits at %d Hz; want mono 16-bit at %d", ch, bits, rate, Rate)
	}
	n := int(binary.LittleEndian.Uint32(data[40:]))
	if n%2 != 0 || 44+n > len(data) {
		return nil, fmt.Errorf("data chunk of %d bytes in a file of %d", n, len(data))
	}
	pcm := make([]int16, n/2)
	binary.Read(bytes.NewReader(data[44:44+n]), binary.LittleEndian, pcm)
	return pcm, nil
}
