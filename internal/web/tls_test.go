package web_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/browsertest"
	"github.com/voicebench/humanaudit/internal/web"
)

// testCA is a certificate authority made for one test, and a server certificate it signed.
type testCA struct {
	pool               *x509.CertPool
	certFile, keyFile  string // the server's chain and key (PEM)
	leafSPKI           string // base64 SHA-256 of the server key's SubjectPublicKeyInfo (Chromium's pin form)
	caCertPEM, leafPEM []byte
}

func newTestCA(t *testing.T, dnsNames []string, ips ...net.IP) *testCA {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "humanaudit test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsNames[0]}, DNSNames: dnsNames, IPAddresses: ips,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(leafDER)
	dir := t.TempDir()
	c := &testCA{pool: x509.NewCertPool(), certFile: filepath.Join(dir, "cert.pem"), keyFile: filepath.Join(dir, "key.pem")}
	c.pool.AddCert(ca)
	c.caCertPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	c.leafPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER})
	keyDER, _ := x509.MarshalECPrivateKey(key)
	os.WriteFile(c.certFile, append(append([]byte{}, c.leafPEM...), c.caCertPEM...), 0o644)
	os.WriteFile(c.keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	sum := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	c.leafSPKI = base64.StdEncoding.EncodeToString(sum[:])
	return c
}

// TestParticipantCallOverHTTPS: the console serves HTTPS from --tls-cert/--tls-key; headless
// Chromium, trusting the test certificate, opens the participant link by a host name (so only TLS
// makes the page a secure context), passes the microphone check and completes a call whose caller
// audio reaches the console. The same page over plain http:// on that host name explains what the
// study team must fix instead. Cookies are Secure under TLS.
func TestParticipantCallOverHTTPS(t *testing.T) {
	if testing.Short() {
		t.Skip("browser call")
	}
	const host = "study.test"
	ca := newTestCA(t, []string{host}, net.ParseIP("127.0.0.1"))
	cfg, err := web.CertificateTLS(ca.certFile, ca.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Replies: []agenttest.Reply{
		{Text: "Hello, this is the service desk. How can I help?", AudioMS: 1500}, {Text: "I see. Goodbye!", AudioMS: 1000}}})
	sys := `{"systems":[{"label":"sys-tls","family":"reference","endpoint":"` + fake.URL() + `"}]}`
	k := startKitWith(t, sys, func(c *web.Config) { c.Security.TLS = cfg })
	if !strings.HasPrefix(k.base, "https://") {
		t.Fatalf("base URL %s", k.base)
	}
	port := k.base[strings.LastIndexByte(k.base, ':')+1:]
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool, ServerName: host}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 30 * time.Second}

	// Plain HTTP on the TLS port gets nothing; a verified TLS client gets the console.
	if res, err := http.Get("http://127.0.0.1:" + port + "/healthz"); err == nil && res.StatusCode == 200 {
		t.Error("plain HTTP is answered on the TLS port")
	}
	res, err := client.Get(k.base + "/healthz")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("https healthz: %v", err)
	}
	res.Body.Close()
	// The experimenter cookie is Secure under TLS.
	if _, err := k.db.CreateExperimenter(context.Background(), "tls-x", "a long enough passphrase"); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", k.base+"/x/login", strings.NewReader("name=tls-x&password=a+long+enough+passphrase"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if res, err = client.Do(req); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if c := sessionCookie(t, res); !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
		t.Errorf("cookie over TLS: %+v", c)
	}

	p := k.participant(t, "tls", "sys-tls", "it-vpn-incident")
	mic := filepath.Join(t.TempDir(), "caller.wav")
	browsertest.ComposeMic(t, mic, 40*time.Second,
		browsertest.Line{At: 4 * time.Second, Text: "Hi, this is Priya Venkataraman. I can't connect to the VPN."},
		browsertest.Line{At: 12 * time.Second, Text: "It's four one seven."})
	b := browsertest.Start(t, mic, chromedp.Flag("host-resolver-rules", "MAP "+host+" 127.0.0.1"),
		chromedp.Flag("ignore-certificate-errors-spki-list", ca.leafSPKI))
	shots := browsertest.ArtifactsDir(t)
	url := "https://" + host + ":" + port + "/p/" + p.Token
	b.Do(30*time.Second, chromedp.Navigate(url), chromedp.WaitVisible("#step-consent"))
	secure, _ := chromedp.Run(b.Ctx, chromedp.Evaluate[bool](`window.isSecureContext`))
	if !secure {
		t.Fatal("the https page is not a secure context")
	}
	b.Do(30*time.Second, chromedp.Click("#consent-check"), chromedp.Click("#consent-agree"),
		chromedp.WaitVisible("#step-mic"), chromedp.WaitEnabled("#mic-record"))
	b.Do(30*time.Second, chromedp.Click("#mic-record"), chromedp.WaitVisible("#mic-playback"),
		chromedp.Click("#mic-heard"), chromedp.Click("#mic-done"), chromedp.WaitVisible("#step-brief"))
	b.Do(30*time.Second, chromedp.Click("#brief-start"), chromedp.WaitVisible(`#call-status.live`))
	b.Shot(shots, "https-call")
	sessions, _ := k.db.ListSessions(context.Background(), audit.SessionFilter{StudyID: "tls"})
	if len(sessions) != 1 {
		t.Fatalf("sessions: %d", len(sessions))
	}
	live, ok := k.console.Live(sessions[0].ID)
	if !ok {
		t.Fatal("call not live")
	}
	time.Sleep(14 * time.Second) // the caller speaks twice
	st := live.Session.Stats()
	b.Do(30*time.Second, chromedp.Click("#call-hangup"), chromedp.WaitVisible("#step-done"))
	<-live.Ended()
	events, _ := k.db.Events(context.Background(), sessions[0].ID)
	var speech, agentSpeech int
	for _, e := range events {
		switch e.Type {
		case "caller.speech_start":
			speech++
		case "agent.speech_start":
			agentSpeech++
		}
	}
	t.Logf("call over https://%s: %d caller packets received, %d lost; caller speech onsets %d, agent speech onsets %d; media time %v",
		host, st.CallerPacketsReceived, st.CallerPacketsLost, speech, agentSpeech, st.MediaTime)
	if st.CallerPacketsReceived < 400 || speech == 0 || agentSpeech == 0 {
		t.Errorf("the call over TLS did not carry the microphone: %d packets, %d caller and %d agent speech onsets", st.CallerPacketsReceived, speech, agentSpeech)
	}

	// The same page over plain http:// on a host name is not a secure context: it explains why.
	plain := startKit(t, sys)
	q := plain.participant(t, "plain", "sys-tls", "it-vpn-incident")
	plainPort := plain.base[strings.LastIndexByte(plain.base, ':')+1:]
	b.Do(30*time.Second, chromedp.Navigate("http://"+host+":"+plainPort+"/p/"+q.Token), chromedp.WaitVisible("#insecure"))
	b.Shot(shots, "insecure-context")
	if text := b.Text("#insecure"); !strings.Contains(text, "https://") || !strings.Contains(text, "--tls-cert") || !strings.Contains(text, "http://"+host+":"+plainPort) {
		t.Errorf("insecure-context notice: %q", text)
	}
}
