package agenttest

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/voicebench/humanaudit/internal/agent/internal/wsserver"
)

// server is the loopback HTTP server of a fake with a server of its own, and its WebSocket
// connections.
type server struct {
	reg wsserver.Registry
	srv *httptest.Server
}

// wsURL is the ws:// address of path on the server.
func (s *server) wsURL(path string) string {
	return "ws" + strings.TrimPrefix(s.srv.URL, "http") + path
}

// Close drops every connection and stops the server.
func (s *server) Close() {
	s.reg.Close()
	s.srv.Close()
}

// DropAll closes every connection's TCP socket without a close frame, as a network failure would.
func (s *server) DropAll() { s.reg.DropAll() }

// wsConn is what the connections of the fakes with servers of their own (Gemini Live, GPT-Live,
// ElevenLabs) share: serialized writes recorded in the fake's traffic, recorded close frames and
// the read loop. The protocol — frame type, event ids, what a close means — stays with each fake.
type wsConn struct {
	t   *traffic
	id  int // the connection's number in its fake, from 1
	ws  *websocket.Conn
	wmu sync.Mutex // serializes writes
}

// sendJSON writes msg as one frame of type frame (websocket.TextMessage or BinaryMessage) and
// records kind as sent.
func (c *wsConn) sendJSON(frame int, kind string, msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(frame, kind, b)
}

// writeLocked is sendJSON's write with c.wmu held, for a fake that stamps event ids in write
// order.
func (c *wsConn) writeLocked(frame int, kind string, b []byte) error {
	c.t.mu.Lock()
	c.t.sent = append(c.t.sent, kind)
	c.t.mu.Unlock()
	c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteMessage(frame, b)
}

// closeWith records and sends a close frame, then closes the connection.
func (c *wsConn) closeWith(code int, reason string) {
	c.t.mu.Lock()
	c.t.closes = append(c.t.closes, fmt.Sprintf("%d %s", code, reason))
	c.t.mu.Unlock()
	c.wmu.Lock()
	c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
	c.wmu.Unlock()
	c.ws.Close()
}

// dropAt closes the TCP connection without a close frame, and reports true, if reply drops after
// its audio chunk i.
func (c *wsConn) dropAt(reply Reply, i int) bool {
	if reply.Drop && i+1 == reply.DropAfter {
		c.ws.UnderlyingConn().Close()
		return true
	}
	return false
}

// readLoop hands each client message to handle until the connection fails, stays silent for two
// minutes, or handle returns false (it has closed the connection).
func (c *wsConn) readLoop(handle func([]byte) bool) {
	for {
		c.ws.SetReadDeadline(time.Now().Add(2 * time.Minute))
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		if !handle(data) {
			return
		}
	}
}

// turn is one agent turn a fake plays: stop cancels it (the caller spoke over it), done is closed
// when it has ended.
type turn struct {
	cancel chan struct{}
	once   sync.Once
	done   chan struct{}
}

func (t *turn) stop() { t.once.Do(func() { close(t.cancel) }) }

// cancelled reports whether the turn has been stopped.
func (t *turn) cancelled() bool {
	select {
	case <-t.cancel:
		return true
	default:
		return false
	}
}

// turnQueue plays a connection's agent turns one after another, as a provider's agent speaks one
// response at a time: a turn starts when the one before it has ended.
type turnQueue struct {
	mu  sync.Mutex
	cur *turn // the turn started last, until it ends
	wg  sync.WaitGroup
}

// start queues run as the next turn.
func (q *turnQueue) start(run func(*turn)) {
	q.mu.Lock()
	prev := q.cur
	t := &turn{cancel: make(chan struct{}), done: make(chan struct{})}
	q.cur = t
	q.mu.Unlock()
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		defer close(t.done)
		if prev != nil {
			<-prev.done
		}
		run(t)
		q.mu.Lock()
		if q.cur == t {
			q.cur = nil
		}
		q.mu.Unlock()
	}()
}

// current returns the turn started last if it has not ended, else nil.
func (q *turnQueue) current() *turn {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.cur
}

// end cancels the current turn and waits until every turn has ended.
func (q *turnQueue) end() {
	if t := q.current(); t != nil {
		t.stop()
	}
	q.wg.Wait()
}

// pendingCalls are the tool calls an agent turn waits on, guarded by the connection's mutex.
type pendingCalls struct {
	ids  map[string]bool
	seq  int           // calls made on the connection
	done chan struct{} // closed once every call of the batch has its result
}

// batch starts a batch of calls: the channel returned is closed once none waits (see settle).
func (p *pendingCalls) batch() <-chan struct{} {
	p.done = make(chan struct{})
	return p.done
}

// add makes a call wait and returns its id, format filled with conn and the call's number.
func (p *pendingCalls) add(format string, conn int) string {
	if p.ids == nil {
		p.ids = map[string]bool{}
	}
	p.seq++
	id := fmt.Sprintf(format, conn, p.seq)
	p.ids[id] = true
	return id
}

// answer takes the result of call id; false when no call with that id waits.
func (p *pendingCalls) answer(id string) bool {
	if !p.ids[id] {
		return false
	}
	delete(p.ids, id)
	return true
}

// settle closes the batch's channel if no call waits any more.
func (p *pendingCalls) settle() {
	if len(p.ids) == 0 && p.done != nil {
		close(p.done)
		p.done = nil
	}
}

// drop forgets every waiting call and returns their ids, sorted.
func (p *pendingCalls) drop() []string {
	var ids []string
	for id := range p.ids {
		ids = append(ids, id)
	}
	p.ids = nil
	slices.Sort(ids)
	return ids
}
