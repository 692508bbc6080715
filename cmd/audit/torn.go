package main

import (
	"fmt"
	"io"

	"github.com/voicebench/humanaudit/internal/trace"
)

// readTrace reads a JSONL trace for grading. A last line torn by a crash is left out with a note
// on stderr when allowIncomplete is set, and is an error saying so otherwise; any other malformed
// line is an error naming the file and the line.
func readTrace(path string, allowIncomplete bool, stderr io.Writer) ([]trace.Event, error) {
	events, torn, err := trace.ReadFileTolerant(path)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	if torn == nil {
		return events, nil
	}
	if !allowIncomplete {
		return nil, fmt.Errorf("read trace: %s: line %d is torn (%d bytes with no newline: the call was cut short mid-write); grade the events before it with --allow-incomplete",
			path, torn.Line, torn.Bytes)
	}
	fmt.Fprintf(stderr, "note: %s: %s\n", path, torn)
	return events, nil
}
