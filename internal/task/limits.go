package task

import (
	"fmt"
	"sort"
	"unicode/utf8"
)

// Task files come from outside (a study team's edits, a shared suite): every text field is bounded,
// so an oversized value is a clear problem at validation, not a page that cannot render or a
// payload that swamps a participant's browser.
const (
	// MaxFileBytes bounds a task file (the suite's largest is about 20 KB).
	MaxFileBytes = 2 << 20
	maxShort     = 200    // titles, names, labels, ask phrases
	maxSentence  = 1000   // goals, constraints, cues, fact values, bank utterances, tool descriptions
	maxLong      = 20000  // the agent's instructions
	maxDocument  = 100000 // a knowledge document
)

// fileSizeProblem reports a task file larger than MaxFileBytes.
func fileSizeProblem(file string, n int64) Problems {
	if n <= MaxFileBytes {
		return nil
	}
	return Problems{{File: file, Message: fmt.Sprintf("file is %d bytes, at most %d (%d MiB) are allowed", n, MaxFileBytes, MaxFileBytes>>20)}}
}

// limits checks the length of every text field.
func (v *validator) limits() {
	t := v.t
	check := func(path, s string, max int) {
		if n := utf8.RuneCountInString(s); n > max {
			v.add(path, "%d characters, at most %d", n, max)
		}
	}
	check("$.title", t.Title, maxShort)
	check("$.user.persona.name", t.User.Persona.Name, maxShort)
	check("$.user.persona.role", t.User.Persona.Role, maxShort)
	check("$.user.persona.speaking", t.User.Persona.Speaking, maxSentence)
	for i, g := range t.User.Goals {
		check(fmt.Sprintf("$.user.goals[%d]", i), g, maxSentence)
	}
	for i, c := range t.User.Constraints {
		check(fmt.Sprintf("$.user.constraints[%d]", i), c, maxSentence)
	}
	for i, f := range t.User.Facts {
		p := fmt.Sprintf("$.user.facts[%d]", i)
		check(p+".label", f.Label, maxShort)
		for j, a := range f.AskedAs {
			check(fmt.Sprintf("%s.asked_as[%d]", p, j), a, maxShort)
		}
		for j, ver := range f.Versions {
			check(fmt.Sprintf("%s.versions[%d].value", p, j), ver.Value, maxSentence)
			check(fmt.Sprintf("%s.versions[%d].spoken", p, j), ver.Spoken, maxSentence)
		}
	}
	for i, e := range t.Events {
		check(fmt.Sprintf("$.events[%d].cue", i), e.Cue, maxSentence)
	}
	check("$.agent.instructions", t.Agent.Instructions, maxLong)
	for i, tl := range t.Agent.Tools {
		check(fmt.Sprintf("$.agent.tools[%d].description", i), tl.Description, maxSentence)
	}
	for i, d := range t.Agent.Knowledge {
		check(fmt.Sprintf("$.agent.knowledge[%d].title", i), d.Title, maxShort)
		check(fmt.Sprintf("$.agent.knowledge[%d].text", i), d.Text, maxDocument)
	}
	plans := make([]string, 0, len(t.Bank))
	for id := range t.Bank {
		plans = append(plans, id)
	}
	sort.Strings(plans)
	for _, id := range plans {
		for j, u := range t.Bank[id] {
			check(fmt.Sprintf("$.bank[%q][%d]", id, j), u, maxSentence)
		}
	}
}
