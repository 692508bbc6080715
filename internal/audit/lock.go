package audit

import "context"

// Lock is a named lock held until Release: a console's liveness lock, or a synthetic run's lock
// on its system. The store's locks live on the database server, so they exclude holders in any
// process and vanish with a holder that crashed.
type Lock interface {
	// Check reports whether the lock is still held; after an error the holder must take it again.
	Check(ctx context.Context) error
	// Release gives the lock up; releasing twice is a no-op.
	Release(ctx context.Context) error
}
