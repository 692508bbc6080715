package main

import (
	"fmt"
	"os"

	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/trace"
)

// checkTraceLines checks every line of a trace file against the documented field types, before
// decoding, so that a wrong type is named with its line and field.
func checkTraceLines(file string, allowUnknown bool) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("read trace: %w", err)
	}
	if ds := trace.CheckLines(data, allowUnknown); len(ds) > 0 {
		return fmt.Errorf("%s: the trace does not verify:\n%w", file, ds)
	}
	return nil
}

// checkTraceEvents verifies a decoded trace (numbering, types, required fields, the workspace
// replay) before it is graded.
func checkTraceEvents(file string, g *grade.Grader, events []trace.Event, allowUnknown bool) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("read trace: %w", err)
	}
	if err := g.Check(events, grade.CheckOptions{AllowUnknown: allowUnknown, Lines: trace.LineNumbers(data)}); err != nil {
		return fmt.Errorf("%s: the trace does not verify:\n%w", file, err)
	}
	return nil
}
