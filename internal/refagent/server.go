// Package refagent is the offline reference agent: an OpenAI-Realtime-GA-compatible WebSocket
// server that a session reaches through the same openai adapter as a commercial system, so a
// whole call runs with no API key and no network. Its pipeline is endpointing (the media
// endpointer, for server VAD), recognition with PocketSphinx (internal/asr; open vocabulary plus a
// grammar per typed question, as IVR systems do), a deterministic slot-filling policy that knows
// only the session instructions and tool definitions, and speech with Debian's flite. It is a
// baseline and a demo partner, not a strong agent: its recognition errors are real.
package refagent

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/voicebench/humanaudit/internal/asr"
	"github.com/voicebench/humanaudit/internal/tts"
)

// Path is the WebSocket endpoint path, as on api.openai.com.
const Path = "/v1/realtime"

// Config configures a Server. The zero value works when flite and the PocketSphinx model are
// installed.
type Config struct {
	// Logger receives connection diagnostics; nil discards them.
	Logger *slog.Logger
	// Recognizer is shared speech recognition (the console's, for instance); nil loads one with two
	// decoders for whole turns, closed with the server. Each call also opens a channel of its own
	// (asr.Channel, about 40 MB) to recognize the caller's turns while they are spoken.
	Recognizer *asr.Recognizer
	// Voice is the Flite voice (default DefaultVoice).
	Voice string
	// Now is the wall clock: dates said without a year are resolved against it. Default time.Now.
	Now func() time.Time
	// AudioLead is how far ahead of real time reply audio is sent, as a real provider streams it;
	// the rest is paced so that a cancel stops what has not been sent. Default 1 s; negative sends
	// each reply at once.
	AudioLead time.Duration
	// IdleTimeout closes a connection that sends nothing (pings included) for this long. Default 2 min.
	IdleTimeout time.Duration
}

// Server serves the reference agent over WebSocket. Listen, then Serve; Close ends every
// connection and releases every goroutine.
type Server struct {
	cfg    Config
	log    *slog.Logger
	rec    *asr.Recognizer
	ownRec bool
	voice  *tts.Flite
	up     websocket.Upgrader

	mu     sync.Mutex
	ln     net.Listener
	http   *http.Server
	conns  map[*conn]struct{}
	nconn  int
	closed bool
	wg     sync.WaitGroup // connection handlers
}

// New prepares a server: it checks the voice and loads speech recognition unless one is given.
func New(cfg Config) (*Server, error) {
	if cfg.Voice == "" {
		cfg.Voice = DefaultVoice
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.AudioLead == 0 {
		cfg.AudioLead = time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 2 * time.Minute
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	v, err := newSpeaker(cfg.Voice)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: log, voice: v, rec: cfg.Recognizer, conns: map[*conn]struct{}{}}
	if s.rec == nil {
		if s.rec, err = asr.New(asr.Config{Decoders: 2, Logger: log}); err != nil {
			return nil, fmt.Errorf("reference agent: %w", err)
		}
		s.ownRec = true
	}
	s.up = websocket.Upgrader{ReadBufferSize: 1 << 15, WriteBufferSize: 1 << 15,
		CheckOrigin: func(*http.Request) bool { return true }}
	return s, nil
}

// Listen binds addr (":0" picks a free port).
func (s *Server) Listen(addr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("reference agent: listen %s: %w", addr, err)
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

// URL is the ws:// endpoint to give the openai adapter (a wildcard bind is reached on loopback).
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
	s.log.Info("reference agent listening", slog.String("url", s.URL()))
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("reference agent: serve: %w", err)
	}
	return nil
}

// Close stops listening, drops every connection, waits for their goroutines and frees the
// recognizer it loaded. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	srv := s.http
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	var errs []error
	if srv != nil {
		if err := srv.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close listener: %w", err))
		}
	}
	for _, c := range conns {
		c.drop()
	}
	s.wg.Wait()
	if s.ownRec {
		if err := s.rec.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Handler is the HTTP handler of the WebSocket endpoint, to mount on another server.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(Path, s.serveWS)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpError(w, http.StatusNotFound, "not_found", "Unknown path "+r.URL.Path+"; the realtime endpoint is "+Path)
	})
	return mux
}

func httpError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"type":"invalid_request_error","code":%q,"message":%q}}`, code, msg)
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("OpenAI-Beta") != "" {
		httpError(w, http.StatusBadRequest, "beta_not_allowed", "The OpenAI-Beta header selects the beta API; the reference agent speaks the GA protocol.")
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		httpError(w, http.StatusServiceUnavailable, "server_error", "shutting down")
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	ws, err := s.up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	model := r.URL.Query().Get("model")
	if model == "" {
		model = "reference"
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ws.Close()
		return
	}
	s.nconn++
	c := newConn(s, s.nconn, ws, model)
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	c.log.Info("agent connection opened", slog.String("remote", host), slog.String("model", model))
	c.serve()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.log.Info("agent connection closed")
}

// connections reports the open connections (for tests).
func (s *Server) connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}
