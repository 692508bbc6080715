package socket

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/voicebench/humanaudit/internal/agent"
)

// Options bound every wait of a connection. Zero fields take the defaults.
type Options struct {
	HandshakeTimeout time.Duration // TCP+TLS+upgrade (default 10 s)
	WriteTimeout     time.Duration // each frame (default 5 s)
	IdleTimeout      time.Duration // no frame and no pong for this long = connection lost (default 60 s)
	PingInterval     time.Duration // keep-alive pings (default 15 s)
	SendQueue        int           // frames waiting for the writer (default 512, about 20 s of 40 ms frames)
	// Redact lists secrets (keys) scrubbed from every error message, in case a provider echoes one.
	Redact []string
}

// Timeouts bound every wait of an adapter's connection. Zero fields take the defaults.
type Timeouts struct {
	Handshake time.Duration // dial plus the family's handshake (default 15 s)
	Write     time.Duration // one frame (default 5 s)
	Idle      time.Duration // nothing from the server, pongs included (default 60 s)
	Ping      time.Duration // keep-alive interval (default 15 s)
}

// WithDefaults fills a zero Handshake (the socket fills the others).
func (t Timeouts) WithDefaults() Timeouts {
	if t.Handshake <= 0 {
		t.Handshake = 15 * time.Second
	}
	return t
}

// Options are the socket options of a connection bounded by t, with key scrubbed from what is
// logged and reported.
func (t Timeouts) Options(key string) Options {
	return Options{HandshakeTimeout: t.Handshake, WriteTimeout: t.Write, IdleTimeout: t.Idle, PingInterval: t.Ping,
		Redact: []string{key}}
}

// WithDefaults fills zero fields.
func (o Options) WithDefaults() Options {
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = 10 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 5 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 60 * time.Second
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 15 * time.Second
	}
	if o.SendQueue <= 0 {
		o.SendQueue = 512
	}
	return o
}

// Scrub removes the secrets of o.Redact from s.
func (o Options) Scrub(s string) string {
	for _, k := range o.Redact {
		if k != "" {
			s = strings.ReplaceAll(s, k, "[redacted]")
		}
	}
	return s
}

// Endpoint returns rawURL without query and credentials, for messages (a query may hold a key).
func Endpoint(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	u.RawQuery, u.User, u.Fragment = "", nil, ""
	return u.String()
}

// Dial opens a WebSocket within ctx and o.HandshakeTimeout. Failures are *agent.Error: an HTTP
// refusal by status (401/403 auth, 429 rate limit, 5xx provider, other protocol), anything that
// prevents reaching the server as unreachable. A cancelled ctx returns ctx.Err().
func Dial(ctx context.Context, rawURL string, header http.Header, o Options) (*websocket.Conn, error) {
	o = o.WithDefaults()
	ctx, cancel := context.WithTimeout(ctx, o.HandshakeTimeout)
	defer cancel()
	d := websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: o.HandshakeTimeout,
		ReadBufferSize:   16 << 10,
		WriteBufferSize:  16 << 10,
	}
	ws, resp, err := d.DialContext(ctx, rawURL, header)
	if err == nil {
		return ws, nil
	}
	if resp != nil && resp.Body != nil {
		defer resp.Body.Close()
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != context.DeadlineExceeded {
		return nil, err
	}
	return nil, classifyDial(err, resp, o)
}

func classifyDial(err error, resp *http.Response, o Options) *agent.Error {
	if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
		body := ""
		if resp.Body != nil {
			// Read enough to find the reason (Google's comes after the message), show less.
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
			body = strings.Join(strings.Fields(string(b)), " ")
		}
		msg := fmt.Sprintf("upgrade refused: HTTP %d", resp.StatusCode)
		if body != "" {
			shown := body
			if len(shown) > 300 {
				shown = strings.ToValidUTF8(shown[:300], "") + "…"
			}
			msg += ": " + shown
		}
		// Google refuses a bad key with HTTP 400 and API_KEY_INVALID; OpenAI-compatible servers
		// sometimes answer invalid_api_key with 400 or 404.
		return &agent.Error{Class: StatusClass(resp.StatusCode, authRefusal(body)), Code: fmt.Sprintf("http_%d", resp.StatusCode),
			Message: o.Scrub(msg), Fatal: true}
	}
	e := &agent.Error{Class: agent.ClassUnreachable, Code: "connect", Fatal: true}
	var dnsErr *net.DNSError
	var tlsErr *tls.CertificateVerificationError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		e.Code, e.Message = "timeout", fmt.Sprintf("no answer within %s", o.HandshakeTimeout)
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Code, e.Message = "refused", "connection refused"
	case errors.As(err, &dnsErr):
		e.Code, e.Message = "dns", "host not found: "+dnsErr.Name
	case errors.As(err, &tlsErr):
		e.Code, e.Message = "tls", "TLS certificate not valid"
	default:
		e.Message = o.Scrub(err.Error())
	}
	return e
}

