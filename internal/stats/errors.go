package stats

import "errors"

// Sentinel errors, matched with errors.Is. Messages built on them name the file, line, column
// and value at fault where the input came from a file.
var (
	// ErrNoData means the input held no usable observations (e.g. a CSV file with only a header).
	ErrNoData = errors.New("no data")
	// ErrBadCSV means a CSV file is malformed or lacks a required column.
	ErrBadCSV = errors.New("bad csv")
	// ErrInvalidValue means a value cannot be used at the requested level (e.g. a non-number at
	// interval level, a negative count).
	ErrInvalidValue = errors.New("invalid value")
	// ErrDuplicate means the same rater rated the same unit twice, or a trial repeats.
	ErrDuplicate = errors.New("duplicate observation")
	// ErrNoPairable means no unit has two or more ratings, so agreement cannot be measured.
	ErrNoPairable = errors.New("no pairable units")
	// ErrUnequalRatings means Fleiss' kappa got subjects with different numbers of ratings.
	ErrUnequalRatings = errors.New("unequal numbers of ratings per subject")
	// ErrTooFewTrials means a task has fewer trials than the k of pass@k.
	ErrTooFewTrials = errors.New("too few trials")
	// ErrInvalidArgument means a parameter is out of range (level outside (0,1), k < 1, ...).
	ErrInvalidArgument = errors.New("invalid argument")
)
