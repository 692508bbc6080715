package stats

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// csvTable is a CSV file read with its header: the records after the header, each with the line
// it started on, so that errors can point at the file, line and column.
type csvTable struct {
	name   string
	header []string // lower-cased, trimmed
	rows   [][]string
	lines  []int
}

// readCSV reads a whole CSV file with a header row. Every record must have as many fields as
// the header. name is used in error messages only.
func readCSV(r io.Reader, name string) (*csvTable, error) {
	br := bufio.NewReader(r)
	// Spreadsheet exports often start with a UTF-8 byte order mark; it is not part of the header.
	if b, err := br.Peek(3); err == nil && string(b) == "\ufeff" {
		_, _ = br.Discard(3)
	}
	cr := csv.NewReader(br)
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = false
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty file, expected a header row: %w", name, ErrNoData)
	}
	if err != nil {
		return nil, csvErr(name, err)
	}
	t := &csvTable{name: name}
	for _, h := range header {
		t.header = append(t.header, strings.ToLower(strings.TrimSpace(h)))
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvErr(name, err)
		}
		line, _ := cr.FieldPos(0)
		for i := range rec {
			rec[i] = strings.TrimSpace(rec[i])
		}
		t.rows = append(t.rows, rec)
		t.lines = append(t.lines, line)
	}
	return t, nil
}

func csvErr(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: line %d, column %d: %v: %w", name, pe.Line, pe.Column, pe.Err, ErrBadCSV)
	}
	return fmt.Errorf("%s: %v: %w", name, err, ErrBadCSV)
}

// columns returns the index of each named column, or an error naming the first missing one and
// the header that was expected.
func (t *csvTable) columns(want ...string) ([]int, error) {
	idx := make([]int, len(want))
	for i, w := range want {
		idx[i] = -1
		for j, h := range t.header {
			if h == w {
				idx[i] = j
				break
			}
		}
		if idx[i] < 0 {
			return nil, fmt.Errorf("%s: line 1: header %q lacks column %q (expected %s): %w",
				t.name, strings.Join(t.header, ","), w, strings.Join(want, ","), ErrBadCSV)
		}
	}
	return idx, nil
}

// readLongCSV reads a long-format file (one observation a row) and finds its named columns: col[i]
// is the index of want[i] in every row.
func readLongCSV(r io.Reader, name string, want ...string) (t *csvTable, col []int, err error) {
	if t, err = readCSV(r, name); err != nil {
		return nil, nil, err
	}
	if col, err = t.columns(want...); err != nil {
		return nil, nil, err
	}
	return t, col, nil
}

// errAt formats an error about one cell.
func (t *csvTable) errAt(row int, col string, format string, args ...any) error {
	return fmt.Errorf("%s: line %d, column %q: %s", t.name, t.lines[row], col, fmt.Sprintf(format, args...))
}

// ReadRatings reads long-format reliability data: a CSV file whose header names the columns
// unit, rater and value (any order, other columns ignored). A row with an empty value is a
// missing rating and is skipped; an empty unit or rater is an error. name labels errors.
func ReadRatings(r io.Reader, name string) ([]Rating, error) {
	t, col, err := readLongCSV(r, name, "unit", "rater", "value")
	if err != nil {
		return nil, err
	}
	var out []Rating
	for i, rec := range t.rows {
		u, rt, v := rec[col[0]], rec[col[1]], rec[col[2]]
		if u == "" {
			return nil, fmt.Errorf("%w: %w", t.errAt(i, "unit", "empty unit id"), ErrInvalidValue)
		}
		if rt == "" {
			return nil, fmt.Errorf("%w: %w", t.errAt(i, "rater", "empty rater id"), ErrInvalidValue)
		}
		if v == "" {
			continue
		}
		out = append(out, Rating{Unit: u, Rater: rt, Value: v, Line: t.lines[i]})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no ratings after the header: %w", name, ErrNoData)
	}
	return out, nil
}

// ReadCounts reads a subjects × categories table of counts for Fleiss' kappa: the first column
// is the subject id, every other column a category named by its header, each cell a
// non-negative integer count of the raters who put the subject in that category.
func ReadCounts(r io.Reader, name string) (CountTable, error) {
	t, err := readCSV(r, name)
	if err != nil {
		return CountTable{}, err
	}
	if len(t.header) < 2 {
		return CountTable{}, fmt.Errorf("%s: line 1: header needs a subject column and at least one category column: %w", name, ErrBadCSV)
	}
	ct := CountTable{Categories: append([]string(nil), t.header[1:]...)}
	for j, c := range ct.Categories {
		if c == "" {
			return CountTable{}, fmt.Errorf("%s: line 1, column %d: empty category name: %w", name, j+2, ErrBadCSV)
		}
	}
	for i, rec := range t.rows {
		if rec[0] == "" {
			return CountTable{}, fmt.Errorf("%w: %w", t.errAt(i, t.header[0], "empty subject id"), ErrInvalidValue)
		}
		row := make([]int, len(ct.Categories))
		for j := range ct.Categories {
			cell := rec[j+1]
			n, err := strconv.Atoi(cell)
			if err != nil || n < 0 {
				return CountTable{}, fmt.Errorf("%w: %w", t.errAt(i, ct.Categories[j], "count %q is not a non-negative integer", cell), ErrInvalidValue)
			}
			row[j] = n
		}
		ct.Subjects = append(ct.Subjects, rec[0])
		ct.Counts = append(ct.Counts, row)
	}
	if len(ct.Subjects) == 0 {
		return CountTable{}, fmt.Errorf("%s: no subjects after the header: %w", name, ErrNoData)
	}
	return ct, nil
}

