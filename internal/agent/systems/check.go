package systems

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/voicebench/humanaudit/internal/agent"
	"github.com/voicebench/humanaudit/internal/agent/gemini"
	"github.com/voicebench/humanaudit/internal/task"
)

// ErrNotApplied: the provider accepted the session but applied something other than what was
// asked (a tool, the voice, the audio rates, the turn detection).
var ErrNotApplied = errors.New("provider did not apply the session as asked")

// Probe is the session a connect check opens: a suite task's instructions, tools and voice, as a
// call of the study would.
type Probe struct {
	Task   string
	Config agent.Config
}

// ProbeFor is the session of a call of task t.
func ProbeFor(t *task.Task) Probe {
	tools := make([]agent.Tool, len(t.Agent.Tools))
	for i, tl := range t.Agent.Tools {
		tools[i] = agent.Tool{Name: tl.Name, Description: tl.Description, Parameters: tl.Parameters}
	}
	return Probe{Task: t.ID, Config: agent.Config{Instructions: t.Agent.Instructions, Tools: tools}}
}

// ProbeTask picks the task a connect check uses: the one named id, or (id empty) the task with
// the most tools, the hardest session to set up (ties go to the first id in order).
func ProbeTask(tasks []*task.Task, id string) (*task.Task, error) {
	var best *task.Task
	for _, t := range tasks {
		if id != "" && t.ID == id {
			return t, nil
		}
		if id == "" && (best == nil || len(t.Agent.Tools) > len(best.Agent.Tools) || len(t.Agent.Tools) == len(best.Agent.Tools) && t.ID < best.ID) {
			best = t
		}
	}
	if best == nil {
		if id != "" {
			return nil, fmt.Errorf("no task %q in the suite", id)
		}
		return nil, errors.New("no tasks")
	}
	return best, nil
}

// ToolProblems lists, for each task, the tools the system's family cannot take as they are
// written, each naming task, tool and keyword (Gemini's function schema is a subset of JSON
// Schema). Nothing is dialled.
func (s System) ToolProblems(tasks []*task.Task) []string {
	if s.Family != FamilyGemini {
		return nil
	}
	var out []string
	for _, t := range tasks {
		if _, _, err := gemini.Declarations(ProbeFor(t).Config.Tools); err != nil {
			out = append(out, fmt.Sprintf("%s: system %q: task %s: %v", s.source, s.Label, t.ID, err))
		}
	}
	return out
}

// ConnectReport is what a connect check found.
type ConnectReport struct {
	System    string
	Task      string
	Asked     agent.Config
	Handshake time.Duration
	Applied   agent.Applied
	// Problems say what the provider applied other than asked; the check failed when there is any.
	Problems []string
}

// Summary is one line: what the provider applied.
func (r ConnectReport) Summary() string {
	ap := r.Applied
	how := "echoed by the provider"
	if !ap.Echoed {
		how = "accepted as sent (the provider echoes nothing)"
	}
	return fmt.Sprintf("tools %d/%d installed, voice %s, audio %d/%d Hz, turn detection %s; %s",
		len(ap.Tools), len(r.Asked.Tools), ap.Voice, ap.InputRate, ap.OutputRate, ap.TurnDetection, how)
}

// CheckConnect opens a real session of sys with the probe's instructions, tools and voice (the
// system's voice when the probe names none), reports what the provider applied and closes the
// session. It fails with the classified refusal (a *DialError: the system, the endpoint, the
// key, the tool or keyword refused) or, when the provider accepted the session but applied it
// otherwise, with ErrNotApplied and the report's problems.
func CheckConnect(ctx context.Context, sys System, opts DialOptions, p Probe) (ConnectReport, error) {
	cfg := p.Config
	if cfg.Voice == "" {
		cfg.Voice = sys.Voice
	}
	opts.Config = cfg
	r := ConnectReport{System: sys.Label, Task: p.Task, Asked: cfg}
	start := time.Now()
	a, err := Dial(ctx, sys, opts)
	if err != nil {
		return r, err
	}
	defer a.Close()
	r.Handshake = time.Since(start)
	rep, ok := a.(agent.SessionReporter)
	if !ok {
		return r, nil // the reference agent: nothing to compare
	}
	r.Applied = rep.Applied()
	f := a.Format()
	var missing []string
	for _, t := range cfg.Tools {
		if !slices.Contains(r.Applied.Tools, t.Name) {
			missing = append(missing, t.Name)
		}
	}
	if len(missing) > 0 {
		r.Problems = append(r.Problems, "tools not installed: "+strings.Join(missing, ", "))
	}
	if want, _ := sys.EffectiveVoice(); want != "" && !strings.EqualFold(want, r.Applied.Voice) {
		r.Problems = append(r.Problems, fmt.Sprintf("voice: asked %s, the provider speaks %s", want, r.Applied.Voice))
	}
	if r.Applied.InputRate != f.InputRate {
		r.Problems = append(r.Problems, fmt.Sprintf("caller audio: sent at %d Hz, the provider takes %d Hz", f.InputRate, r.Applied.InputRate))
	}
	if r.Applied.OutputRate != f.OutputRate {
		r.Problems = append(r.Problems, fmt.Sprintf("agent audio: read at %d Hz, the provider sends %d Hz", f.OutputRate, r.Applied.OutputRate))
	}
	switch manual := r.Applied.TurnDetection == "manual"; {
	case sys.ServerVAD && manual:
		r.Problems = append(r.Problems, "turn detection: asked the provider's, the provider applied manual turns")
	case !sys.ServerVAD && !manual:
		r.Problems = append(r.Problems, fmt.Sprintf("turn detection: asked manual (matched turn-taking), the provider applied %s", r.Applied.TurnDetection))
	}
	if len(r.Problems) > 0 {
		return r, &DialError{System: sys.Label, Endpoint: redactURL(endpointOf(sys, opts)), Err: fmt.Errorf("%w: %s", ErrNotApplied, strings.Join(r.Problems, "; "))}
	}
	return r, nil
}

func endpointOf(sys System, opts DialOptions) string {
	if opts.Endpoint != "" {
		return opts.Endpoint
	}
	return sys.EndpointURL()
}
