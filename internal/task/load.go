package task

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var printer = message.NewPrinter(language.English)

//go:embed schema.json
var schemaJSON []byte

// Schema returns the JSON Schema task files are validated against.
func Schema() []byte { return schemaJSON }

var compiledSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("task.schema.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("task.schema.json")
})

// Problem is one thing wrong with a task file, located by file and JSON path.
type Problem struct {
	File    string
	Path    string // JSONPath such as $.user.facts[3].reveal; empty for file-level problems
	Message string
}

func (p Problem) String() string {
	if p.Path == "" {
		return p.File + ": " + p.Message
	}
	return p.File + ": " + p.Path + ": " + p.Message
}

// Problems is a list of problems; as an error it prints one per line.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// ErrInvalid is wrapped by errors from loading a task that is not valid.
var ErrInvalid = errors.New("invalid task")

// LoadFile reads, schema-validates, decodes and cross-checks one task file. When the task is not
// valid the error is a Problems (use errors.As) listing every problem found.
func LoadFile(path string) (*Task, error) {
	if st, err := os.Stat(path); err == nil {
		if ps := fileSizeProblem(path, st.Size()); ps != nil {
			return nil, ps
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, Problems{{File: path, Message: err.Error()}}
	}
	return Parse(path, data)
}

// Parse validates and decodes task JSON read from file (used in messages).
func Parse(file string, data []byte) (*Task, error) {
	if ps := fileSizeProblem(file, int64(len(data))); ps != nil {
		return nil, ps
	}
	var generic any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		return nil, Problems{{File: file, Message: syntaxMessage(data, err)}}
	}
	if dec.More() {
		off := dec.InputOffset()
		line, col := lineCol(data, off)
		return nil, Problems{{File: file, Message: fmt.Sprintf("line %d, column %d: unexpected data after the task object", line, col)}}
	}
	sch, err := compiledSchema()
	if err != nil {
		return nil, fmt.Errorf("compile task schema: %w", err)
	}
	if err := sch.Validate(toSchemaValue(generic)); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, Problems{{File: file, Message: err.Error()}}
		}
		var ps Problems
		flattenSchemaError(file, generic, ve, &ps)
		sortProblems(ps)
		return nil, ps
	}
	var t Task
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, Problems{{File: file, Message: syntaxMessage(data, err)}}
	}
	t.Path = file
	if ps := Validate(file, &t); len(ps) > 0 {
		return nil, ps
	}
	return &t, nil
}

// toSchemaValue converts json.Number values into what the schema validator expects.
func toSchemaValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = toSchemaValue(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = toSchemaValue(e)
		}
		return x
	default:
		return v
	}
}

func syntaxMessage(data []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// Offset counts the offending byte; report its own position.
		line, col := lineCol(data, max(se.Offset-1, 0))
		return fmt.Sprintf("line %d, column %d: invalid JSON: %s", line, col, se.Error())
	case errors.As(err, &te):
		line, col := lineCol(data, te.Offset)
		return fmt.Sprintf("line %d, column %d: $.%s: got JSON %s, want %s", line, col, te.Field, te.Value, te.Type)
	case errors.Is(err, io.ErrUnexpectedEOF):
		line, col := lineCol(data, int64(len(data)))
		return fmt.Sprintf("line %d, column %d: invalid JSON: unexpected end of file", line, col)
	}
	return "invalid JSON: " + err.Error()
}

