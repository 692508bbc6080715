package pgcluster

import "errors"

// Errors of the cluster; match them with errors.Is.
var (
	// ErrNoPostgres: no PostgreSQL server binaries were found for the cluster.
	ErrNoPostgres = errors.New("no postgresql binaries")
	// ErrPermission: the cluster directory cannot be used by the user the server runs as.
	ErrPermission = errors.New("permission denied")
)

// clusterError is an error with a message written for people (one line naming the directory) that
// still matches its kind and unwraps to its cause.
type clusterError struct {
	msg   string
	kind  error
	cause error
}

func (e *clusterError) Error() string   { return e.msg }
func (e *clusterError) Unwrap() []error { return []error{e.kind, e.cause} }
