// Package report turns an audit study's sessions, grades and ratings into the tables and figures a
// paper reports: per system, human and synthetic results side by side with Wilson intervals,
// human-minus-synthetic deltas paired by task with task-level (cluster) bootstrap intervals
// (percentile, expanded for the number of tasks, with BCa beside), the share of variance due to
// participants and each delta's participant-level sensitivity, the anchor subset's agreement
// between participants, the annotator study, slices by task strata, per-task field misses,
// exclusions, response latency and cost, and a planning mode that gives the minimum detectable
// delta for a planned number of participants from each task's planned counts.
//
// Build computes a Report from an Input held in memory; Load fills an Input from the store; Write
// renders a Report as report.md, a self-contained report.html, CSV and JSON files with every
// number, and SVG, PNG and PDF figures drawn with gonum/plot. The same Input and Options always
// give the same bytes.
package report
