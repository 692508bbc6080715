package web

import (
	"crypto/tls"
	"mime"
	"net"
	"net/url"
	"regexp"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/redact"
)

// Security configures the app's defences; the zero value is the safe default for a console on
// one machine (no proxy trusted, plain HTTP).
type Security struct {
	// TLS, when set, serves HTTPS on the listener (a certificate pair or ACME, see tls.go).
	TLS *tls.Config
	// TrustedProxies are the addresses or CIDR ranges of reverse proxies whose X-Forwarded-For,
	// X-Forwarded-Proto and X-Forwarded-Host headers are believed. Empty: none are; the client
	// address is the TCP peer and the scheme is the listener's.
	TrustedProxies []string
	// AllowedOrigins are extra origins ("https://study.example.org") whose requests may change
	// state, besides the console's own (the request's scheme and host, and BaseURL's).
	AllowedOrigins []string
	// Session bounds experimenter sessions (idle and absolute expiry).
	Session audit.SessionLimits
	// SignIn bounds password guessing.
	SignIn SignInLimits
	// Enrollment bounds the open study link /join/<study>.
	Enrollment EnrollmentLimits
}

// fiberProxyConfig sets Fiber's proxy trust: headers are believed only from TrustedProxies.
// EnableTrustedProxyCheck must always be on: without it Fiber believes X-Forwarded-Proto from
// anyone.
func (sec Security) fiberProxyConfig(cfg *fiber.Config) {
	cfg.EnableTrustedProxyCheck = true
	cfg.TrustedProxies = sec.TrustedProxies
}

// clientIP is the address limits are keyed on: the TCP peer, or, from a trusted proxy, the last
// address the proxy appended to X-Forwarded-For (earlier entries are the client's own claims).
func (s *Server) clientIP(c *fiber.Ctx) string {
	peer := c.Context().RemoteIP().String()
	if len(s.cfg.Security.TrustedProxies) == 0 || !c.IsProxyTrusted() {
		return peer
	}
	xff := c.Get(fiber.HeaderXForwardedFor)
	parts := strings.Split(xff, ",")
	for i := len(parts) - 1; i >= 0; i-- {
		if ip := net.ParseIP(strings.TrimSpace(parts[i])); ip != nil {
			return ip.String()
		}
	}
	return peer
}

func stateChanging(method string) bool {
	switch method {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
		return false
	}
	return true
}

// sameOrigin refuses a state-changing request that a browser sent from another origin: by
// Sec-Fetch-Site when the browser sends it (same-site is refused too: another port of the host or
// a sibling subdomain is not this console), else by Origin. A request with neither header is not a
// browser's cross-origin request (browsers send Origin on every cross-origin POST) and passes; the
// experimenter API also wants its CSRF token header, which only the console's own pages have.
func (s *Server) sameOrigin(c *fiber.Ctx) error {
	if !stateChanging(c.Method()) {
		return c.Next()
	}
	switch site := c.Get("Sec-Fetch-Site"); site {
	case "same-origin", "none":
		return c.Next()
	case "":
	default:
		return s.crossOrigin(c, "Sec-Fetch-Site: "+site)
	}
	origin := c.Get(fiber.HeaderOrigin)
	if origin == "" {
		return c.Next()
	}
	if !s.originAllowed(c, origin) {
		return s.crossOrigin(c, "Origin: "+origin)
	}
	return c.Next()
}

func (s *Server) originAllowed(c *fiber.Ctx, origin string) bool {
	if strings.EqualFold(origin, c.Protocol()+"://"+c.Hostname()) {
		return true
	}
	for _, o := range append([]string{s.cfg.BaseURL}, s.cfg.Security.AllowedOrigins...) {
		if o != "" && strings.EqualFold(origin, originOf(o)) {
			return true
		}
	}
	return false
}

// originOf reduces a URL to its origin (scheme://host[:port]).
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

func (s *Server) crossOrigin(c *fiber.Ctx, why string) error {
	s.log.Warn("cross-origin request refused", "method", c.Method(), "path", logPath(c.Path()), "why", why, "client", s.clientIP(c))
	return &apiError{status: fiber.StatusForbidden, msg: "cross-origin request refused"}
}

// jsonBodies makes the API's state-changing routes take JSON only (SDP for an offer): a form or
// text/plain body, which a cross-site page can send without a CORS preflight, is refused with 415.
func (s *Server) jsonBodies(c *fiber.Ctx) error {
	if !stateChanging(c.Method()) || !strings.HasPrefix(c.Path(), "/api/") {
		return c.Next()
	}
	mt, _, _ := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	// The WebRTC signalling routes (a participant's offer, an experimenter's listening offer) take SDP.
	sdpRoute := strings.HasSuffix(c.Path(), "/offer") || strings.HasSuffix(c.Path(), "/listen")
	if mt == fiber.MIMEApplicationJSON || mt == "application/sdp" && sdpRoute {
		return c.Next()
	}
	want := "application/json"
	if sdpRoute {
		want = "application/sdp or application/json"
	}
	return &apiError{status: fiber.StatusUnsupportedMediaType, msg: "Content-Type must be " + want}
}

// redactResponses passes every text response (pages, JSON, traces) through the redaction layer, so
// a key that reached stored data by any path is still not shown. Audio and streams pass as they
// are.
func (s *Server) redactResponses(c *fiber.Ctx) error {
	err := c.Next()
	res := c.Response()
	if res.IsBodyStream() || redact.Default().Len() == 0 {
		return err
	}
	ct := string(res.Header.ContentType())
	if strings.HasPrefix(ct, "text/") || strings.Contains(ct, "json") {
		if b := res.Body(); redact.Default().Contains(b) {
			res.SetBody(redact.Bytes(append([]byte(nil), b...)))
		}
	}
	return err
}

// tokenPath matches the link token in a participant's or annotator's path.
var tokenPath = regexp.MustCompile(`^(/(?:api/)?[pa]/)[^/]+`)

// logPath is a request path fit for a log line: the link token replaced.
func logPath(p string) string { return tokenPath.ReplaceAllString(p, "${1}[token]") }
