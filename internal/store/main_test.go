package store_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/storetest"
)

// helperStartEnv makes the test binary act as "an earlier run" that starts a cluster and exits
// without closing it (see TestClusterReusedAcrossRuns).
const helperStartEnv = "AUDIT_STORE_TEST_START_CLUSTER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperStartEnv); dir != "" {
		c, err := store.StartCluster(context.Background(), store.ClusterConfig{Dir: dir})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(c.PID())
		os.Exit(0) // no Close: the server outlives this process, as after a crash
	}
	storetest.Main(m)
}
