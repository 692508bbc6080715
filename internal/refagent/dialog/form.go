package dialog

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/voicebench/humanaudit/internal/asr"
)

// What the agent knows comes only from the protocol: the session instructions and the tool
// definitions (name, description, JSON-schema parameters). This file turns them into the agent's
// working model: which tool records, verifies, looks up, searches, marks ready, asks for approval
// or commits; which fields exist, of what type, and how to ask for them.

// role is what a tool is for, read from its name and description.
type role int

const (
	roleOther      role = iota // not understood: never called
	roleRecord                 // records fields of the artifact
	roleVerify                 // checks the caller's identity
	roleLookup                 // reads a record by key
	roleKB                     // searches the knowledge base
	roleTransition             // marks the artifact ready
	roleApproval               // records that approval is being asked for
	roleCommit                 // performs the approval-gated action
	roleReadBack               // reads the artifact back
)

func (r role) String() string {
	return [...]string{"other", "record", "verify", "lookup", "kb_search", "transition", "approval", "commit", "read_back"}[r]
}

// valueKind is how a field's answer is recognized and written.
type valueKind int

const (
	kindText       valueKind = iota // free text (open-vocabulary recognition)
	kindName                        // a person's or business's name (free text)
	kindEmail                       // an email address (free text, "dot"/"at" rewritten)
	kindAddress                     // a postal address (free text)
	kindList                        // several free-text items
	kindDateList                    // several dates
	kindDigits                      // a run of digits
	kindIdentifier                  // letters and digits
	kindPhone                       // a phone number
	kindDate                        // one date
	kindDateRange                   // a start and an end date
	kindNumber                      // a quantity or an amount
	kindChoice                      // one value of an enumeration
	kindYesNo                       // an enumeration of yes and no
)

// field is one parameter the agent must fill: a record tool's property or a verify/lookup
// argument.
type field struct {
	Name        string
	Description string
	Kind        valueKind
	Enum        []string // schema enumeration, as written
	JSONTypes   []string // the schema's types: the value is sent as a number when allowed
	Question    string   // how the agent asks for it
	Digits      int      // exact digit count of kindDigits, when the type fixes it (a ZIP code, last four)
	Subject     string   // the field in words ("policy number"), for carriers and summaries
	keywords    []string // distinctive words the caller uses when naming it
}

// toolInfo is one tool as the agent understands it.
type toolInfo struct {
	Name        string
	Description string
	Role        role
	Params      []field
	Required    []string
}

// schemaProp is the part of a JSON-schema property the agent reads.
type schemaProp struct {
	Type        json.RawMessage `json:"type"`
	Description string          `json:"description"`
	Enum        []any           `json:"enum"`
	Items       *schemaProp     `json:"items"`
}

// parseTool reads a tool definition. Property order is kept (the order the designer listed them,
// which is the order the agent asks in).
func parseTool(name, description string, parameters json.RawMessage) toolInfo {
	t := toolInfo{Name: name, Description: description}
	var schema struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if json.Unmarshal(parameters, &schema) == nil {
		t.Required = schema.Required
		for _, key := range orderedKeys(schema.Properties) {
			var p schemaProp
			var all map[string]json.RawMessage
			json.Unmarshal(schema.Properties, &all)
			json.Unmarshal(all[key], &p)
			t.Params = append(t.Params, newField(key, p))
		}
	}
	t.Role = classify(t)
	return t
}

// orderedKeys returns an object's keys in document order.
func orderedKeys(obj json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return keys
		}
		k, _ := tok.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
	}
	return keys
}

func jsonTypes(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	json.Unmarshal(raw, &many)
	return many
}

// nameWords splits a parameter name into lower-case words ("date_of_birth" → date of birth).
func nameWords(name string) []string {
	return strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '_' || r == '-' || r == ' ' || r == '.' })
}

// abbreviations are spelled out in questions (the caller hears them, and flite reads them).
var abbreviations = map[string]string{"dob": "date of birth", "mrn": "medical record number", "last4": "last four digits",
	"po": "P O", "rx": "prescription", "ref": "reference", "req": "requisition", "fsa": "F S A", "hsa": "H S A",
	"temp": "temperature", "cert": "certification", "ssn": "social security number", "vin": "V I N", "ach": "A C H",
	"id": "id", "qty": "quantity", "addr": "address", "num": "number", "no": "number", "zip": "ZIP code"}