// lineCol converts a byte offset into a 1-based line and column.
func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col := 1, 1
	for _, b := range data[:off] {
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

// flattenSchemaError turns the validator's error tree into one problem per failing leaf.
func flattenSchemaError(file string, doc any, ve *jsonschema.ValidationError, out *Problems) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			flattenSchemaError(file, doc, c, out)
		}
		return
	}
	path := jsonPath(doc, ve.InstanceLocation)
	var msg string
	switch k := ve.ErrorKind.(type) {
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = fmt.Sprint(w)
		}
		msg = fmt.Sprintf("%s is not one of %s", display(k.Got), strings.Join(want, ", "))
	case *kind.Required:
		for _, m := range k.Missing {
			*out = append(*out, Problem{File: file, Path: path, Message: fmt.Sprintf("missing required property %q", m)})
		}
		return
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			*out = append(*out, Problem{File: file, Path: childPath(path, p), Message: "unknown property (not in the task format)"})
		}
		return
	case *kind.Type:
		msg = fmt.Sprintf("got %s, want %s", k.Got, strings.Join(k.Want, " or "))
	case *kind.Pattern:
		msg = fmt.Sprintf("%q does not match %s", k.Got, k.Want)
	case *kind.FalseSchema:
		msg = "not allowed here"
	default:
		msg = ve.ErrorKind.LocalizedString(printer)
	}
	*out = append(*out, Problem{File: file, Path: path, Message: msg})
}

func display(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// jsonPath renders an instance location as a JSONPath, using the document to tell array indexes
// from object keys.
func jsonPath(doc any, loc []string) string {
	var b strings.Builder
	b.WriteString("$")
	cur := doc
	for _, tok := range loc {
		switch c := cur.(type) {
		case []any:
			i, _ := strconv.Atoi(tok)
			fmt.Fprintf(&b, "[%d]", i)
			if i >= 0 && i < len(c) {
				cur = c[i]
			} else {
				cur = nil
			}
		case map[string]any:
			b.WriteString(pathKey(tok))
			cur = c[tok]
		default:
			b.WriteString(pathKey(tok))
			cur = nil
		}
	}
	return b.String()
}

func childPath(parent, key string) string { return parent + pathKey(key) }

func pathKey(k string) string {
	for i, r := range k {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return "[" + strconv.Quote(k) + "]"
		}
	}
	if k == "" {
		return `[""]`
	}
	return "." + k
}

func sortProblems(ps Problems) {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].File != ps[j].File {
			return ps[i].File < ps[j].File
		}
		return ps[i].Path < ps[j].Path
	})
}

// LoadAll loads every *.json task file under the given paths (files or directories, recursively,
// skipping files whose name starts with "_" or ends in ".schema.json"). It returns the valid tasks
// sorted by ID and every problem found; a duplicate task ID is a problem too.
func LoadAll(paths ...string) ([]*Task, Problems) {
	var files []string
	var probs Problems
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			probs = append(probs, Problem{File: p, Message: err.Error()})
			continue
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				probs = append(probs, Problem{File: path, Message: err.Error()})
				return nil
			}
			name := d.Name()
			if d.IsDir() || !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, "_") || strings.HasSuffix(name, ".schema.json") {
				return nil
			}
			files = append(files, path)
			return nil
		})
	}
	sort.Strings(files)
	var tasks []*Task
	seen := map[string]string{}
	for _, f := range files {
		t, err := LoadFile(f)
		if err != nil {
			var ps Problems
			if errors.As(err, &ps) {
				probs = append(probs, ps...)
			} else {
				probs = append(probs, Problem{File: f, Message: err.Error()})
			}
			continue
		}
		if prev, dup := seen[t.ID]; dup {
			probs = append(probs, Problem{File: f, Path: "$.id", Message: fmt.Sprintf("task id %q is also used by %s", t.ID, prev)})
			continue
		}
		seen[t.ID] = f
		tasks = append(tasks, t)
	}
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].ID < tasks[j].ID })
	return tasks, probs
}

// Find loads the task named by idOrFile: a path to a task file, or a task ID looked up under dir.
func Find(idOrFile, dir string) (*Task, error) {
	if st, err := os.Stat(idOrFile); err == nil && !st.IsDir() {
		return LoadFile(idOrFile)
	}
	tasks, probs := LoadAll(dir)
	for _, t := range tasks {
		if t.ID == idOrFile {
			return t, nil
		}
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("task %q not found among the valid tasks in %s (%d problems in other files; run audit tasks validate)", idOrFile, dir, len(probs))
	}
	return nil, fmt.Errorf("task %q: no such task file, and no task with that id in %s", idOrFile, dir)
}
