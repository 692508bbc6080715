package console_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/voicebench/humanaudit/internal/store/storetest"
)

// TestMain leaves the shared test cluster when the tests end and then checks that no goroutine of
// a console outlived them: Close must end every live session, stop the closing keeper and give up
// the liveness lock.
func TestMain(m *testing.M) { storetest.Main(m, func() error { return goleak.Find() }) }