// spokenWords are a name's words with abbreviations spelled out ("patient_dob" → patient date of birth).
func spokenWords(name string) []string {
	var out []string
	for _, w := range nameWords(name) {
		if a, ok := abbreviations[w]; ok {
			out = append(out, strings.Fields(a)...)
			continue
		}
		out = append(out, w)
	}
	return out
}

var formatHint = regexp.MustCompile(`(?i)yyyy|mm-dd|dd/mm|iso ?8601|e\.164`)

func newField(name string, p schemaProp) field {
	f := field{Name: name, Description: strings.TrimSpace(p.Description), JSONTypes: jsonTypes(p.Type)}
	for _, e := range p.Enum {
		if s, ok := e.(string); ok {
			f.Enum = append(f.Enum, s)
		}
	}
	words := nameWords(name)
	joined := " " + strings.Join(words, " ") + " "
	desc := strings.ToLower(f.Description)
	isArray := slices.Contains(f.JSONTypes, "array")
	numeric := slices.Contains(f.JSONTypes, "number") || slices.Contains(f.JSONTypes, "integer")
	switch {
	case len(f.Enum) > 0 && isYesNo(f.Enum):
		f.Kind = kindYesNo
	case len(f.Enum) > 0:
		f.Kind = kindChoice
	case isArray && (strings.Contains(desc, "date") || strings.Contains(joined, " dates ")):
		f.Kind = kindDateList
	case isArray:
		f.Kind = kindList
	case !numeric && (strings.Contains(joined, " window ") || strings.Contains(joined, " range ")) ||
		strings.Contains(desc, "start and end date") || strings.Contains(desc, "yyyy-mm-dd to yyyy"):
		f.Kind = kindDateRange
	case strings.Contains(joined, " date ") || strings.Contains(joined, " birth ") || strings.Contains(joined, " dob ") ||
		strings.Contains(desc, "yyyy-mm-dd"):
		f.Kind = kindDate
	case strings.Contains(joined, " phone ") || strings.Contains(joined, " callback ") || strings.Contains(joined, " mobile ") ||
		strings.Contains(joined, " telephone ") || strings.Contains(joined, " fax "):
		f.Kind = kindPhone
	case strings.Contains(joined, " email ") || strings.Contains(joined, " e ") && strings.Contains(joined, " mail "):
		f.Kind = kindEmail
	case numeric || strings.Contains(joined, " amount ") || strings.Contains(joined, " count ") || strings.Contains(desc, "dollars"):
		f.Kind = kindNumber
	case strings.Contains(joined, " zip ") || strings.Contains(joined, " postcode ") || strings.Contains(joined, " pin ") ||
		strings.Contains(joined, " last4 ") || strings.Contains(joined, " last four ") || strings.Contains(joined, " ssn "):
		f.Kind = kindDigits
		switch {
		case strings.Contains(joined, " zip "):
			f.Digits = 5 // a US ZIP code
		case strings.Contains(joined, " last4 ") || strings.Contains(joined, " last four "):
			f.Digits = 4
		}
	case strings.Contains(joined, " number ") || strings.Contains(joined, " id ") || strings.Contains(joined, " code ") ||
		strings.Contains(joined, " identifier ") || strings.Contains(joined, " reference ") || strings.Contains(joined, " ref ") ||
		strings.Contains(joined, " mrn ") || strings.HasSuffix(joined, " account ") || strings.HasSuffix(joined, " flight "):
		f.Kind = kindIdentifier
	case strings.Contains(joined, " address ") || strings.Contains(joined, " location "):
		f.Kind = kindAddress
	case strings.Contains(joined, " name ") || strings.Contains(joined, " shop ") || strings.Contains(joined, " company ") ||
		strings.Contains(joined, " merchant ") || strings.Contains(joined, " employer ") || strings.Contains(joined, " carrier ") ||
		strings.Contains(joined, " physician ") || strings.Contains(joined, " doctor ") ||
		strings.Contains(joined, " holder ") || strings.Contains(joined, " owner "):
		f.Kind = kindName
	default:
		f.Kind = kindText
	}
	spoken := spokenWords(name)
	f.Subject = subjectOf(spoken, f)
	f.Question = withFieldPhrase(questionFor(spoken, f), name)
	f.keywords = keywordsOf(words)
	return f
}

