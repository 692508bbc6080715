package systems

import (
	"errors"
	"strings"

	"github.com/voicebench/humanaudit/internal/redact"
	"github.com/voicebench/humanaudit/internal/secrets"
)

// Keys resolves API keys by label; *secrets.Store (secrets.txt, then the environment) is the
// implementation. Keys are passed to adapters only: never logged, printed or stored.
type Keys interface {
	Lookup(label string) (string, error)
}

// Key resolves a system's key: "" for systems that need none, and a ConfigError naming the systems
// file, the system and the label when it is missing.
func Key(sys System, keys Keys) (string, error) {
	if !sys.NeedsKey() {
		return "", nil
	}
	if keys == nil {
		return "", sys.problem(ErrMissingKey, "key label %s not found: no secrets file or environment given", sys.KeyLabel)
	}
	k, err := keys.Lookup(sys.KeyLabel)
	if err != nil {
		msg := err.Error()
		if errors.Is(err, secrets.ErrNotFound) {
			msg = strings.TrimSuffix(msg, ": "+secrets.ErrNotFound.Error())
		}
		return "", sys.problem(ErrMissingKey, "%s", msg)
	}
	redact.Add(sys.KeyLabel, k) // whatever Keys implementation resolved it
	return k, nil
}

// CheckKeys verifies that every system that needs a key has one (a startup check).
func (f *File) CheckKeys(keys Keys) error {
	var errs []error
	for _, sys := range f.Systems {
		if _, err := Key(sys, keys); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
