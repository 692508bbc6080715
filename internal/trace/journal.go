package trace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Journal is a Sink that appends a session's events to a JSONL file on the console's own disk as
// they are made durable elsewhere: the trace then sits beside its recording as a plain file that
// `audit grade` reads without a database. A crash can leave its last line torn
// (ReadFileTolerant). Put it after the database sink: the file holds only acknowledged events.
//
// A journal is a copy, so its own failures never fail an event: the first one is kept (Err) and
// the journal stops writing.
type Journal struct {
	mu   sync.Mutex
	path string
	f    *os.File
	err  error
}

var _ Sink = (*Journal)(nil)

// CreateJournal creates (truncating) the journal file at path.
func CreateJournal(path string) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("trace journal: %w", err)
	}
	return &Journal{path: path, f: f}, nil
}

// Path returns the journal's file.
func (j *Journal) Path() string { return j.path }

// WriteEvent appends e as one line in a single write, so a crash tears at most that line.
func (j *Journal) WriteEvent(_ context.Context, e Event) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil || j.err != nil {
		return nil
	}
	b, err := MarshalEvent(e)
	if err == nil {
		_, err = j.f.Write(append(b, '\n'))
	}
	if err != nil {
		j.err = fmt.Errorf("trace journal %s: event %d: %w", j.path, e.Seq, err)
	}
	return nil
}

// Err returns the journal's first write error, if any.
func (j *Journal) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// Close closes the file. Closing twice is a no-op.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return j.err
	}
	err := j.f.Close()
	j.f = nil
	if j.err != nil {
		return j.err
	}
	return err
}

// ReplaceFile writes events as the whole JSONL trace at path, atomically (a temporary file renamed
// over it), so a reader never sees a half-written trace.
func ReplaceFile(path string, events []Event) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("replace trace %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := WriteJSONL(tmp, events); err != nil {
		tmp.Close()
		return fmt.Errorf("replace trace %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("replace trace %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("replace trace %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("replace trace %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace trace %s: %w", path, err)
	}
	return nil
}