// acronyms are written in upper case in what the agent says (its transcript); the speech layer
// says them as a listener expects (see refagent's speech normalisation).
var acronyms = map[string]string{"id": "ID", "po": "PO", "dob": "DOB", "mrn": "MRN", "fsa": "FSA", "hsa": "HSA", "rx": "RX",
	"zip": "ZIP", "ssn": "SSN", "vin": "VIN", "ach": "ACH", "pin": "PIN"}

// fieldPhrase is a field's name as words, acronyms in upper case: "job_req_id" is "job req ID".
func fieldPhrase(name string) string {
	words := nameWords(name)
	for i, w := range words {
		if a, ok := acronyms[w]; ok {
			words[i] = a
		}
	}
	return strings.Join(words, " ")
}

// withFieldPhrase makes sure a question names its field the way the tool schema does: callers
// (and the benchmark's synthetic caller) recognise a question by the words of the field it asks
// for, so a question whose natural wording lost them ("What is the name of the manager?" for
// manager_name) is asked with the field's own words, or led by them.
func withFieldPhrase(q, name string) string {
	phrase := fieldPhrase(name)
	norm := func(s string) string {
		return " " + strings.Join(strings.Fields(strings.ToLower(strings.NewReplacer("?", " ", ",", " ", ".", " ", ":", " ", ";", " ", "!", " ").Replace(s))), " ") + " "
	}
	if strings.Contains(norm(q), norm(phrase)) || len(strings.ReplaceAll(phrase, " ", "")) < 4 {
		return q
	}
	if strings.HasPrefix(q, "What is the ") || strings.HasPrefix(q, "What is your ") {
		// "What is the name of the manager?" → "What is the manager name?"
		return "What is the " + phrase + "?"
	}
	return "Next, the " + phrase + ". " + q
}

func isYesNo(enum []string) bool {
	if len(enum) != 2 {
		return false
	}
	a, b := strings.ToLower(enum[0]), strings.ToLower(enum[1])
	return (a == "yes" && b == "no") || (a == "no" && b == "yes") || (a == "true" && b == "false") || (a == "false" && b == "true")
}

// ownWords mark a field that belongs to the caller ("your policy number").
var ownWords = map[string]bool{"email": true, "phone": true, "birth": true, "dob": true, "account": true, "policy": true,
	"employee": true, "member": true, "customer": true, "callback": true, "zip": true, "caller": true, "insured": true,
	"full": true, "first": false, "service": true, "mobile": true, "patient": true}

// dateModifiers read before "date" ("effective date"); other words read after it ("date of the
// loss").
var dateModifiers = map[string]bool{"effective": true, "requested": true, "start": true, "end": true, "due": true,
	"preferred": true, "expected": true, "estimated": true, "last": true, "first": true, "next": true, "current": true,
	"new": true, "original": true, "target": true, "issue": true, "travel": true, "used": true, "delivered": true, "marked": true}

// thirdParties are people a field can belong to other than the caller ("the patient's date of birth").
var thirdParties = map[string]bool{"patient": true, "dependent": true, "tenant": true, "guest": true, "candidate": true,
	"requester": true, "claimant": true, "manager": true}

// personal are attributes of a person: "patient_dob" is the patient's, "dependent_children" is not.
var personal = map[string]bool{"date": true, "birth": true, "phone": true, "address": true, "email": true, "id": true,
	"age": true, "number": true, "employee": true}

