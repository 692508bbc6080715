package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/elevenlabs"
	"github.com/voicebench/humanaudit/internal/agent/systems"
)

// runSystemsProvision writes, for a platform system (ElevenLabs), the body of one agent per task
// (DIR/<task>.json, for POST /v1/convai/agents/create) with the task's tools as client tools, the
// audio formats and the overrides the adapter needs, and DIR/agents.json: the "agents" map to
// paste into the systems file once the agents exist (their ids replace the placeholders). It
// sends nothing: creating agents is the operator's step, and `audit systems check --connect` and
// every call then check the agent against the task.
func runSystemsProvision(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("systems provision", stderr)
	label := fs.String("system", "", "system label in the systems file (family elevenlabs)")
	systemsFile := fs.String("systems", "systems.json", "systems file")
	sel := addTaskSelectionFlags(fs)
	out := fs.String("out", "", "directory for the agent bodies and agents.json")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *label == "" || *out == "" || len(pos) > 0 {
		fmt.Fprintln(stderr, "usage: audit systems provision --system LABEL --tasks audit24 --out DIR [--systems systems.json]")
		return errUsage
	}
	f, err := systems.Load(*systemsFile)
	if err != nil {
		return err
	}
	sys, err := f.Lookup(*label)
	if err != nil {
		return err
	}
	if sys.Family != systems.FamilyElevenLabs {
		return fmt.Errorf("%s: system %q is family %s: only platform systems (elevenlabs) are provisioned", *systemsFile, sys.Label, sys.Family)
	}
	tasks, err := sel.load()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	agents := map[string]string{}
	for _, t := range tasks {
		tools := make([]agent.Tool, len(t.Agent.Tools))
		for i, tl := range t.Agent.Tools {
			tools[i] = agent.Tool{Name: tl.Name, Description: tl.Description, Parameters: tl.Parameters}
		}
		body := elevenlabs.Provision(fmt.Sprintf("audit %s %s v%d", sys.Label, t.ID, t.Version), tools, sys.Model, sys.Voice)
		b, err := json.MarshalIndent(body, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(*out, t.ID+".json"), append(b, '\n'), 0o644); err != nil {
			return err
		}
		agents[t.ID] = "<agent id of " + t.ID + ".json>"
	}
	b, _ := json.MarshalIndent(map[string]any{"agents": agents}, "", "  ")
	if err := os.WriteFile(filepath.Join(*out, "agents.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	ids := make([]string, 0, len(agents))
	for id := range agents {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	fmt.Fprintf(stdout, "%d agent bodies in %s (%v); create each (POST %s/v1/convai/agents/create), put the ids in the systems file's \"agents\" (template: agents.json), then run audit systems check --connect\n",
		len(ids), *out, ids, elevenlabs.DefaultAPIURL)
	return nil
}
