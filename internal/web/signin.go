package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/voicebench/humanaudit/internal/audit"
)

// Experimenters sign in with a name and password, or with a one-time link from `audit experimenter
// link`; either way they get a separate random session cookie, kept server-side as a digest, that
// ends after an idle time, at an absolute expiry, or at logout.

// experimenterCookie holds an experimenter's session id.
const experimenterCookie = "audit_x"

// csrfHeader carries the per-session CSRF token on the experimenter API's state-changing requests.
const csrfHeader = "X-CSRF-Token"

// SignInLimits bound password guessing: at most MaxAttempts passwords are checked per account and
// per client address in any Window, and at most Concurrency hashes run at once (argon2id takes
// 19 MiB each), so a flood of sign-ins costs a fixed amount of memory and CPU whatever its size.
type SignInLimits struct {
	MaxAttempts int           // default 5
	Window      time.Duration // default 10 min
	Concurrency int           // default 2
	Keys        int           // accounts and addresses remembered (LRU), default 16384
}

func (l SignInLimits) withDefaults() SignInLimits {
	if l.MaxAttempts <= 0 {
		l.MaxAttempts = 5
	}
	if l.Window <= 0 {
		l.Window = 10 * time.Minute
	}
	if l.Concurrency <= 0 {
		l.Concurrency = 2
	}
	return l
}

// signIn is the sign-in state of a server: the attempt limiter and the hashing slots.
type signIn struct {
	limits   SignInLimits
	attempts *attemptLimiter
	hashing  chan struct{}
	checked  atomic.Int64 // passwords checked (hashes run)
}

func newSignIn(l SignInLimits) *signIn {
	l = l.withDefaults()
	return &signIn{limits: l, attempts: newAttemptLimiter(l.MaxAttempts, l.Window, l.Keys), hashing: make(chan struct{}, l.Concurrency)}
}

// PasswordChecks returns how many sign-in passwords the server has checked (argon2id hashes run)
// since it started: a figure for monitoring a sign-in flood.
func (s *Server) PasswordChecks() int64 { return s.signIn.checked.Load() }

// experimenterAuth admits a live experimenter session from the cookie (or, for scripts, an
// Authorization: Bearer header with the session id); pages redirect to the sign-in form, the API
// answers 401. A cookie-authenticated state change must carry the session's CSRF token.
func (s *Server) experimenterAuth(c *fiber.Ctx) error {
	tok, viaCookie := c.Cookies(experimenterCookie), true
	if h := c.Get(fiber.HeaderAuthorization); strings.HasPrefix(h, "Bearer ") {
		tok, viaCookie = strings.TrimPrefix(h, "Bearer "), false
	}
	if tok == "" {
		return s.unauthenticated(c)
	}
	sess, err := s.cfg.Store.ExperimenterBySession(c.UserContext(), tok)
	if err != nil {
		if errors.Is(err, audit.ErrExpired) || errors.Is(err, audit.ErrUnauthorized) || errors.Is(err, audit.ErrNotFound) {
			return s.unauthenticated(c)
		}
		return err
	}
	if viaCookie && stateChanging(c.Method()) && !hmac.Equal([]byte(c.Get(csrfHeader)), []byte(csrfToken(tok))) {
		return &apiError{status: fiber.StatusForbidden, msg: "missing or wrong " + csrfHeader + " header (reload the page)"}
	}
	c.Locals("experimenter", sess.Experimenter)
	c.Locals("experimenterSession", tok)
	return c.Next()
}

func experimenterOf(c *fiber.Ctx) audit.Experimenter {
	return c.Locals("experimenter").(audit.Experimenter)
}

