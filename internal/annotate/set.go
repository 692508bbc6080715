package annotate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/task"
)

// ManifestFile is the bank manifest's name in the bank directory (audit_data/bank).
const ManifestFile = "manifest.json"

// manifest is the part of the bank manifest the rating app needs: where each variant's WAV is.
type manifest struct {
	Entries []struct {
		Task    string `json:"task"`
		Plan    string `json:"plan"`
		Variant int    `json:"variant"`
		File    string `json:"file"` // relative to the bank directory
	} `json:"entries"`
}

// AudioIndex maps (task, plan, variant) to a WAV under the bank directory, from its manifest.
type AudioIndex struct {
	Dir   string
	files map[string]string
}

// LoadAudioIndex reads bankDir's manifest; a missing manifest gives an empty index.
func LoadAudioIndex(bankDir string) (*AudioIndex, error) {
	ix := &AudioIndex{Dir: bankDir, files: map[string]string{}}
	b, err := os.ReadFile(filepath.Join(bankDir, ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return ix, nil
	}
	if err != nil {
		return nil, fmt.Errorf("bank manifest: %w", err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("bank manifest %s: %w", filepath.Join(bankDir, ManifestFile), err)
	}
	for _, e := range m.Entries {
		ix.files[e.Task+"\x00"+e.Plan+"\x00"+strconv.Itoa(e.Variant)] = e.File
	}
	return ix, nil
}

// Resolve returns the item's WAV relative to the bank directory: the manifest's file for its
// (task, plan, variant), else the item's own audio path when it lies in the bank directory. The
// file must exist.
func (ix *AudioIndex) Resolve(it BankItem) (string, error) {
	rel, ok := ix.files[it.Task+"\x00"+it.Plan+"\x00"+strconv.Itoa(int(it.Variant))]
	if !ok && it.Audio != "" {
		rel = it.Audio
		if filepath.IsAbs(rel) || strings.HasPrefix(filepath.Clean(rel), filepath.Clean(ix.Dir)+string(filepath.Separator)) {
			r, err := filepath.Rel(ix.Dir, rel)
			if err != nil {
				return "", fmt.Errorf("item %s/%s/%d: audio %s is not under the bank directory %s", it.Task, it.Plan, it.Variant, it.Audio, ix.Dir)
			}
			rel = r
		}
	}
	if rel == "" {
		return "", fmt.Errorf("item %s/%s/%d: no audio in %s (run audit bank build)", it.Task, it.Plan, it.Variant, filepath.Join(ix.Dir, ManifestFile))
	}
	path, err := AudioPath(ix.Dir, rel)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(path); err != nil || st.IsDir() {
		return "", fmt.Errorf("item %s/%s/%d: audio %s is missing (run audit bank build)", it.Task, it.Plan, it.Variant, path)
	}
	return filepath.ToSlash(rel), nil
}

// AudioPath joins a payload's audio path to the bank directory, refusing paths that leave it.
func AudioPath(bankDir, rel string) (string, error) {
	clean := filepath.Clean(filepath.FromSlash(rel))
	if rel == "" || filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("audio path %q is not inside the bank directory", rel)
	}
	return filepath.Join(bankDir, clean), nil
}

// SetConfig is what a study's config records (under "annotation") about its rating set.
type SetConfig struct {
	// Title is the annotation task's own title, shown to annotators (not the participants' study
	// title); empty shows DefaultTitle.
	Title string   `json:"title,omitempty"`
	Items []string `json:"items"` // item ids; each annotator rates all of them in their own order
}

// DefaultTitle is the annotators' page title when the rating set has none.
const DefaultTitle = "Rating caller utterances"

// StudySet reads the rating set of a study's config.
func StudySet(cfg json.RawMessage) SetConfig {
	var doc struct {
		Annotation SetConfig `json:"annotation"`
	}
	json.Unmarshal(cfg, &doc)
	return doc.Annotation
}

// WithSet returns the study config cfg with its rating set replaced.
func WithSet(cfg json.RawMessage, set SetConfig) (json.RawMessage, error) {
	return audit.WithConfig(cfg, "annotation", set)
}

// Prepare blinds every bank item against its task and resolves its audio: the stored rating items.
// Every problem is reported, one per line.
func Prepare(items []BankItem, tasks []*task.Task, audio *AudioIndex) ([]audit.RatingItem, error) {
	byID := map[string]*task.Task{}
	for _, t := range tasks {
		byID[t.ID] = t
	}
	var out []audit.RatingItem
	var errs []error
	seen := map[string]bool{}
	for _, it := range items {
		bl, err := Blind(byID[it.Task], it)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[bl.ID] {
			errs = append(errs, fmt.Errorf("%w: item %s/%s/%d appears twice", ErrBadItem, it.Task, it.Plan, it.Variant))
			continue
		}
		seen[bl.ID] = true
		if bl.Payload.Audio, err = audio.Resolve(it); err != nil {
			errs = append(errs, err)
			continue
		}
		payload, _ := json.Marshal(bl.Payload)
		out = append(out, audit.RatingItem{ID: bl.ID, TaskID: bl.Task, PlanID: bl.Plan, Variant: strconv.Itoa(bl.Variant), Payload: payload})
	}
	return out, errors.Join(errs...)
}

// ParsePayload decodes a stored item's payload.
func ParsePayload(raw json.RawMessage) (Payload, error) {
	var p Payload
	if err := json.Unmarshal(raw, &p); err != nil {
		return Payload{}, fmt.Errorf("rating item payload: %w", err)
	}
	return p, nil
}