// subjectOf names the field in words: "date of the loss" for loss_date, "policy number".
func subjectOf(words []string, f field) string {
	n := len(words)
	switch {
	case n >= 2 && thirdParties[words[0]] && personal[words[1]]:
		return "the " + words[0] + "'s " + subjectOf(words[1:], f)
	case n >= 4 && strings.HasSuffix(strings.Join(words, " "), " last four digits"):
		return "last four digits of the " + strings.Join(words[:n-3], " ")
	case n >= 2 && words[n-1] == "date" && !slices.Contains(words, "of"):
		for _, w := range words[:n-1] {
			if dateModifiers[w] {
				return strings.Join(words, " ")
			}
		}
		return "date of the " + strings.Join(words[:n-1], " ")
	case n >= 1 && (f.Kind == kindDate) && !slices.Contains(words, "date") && !slices.Contains(words, "birth"):
		return strings.Join(words, " ") + " date"
	case n == 2 && words[1] == "name" && (words[0] == "caller" || words[0] == "insured" || words[0] == "customer" || words[0] == "full"):
		return "full name"
	case n >= 2 && words[n-1] == "name":
		return "name of the " + strings.Join(words[:n-1], " ")
	case n >= 2 && (words[n-1] == "holder" || words[n-1] == "owner"):
		return "name of the " + strings.Join(words, " ")
	case n >= 2 && words[n-1] == "id":
		return strings.Join(words[:n-1], " ") + " ID"
	case n >= 2 && words[n-1] == "cause":
		return "cause of the " + strings.Join(words[:n-1], " ")
	case f.Kind == kindPhone && !slices.Contains(words, "number"):
		return strings.Join(words, " ") + " number"
	case f.Kind == kindEmail:
		return "email address"
	case n == 1 && f.Description != "" && !formatHint.MatchString(f.Description):
		return describe(f.Description)
	case n >= 2 && (words[n-1] == "window" || words[n-1] == "period") && f.Description != "":
		return describe(f.Description)
	}
	return strings.Join(words, " ")
}

var (
	thirdPerson = strings.NewReplacer(" the customer is ", " you are ", " the caller is ", " you are ",
		" the customer ", " you ", " the caller ", " you ", " the insured ", " you ",
		" the customer's ", " your ", " the caller's ", " your ")
	trailingClause = regexp.MustCompile(`(?i)(,?\s+(as given by|in dollars|in usd|as written|if any)\b.*)$`)
)

// describe turns a parameter description into a noun phrase about the caller.
func describe(d string) string {
	d = strings.TrimSuffix(strings.TrimSpace(d), ".")
	d = trailingClause.ReplaceAllString(d, "")
	d = strings.TrimSpace(thirdPerson.Replace(" " + strings.ToLower(d[:1]) + d[1:] + " "))
	return d
}

// units end (or start) names of counted quantities: "notice_period_weeks", "years_experience".
var units = map[string]bool{"days": true, "weeks": true, "months": true, "years": true, "hours": true, "nights": true}

// questionFor asks for a field in one short question.
func questionFor(words []string, f field) string {
	n := len(words)
	subj := f.Subject
	own := false
	for _, w := range words {
		own = own || ownWords[w]
	}
	if n > 1 && thirdParties[words[0]] && personal[words[1]] {
		own = false
	}
	article := "the"
	if own && !strings.Contains(subj, " the ") && !strings.HasPrefix(subj, "the ") {
		article = "your"
	}
	if strings.HasPrefix(subj, "the ") {
		article, subj = "the", strings.TrimPrefix(subj, "the ")
	}
	be := "is"
	if isPlural(subj) {
		be = "are"
	}
	switch {
	case f.Kind == kindYesNo:
		return yesNoQuestion(words)
	case f.Kind == kindChoice && n >= 2 && words[n-1] == "cause":
		return "What caused the " + strings.Join(words[:n-1], " ") + ": " + spokenChoices(f.Enum) + "?"
	case f.Kind == kindChoice && slices.Contains(words, "time") && (slices.Contains(words, "contact") || slices.Contains(words, "call") || slices.Contains(words, "callback")):
		return "What time of day is best to contact you: " + spokenChoices(f.Enum) + "?"
	case f.Kind == kindChoice:
		return "What " + be + " " + article + " " + subj + ": " + spokenChoices(f.Enum) + "?"
	case f.Kind == kindNumber && n >= 2 && units[words[n-1]]:
		return "How many " + words[n-1] + " is the " + strings.Join(words[:n-1], " ") + "?"
	case f.Kind == kindNumber && n >= 2 && units[words[0]]:
		return "How many " + words[0] + " of " + strings.Join(words[1:], " ") + "?"
	case n >= 2 && words[n-1] == "count":
		return "How many " + plural(strings.Join(words[:n-1], " ")) + "?"
	case n >= 2 && words[n-1] == "description":
		return "Can you describe the " + strings.Join(words[:n-1], " ") + "?"
	case n == 1 && words[0] == "summary":
		return "Can you briefly describe what is going on?"
	case n >= 2 && words[n-1] == "tried":
		return "What " + strings.Join(words[:n-1], " ") + " have you already tried?"
	case f.Kind == kindList || f.Kind == kindDateList:
		return "What are " + article + " " + subj + "?"
	}
	return "What " + be + " " + article + " " + subj + "?"
}

