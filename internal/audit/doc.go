// Package audit holds the nouns of the human-audit track that outlive a call: studies, evaluated
// systems, plan rows and assignments, participants and their consent, session records with their
// recordings, scores and exclusions, annotators and ratings, experimenters, and the domain errors
// every layer matches with errors.Is. It has no behaviour beyond the nouns' own rules and no
// dependency on a database or on HTTP: internal/store implements the repositories, and each
// package that uses them (study, console, synth, report, web) declares the small interface it
// needs, as benbjohnson/wtf keeps its types at the root beside sqlite/ and http/.
package audit