// authMarkers are what providers put in the body of an upgrade refused for the key, whatever the
// status: Google's API_KEY_INVALID and "API key not valid", OpenAI's invalid_api_key and
// "Incorrect API key", xAI's and others' "invalid api key" and "unauthorized"/"unauthenticated".
var authMarkers = []string{"api_key_invalid", "invalid_api_key", "api key not valid", "incorrect api key", "invalid api key",
	"api key expired", "permission_denied", "unauthenticated", "unauthorized"}

// authRefusal reports whether the body of a refused upgrade says the key was refused.
func authRefusal(body string) bool {
	b := strings.ToLower(body)
	for _, m := range authMarkers {
		if strings.Contains(b, m) {
			return true
		}
	}
	return false
}

// ParseURL checks that an endpoint is a ws:// or wss:// URL.
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") {
		return nil, &agent.Error{Class: agent.ClassProtocol, Code: "bad_url", Fatal: true,
			Message: fmt.Sprintf("endpoint %q is not a ws:// or wss:// URL", Endpoint(raw))}
	}
	return u, nil
}

// StatusClass classifies a provider's HTTP refusal: 401 and 403 (or authRefused, a body that
// names a bad key) as auth, 429 as a rate limit, 5xx as the provider's failure, any other status
// as a protocol error.
func StatusClass(status int, authRefused bool) agent.ErrorClass {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden || authRefused:
		return agent.ClassAuth
	case status == http.StatusTooManyRequests:
		return agent.ClassRateLimit
	case status >= 500:
		return agent.ClassProvider
	}
	return agent.ClassProtocol
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// CloseClassifier maps a close frame from the provider to an error; nil keeps the default
// (lost_connection).
type CloseClassifier func(ce *websocket.CloseError) *agent.Error

// Handler receives what a Conn reads. Both are called on the reader goroutine.
type Handler struct {
	// Message gets each text or binary frame's payload (valid until the next call).
	Message func(data []byte)
	// Closed is called once when reading ends: err is nil after Close, else why the link was lost.
	Closed func(err *agent.Error)
}

// Conn runs one reader and one writer goroutine over a WebSocket. Frames to send wait in a bounded
// queue; every write has a deadline; reads fail after IdleTimeout without a frame or a pong.
type Conn struct {
	ws       *websocket.Conn
	o        Options
	classify CloseClassifier
	h        Handler

	out        chan []byte
	stop       chan struct{} // Close asked the writer to stop
	readerDone chan struct{}
	writerDone chan struct{}
	stopOnce   sync.Once
	closeOnce  sync.Once

	mu       sync.Mutex
	closing  bool
	writeErr error
}

// Start runs ws. classify may be nil.
func Start(ws *websocket.Conn, o Options, classify CloseClassifier, h Handler) *Conn {
	o = o.WithDefaults()
	c := &Conn{
		ws: ws, o: o, classify: classify, h: h,
		out:        make(chan []byte, o.SendQueue),
		stop:       make(chan struct{}),
		readerDone: make(chan struct{}),
		writerDone: make(chan struct{}),
	}
	ws.SetReadLimit(32 << 20)
	ws.SetPongHandler(func(string) error {
		return ws.SetReadDeadline(time.Now().Add(o.IdleTimeout))
	})
	go c.read()
	go c.write()
	return c
}

// Send queues one text frame. It fails with agent.ErrClosed once the connection has ended and
// with agent.ErrSendBacklog when SendQueue frames already wait.
func (c *Conn) Send(frame []byte) error {
	select {
	case <-c.stop:
		return agent.ErrClosed
	case <-c.readerDone:
		return agent.ErrClosed
	default:
	}
	select {
	case c.out <- frame:
		return nil
	default:
		return agent.ErrSendBacklog
	}
}

