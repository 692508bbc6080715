package dialog

// FieldQuestion is how the agent asks for one parameter of one of its tools.
type FieldQuestion struct {
	Tool, Field, Question string
}

// Questions lists the question the agent asks for each parameter of each configured tool, in the
// tools' order: what the synthetic caller must understand when this agent calls it.
func (d *Dialog) Questions() []FieldQuestion {
	if d.m == nil {
		return nil
	}
	var out []FieldQuestion
	for _, t := range d.m.tools {
		for _, f := range t.Params {
			if f.Question != "" {
				out = append(out, FieldQuestion{Tool: t.Name, Field: f.Name, Question: f.Question})
			}
		}
	}
	return out
}
