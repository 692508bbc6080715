// Package web is the console's HTTP app on Fiber: the participant's pages and call signalling, the
// experimenter's dashboard and session review, and the annotator's rating app, all behind
// per-person tokens. It is the only package that imports Fiber.
package web

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/console"
	"github.com/voicebench/humanaudit/internal/redact"
	"github.com/voicebench/humanaudit/internal/rtc"
	"github.com/voicebench/humanaudit/ui"
)

// Config configures the app.
type Config struct {
	Store   Store
	Console *console.Service
	RTC     *rtc.Endpoint
	DataDir string
	// BaseURL is how people reach the console ("http://127.0.0.1:8080"), for printed links.
	BaseURL string
	Logger  *slog.Logger
	Now     func() time.Time
	// Security configures TLS, trusted proxies, sessions and the sign-in and enrollment limits.
	Security Security
}

// Server is the console's HTTP server. Listen, Serve and Close are separate so tests can bind :0.
type Server struct {
	cfg Config
	log *slog.Logger
	app *fiber.App
	ln  net.Listener

	peers  *peers          // each live session's current participant peer
	taps   *taps           // each live session's channels for experimenters listening in
	signIn *signIn         // sign-in attempts and hashing slots, to slow password guessing
	joins  *attemptLimiter // open-enrollment requests per client address

	closeOnce sync.Once
	closeErr  error
}

// New builds the app and its routes.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("web: a store is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log, peers: &peers{cur: map[string]*rtc.Peer{}}, taps: &taps{cur: map[string]*rtc.Tap{}}, signIn: newSignIn(cfg.Security.SignIn),
		joins: newJoinLimiter(cfg.Security.Enrollment)}
	fc := fiber.Config{
		AppName:               "humanaudit",
		DisableStartupMessage: true,
		ErrorHandler:          s.errorHandler,
		BodyLimit:             1 << 20,
		ReadTimeout:           30 * time.Second,
		IdleTimeout:           2 * time.Minute,
	}
	cfg.Security.fiberProxyConfig(&fc)
	s.app = fiber.New(fc)
	s.routes()
	return s, nil
}

// App exposes the Fiber app (the tests enumerate its routes).
func (s *Server) App() *fiber.App { return s.app }

// Listen binds addr ("127.0.0.1:0" in tests).
func (s *Server) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("web: listen %s: %w", addr, err)
	}
	s.ln = ln
	return nil
}

// UseListener serves on a listener bound elsewhere (bind early so a busy port is reported before
// slow start-up work).
func (s *Server) UseListener(ln net.Listener) { s.ln = ln }

// Addr returns the bound address.
func (s *Server) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// URL returns the base URL people use (BaseURL, or http:// plus the bound address).
func (s *Server) URL() string {
	if s.cfg.BaseURL != "" {
		return strings.TrimSuffix(s.cfg.BaseURL, "/")
	}
	if s.cfg.Security.TLS != nil {
		return "https://" + s.Addr()
	}
	return "http://" + s.Addr()
}

// Serve serves until Close.
func (s *Server) Serve() error {
	if s.ln == nil {
		return errors.New("web: Serve before Listen")
	}
	err := s.app.Listener(s.serveListener())
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// Close stops accepting requests and waits (up to 10 s) for those in flight.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.closeErr = s.app.ShutdownWithContext(ctx)
	})
	return s.closeErr
}

func (s *Server) securityHeaders(c *fiber.Ctx) error {
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("Referrer-Policy", "no-referrer")
	c.Set("X-Frame-Options", "DENY")
	c.Set("Content-Security-Policy", "default-src 'self'; media-src 'self' blob:; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'")
	if strings.HasPrefix(c.Path(), "/api/") {
		c.Set("Cache-Control", "no-store")
	}
	return c.Next()
}

// home is a landing page that says where to go; it lists nothing.
func (s *Server) home(c *fiber.Ctx) error {
	return s.page(c, http.StatusOK, pageData{Title: "Human-audit console", Form: "home"})
}