// yesNoQuestion asks a yes/no field: "Was the water shut off?", "Were there any unrecognized
// charges?", "Can you lift 50?".
func yesNoQuestion(words []string) string {
	n := len(words)
	rest := strings.Join(words[1:], " ")
	switch words[0] {
	case "can":
		return "Can you " + rest + "?"
	case "needs", "need":
		return "Do you need " + rest + "?"
	case "keep", "wants", "want":
		return "Do you want to " + strings.TrimPrefix(strings.Join(words, " "), "wants ") + "?"
	case "has", "have":
		return "Do you have " + rest + "?"
	case "is", "are":
		return strings.ToUpper(words[0][:1]) + words[0][1:] + " " + rest + "?"
	}
	last := words[n-1]
	all := strings.Join(words, " ")
	participle := strings.HasSuffix(last, "ed") || last == "off" || last == "on" || last == "out" || last == "up" || last == "done"
	switch {
	case participle && n >= 2:
		subject := strings.Join(words[:n-1], " ")
		verb := "Was"
		if isPlural(subject) {
			verb = "Were"
		}
		if last == "off" || last == "on" || last == "out" || last == "up" {
			verb, subject = "Was", strings.Join(words[:n-2], " ")
			if isPlural(subject) {
				verb = "Were"
			}
			return verb + " the " + subject + " " + words[n-2] + " " + last + "?"
		}
		return verb + " the " + subject + " " + last + "?"
	case isPlural(all):
		return "Were there any " + all + "?"
	case last == "ok" || last == "okay":
		return "Is " + strings.Join(words[:n-1], " ") + " okay for you?"
	}
	return "Is there " + article(all) + " " + all + "?"
}

func article(s string) string {
	if s != "" && strings.ContainsRune("aeiou", rune(s[0])) {
		return "an"
	}
	return "a"
}

// isPlural guesses whether a noun phrase is plural from the last word of its head ("due dates in
// order" is plural, "deductible that applies" is not).
func isPlural(s string) bool {
	for _, cut := range []string{" that ", " which ", " when ", " in ", " of ", " for "} {
		if i := strings.Index(s, cut); i > 0 {
			s = s[:i]
		}
	}
	w := strings.Fields(s)
	if len(w) == 0 {
		return false
	}
	last := w[len(w)-1]
	if last == "digits" || last == "contents" || last == "dates" {
		return true
	}
	return len(last) > 3 && strings.HasSuffix(last, "s") && !strings.HasSuffix(last, "ss") && !strings.HasSuffix(last, "us") &&
		!strings.HasSuffix(last, "is")
}

func plural(s string) string {
	if strings.HasSuffix(s, "s") {
		return s
	}
	return s + "s"
}

// spokenChoices lists enumeration values as words: "glass, collision, or comprehensive".
func spokenChoices(enum []string) string {
	words := make([]string, len(enum))
	for i, e := range enum {
		words[i] = strings.Join(nameWords(e), " ")
	}
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	case 2:
		return words[0] + " or " + words[1]
	}
	return strings.Join(words[:len(words)-1], ", ") + ", or " + words[len(words)-1]
}

// genericWords never identify a field by themselves.
var genericWords = map[string]bool{"number": true, "date": true, "name": true, "id": true, "code": true, "of": true,
	"the": true, "type": true, "amount": true, "time": true, "info": true, "details": true, "count": true}

