package study

import (
	"errors"
	"fmt"
)

// ErrInfeasible is wrapped by every *InfeasibleError: the request asks for a design that cannot
// exist (or that the planner cannot build) under the study's constraints.
var ErrInfeasible = errors.New("infeasible study plan")

// ErrInvalidRequest is wrapped by errors for malformed requests (no systems, an unknown anchor task,
// a duplicate label).
var ErrInvalidRequest = errors.New("invalid study plan request")

// InfeasibleError says which constraint of the design a request violates and the smallest change
// to the request that satisfies it.
type InfeasibleError struct {
	Constraint string // the constraint that fails, in the study's words
	Reason     string // the numbers that make it fail
	Fix        string // the smallest change that makes the request feasible
	// SuggestedK lists the sessions-per-participant values nearest the requested one that give a
	// plan (the fix, for programs).
	SuggestedK []int
}

// Error says what fails and how to fix it, in one line.
func (e *InfeasibleError) Error() string {
	return fmt.Sprintf("cannot plan this study: %s: %s; fix: %s", e.Constraint, e.Reason, e.Fix)
}

// Unwrap lets errors.Is match ErrInfeasible.
func (e *InfeasibleError) Unwrap() error { return ErrInfeasible }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidRequest, fmt.Sprintf(format, args...))
}
