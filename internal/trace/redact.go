package trace

import (
	"encoding/json"

	"github.com/voicebench/humanaudit/internal/redact"
)

// redactEvent replaces every registered secret in the event's text and documents before the event
// is stored or handed to a sink: a provider that echoes the API key in an error, a raw event or a
// close reason leaves only "[redacted:LABEL]" in the trace. Replacements keep documents valid JSON
// (the replacement has no quote or backslash).
func redactEvent(e Event) Event {
	set := redact.Default()
	if set.Len() == 0 {
		return e
	}
	for _, s := range []*string{&e.Text, &e.Source, &e.Act, &e.Field, &e.Tool, &e.CallID, &e.Error, &e.From, &e.State,
		&e.Action, &e.Token, &e.EventID, &e.CueID, &e.Fact} {
		*s = set.String(*s)
	}
	for _, d := range []*json.RawMessage{&e.Value, &e.Args, &e.Result, &e.Raw} {
		if len(*d) > 0 {
			*d = set.Bytes(*d)
		}
	}
	if len(e.Meta) > 0 {
		var m map[string]string
		for k, v := range e.Meta {
			if r := set.String(v); r != v {
				if m == nil {
					m = make(map[string]string, len(e.Meta))
					for k2, v2 := range e.Meta {
						m[k2] = v2
					}
				}
				m[k] = r
			}
		}
		if m != nil {
			e.Meta = m
		}
	}
	if e.Plan != nil && set.Contains([]byte(e.Plan.ID+e.Plan.Event+e.Plan.Action)) {
		p := *e.Plan
		p.ID, p.Event, p.Action = set.String(p.ID), set.String(p.Event), set.String(p.Action)
		e.Plan = &p
	}
	return e
}
