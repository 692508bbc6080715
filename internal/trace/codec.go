package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// MaxLineBytes bounds one JSONL line (a raw provider event with an audio delta can be large).
const MaxLineBytes = 16 << 20

// WriteJSONL writes events one JSON object per line. The encoding is canonical: the same events
// always give the same bytes.
func WriteJSONL(w io.Writer, events []Event) error {
	bw := bufio.NewWriter(w)
	for i := range events {
		b, err := MarshalEvent(events[i])
		if err != nil {
			return err
		}
		bw.Write(b)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// MarshalEvent encodes one event canonically, without a trailing newline.
func MarshalEvent(e Event) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, fmt.Errorf("encode event %d (%s): %w", e.Seq, e.Type, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// ReadJSONL decodes a JSONL trace. Blank lines are skipped; an error names the line.
func ReadJSONL(r io.Reader) ([]Event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	var events []Event
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if e.Type == "" {
			return nil, fmt.Errorf("line %d: event has no type", line)
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	return events, nil
}

// ReadFile decodes the JSONL trace at path.
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ev, err := ReadJSONL(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ev, nil
}

// WriteFile writes events as JSONL to path.
func WriteFile(path string, events []Event) error {
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, events); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
