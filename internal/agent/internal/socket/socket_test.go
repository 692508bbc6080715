package socket

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/voicebench/humanaudit/internal/agent"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStreamDeliversInOrderThenCloses(t *testing.T) {
	s := NewEventStream(100, 4)
	for i := 0; i < 50; i++ {
		if err := s.Emit(agent.Event{Text: string(rune('a' + i%26))}); err != nil {
			t.Fatal(err)
		}
	}
	s.Finish(agent.Event{Type: agent.EventError})
	var got []agent.Event
	for ev := range s.C() {
		got = append(got, ev)
	}
	if len(got) != 51 || got[0].Text != "a" || got[25].Text != "z" || got[50].Type != agent.EventError {
		t.Fatalf("got %d events", len(got))
	}
	if err := s.Emit(agent.Event{}); !errors.Is(err, agent.ErrClosed) {
		t.Fatalf("emit after finish: %v", err)
	}
}

func TestStreamBoundAndAbortWithoutConsumer(t *testing.T) {
	s := NewEventStream(3, 1)
	var err error
	n := 0
	for ; n < 100 && err == nil; n++ {
		err = s.Emit(agent.Event{})
	}
	if !errors.Is(err, ErrOverflow) || n > 6 {
		t.Fatalf("overflow after %d emits: %v", n, err)
	}
	s.Finish(agent.Event{Type: agent.EventError}) // beyond the bound: still queued
	if p := s.Pending(); p < 3 {
		t.Fatalf("pending %d", p)
	}
	s.Abort() // nobody ever read: must not leak the pump (goleak checks)
	if _, ok := <-s.C(); ok {
		// a buffered event may remain; the channel must close right after
		for range s.C() {
		}
	}
}

// server runs fn on the server side of one WebSocket.
func server(t *testing.T, fn func(ws *websocket.Conn)) string {
	t.Helper()
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		fn(ws)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func start(t *testing.T, url string, o Options) (*Conn, chan []byte, chan *agent.Error) {
	t.Helper()
	ws, err := Dial(context.Background(), url, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	msgs, closed := make(chan []byte, 16), make(chan *agent.Error, 1)
	c := Start(ws, o, nil, Handler{Message: func(b []byte) { msgs <- b }, Closed: func(e *agent.Error) { closed <- e }})
	t.Cleanup(func() { c.Close() })
	return c, msgs, closed
}

func TestIdleTimeoutIsLostConnection(t *testing.T) {
	hold := make(chan struct{})
	url := server(t, func(ws *websocket.Conn) {
		ws.SetPingHandler(func(string) error { return nil }) // never answers pings
		go func() {
			for {
				if _, _, err := ws.ReadMessage(); err != nil {
					return
				}
			}
		}()
		<-hold
	})
	defer close(hold)
	_, _, closed := start(t, url, Options{IdleTimeout: 200 * time.Millisecond, PingInterval: 50 * time.Millisecond})
	select {
	case e := <-closed:
		if e == nil || e.Class != agent.ClassLostConnection || e.Code != "idle_timeout" || !e.Fatal {
			t.Fatalf("closed with %+v", e)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("idle connection not detected")
	}
}

func TestPongsKeepAnIdleConnectionAlive(t *testing.T) {
	hold := make(chan struct{})
	url := server(t, func(ws *websocket.Conn) {
		go func() {
			for {
				if _, _, err := ws.ReadMessage(); err != nil { // the default ping handler answers
					return
				}
			}
		}()
		<-hold
	})
	c, _, closed := start(t, url, Options{IdleTimeout: 150 * time.Millisecond, PingInterval: 40 * time.Millisecond})
	select {
	case e := <-closed:
		t.Fatalf("closed with %+v", e)
	case <-time.After(500 * time.Millisecond):
	}
	close(hold)
	c.Close()
}

func TestCloseFrameAndSendAfterClose(t *testing.T) {
	url := server(t, func(ws *websocket.Conn) {
		ws.WriteMessage(websocket.BinaryMessage, []byte(`{"a":1}`))
		ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(1011, "Internal error"), time.Now().Add(time.Second))
	})
	c, msgs, closed := start(t, url, Options{})
	if b := <-msgs; string(b) != `{"a":1}` {
		t.Fatalf("binary frame %q", b)
	}
	e := <-closed
	if e.Class != agent.ClassLostConnection || e.Code != "1011" || !strings.Contains(e.Message, "Internal error") {
		t.Fatalf("closed with %+v", e)
	}
	if err := c.Send([]byte("x")); !errors.Is(err, agent.ErrClosed) {
		t.Fatalf("send after loss: %v", err)
	}
}

func TestDialClassifiesRefusals(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/401":
			http.Error(w, `{"error":"bad key sk-leaky-123"}`, http.StatusUnauthorized)
		case "/429":
			http.Error(w, "slow down", http.StatusTooManyRequests)
		case "/403":
			http.Error(w, `{"error":{"code":403,"message":"Method doesn't allow unregistered callers.","status":"PERMISSION_DENIED"}}`, http.StatusForbidden)
		case "/google-400":
			// Google's refusal of a bad key: HTTP 400, the reason long after the message.
			http.Error(w, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT",`+
				`"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com",`+
				`"metadata":{"service":"generativelanguage.googleapis.com"}},{"@type":"type.googleapis.com/google.rpc.LocalizedMessage",`+
				`"locale":"en-US","message":"API key not valid. Please pass a valid API key."}]}}`, http.StatusBadRequest)
		case "/google-400-reason-only":
			http.Error(w, `{"error":{"code":400,"status":"INVALID_ARGUMENT","details":[{"reason":"`+strings.Repeat("x", 400)+`"},{"reason":"API_KEY_INVALID"}]}}`, http.StatusBadRequest)
		case "/openai-400":
			http.Error(w, `{"error":{"type":"invalid_request_error","code":"invalid_api_key","message":"Incorrect API key provided: sk-leak***123."}}`, http.StatusBadRequest)
		case "/400":
			http.Error(w, `{"error":{"type":"invalid_request_error","code":"missing_model","message":"Missing required parameter: 'model'."}}`, http.StatusBadRequest)
		default:
			http.Error(w, "boom", http.StatusBadGateway)
		}
	}))
	defer srv.Close()
	base := "ws" + strings.TrimPrefix(srv.URL, "http")
	o := Options{Redact: []string{"sk-leaky-123"}}
	for path, class := range map[string]agent.ErrorClass{"/401": agent.ClassAuth, "/403": agent.ClassAuth, "/429": agent.ClassRateLimit, "/502": agent.ClassProvider,
		"/google-400": agent.ClassAuth, "/google-400-reason-only": agent.ClassAuth, "/openai-400": agent.ClassAuth, "/400": agent.ClassProtocol} {
		_, err := Dial(context.Background(), base+path, nil, o)
		if agent.ClassOf(err) != class || strings.Contains(err.Error(), "sk-leaky") {
			t.Errorf("%s: %v, want class %s", path, err, class)
		}
		if len(err.Error()) > 420 {
			t.Errorf("%s: message of %d bytes; the body shown is cut at 300", path, len(err.Error()))
		}
	}
}

func TestEndpointDropsQuery(t *testing.T) {
	if got := Endpoint("wss://user:pw@host/ws?key=AIza&x=1"); got != "wss://host/ws" {
		t.Fatal(got)
	}
}
