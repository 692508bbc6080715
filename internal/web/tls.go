package web

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"
)

// Browsers give the microphone only to secure contexts: a participant on another machine needs the
// console over https://. The console terminates TLS itself with a certificate pair or with
// automatic certificates from an ACME CA (Let's Encrypt), or sits behind a TLS reverse proxy
// (Security.TrustedProxies; docs/security.md).

// serveListener is the listener Serve uses: TLS around the bound one when configured.
func (s *Server) serveListener() net.Listener {
	if s.cfg.Security.TLS != nil {
		return tls.NewListener(s.ln, s.cfg.Security.TLS)
	}
	return s.ln
}

// baseTLS is the TLS configuration the console serves: TLS 1.2 or newer, HTTP/1.1 (Fiber does
// not serve HTTP/2).
func baseTLS() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
}

// CertificateTLS loads a PEM certificate chain and key (--tls-cert, --tls-key). The files are
// read once; restart the console after renewing them.
func CertificateTLS(certFile, keyFile string) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("tls: give both a certificate and a key file")
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: load certificate %s and key %s: %w", certFile, keyFile, err)
	}
	cfg := baseTLS()
	cfg.Certificates = []tls.Certificate{pair}
	return cfg, nil
}

// ACMEOptions configure automatic certificates.
type ACMEOptions struct {
	Domains []string // the names the console is reached by; certificates are issued for these only
	// CacheDir keeps the account key and certificates across restarts (data/acme).
	CacheDir string
	Email    string // contact for the CA's expiry notices (optional)
	// DirectoryURL is the CA's ACME directory; empty is Let's Encrypt's production CA.
	DirectoryURL string
	// HTTPClient talks to the CA (tests trust a local CA's certificate with it).
	HTTPClient *http.Client
}

// ACME is a source of automatic certificates: TLS for the listener (which answers the CA's
// tls-alpn-01 challenge itself, so the console must be reachable on port 443 of each domain) and
// an HTTP handler for http-01 challenges on port 80 that redirects everything else to https.
type ACME struct {
	manager *autocert.Manager
}

// NewACME returns an ACME certificate source.
func NewACME(o ACMEOptions) (*ACME, error) {
	if len(o.Domains) == 0 {
		return nil, errors.New("acme: name the domain the console is reached by")
	}
	if o.CacheDir == "" {
		return nil, errors.New("acme: a cache directory is required (certificates must survive restarts: CAs rate-limit issuance)")
	}
	m := &autocert.Manager{Prompt: autocert.AcceptTOS, HostPolicy: autocert.HostWhitelist(o.Domains...),
		Cache: autocert.DirCache(filepath.Clean(o.CacheDir)), Email: o.Email}
	if o.DirectoryURL != "" || o.HTTPClient != nil {
		m.Client = &acme.Client{DirectoryURL: o.DirectoryURL, HTTPClient: o.HTTPClient}
	}
	return &ACME{manager: m}, nil
}

// TLS returns the listener's TLS configuration.
func (a *ACME) TLS() *tls.Config {
	cfg := a.manager.TLSConfig()
	cfg.MinVersion = tls.VersionTLS12
	cfg.NextProtos = []string{"http/1.1", acme.ALPNProto} // no h2 (Fiber serves HTTP/1.1); acme-tls/1 answers challenges
	return cfg
}

// HTTPHandler answers http-01 challenges and redirects other requests to https.
func (a *ACME) HTTPHandler() http.Handler { return a.manager.HTTPHandler(nil) }

// Certificate obtains (or loads from the cache) the certificate for a domain now, so a problem
// with the CA shows at start-up rather than at a participant's first visit.
func (a *ACME) Certificate(ctx context.Context, domain string) (*tls.Certificate, error) {
	type result struct {
		c   *tls.Certificate
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := a.manager.GetCertificate(&tls.ClientHelloInfo{ServerName: domain, SupportedProtos: []string{"http/1.1"},
			CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}, SupportedCurves: []tls.CurveID{tls.CurveP256},
			SignatureSchemes: []tls.SignatureScheme{tls.ECDSAWithP256AndSHA256}, SupportedVersions: []uint16{tls.VersionTLS13, tls.VersionTLS12}})
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("acme: certificate for %s: %w", domain, r.err)
		}
		return r.c, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("acme: certificate for %s: %w", domain, ctx.Err())
	}
}
