package main

import (
	"os"
	"testing"

	"github.com/voicebench/humanaudit/internal/store/storetest"
)

// TestMain leaves the shared test database cluster when the tests end (the last process to leave
// stops it). Re-executed with consoleChildEnv set, the test binary is the console instead.
func TestMain(m *testing.M) {
	if args := os.Getenv(consoleChildEnv); args != "" {
		os.Exit(runConsoleChild(args))
	}
	storetest.Main(m)
}