// ReadTrials reads long-format repeated-trial outcomes: a CSV file with columns task, trial and
// success (1/0 or true/false).
func ReadTrials(r io.Reader, name string) ([]Trial, error) {
	t, col, err := readLongCSV(r, name, "task", "trial", "success")
	if err != nil {
		return nil, err
	}
	out := make([]Trial, 0, len(t.rows))
	for i, rec := range t.rows {
		task, trial, s := rec[col[0]], rec[col[1]], rec[col[2]]
		if task == "" {
			return nil, fmt.Errorf("%w: %w", t.errAt(i, "task", "empty task id"), ErrInvalidValue)
		}
		ok, err := parseSuccess(s)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", t.errAt(i, "success", "%q is not a success flag (want 1, 0, true or false)", s), ErrInvalidValue)
		}
		out = append(out, Trial{Task: task, Trial: trial, Success: ok, Line: t.lines[i]})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no trials after the header: %w", name, ErrNoData)
	}
	return out, nil
}

func parseSuccess(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "1", "true":
		return true, nil
	case "0", "false":
		return false, nil
	}
	return false, ErrInvalidValue
}

// TaskTable holds observations of one or two measures per task (cluster), read from a CSV file
// with columns task,value or task,a,b. Several rows may share a task (e.g. repeats); an empty
// cell is a missing observation.
type TaskTable struct {
	Measures []string      // names of the value columns, in file order (one or two)
	Tasks    []string      // task ids in order of first appearance
	Obs      [][][]float64 // Obs[m][t]: observations of measure m for task t
}

// ReadTaskTable reads a task-level table for the cluster bootstrap: the first column is task,
// followed by one value column (a per-task statistic) or two (a paired difference, first minus
// second).
func ReadTaskTable(r io.Reader, name string) (TaskTable, error) {
	t, err := readCSV(r, name)
	if err != nil {
		return TaskTable{}, err
	}
	if len(t.header) < 2 || len(t.header) > 3 || t.header[0] != "task" {
		return TaskTable{}, fmt.Errorf("%s: line 1: header %q: expected task,value or task,a,b: %w",
			name, strings.Join(t.header, ","), ErrBadCSV)
	}
	tt := TaskTable{Measures: append([]string(nil), t.header[1:]...)}
	tt.Obs = make([][][]float64, len(tt.Measures))
	pos := map[string]int{}
	for i, rec := range t.rows {
		task := rec[0]
		if task == "" {
			return TaskTable{}, fmt.Errorf("%w: %w", t.errAt(i, "task", "empty task id"), ErrInvalidValue)
		}
		ti, ok := pos[task]
		if !ok {
			ti = len(tt.Tasks)
			pos[task] = ti
			tt.Tasks = append(tt.Tasks, task)
			for m := range tt.Obs {
				tt.Obs[m] = append(tt.Obs[m], nil)
			}
		}
		for m, mname := range tt.Measures {
			cell := rec[m+1]
			if cell == "" {
				continue
			}
			v, err := parseFinite(cell)
			if err != nil {
				return TaskTable{}, fmt.Errorf("%w: %w", t.errAt(i, mname, "%q is not a number", cell), ErrInvalidValue)
			}
			tt.Obs[m][ti] = append(tt.Obs[m][ti], v)
		}
	}
	if len(tt.Tasks) == 0 {
		return TaskTable{}, fmt.Errorf("%s: no rows after the header: %w", name, ErrNoData)
	}
	return tt, nil
}

// TaskMeans returns, for each measure, the mean of each task's observations (tasks in table
// order). A task with no observation of some measure is an error naming both.
func (tt TaskTable) TaskMeans() ([][]float64, error) {
	out := make([][]float64, len(tt.Measures))
	for m := range tt.Measures {
		out[m] = make([]float64, len(tt.Tasks))
		for ti, task := range tt.Tasks {
			obs := tt.Obs[m][ti]
			if len(obs) == 0 {
				return nil, fmt.Errorf("task %q has no %s value: %w", task, tt.Measures[m], ErrNoData)
			}
			out[m][ti] = Mean(obs)
		}
	}
	return out, nil
}

// parseFinite parses a float and rejects NaN and infinities, which no statistic here can use.
func parseFinite(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, ErrInvalidValue
	}
	return v, nil
}
