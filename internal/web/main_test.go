package web_test

import (
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/voicebench/humanaudit/internal/store/storetest"
)

// TestMain leaves the shared test cluster when the tests end and then checks that no goroutine
// of the app, its peers or its calls outlived them: every server, peer, session and stream the
// tests started must have been closed.
func TestMain(m *testing.M) { storetest.Main(m, noLeaks) }

func noLeaks() error {
	// The tests' HTTP clients share the default transport: its idle keep-alive connections are
	// the client's, not the app's.
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	// fasthttp's worker pool sees that its server shut down only when its idle sleep (10 s) ends,
	// so a pool of the last server closed is given that long to go.
	deadline := time.Now().Add(15 * time.Second)
	for {
		// Two goroutines of fasthttp live as long as the process by design, one each per process:
		// its clock, and the cache cleaner of the file server behind Fiber's SendFile (the
		// recording download), which Fiber creates once and never stops.
		err := goleak.Find(goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
			goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*inMemoryCacheManager).handleCleanCache"))
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}
