package main

import (
	"testing"

	"github.com/voicebench/humanaudit/internal/store/storetest"
)

// TestMain leaves the shared test database cluster when the tests end (the last process to leave
// stops it).
func TestMain(m *testing.M) { storetest.Main(m) }
