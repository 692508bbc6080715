// Package stats computes the reliability and interval statistics an audit study reports:
// Krippendorff's alpha, Fleiss' kappa, Wilson score intervals, pass@k and pass^k, and a fast
// cluster (task-level) bootstrap, plus the power and summary helpers the report needs.
//
// The package has no outside dependencies. Results that can be mathematically undefined (alpha
// when only one value occurs, kappa when only one category is used) are NaN with a Note saying
// why; callers that encode JSON must turn NaN into null themselves.
package stats
