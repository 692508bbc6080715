// Package stats computes the reliability and interval statistics an audit study reports:
// Krippendorff's alpha, Fleiss' kappa, Wilson score intervals, pass@k and pass^k, a fast cluster
// (task-level) bootstrap with percentile and BCa bounds and a small-sample expansion, the
// one-way intra-class correlation, Student t quantiles, and the delta variance and detectable
// delta the planning needs.
//
// The package has no outside dependencies. Results that can be mathematically undefined (alpha
// when only one value occurs, kappa when only one category is used) are NaN with a Note saying
// why; callers that encode JSON must turn NaN into null themselves.
package stats