func keywordsOf(words []string) []string {
	var out []string
	for _, w := range words {
		if !genericWords[w] && len(w) > 2 {
			out = append(out, stem(w))
		}
	}
	if len(out) == 0 {
		for _, w := range words {
			out = append(out, stem(w))
		}
	}
	return out
}

// stem reduces a word to a crude stem shared by its inflections, so that "installments" finds
// "installment" and "estimated" finds "estimate": a plural or verb ending, then a final "e", is
// dropped; a possessive "'s" too.
func stem(w string) string {
	w = strings.TrimSuffix(strings.ToLower(w), "'s")
	for _, suf := range []string{"ies", "es", "s", "ed", "ing"} {
		if len(w) > len(suf)+3 && strings.HasSuffix(w, suf) {
			w = strings.TrimSuffix(w, suf)
			break
		}
	}
	if len(w) > 4 && strings.HasSuffix(w, "e") {
		w = w[:len(w)-1]
	}
	return w
}

// slot is the recognition grammar of a field's answers, or nil for open vocabulary.
func (f *field) slot(known func(string) bool) *asr.Slot {
	subject := f.Subject
	var contractions []string
	for _, w := range strings.Fields(strings.ToLower(subject)) {
		if !known(w) {
			subject, contractions = "", nil
			break
		}
		if c := w + "'s"; !strings.HasSuffix(w, "'s") && known(c) {
			contractions = append(contractions, c)
		}
	}
	s := f.slotOfKind(known, subject)
	if s != nil && s.Subject != "" {
		s.Contractions = contractions
	}
	return s
}

// unasked makes a field's slot the one read for it when another field was asked: the caller does
// not name it ("my account's …"), and one grammar suffices.
func unasked(s *asr.Slot) { s.Subject, s.Contractions, s.Single = "", nil, true }

func (f *field) slotOfKind(known func(string) bool, subject string) *asr.Slot {
	switch f.Kind {
	case kindDigits:
		return &asr.Slot{Kind: asr.KindDigits, Digits: f.Digits, Subject: subject}
	case kindIdentifier:
		return &asr.Slot{Kind: asr.KindIdentifier, Subject: subject}
	case kindPhone:
		return &asr.Slot{Kind: asr.KindPhone, Subject: subject}
	case kindDate:
		return &asr.Slot{Kind: asr.KindDate, Subject: subject}
	case kindDateRange:
		return &asr.Slot{Kind: asr.KindDateRange, Subject: subject}
	case kindNumber:
		return &asr.Slot{Kind: asr.KindNumber, Subject: subject}
	case kindYesNo:
		return &asr.Slot{Kind: asr.KindYesNo}
	case kindChoice:
		var choices []string
		for _, e := range f.Enum {
			phrase := strings.Join(nameWords(e), " ")
			ok := true
			for _, w := range strings.Fields(phrase) {
				ok = ok && known(w)
			}
			if ok {
				choices = append(choices, phrase)
			}
		}
		if len(choices) == 0 {
			return nil
		}
		return &asr.Slot{Kind: asr.KindChoice, Choices: choices, Subject: subject}
	}
	return nil
}

