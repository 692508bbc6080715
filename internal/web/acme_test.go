package web_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"go/build"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/audit/audittest"
	"github.com/voicebench/humanaudit/internal/web"
)

// pebbleBinary finds Let's Encrypt's test ACME server (scripts/deps.sh installs it with go
// install). Without it the test is skipped, except in CI, where it must run.
func pebbleBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("pebble"); err == nil {
		return p
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		gopath = build.Default.GOPATH
	}
	p := filepath.Join(gopath, "bin", "pebble")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("pebble is not installed (scripts/deps.sh installs it)")
	}
	t.Skip("pebble is not installed (scripts/deps.sh installs it)")
	return ""
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// loopbackDNS answers every A query with 127.0.0.1 (and AAAA with no address), over UDP and TCP
// on one port (pebble asks over TCP), so the ACME server's validation of a test domain reaches the
// console on loopback.
func loopbackDNS(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	tl, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := dnsAnswer(buf[:n]); resp != nil {
				pc.WriteTo(resp, from)
			}
		}
	}()
	go func() {
		for {
			c, err := tl.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for {
					var l [2]byte
					if _, err := io.ReadFull(c, l[:]); err != nil {
						return
					}
					q := make([]byte, binary.BigEndian.Uint16(l[:]))
					if _, err := io.ReadFull(c, q); err != nil {
						return
					}
					resp := dnsAnswer(q)
					if resp == nil {
						return
					}
					c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(resp))), resp...))
				}
			}()
		}
	}()
	return pc.LocalAddr().String()
}

// dnsAnswer answers one DNS query message (nil for a malformed one).
func dnsAnswer(q []byte) []byte {
	n := len(q)
	if n < 12 || binary.BigEndian.Uint16(q[4:6]) != 1 {
		return nil
	}
	end := 12
	for end < n && q[end] != 0 {
		end += int(q[end]) + 1
	}
	if end+5 > n {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[end+1 : end+3])
	question := q[12 : end+5]
	resp := make([]byte, 12, 64+len(question))
	copy(resp, q[:2])
	binary.BigEndian.PutUint16(resp[2:], 0x8180) // response, recursion desired and available
	binary.BigEndian.PutUint16(resp[4:], 1)
	resp = append(resp, question...)
	if qtype == 1 {
		binary.BigEndian.PutUint16(resp[6:], 1)
		resp = append(resp, 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1)
	}
	return resp
}

// TestACMECertificateFromPebble: with --acme-domain the console gets its certificate from an ACME
// CA: here a local pebble that really validates the tls-alpn-01 challenge by connecting to the
// console's listener. A client that trusts only pebble's root then gets the console over HTTPS.
func TestACMECertificateFromPebble(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pebble")
	}
	bin := pebbleBinary(t)
	const domain = "study.audit.test"

	// The console, listening where pebble's validator will connect.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	consolePort := ln.Addr().(*net.TCPAddr).Port

	// Pebble, with its own API certificate (made here) and the console's port as the tls-alpn-01 port.
	apiCA := newTestCA(t, []string{"localhost"}, net.ParseIP("127.0.0.1"))
	dir := t.TempDir()
	apiPort, mgmtPort := freePort(t), freePort(t)
	conf, _ := json.Marshal(map[string]any{"pebble": map[string]any{
		"listenAddress": fmt.Sprintf("127.0.0.1:%d", apiPort), "managementListenAddress": fmt.Sprintf("127.0.0.1:%d", mgmtPort),
		"certificate": apiCA.certFile, "privateKey": apiCA.keyFile, "httpPort": freePort(t), "tlsPort": consolePort,
		"ocspResponderURL": "", "externalAccountBindingRequired": false, "retryAfter": map[string]int{"authz": 1, "order": 1},
		"profiles": map[string]any{"default": map[string]any{"description": "test", "validityPeriod": 7776000}}}})
	confFile := filepath.Join(dir, "pebble.json")
	os.WriteFile(confFile, conf, 0o644)
	cmd := exec.Command(bin, "-config", confFile, "-dnsserver", loopbackDNS(t))
	cmd.Env = append(os.Environ(), "PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0")
	var pebbleLog strings.Builder
	cmd.Stdout, cmd.Stderr = &pebbleLog, &pebbleLog
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("pebble:\n%s", pebbleLog.String())
		}
	})
	pebbleClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: apiCA.pool}}, Timeout: 30 * time.Second}
	directory := fmt.Sprintf("https://127.0.0.1:%d/dir", apiPort)
	for i := 0; ; i++ {
		res, err := pebbleClient.Get(directory)
		if err == nil {
			res.Body.Close()
			break
		}
		if i == 100 {
			t.Fatalf("pebble does not answer: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	acme, err := web.NewACME(web.ACMEOptions{Domains: []string{domain}, CacheDir: filepath.Join(dir, "acme"), DirectoryURL: directory, HTTPClient: pebbleClient})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := web.New(web.Config{Store: audittest.New(), DataDir: t.TempDir(), Security: web.Security{TLS: acme.TLS()}})
	if err != nil {
		t.Fatal(err)
	}
	srv.UseListener(ln)
	go srv.Serve()
	t.Cleanup(func() { srv.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	cert, err := acme.Certificate(ctx, domain)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(cert.Certificate[0])
	t.Logf("certificate for %v issued by %q in %v (tls-alpn-01 validated on port %d)", leaf.DNSNames, leaf.Issuer.CommonName,
		time.Since(start).Round(time.Millisecond), consolePort)

	// pebble's root, as a browser's trust store would hold Let's Encrypt's.
	res, err := pebbleClient.Get(fmt.Sprintf("https://127.0.0.1:%d/roots/0", mgmtPort))
	if err != nil {
		t.Fatal(err)
	}
	rootPEM, _ := io.ReadAll(res.Body)
	res.Body.Close()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(rootPEM) {
		t.Fatalf("pebble root: %s", rootPEM)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: domain}}, Timeout: 30 * time.Second}
	res, err = client.Get("https://127.0.0.1:" + strconv.Itoa(consolePort) + "/healthz")
	if err != nil {
		t.Fatalf("https with the ACME certificate: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(body) != "ok" || res.TLS == nil || res.TLS.PeerCertificates[0].Subject.String() != leaf.Subject.String() {
		t.Errorf("healthz over ACME TLS: %d %q", res.StatusCode, body)
	}
	// The certificate is cached: a restart does not ask the CA again.
	if entries, _ := os.ReadDir(filepath.Join(dir, "acme")); len(entries) < 2 {
		t.Errorf("ACME cache holds %d entries, want the account key and the certificate", len(entries))
	}
}
