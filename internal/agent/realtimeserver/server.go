// Package realtimeserver is the one server of the OpenAI Realtime protocol family (GA, beta, and
// the xAI Grok and StepFun variants): the WebSocket handshake and its refusals,
// session validation, the input audio buffer with manual or server-VAD turns, conversation items,
// one active response at a time, cancel and truncate, each as the Provider it is configured with
// does them. What the agent hears and says comes from a Responder: the offline reference agent
// (internal/refagent) and the protocol fakes (internal/agent/agenttest) are two responders of it.
package realtimeserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/voicebench/humanaudit/internal/agent/internal/wsserver"
	"github.com/voicebench/humanaudit/internal/agent/openai/wire"
)

// Path is the WebSocket endpoint path, as on api.openai.com.
const Path = "/v1/realtime"

// Config configures a Server.
type Config struct {
	// Name names the server in logs and errors (default "realtime server").
	Name string
	// Provider is what the server accepts and how it behaves.
	Provider Provider
	// Responder opens the agent of each connection.
	Responder Responder
	// Key, when set, is the only bearer key accepted.
	Key string
	// EchoRefusedKey quotes a refused key in the HTTP 401 body, as a careless provider does (for
	// tests that keys are redacted wherever a provider echoes them).
	EchoRefusedKey bool
	// VAD makes the turn detector of a session with server VAD on: when the connection opens and
	// whenever an update changes the turn detection. Nil: server VAD never ends a turn.
	VAD func(s Session) VAD
	// IDPrefix starts the ids the server mints (resp_<prefix><conn>_…), so that two servers' ids differ.
	IDPrefix string
	// IdleTimeout closes a connection that sends nothing (pings included) for this long. Default 2 min.
	IdleTimeout time.Duration
	// Logger receives connection diagnostics; nil discards them.
	Logger *slog.Logger
	// Observer, if set, sees the traffic.
	Observer Observer
}

// Server serves the protocol over WebSocket: mount Handler on an HTTP server, or Listen, then
// Serve. Close ends every connection and releases every goroutine.
type Server struct {
	cfg Config
	log *slog.Logger
	reg wsserver.Registry

	mu     sync.Mutex
	ln     net.Listener
	http   *http.Server
	closed bool
}

// New returns a server; it does not listen yet.
func New(cfg Config) *Server {
	if cfg.Name == "" {
		cfg.Name = "realtime server"
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 2 * time.Minute
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log}
	s.reg.Upgrader = websocket.Upgrader{ReadBufferSize: 1 << 15, WriteBufferSize: 1 << 15,
		CheckOrigin: func(*http.Request) bool { return true }}
	return s
}

// Handler is the HTTP handler of the WebSocket endpoint.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Listen binds addr (":0" picks a free port).
func (s *Server) Listen(addr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: listen %s: %w", s.cfg.Name, addr, err)
	}
	s.ln = ln
	s.http = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	return nil
}

// Addr is the bound address (nil before Listen).
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// URL is the ws:// endpoint of the bound address (a wildcard bind is reached on loopback).
func (s *Server) URL() string {
	a, ok := s.Addr().(*net.TCPAddr)
	if !ok {
		return ""
	}
	host := a.IP.String()
	if a.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "ws://" + net.JoinHostPort(host, fmt.Sprint(a.Port)) + Path
}

// Serve handles connections until Close; it returns nil after Close.
func (s *Server) Serve() error {
	s.mu.Lock()
	srv, ln := s.http, s.ln
	s.mu.Unlock()
	if srv == nil {
		return ErrNotListening
	}
	s.log.Info(s.cfg.Name+" listening", slog.String("url", s.URL()))
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s: serve: %w", s.cfg.Name, err)
	}
	return nil
}

// Close stops listening, drops every connection and waits for their goroutines. It is safe to
// call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	srv, again := s.http, s.closed
	s.closed = true
	s.mu.Unlock()
	if again {
		return nil
	}
	var err error
	if srv != nil {
		if cerr := srv.Close(); cerr != nil {
			err = fmt.Errorf("close listener: %w", cerr)
		}
	}
	s.reg.Close()
	return err
}

// DropAll closes every connection's TCP socket without a close frame.
func (s *Server) DropAll() { s.reg.DropAll() }

// Conns reports the open connections.
func (s *Server) Conns() int { return s.reg.Len() }

// maskKey shows a key as providers quote a refused one: its first and last two characters.
func maskKey(k string) string {
	if len(k) < 6 {
		return "***"
	}
	return k[:2] + "***" + k[len(k)-2:]
}

func httpError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"type": typ, "code": code, "message": msg}})
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if o := s.cfg.Observer; o != nil {
		o.Upgrade(r)
	}
	p := &s.cfg.Provider
	model, beta := r.URL.Query().Get("model"), r.Header.Get("OpenAI-Beta")
	switch {
	case s.reg.Closed():
		httpError(w, http.StatusServiceUnavailable, "server_error", "", "shutting down")
		return
	case s.cfg.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.cfg.Key && p.KeyRefusal != nil:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(p.KeyRefusal.Status)
		fmt.Fprintf(w, p.KeyRefusal.Body, maskKey(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")))
		return
	case s.cfg.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.cfg.Key:
		msg := "Incorrect API key provided."
		if s.cfg.EchoRefusedKey {
			msg = "Incorrect API key provided: " + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + "."
		}
		httpError(w, http.StatusUnauthorized, "invalid_request_error", wire.CodeInvalidAPIKey, msg)
		return
	case r.URL.Path != Path:
		httpError(w, http.StatusNotFound, "invalid_request_error", "not_found", "Unknown path "+r.URL.Path+"; the realtime endpoint is "+Path)
		return
	case model == "" && p.DefaultModel == "":
		httpError(w, http.StatusBadRequest, "invalid_request_error", "missing_model", "Missing required parameter: 'model'.")
		return
	case p.BetaHeader && beta != "realtime=v1":
		httpError(w, http.StatusBadRequest, "invalid_request_error", "beta_required", "The beta realtime API requires the OpenAI-Beta: realtime=v1 header.")
		return
	case !p.BetaHeader && beta != "":
		httpError(w, http.StatusBadRequest, "invalid_request_error", "beta_not_allowed", "The OpenAI-Beta header selects the beta API, which this endpoint does not serve.")
		return
	}
	if model == "" {
		model = p.DefaultModel
	}
	s.reg.Serve(w, r, func(ws *websocket.Conn, id int) {
		c := newConn(s, id, ws, model)
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		c.log.Info("agent connection opened", slog.String("remote", host), slog.String("model", model))
		c.serve()
		c.log.Info("agent connection closed")
	})
}