// classify decides a tool's role from its name first, then its description.
func classify(t toolInfo) role {
	n := " " + strings.Join(nameWords(t.Name), " ") + " "
	d := strings.ToLower(t.Description)
	switch {
	case strings.Contains(n, " kb ") || strings.Contains(n, " knowledge ") ||
		(strings.Contains(n, " search ") && (strings.Contains(d, "polic") || strings.Contains(d, "guideline") || strings.Contains(d, "knowledge") || strings.Contains(d, "rules"))):
		return roleKB
	case strings.Contains(n, " approval ") || strings.Contains(d, "asking") && strings.Contains(d, "approve") ||
		strings.HasPrefix(n, " request ") && strings.Contains(d, "asking"):
		return roleApproval
	case strings.HasPrefix(n, " verify ") || strings.HasPrefix(n, " authenticate ") || strings.Contains(d, "identity") || strings.HasPrefix(d, "verify"):
		return roleVerify
	case strings.HasPrefix(n, " mark ") || strings.Contains(d, "mark the") && (strings.Contains(d, "ready") || strings.Contains(d, "complete")):
		return roleTransition
	case (strings.HasPrefix(n, " record ") || strings.HasPrefix(n, " update ") || strings.HasPrefix(n, " set ") ||
		strings.HasPrefix(d, "record")) && len(t.Params) > 0:
		return roleRecord
	case (strings.HasPrefix(n, " get ") || strings.HasPrefix(n, " read ")) && len(t.Params) == 0:
		return roleReadBack
	case (strings.HasPrefix(n, " lookup ") || strings.HasPrefix(n, " look ") || strings.HasPrefix(n, " get ") ||
		strings.HasPrefix(n, " find ") || strings.HasPrefix(n, " check ")) && len(t.Params) > 0:
		return roleLookup
	case strings.Contains(d, "only after") || strings.Contains(d, "only with"):
		return roleCommit
	}
	return roleOther
}

// model is everything the agent derives from one session configuration.
type model struct {
	instructions string
	tools        []toolInfo
	byRole       map[role][]*toolInfo
	fields       []*field // the record tool's fields, in order
	fieldByName  map[string]*field
	org          string   // who the agent is ("the Northwind IT service desk")
	artifact     string   // what it prepares ("incident ticket")
	kbQuery      string   // what the instructions say to look up in the knowledge base
	kbQueries    []string // each thing they name, one search each
	useKB        bool
}

var (
	youAre     = regexp.MustCompile(`(?i)^you are (the |a |an )?([^.:;,]+)`)
	kbFor      = regexp.MustCompile(`(?i)(?:knowledge base|kb|polic(?:y|ies)|guidelines)\s+for\s+(?:the\s+|any\s+)?([a-z0-9 \-]+)`)
	recordOfRE = regexp.MustCompile(`(?i)fields of (?:the |a |an )?([a-z \-]+?)\.?$`)
)

// newModel builds the agent's model from the session's instructions and tools.
func newModel(instructions string, tools []toolInfo) *model {
	m := &model{instructions: instructions, tools: tools, byRole: map[role][]*toolInfo{}, fieldByName: map[string]*field{}}
	for i := range m.tools {
		t := &m.tools[i]
		m.byRole[t.Role] = append(m.byRole[t.Role], t)
	}
	for _, t := range m.byRole[roleRecord] {
		for i := range t.Params {
			f := &t.Params[i]
			if m.fieldByName[f.Name] == nil {
				m.fields = append(m.fields, f)
				m.fieldByName[f.Name] = f
			}
		}
	}
	if g := youAre.FindStringSubmatch(strings.TrimSpace(instructions)); g != nil {
		org := strings.TrimSpace(g[2])
		switch art := strings.ToLower(strings.TrimSpace(g[1])); art {
		case "a", "an": // "a recruiting coordinator at Fernhill Labs doing …": the organisation
			if i := strings.Index(org, " at "); i >= 0 {
				org = org[i+4:]
			} else if i := strings.Index(org, " for "); i >= 0 {
				org = org[i+5:]
			}
		case "the":
			org = "the " + org
		}
		for _, cut := range []string{" doing ", " screening ", " who ", " to ", " that "} {
			if i := strings.Index(org, cut); i > 0 {
				org = org[:i]
			}
		}
		m.org = org
	}
	m.artifact = "request"
	if rec := m.byRole[roleRecord]; len(rec) > 0 {
		if g := recordOfRE.FindStringSubmatch(rec[0].Description); g != nil {
			m.artifact = strings.TrimSpace(g[1])
		}
	}
	low := strings.ToLower(instructions)
	if len(m.byRole[roleKB]) > 0 {
		if g := kbFor.FindStringSubmatch(low); g != nil {
			q := g[1]
			for _, stop := range []string{" that ", " which ", " and ", " to ", " before ", " when "} {
				if i := strings.Index(q+" ", stop); i >= 0 {
					q = q[:i]
				}
			}
			m.kbQuery = strings.TrimSpace(q)
		}
		m.kbQueries = kbQueriesOf(instructions)
		// "Search the benefits guide for …" asks for a search as plainly as "knowledge base" does.
		m.useKB = m.kbQuery != "" || len(m.kbQueries) > 0 || strings.Contains(low, "knowledge base") || strings.Contains(low, "policy") ||
			strings.Contains(low, "policies") || strings.Contains(low, "rules")
		if m.kbQuery == "" {
			m.kbQuery = m.artifact
		}
		if len(m.kbQueries) == 0 {
			m.kbQueries = []string{m.kbQuery}
		}
	}
	return m
}

