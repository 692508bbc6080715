package dialog

// FormField is one field of a dialogue's form as the external tests see it.
type FormField struct{ Name, Kind, Question string }

// FormFields lists the fields the dialogue derived from its session, in asking order.
func FormFields(d *Dialog) []FormField {
	var out []FormField
	for _, f := range d.m.allFields() {
		out = append(out, FormField{Name: f.Name, Kind: kindNames[f.Kind], Question: f.Question})
	}
	return out
}
