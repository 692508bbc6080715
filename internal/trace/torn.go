package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// TornLine is a trace's final line cut short by a crash: bytes with no terminating newline that
// are not a whole JSON value. Every event is written as one line ending in a newline, so only the
// write in progress when a process died can be torn.
type TornLine struct {
	Line  int // 1-based line number
	Bytes int // length of the fragment
}

func (t TornLine) String() string {
	return fmt.Sprintf("line %d is torn (%d bytes with no newline, what a crash leaves mid-write): left out", t.Line, t.Bytes)
}

// ReadJSONLTolerant decodes a JSONL trace like ReadJSONL but tolerates a torn final line, which it
// leaves out and reports. Any other malformed line is an error naming the line, as with
// ReadJSONL; a final line without a newline that decodes is kept.
func ReadJSONLTolerant(r io.Reader) ([]Event, *TornLine, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var events []Event
	var buf []byte
	for line := 1; ; line++ {
		b, complete, err := readLine(br, &buf)
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", line, err)
		}
		if b == nil {
			return events, nil, nil
		}
		t := bytes.TrimSpace(b)
		if len(t) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(t, &e); err != nil {
			// Only a fragment cut short (no newline, not decodable) is a crash's tear.
			if !complete {
				return events, &TornLine{Line: line, Bytes: len(b)}, nil
			}
			return nil, nil, fmt.Errorf("line %d: %w", line, err)
		}
		if e.Type == "" {
			return nil, nil, fmt.Errorf("line %d: event has no type", line)
		}
		events = append(events, e)
		if !complete {
			return events, nil, nil
		}
	}
}

// readLine returns the next line without its newline (nil at the end of input) and whether it
// ended in one. Lines longer than MaxLineBytes are an error.
func readLine(br *bufio.Reader, buf *[]byte) ([]byte, bool, error) {
	*buf = (*buf)[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		*buf = append(*buf, chunk...)
		if len(*buf) > MaxLineBytes {
			return nil, false, fmt.Errorf("line longer than %d bytes", MaxLineBytes)
		}
		switch {
		case err == nil:
			return (*buf)[:len(*buf)-1], true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(*buf) == 0 {
				return nil, false, nil
			}
			return *buf, false, nil
		default:
			return nil, false, err
		}
	}
}

// ReadFileTolerant decodes the JSONL trace at path, tolerating a torn final line (see
// ReadJSONLTolerant). Errors name the file and the line.
func ReadFileTolerant(path string) ([]Event, *TornLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	ev, torn, err := ReadJSONLTolerant(f)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return ev, torn, nil
}
