package wsserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Close closes the open connections, waits until their handlers have released them, and refuses
// connections from then on.
func TestCloseWaitsForHandlersAndRefusesNewOnes(t *testing.T) {
	var reg Registry
	ids := make(chan int, 2)
	released := make(chan struct{}, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, id, ok := reg.Accept(w, r)
		if !ok {
			http.Error(w, "closed", http.StatusServiceUnavailable)
			return
		}
		ids <- id
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				break
			}
		}
		time.Sleep(50 * time.Millisecond) // a handler still cleaning up when Close is called
		released <- struct{}{}
		reg.Release(ws)
	}))
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	for want := 1; want <= 2; want++ {
		c, _, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if id := <-ids; id != want {
			t.Errorf("connection number %d, want %d", id, want)
		}
	}
	if n := reg.Len(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
	reg.Close()
	if len(released) != 2 || reg.Len() != 0 {
		t.Fatalf("Close returned with %d of 2 handlers released, %d connections left", len(released), reg.Len())
	}
	if _, resp, err := websocket.DefaultDialer.Dial(url, nil); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial after Close: %v %v", resp, err)
	}
	if !reg.Closed() {
		t.Error("Closed after Close is false")
	}
}