// static serves the embedded browser app's scripts and stylesheets.
func (s *Server) static(c *fiber.Ctx) error {
	name := path.Base(c.Params("file"))
	b, err := fs.ReadFile(ui.Files, name)
	if err != nil || strings.HasSuffix(name, ".html") {
		return fiber.ErrNotFound
	}
	c.Set(fiber.HeaderContentType, mime.TypeByExtension(path.Ext(name)))
	c.Set("Cache-Control", "no-cache")
	return c.Send(b)
}

// sendPage serves one of the embedded HTML pages.
func (s *Server) sendPage(c *fiber.Ctx, name string) error {
	b, err := fs.ReadFile(ui.Files, name)
	if err != nil {
		return fmt.Errorf("page %s: %w", name, err)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set("Cache-Control", "no-store")
	return c.Send(b)
}

// apiError is a client-facing error: a status and a message that is safe to show.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// statuses maps each domain error to its HTTP status and the message a client may see, in the
// order they are matched (ErrLapsed before ErrExpired, which it also is). An empty message shows
// the error's own, which is written for the client (a bad SDP offer names its problem).
var statuses = []struct {
	err    error
	status int
	msg    string
}{
	{audit.ErrNotFound, http.StatusNotFound, "not found"},
	{audit.ErrLapsed, http.StatusGone, "your place in the study was released because consent was not given in time; open the study again from your recruiting platform"},
	{audit.ErrEnrollmentFull, http.StatusServiceUnavailable, "many people are joining this study right now; please try again in a few minutes"},
	{audit.ErrExpired, http.StatusGone, "this link has expired"},
	{audit.ErrUnauthorized, http.StatusUnauthorized, "not signed in"},
	{audit.ErrConflict, http.StatusConflict, "conflict with the current state"},
	{audit.ErrNoAssignment, http.StatusConflict, "there is no further call for you in this study"},
	{audit.ErrInvalid, http.StatusBadRequest, "invalid request"},
	{rtc.ErrBadOffer, http.StatusBadRequest, ""},
	{console.ErrUnknownSystem, http.StatusServiceUnavailable, "this call's agent is not configured on this console; please contact the researcher"},
	{console.ErrUnknownTask, http.StatusServiceUnavailable, "this call's task is not available on this console; please contact the researcher"},
	{console.ErrAgentUnavailable, http.StatusServiceUnavailable, "the agent is not available right now; please try again in a minute"},
}

// statusOf maps domain errors to HTTP status in one place, with a message safe for the client.
func statusOf(err error) (int, string) {
	var ae *apiError
	var fe *fiber.Error
	switch {
	case errors.As(err, &ae):
		return ae.status, ae.msg
	case errors.As(err, &fe):
		return fe.Code, fe.Message
	}
	for _, st := range statuses {
		if errors.Is(err, st.err) {
			if st.msg == "" {
				return st.status, err.Error()
			}
			return st.status, st.msg
		}
	}
	return http.StatusInternalServerError, "internal error"
}

func (s *Server) errorHandler(c *fiber.Ctx, err error) error {
	if handled, herr := s.outageError(c, err); handled {
		return herr
	}
	status, msg := statusOf(err)
	msg = redact.String(msg)
	if status >= 500 {
		s.log.Error("request failed", slog.String("path", logPath(c.Path())), slog.Any("err", err))
	}
	if strings.HasPrefix(c.Path(), "/api/") {
		return c.Status(status).JSON(fiber.Map{"error": msg})
	}
	title := "Something went wrong"
	switch status {
	case http.StatusNotFound:
		title = "This link is not valid"
		msg = "Check that you opened the whole link you were given."
	case http.StatusGone:
		title = "This link has expired"
	case http.StatusUnauthorized, http.StatusForbidden:
		title = "Not allowed"
	}
	return s.page(c, status, pageData{Title: title, Text: msg})
}
