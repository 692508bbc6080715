package study

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// CSVHeader is plan.csv's header. The first five columns are what the console and the recruiting
// platform need; group and stratum are for analysis (the blocking factor and the task's stratum).
var CSVHeader = []string{"participant", "position", "task", "system", "repeat", "group", "stratum"}

// ConditionColumn is plan.csv's column of the listening condition, written only by plans with a
// condition factor.
const ConditionColumn = "condition"

// WriteCSV writes sessions as plan.csv.
func WriteCSV(w io.Writer, sessions []Session) error {
	cw := csv.NewWriter(w)
	conditions := false
	for _, s := range sessions {
		conditions = conditions || s.Condition != ""
	}
	header := CSVHeader
	if conditions {
		header = append(append([]string{}, CSVHeader...), ConditionColumn)
	}
	cw.Write(header)
	for _, s := range sessions {
		group := ""
		if s.Group > 0 {
			group = strconv.Itoa(s.Group)
		}
		row := []string{s.Participant, strconv.Itoa(s.Position), s.Task, s.System, strconv.Itoa(s.Repeat), group, s.Stratum}
		if conditions {
			row = append(row, s.Condition)
		}
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

// ReadCSV reads plan.csv: a header naming at least participant, position, task, system and repeat
// (in any order; group and stratum are optional, other columns are ignored). name is used in
// messages, which give the line, the column and what was expected.
func ReadCSV(name string, r io.Reader) ([]Session, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty file: want a header %s", name, strings.Join(CSVHeader[:5], ","))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))] = i
	}
	for _, need := range CSVHeader[:5] {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("%s: line 1: no %q column (want a header %s)", name, need, strings.Join(CSVHeader[:5], ","))
		}
	}
	var out []Session
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		get := func(c string) string {
			i, ok := col[c]
			if !ok || i >= len(rec) {
				return ""
			}
			return strings.TrimSpace(rec[i])
		}
		num := func(c string, required bool) (int, error) {
			v := get(c)
			if v == "" && !required {
				return 0, nil
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("%s: line %d: column %s: %q is not a whole number", name, line, c, v)
			}
			return n, nil
		}
		s := Session{Participant: get("participant"), Task: get("task"), System: get("system"), Stratum: get("stratum"), Condition: get(ConditionColumn)}
		for _, c := range []string{"participant", "task", "system"} {
			if get(c) == "" {
				return nil, fmt.Errorf("%s: line %d: column %s is empty", name, line, c)
			}
		}
		if s.Position, err = num("position", true); err != nil {
			return nil, err
		}
		if s.Position < 1 {
			return nil, fmt.Errorf("%s: line %d: column position: %d, want 1 or more", name, line, s.Position)
		}
		if s.Repeat, err = num("repeat", true); err != nil {
			return nil, err
		}
		if s.Repeat != 1 && s.Repeat != 2 {
			return nil, fmt.Errorf("%s: line %d: column repeat: %d, want 1 (first run) or 2 (anchor repeat)", name, line, s.Repeat)
		}
		if s.Group, err = num("group", false); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no sessions after the header", name)
	}
	return out, nil
}