// csrfToken is the session's CSRF token: derived from the session id, which a cross-site page can
// neither read (HttpOnly cookie) nor guess, so it needs no storage of its own.
func csrfToken(session string) string {
	m := hmac.New(sha256.New, []byte(session))
	m.Write([]byte("humanaudit csrf v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// experimenterMe tells the dashboard who is signed in and the CSRF token its requests carry.
func (s *Server) experimenterMe(c *fiber.Ctx) error {
	tok, _ := c.Locals("experimenterSession").(string)
	return c.JSON(fiber.Map{"name": experimenterOf(c).Name, "csrf_token": csrfToken(tok)})
}

func (s *Server) unauthenticated(c *fiber.Ctx) error {
	if strings.HasPrefix(c.Path(), "/api/") {
		return audit.ErrUnauthorized
	}
	return c.Redirect("/x/login", fiber.StatusSeeOther)
}

// loginPage shows the sign-in form; with ?token= (a sign-in link) it shows a button that spends the
// link by POST, pressed by a small script: link previews that fetch the URL do not use it up.
func (s *Server) loginPage(c *fiber.Ctx) error {
	if tok := c.Query("token"); tok != "" {
		return s.page(c, fiber.StatusOK, pageData{Title: "Experimenter sign-in", Form: "link", Token: tok})
	}
	return s.page(c, fiber.StatusOK, pageData{Title: "Experimenter sign-in", Form: "login"})
}

// linkSignIn spends a one-time sign-in link and starts a session.
func (s *Server) linkSignIn(c *fiber.Ctx) error {
	x, err := s.cfg.Store.ConsumeSignInLink(c.UserContext(), c.FormValue("token"))
	if err != nil {
		if errors.Is(err, audit.ErrExpired) || errors.Is(err, audit.ErrUnauthorized) {
			s.log.Info("sign-in link refused", slog.String("client", s.clientIP(c)), slog.Any("err", err))
			return s.page(c, fiber.StatusUnauthorized, pageData{Title: "Sign-in link not valid", Form: "login",
				Text: "This sign-in link was used before, has expired or is not valid: a link works once, for a short time. " +
					"Ask for a new one (audit experimenter link NAME) or sign in with your name and password."})
		}
		return err
	}
	return s.startSession(c, x, "link")
}

// maxNameBytes and maxPasswordBytes bound sign-in input before any work is done on it.
const (
	maxNameBytes     = 200
	maxPasswordBytes = 1000
)

// login checks a name and password. The attempt is reserved before any hashing, per account and
// per client address; hashing runs in a fixed number of slots and a request that finds them all
// busy is refused at once without hashing.
func (s *Server) login(c *fiber.Ctx) error {
	name, password := c.FormValue("name"), c.FormValue("password")
	if len(name) > maxNameBytes || len(password) > maxPasswordBytes {
		return s.page(c, fiber.StatusBadRequest, pageData{Title: "Experimenter sign-in", Error: "Name or password is too long.", Form: "login"})
	}
	si := s.signIn
	res, ok, retry := si.attempts.reserve(s.cfg.Now(), "name:"+strings.ToLower(name), "ip:"+s.clientIP(c))
	if !ok {
		return s.tooManySignIns(c, retry)
	}
	select {
	case si.hashing <- struct{}{}:
	default:
		res.cancel() // nothing was checked
		return s.tooManySignIns(c, time.Second)
	}
	si.checked.Add(1)
	x, err := s.cfg.Store.CheckExperimenterPassword(c.UserContext(), name, password)
	<-si.hashing
	if err != nil {
		if !errors.Is(err, audit.ErrUnauthorized) {
			return err
		}
		s.log.Info("sign-in refused", slog.String("client", s.clientIP(c)))
		return s.page(c, fiber.StatusUnauthorized, pageData{Title: "Experimenter sign-in", Error: "Name or password is wrong.", Form: "login"})
	}
	res.cancel() // a right password does not count against the account
	return s.startSession(c, x, "password")
}

func (s *Server) tooManySignIns(c *fiber.Ctx, retry time.Duration) error {
	secs := max(int(retry.Round(time.Second)/time.Second), 1)
	c.Set(fiber.HeaderRetryAfter, strconv.Itoa(secs))
	wait := "a moment"
	if secs >= 60 {
		wait = strconv.Itoa((secs+59)/60) + " minutes"
	}
	return s.page(c, fiber.StatusTooManyRequests, pageData{Title: "Too many attempts", Text: "Too many sign-in attempts. Try again in " + wait + "."})
}

// startSession issues a session cookie and sends the experimenter to the dashboard.
func (s *Server) startSession(c *fiber.Ctx, x audit.Experimenter, via string) error {
	tok, err := s.cfg.Store.CreateExperimenterSession(c.UserContext(), x.ID, via, s.cfg.Security.Session)
	if err != nil {
		return err
	}
	c.Cookie(&fiber.Cookie{Name: experimenterCookie, Value: tok, Path: "/", HTTPOnly: true, SameSite: fiber.CookieSameSiteStrictMode,
		Secure: c.Protocol() == "https"})
	s.log.Info("experimenter signed in", slog.String("experimenter", x.Name), slog.String("via", via), slog.String("client", s.clientIP(c)))
	return c.Redirect("/x/", fiber.StatusSeeOther)
}

func (s *Server) logoutPage(c *fiber.Ctx) error {
	return s.page(c, fiber.StatusOK, pageData{Title: "Sign out", Form: "logout"})
}

// logout revokes the session on the server and clears the cookie.
func (s *Server) logout(c *fiber.Ctx) error {
	if tok := c.Cookies(experimenterCookie); tok != "" {
		if err := s.cfg.Store.RevokeExperimenterSession(c.UserContext(), tok); err != nil {
			return err
		}
	}
	c.Cookie(&fiber.Cookie{Name: experimenterCookie, Value: "", Path: "/", HTTPOnly: true, SameSite: fiber.CookieSameSiteStrictMode,
		Secure: c.Protocol() == "https", MaxAge: -1, Expires: time.Unix(0, 0)})
	return c.Redirect("/x/login", fiber.StatusSeeOther)
}
