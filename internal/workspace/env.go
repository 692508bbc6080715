package workspace

import (
	"encoding/json"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"

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
}

// Compile prepares the environment of task t. It is safe for concurrent use.
func Compile(t *task.Task) (*Env, error) {
	env := &Env{task: t, schemas: make(map[string]*jsonschema.Schema, len(t.Agent.Tools)),
		quick: make(map[string]*quickSchema, len(t.Agent.Tools)), kb: NewIndex(t.Agent.Knowledge)}
	for _, tl := range t.Agent.Tools {
		s, err := task.CompileToolSchema(tl.Name, tl.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tool %s parameters: %w", tl.Name, err)
		}
		env.schemas[tl.Name] = s
		env.quick[tl.Name] = compileQuick(tl.Parameters)
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
