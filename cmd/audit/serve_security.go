package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/voicebench/humanaudit/internal/web"
)

// securityFlags are the TLS, proxy, session and limit settings of serve and demo.
type securityFlags struct {
	tlsCert, tlsKey                    *string
	acmeDomain, acmeEmail, acmeDir     *string
	acmeHTTP                           *string
	trustedProxies, allowedOrigins     *string
	sessionIdle, sessionMax            *time.Duration
	signInConcurrency                  *int
	joinPerAddress, enrollMaxPending   *int
	enrollConsentTimeout, limitsWindow *time.Duration
}

func addSecurityFlags(fs *flag.FlagSet) securityFlags {
	return securityFlags{
		tlsCert:    fs.String("tls-cert", "", "serve HTTPS with this PEM certificate chain (with --tls-key)"),
		tlsKey:     fs.String("tls-key", "", "PEM private key of --tls-cert"),
		acmeDomain: fs.String("acme-domain", "", "serve HTTPS with automatic certificates for this domain (comma-separated for several); the console must be reachable on port 443 of it (--addr :443)"),
		acmeEmail:  fs.String("acme-email", "", "contact address for the certificate authority's expiry notices"),
		acmeDir:    fs.String("acme-directory", "", "ACME directory URL (default: Let's Encrypt production)"),
		acmeHTTP:   fs.String("acme-http", "", "also answer ACME http-01 challenges and redirect to https on this address (e.g. :80)"),
		trustedProxies: fs.String("trusted-proxy", "", "comma-separated addresses or CIDRs of reverse proxies whose X-Forwarded-For/-Proto/-Host headers are trusted "+
			"(default: none; set it only when every request comes through that proxy)"),
		allowedOrigins:       fs.String("allowed-origin", "", "comma-separated extra origins (https://host) allowed to send state-changing requests"),
		sessionIdle:          fs.Duration("session-idle", 2*time.Hour, "an experimenter session ends after this long without a request"),
		sessionMax:           fs.Duration("session-max", 12*time.Hour, "an experimenter session ends this long after sign-in"),
		signInConcurrency:    fs.Int("signin-concurrency", 2, "password checks (argon2id, 19 MiB each) run at once; more are refused with 429"),
		limitsWindow:         fs.Duration("limits-window", 10*time.Minute, "window of the sign-in (5 per account and address) and enrollment limits"),
		joinPerAddress:       fs.Int("join-per-address", 5, "open-enrollment sign-ups per client address per --limits-window"),
		enrollMaxPending:     fs.Int("enroll-max-pending", 20, "open enrollments of a study waiting for consent at once"),
		enrollConsentTimeout: fs.Duration("enroll-consent-timeout", 30*time.Minute, "an open enrollment without consent gives its plan slot back after this long"),
	}
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// tlsSource is how the console gets its certificate, and what runs beside it for ACME.
type tlsSource struct {
	acme    *web.ACME
	domains []string
	http    *http.Server // http-01 challenges and redirects (--acme-http)
}

// security builds the web app's security settings from the flags; with --acme-domain it also
// returns the ACME source (its certificate is fetched by start).
func (f securityFlags) security(dataDir string) (web.Security, *tlsSource, error) {
	sec := web.Security{
		TrustedProxies: splitList(*f.trustedProxies),
		AllowedOrigins: splitList(*f.allowedOrigins),
		SignIn:         web.SignInLimits{Concurrency: *f.signInConcurrency, Window: *f.limitsWindow},
		Enrollment: web.EnrollmentLimits{PerAddress: *f.joinPerAddress, Window: *f.limitsWindow, ConsentTimeout: *f.enrollConsentTimeout,
			MaxPending: *f.enrollMaxPending},
	}
	sec.Session.Idle, sec.Session.Absolute = *f.sessionIdle, *f.sessionMax
	for _, p := range sec.TrustedProxies {
		if net.ParseIP(p) == nil {
			if _, _, err := net.ParseCIDR(p); err != nil {
				return sec, nil, fmt.Errorf("--trusted-proxy %q: want an IP address or a CIDR range (10.0.0.0/8)", p)
			}
		}
	}
	switch {
	case *f.tlsCert != "" || *f.tlsKey != "":
		if *f.acmeDomain != "" {
			return sec, nil, errors.New("--tls-cert and --acme-domain: choose one way to get a certificate")
		}
		cfg, err := web.CertificateTLS(*f.tlsCert, *f.tlsKey)
		if err != nil {
			return sec, nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		sec.TLS = cfg
		return sec, nil, nil
	case *f.acmeDomain != "":
		domains := splitList(*f.acmeDomain)
		a, err := web.NewACME(web.ACMEOptions{Domains: domains, CacheDir: filepath.Join(dataDir, "acme"), Email: *f.acmeEmail, DirectoryURL: *f.acmeDir})
		if err != nil {
			return sec, nil, fmt.Errorf("--acme-domain: %w", err)
		}
		sec.TLS = a.TLS()
		return sec, &tlsSource{acme: a, domains: domains}, nil
	}
	return sec, nil, nil
}

// start serves the http-01 handler (when asked) and obtains the first certificate, so a CA
// problem shows at start-up.
func (t *tlsSource) start(ctx context.Context, httpAddr string, log *slog.Logger) error {
	if t == nil {
		return nil
	}
	if httpAddr != "" {
		ln, err := net.Listen("tcp", httpAddr)
		if err != nil {
			return fmt.Errorf("--acme-http %s: %w", httpAddr, err)
		}
		t.http = &http.Server{Handler: t.acme.HTTPHandler(), ReadHeaderTimeout: 10 * time.Second}
		go t.http.Serve(ln)
	}
	c, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, d := range t.domains {
		if _, err := t.acme.Certificate(c, d); err != nil {
			return fmt.Errorf("%w (the CA must reach this console on port 443 of %s, or on port 80 with --acme-http :80)", err, d)
		}
		log.Info("certificate ready", slog.String("domain", d))
	}
	return nil
}

func (t *tlsSource) close() error {
	if t == nil || t.http == nil {
		return nil
	}
	return t.http.Close()
}