// Close sends a normal close frame, waits briefly for the provider's reply and releases both
// goroutines. It is idempotent and never waits longer than about WriteTimeout plus one second.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closing = true
		c.mu.Unlock()
		c.stopOnce.Do(func() { close(c.stop) })
		<-c.writerDone
		msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
		if err := c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(c.o.WriteTimeout)); err == nil {
			select {
			case <-c.readerDone:
			case <-time.After(time.Second):
			}
		}
		c.ws.Close()
		<-c.readerDone
	})
	return nil
}

// Kill drops the connection at once without a close handshake and without waiting; reading then
// ends with Handler.Closed(nil). Use it from the reader goroutine (Close would wait for itself).
func (c *Conn) Kill() {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	c.stopOnce.Do(func() { close(c.stop) })
	c.ws.Close()
}

// Done is closed when the reader has stopped (after Handler.Closed returned).
func (c *Conn) Done() <-chan struct{} { return c.readerDone }

func (c *Conn) read() {
	defer close(c.readerDone)
	var err error
	for {
		c.mu.Lock()
		writeFailed := c.writeErr != nil
		c.mu.Unlock()
		if !writeFailed { // after a failed write the writer's short drain deadline stands
			if err = c.ws.SetReadDeadline(time.Now().Add(c.o.IdleTimeout)); err != nil {
				break
			}
		}
		var data []byte
		_, data, err = c.ws.ReadMessage()
		if err != nil {
			break
		}
		c.h.Message(data)
	}
	c.stopOnce.Do(func() { close(c.stop) })
	c.mu.Lock()
	closing, werr := c.closing, c.writeErr
	c.mu.Unlock()
	if closing {
		c.h.Closed(nil)
		return
	}
	c.ws.Close()
	c.h.Closed(c.lost(err, werr))
}

func (c *Conn) lost(err, werr error) *agent.Error {
	e := &agent.Error{Class: agent.ClassLostConnection, Fatal: true}
	var ce *websocket.CloseError
	switch {
	case errors.As(err, &ce):
		if c.classify != nil {
			if ke := c.classify(ce); ke != nil {
				ke.Fatal = true
				ke.Message = c.o.Scrub(ke.Message)
				return ke
			}
		}
		e.Code = fmt.Sprint(ce.Code)
		e.Message = c.o.Scrub(fmt.Sprintf("provider closed the connection: %d %s", ce.Code, ce.Text))
	case werr != nil:
		e.Code, e.Message = "write", c.o.Scrub("write failed: "+werr.Error())
	case isTimeout(err):
		e.Code, e.Message = "idle_timeout", fmt.Sprintf("no frame or pong from the provider for %s", c.o.IdleTimeout)
	default:
		e.Code, e.Message = "dropped", "connection dropped without a close frame"
	}
	return e
}

// writeFailureDrain is how long the reader may still read after a write failed.
const writeFailureDrain = 500 * time.Millisecond

func (c *Conn) write() {
	defer close(c.writerDone)
	ping := time.NewTicker(c.o.PingInterval)
	defer ping.Stop()
	fail := func(err error) {
		c.mu.Lock()
		if c.writeErr == nil && !c.closing {
			c.writeErr = err
		}
		c.mu.Unlock()
		// A provider that refuses something sends its close frame and hangs up; our next write
		// then fails (broken pipe) with the close frame still unread. The reader gets a moment to
		// read it, so the loss is classified by the provider's reason, not as a write failure;
		// then the socket is closed whatever arrives.
		_ = c.ws.SetReadDeadline(time.Now().Add(writeFailureDrain))
		time.AfterFunc(writeFailureDrain, func() { c.ws.Close() })
	}
	for {
		select {
		case <-c.stop:
			return
		case frame := <-c.out:
			if err := c.ws.SetWriteDeadline(time.Now().Add(c.o.WriteTimeout)); err != nil {
				fail(err)
				return
			}
			if err := c.ws.WriteMessage(websocket.TextMessage, frame); err != nil {
				fail(err)
				return
			}
		case <-ping.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.o.WriteTimeout)); err != nil {
				fail(err)
				return
			}
		}
	}
}
