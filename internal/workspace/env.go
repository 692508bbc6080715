package workspace

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/voicebench/humanaudit/internal/canon"
	"github.com/voicebench/humanaudit/internal/task"
)

// Env is the read-only part of a task's environment, prepared once and shared by every workspace
// of the task: the compiled tool schemas and the knowledge index. Replaying many traces of a task
// (grading, imports) then costs only the tool calls themselves.
type Env struct {
	task    *task.Task
	schemas map[string]*jsonschema.Schema
	quick   map[string]*quickSchema // nil entries: the schema is beyond the quick subset
	kb      *Index
	finders map[string]*finder // lookup and verify tools: their columns, read once
	require []string           // the artifact's required fields
}

// finder holds a lookup or verify tool's columns in argument-name order and every row's values
// of them, canonicalised once.
type finder struct {
	table    string
	args     []string
	cols     []task.Column
	rows     [][]cell // rows[r][i]: row r's value of cols[i]
	phonetic bool     // some column also matches by sound
}

type cell struct {
	id   canon.IDForm // Key is the comparison key; Spoken is set for identifiers
	ok   bool         // the value reads under the comparison
	text string       // the value as written, for phonetic columns
	// leads are the keys of an address's leading parts (canon.AddressLeads): a said address
	// matches the record on what was said, from the street line on.
	leads []string
}

// matches reports whether an argument's key matches the cell under its column's comparison (the
// sound-alike pass is findRowSound's).
func (c cell) matches(compare string, arg canon.IDForm) bool {
	switch {
	case !c.ok:
		return false
	case c.id.Key == arg.Key:
		return true
	case compare == "identifier":
		return c.id.Spoken == arg.Spoken
	case compare == "address":
		return slices.Contains(c.leads, arg.Key)
	}
	return false
}

// Compile prepares the environment of task t. It is safe for concurrent use.
func Compile(t *task.Task) (*Env, error) {
	env := &Env{task: t, schemas: make(map[string]*jsonschema.Schema, len(t.Agent.Tools)),
		quick: make(map[string]*quickSchema, len(t.Agent.Tools)), kb: NewIndex(t.Agent.Knowledge),
		finders: map[string]*finder{}, require: t.RequiredFields()}
	for _, tl := range t.Agent.Tools {
		s, err := task.CompileToolSchema(tl.Name, tl.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tool %s parameters: %w", tl.Name, err)
		}
		env.schemas[tl.Name] = s
		env.quick[tl.Name] = compileQuick(tl.Parameters)
		if tl.Kind == task.ToolLookup || tl.Kind == task.ToolVerify {
			env.finders[tl.Name] = newFinder(t, &tl)
		}
	}
	return env, nil
}

// Task returns the task the environment was compiled from.
func (env *Env) Task() *task.Task { return env.task }

// New returns a workspace of the environment's task in its initial state, emitting events
// through emit.
func (env *Env) New(emit Emit) *Workspace {
	return &Workspace{
		env:       env,
		task:      env.task,
		emit:      emit,
		fields:    map[string]json.RawMessage{},
		state:     env.task.InitialState(),
		tokens:    map[string]*ApprovalToken{},
		revoked:   map[string]bool{},
		committed: map[string]bool{},
	}
}

func newFinder(t *task.Task, tl *task.Tool) *finder {
	cols := tl.Key
	if tl.Kind == task.ToolVerify {
		cols = tl.Match
	}
	f := &finder{table: tl.Table}
	for arg := range cols {
		f.args = append(f.args, arg)
	}
	sort.Strings(f.args) // columns are compared in argument-name order, never in map order
	for _, arg := range f.args {
		f.cols = append(f.cols, cols[arg])
	}
	for _, row := range t.Environment.Tables[tl.Table] {
		cells := make([]cell, len(f.cols))
		for i, c := range f.cols {
			v, present := row[c.Column]
			if !present {
				continue // a row without the column never matches
			}
			s := fmt.Sprint(v)
			if c.Compare == "identifier" {
				cells[i] = cell{id: canon.NewIDForm(s), ok: true}
				continue
			}
			if c.Compare == task.ComparePhonetic {
				k, _ := canon.Key("casefold", s)
				cells[i] = cell{id: canon.IDForm{Key: k}, ok: true, text: s}
				f.phonetic = true
				continue
			}
			k, ok := canon.Key(c.Compare, s)
			cells[i] = cell{id: canon.IDForm{Key: k}, ok: ok}
			if c.Compare == "address" {
				cells[i].leads = canon.AddressLeads(s)
			}
		}
		f.rows = append(f.rows, cells)
	}
	return f
}
