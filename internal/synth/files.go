package synth

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// writeFile writes a file through a temporary sibling and a rename, so a reader never sees half.
func writeFile(path string, fill func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := fill(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func writeCSV(path string, rows [][]string) error {
	return writeFile(path, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		if err := cw.WriteAll(rows); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	})
}
