package pgcluster_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/voicebench/humanaudit/internal/store/pgcluster"
)

// helperStartEnv makes the test binary act as "an earlier run" that starts a cluster and exits
// without closing it (see TestClusterReusedAcrossRuns).
const helperStartEnv = "AUDIT_STORE_TEST_START_CLUSTER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperStartEnv); dir != "" {
		c, err := pgcluster.Start(context.Background(), pgcluster.Config{Dir: dir})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(c.PID())
		os.Exit(0) // no Close: the server outlives this process, as after a crash
	}
	os.Exit(m.Run())
}
