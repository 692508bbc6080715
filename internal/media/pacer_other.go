//go:build !linux

package media

import "errors"

// newKernelTimer has no kernel timer to offer outside Linux: the pacer runs on its Go timer alone.
func newKernelTimer() (kernelTimer, error) {
	return nil, errors.New("no kernel timer on this platform")
}
