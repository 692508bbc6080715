// Package wsserver keeps the connections of the WebSocket servers that stand in for realtime
// agent APIs (the OpenAI-family server; the Gemini, GPT-Live and ElevenLabs fakes): it upgrades
// only while open, numbers the connections, and on Close refuses new ones, closes the open ones
// and waits for their handlers.
package wsserver

import (
	"net/http"
	"sync"

	"github.com/gorilla/websocket"
)

// Registry tracks a server's WebSocket connections. The zero value is ready to use.
type Registry struct {
	// Upgrader upgrades requests (its zero value checks that the Origin matches the host).
	Upgrader websocket.Upgrader

	mu     sync.Mutex
	conns  map[*websocket.Conn]struct{}
	n      int
	closed bool
	wg     sync.WaitGroup // handlers between Accept and Release
}

// Closed reports whether Close has been called.
func (r *Registry) Closed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// Accept upgrades req unless the registry is closed, and returns the connection with its number
// (1, 2, … in order of acceptance). On false the response has been written (or the registry was
// closed meanwhile and the connection dropped). The handler serves the connection, then calls
// Release.
func (r *Registry) Accept(w http.ResponseWriter, req *http.Request) (*websocket.Conn, int, bool) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, 0, false
	}
	r.wg.Add(1)
	r.mu.Unlock()
	ws, err := r.Upgrader.Upgrade(w, req, nil)
	if err != nil {
		r.wg.Done()
		return nil, 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		ws.Close()
		r.wg.Done()
		return nil, 0, false
	}
	if r.conns == nil {
		r.conns = map[*websocket.Conn]struct{}{}
	}
	r.conns[ws] = struct{}{}
	r.n++
	return ws, r.n, true
}

// Release ends a handler's hold on an accepted connection.
func (r *Registry) Release(ws *websocket.Conn) {
	r.mu.Lock()
	delete(r.conns, ws)
	r.mu.Unlock()
	r.wg.Done()
}

// Serve accepts req (see Accept) and runs handle on the connection, then releases it; when the
// upgrade is refused it returns at once.
func (r *Registry) Serve(w http.ResponseWriter, req *http.Request, handle func(ws *websocket.Conn, id int)) {
	ws, id, ok := r.Accept(w, req)
	if !ok {
		return
	}
	defer r.Release(ws)
	handle(ws, id)
}

// Len reports the connections accepted and not yet released.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.conns)
}

// Close refuses new connections, closes the open ones and waits until every handler has
// released its connection. It is safe to call more than once.
func (r *Registry) Close() {
	r.mu.Lock()
	r.closed = true
	conns := make([]*websocket.Conn, 0, len(r.conns))
	for ws := range r.conns {
		conns = append(conns, ws)
	}
	r.mu.Unlock()
	for _, ws := range conns {
		ws.Close()
	}
	r.wg.Wait()
}

// DropAll closes every connection's TCP socket without a close frame, as a network failure would.
func (r *Registry) DropAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for ws := range r.conns {
		ws.UnderlyingConn().Close()
	}
}
