//go:build race

package browsertest

// Race reports whether the race detector is on. It slows the Go side of a live call several times
// over, too much for real-time speech to stay intelligible end to end.
const Race = true
