package audit

import "time"

// Experimenter is a person who runs studies and reviews sessions.
type Experimenter struct {
	ID        int64
	Name      string
	CreatedAt time.Time
}

// DefaultSignInLinkTTL is how long an experimenter sign-in link stays usable when not consumed.
const DefaultSignInLinkTTL = 15 * time.Minute

// ExperimenterSession is a signed-in experimenter's server-side session.
type ExperimenterSession struct {
	Experimenter Experimenter
	Via          string // "password" or "link"
	CreatedAt    time.Time
	ExpiresAt    time.Time // absolute end
	Idle         time.Duration
}

// SessionLimits are an experimenter session's idle and absolute lifetimes.
type SessionLimits struct {
	Idle     time.Duration // ends after this long without a request (default 2 h)
	Absolute time.Duration // ends this long after sign-in whatever happens (default 12 h)
}

// WithDefaults fills the limits left zero with the defaults (2 h idle, 12 h absolute).
func (l SessionLimits) WithDefaults() SessionLimits {
	if l.Idle <= 0 {
		l.Idle = 2 * time.Hour
	}
	if l.Absolute <= 0 {
		l.Absolute = 12 * time.Hour
	}
	return l
}