var searchFor = regexp.MustCompile(`(?i)\bsearch (?:the |its |a )?[a-z \-]*?(?:knowledge base|kb|policy|policies|guide|guidelines|rules|manual)\s+(?:for|to)\s+([^.;]+)`)

// kbQueriesOf reads what the instructions say to search the knowledge base for ("search the
// dispute policy for the reason code and whether a provisional credit applies") as one query per
// thing named.
func kbQueriesOf(instructions string) []string {
	var out []string
	seen := map[string]bool{}
	for _, g := range searchFor.FindAllStringSubmatch(instructions, -1) {
		for _, part := range regexp.MustCompile(`,\s*|\s+and\s+`).Split(g[1], -1) {
			ws := strings.Fields(strings.ToLower(part))
			for len(ws) > 0 && (ws[0] == "the" || ws[0] == "how" || ws[0] == "whether" || ws[0] == "what" || ws[0] == "which" ||
				ws[0] == "a" || ws[0] == "an" || ws[0] == "any" || ws[0] == "who" || ws[0] == "compute" || ws[0] == "decide" ||
				ws[0] == "set" || ws[0] == "record") {
				ws = ws[1:]
			}
			if len(ws) > 6 {
				ws = ws[:6]
			}
			q := strings.Join(ws, " ")
			if q != "" && !seen[q] {
				seen[q] = true
				out = append(out, q)
			}
		}
	}
	return out
}

// tool returns the first tool of a role, or nil.
func (m *model) tool(r role) *toolInfo {
	if ts := m.byRole[r]; len(ts) > 0 {
		return ts[0]
	}
	return nil
}

// paramField returns the field model of a tool argument: the record tool's field of that name
// when there is one (so an answer is recorded as well as used), else the argument itself.
func (m *model) paramField(t *toolInfo, name string) *field {
	if f := m.fieldByName[name]; f != nil {
		return f
	}
	for i := range t.Params {
		if t.Params[i].Name == name {
			return &t.Params[i]
		}
	}
	return nil
}

// misheardName reports the field's name heard as one word: two adjacent words of its subject run
// together, within two letter edits ("stargate" for "start date"), the recognizer's usual way of
// mishearing a compound it has no entry for. Short compounds are left out: "end date" is two edits
// from too many words.
func misheardName(f *field, heard []string) bool {
	sw := strings.Fields(strings.ToLower(f.Subject))
	for i := 0; i+1 < len(sw); i++ {
		joined := []rune(sw[i] + sw[i+1])
		if len(joined) < 8 {
			continue
		}
		for _, w := range heard {
			r := []rune(strings.ToLower(w))
			if len(r) < 6 || r[0] != joined[0] || containsKeyword(f, w) {
				continue
			}
			if editDistance(r, joined, sameRune) <= 2 {
				return true
			}
		}
	}
	return false
}

// mentioned returns the fields the caller's words name, best match first.
func (m *model) mentioned(words []string, candidates []*field) []*field {
	have := map[string]bool{}
	for _, w := range words {
		have[stem(strings.ToLower(w))] = true
	}
	type hit struct {
		f     *field
		score int
	}
	var hits []hit
	for _, f := range candidates {
		n := 0
		for _, k := range f.keywords {
			if have[k] {
				n++
			}
		}
		switch {
		case n > 0:
			hits = append(hits, hit{f, n * 100 / len(f.keywords)})
		case misheardName(f, words):
			hits = append(hits, hit{f, 1})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	out := make([]*field, len(hits))
	for i, h := range hits {
		out[i] = h.f
	}
	return out
}
