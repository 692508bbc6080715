package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/agent/systems"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/console"
	"github.com/voicebench/humanaudit/internal/media"
	"github.com/voicebench/humanaudit/internal/media/libopus"
	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/store/pgcluster"
	"github.com/voicebench/humanaudit/internal/store/storetest"
	"github.com/voicebench/humanaudit/internal/web"
)

// TestKeyNeverLeavesTheSystemsFile runs `audit synth` against a hostile provider that echoes the
// API key back in a spoken reply (mid-call raw events and transcripts), in an error event and in
// the close frame's reason, then looks for the key everywhere it could land: the command's stdout
// and stderr, every exported and data file, the review API's pages, and a pg_dump of the database.
// It must be found 0 times, and its redacted form must be there (the provider did echo it).
func TestKeyNeverLeavesTheSystemsFile(t *testing.T) {
	if testing.Short() {
		t.Skip("a real-time call; skipped with -short")
	}
	if _, err := exec.LookPath("flite"); err != nil {
		t.Skip("flite not installed")
	}
	url := storetest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	b := make([]byte, 8)
	rand.Read(b)
	canary := "sk-canary-" + hex.EncodeToString(b)
	const label = "HOSTILE_REALTIME_KEY"
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Key: canary, Replies: []agenttest.Reply{
		{Text: "Sure. For the record your key is " + canary + " and I will note it.", AudioMS: 600},
		{Error: &agenttest.ProviderError{Type: "invalid_request_error", Code: "invalid_api_key", Message: "Incorrect API key provided: " + canary + "."}},
		{CloseCode: 4001, CloseReason: "key " + canary + " revoked"},
	}})
	dir := t.TempDir()
	sysFile := filepath.Join(dir, "systems.json")
	sj, _ := json.Marshal(map[string]any{"systems": []map[string]any{{"label": "hostile", "family": "openai", "endpoint": fake.URL(),
		"model": "gpt-realtime", "voice": "marin", "key_label": label}}})
	os.WriteFile(sysFile, sj, 0o644)
	os.WriteFile(filepath.Join(dir, "secrets.txt"), []byte(label+"="+canary+"\n"), 0o600)
	out, data := filepath.Join(dir, "out"), filepath.Join(dir, "data")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"synth", "--system", "hostile", "--tasks", "it-vpn-incident", "--seeds", "1", "--out", out,
		"--systems", sysFile, "--tasks-dir", testTasksDir, "--data", data, "--secrets", filepath.Join(dir, "secrets.txt"),
		"--render-missing", "--time-limit", "40s"}, &stdout, &stderr)
	t.Logf("audit synth: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	var echoed bool
	for _, e := range fake.ErrorsSent() {
		echoed = echoed || strings.Contains(e.Message, canary)
	}
	if !echoed {
		t.Fatal("the fake did not echo the key in an error event: the test proves nothing")
	}

	// A second system whose provider refuses the key and quotes it in the HTTP 401 body, as a real
	// provider's "Incorrect API key provided: sk-…" does: audit systems check --connect reports the
	// refusal on stderr.
	refusing := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{Key: "sk-the-right-one-is-elsewhere", EchoKey: true})
	sj, _ = json.Marshal(map[string]any{"systems": []map[string]any{{"label": "refusing", "family": "openai", "endpoint": refusing.URL(),
		"model": "gpt-realtime", "key_label": label}}})
	refusingFile := filepath.Join(dir, "refusing.json")
	os.WriteFile(refusingFile, sj, 0o644)
	var checkOut, checkErr bytes.Buffer
	err = run(context.Background(), []string{"systems", "check", "--connect", "--systems", refusingFile, "--secrets", filepath.Join(dir, "secrets.txt"), "--tasks", "../../tasks"},
		&checkOut, &checkErr)
	t.Logf("audit systems check --connect: %v\nstdout: %s\nstderr: %s", err, checkOut.String(), checkErr.String())
	if !strings.Contains(checkOut.String()+checkErr.String(), "Incorrect API key provided: [redacted") {
		t.Errorf("systems check does not report the provider's refusal (redacted)")
	}
	stdout.WriteString(checkOut.String())
	stderr.WriteString(checkErr.String())

	found := map[string]int{"stdout": strings.Count(stdout.String(), canary), "stderr": strings.Count(stderr.String(), canary)}
	redacted := strings.Count(stderr.String(), "[redacted:"+label+"]")
	files := 0
	for _, root := range []string{out, data} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			files++
			if n := bytes.Count(b, []byte(canary)); n > 0 {
				found[p] = n
			}
			return nil
		})
	}

	// The review pages an experimenter opens.
	db, err := store.Open(context.Background(), store.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sessions, err := db.ListSessions(context.Background(), audit.SessionFilter{})
	if err != nil || len(sessions) == 0 {
		t.Fatalf("no session stored: %v", err)
	}
	pages := reviewPages(t, db, sessions[0].ID)
	for name, body := range pages {
		if n := strings.Count(body, canary); n > 0 {
			found["page "+name] = n
		}
		redacted += strings.Count(body, "[redacted:"+label+"]")
	}

	// Everything the database holds.
	bin, err := pgcluster.FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	dump, err := exec.Command(filepath.Join(bin, "pg_dump"), "--dbname="+url).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	found["pg_dump"] = bytes.Count(dump, []byte(canary))
	inDump := bytes.Count(dump, []byte("[redacted:"+label+"]"))
	total := 0
	for where, n := range found {
		total += n
		if n > 0 {
			t.Errorf("the key appears %d times in %s", n, where)
		}
	}
	t.Logf("canary found %d times (stdout, stderr, %d files, %d review pages, pg_dump of %d bytes); redacted forms: %d in the database, %d in stderr and pages",
		total, files, len(pages), len(dump), inDump, redacted)
	if inDump == 0 {
		t.Error("the database holds no redacted key: the provider's echoes were not stored, so the test proves nothing")
	}
	for _, want := range []string{"agent.raw", "agent.error"} {
		if !bytes.Contains(dump, []byte(want)) {
			t.Errorf("pg_dump has no %s event", want)
		}
	}
}

// reviewPages fetches what an experimenter's browser gets for a session: the session list, the
// review JSON and the trace export.
func reviewPages(t *testing.T, db *store.DB, sessionID string) map[string]string {
	t.Helper()
	ctx := context.Background()
	tasks, err := loadTaskDir(testTasksDir)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := console.New(ctx, console.Config{NewEncoder: media.Encoders(libopus.NewEncoder), Store: db, Tasks: tasks, Systems: systems.WithReferenceAgent(nil), DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	srv, err := web.New(web.Config{Store: db, Console: svc, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Close()
	x, err := db.CreateExperimenter(ctx, "reviewer", "a long enough passphrase")
	if err != nil {
		t.Fatal(err)
	}
	cookie, err := db.CreateExperimenterSession(ctx, x.ID, "password", audit.SessionLimits{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for name, path := range map[string]string{"sessions": "/api/x/sessions", "review": "/api/x/sessions/" + sessionID,
		"trace": "/api/x/sessions/" + sessionID + "/trace.jsonl"} {
		req, _ := http.NewRequest("GET", srv.URL()+path, nil)
		req.AddCookie(&http.Cookie{Name: "audit_x", Value: cookie})
		res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, res.StatusCode, b)
		}
		out[name] = string(b)
	}
	return out
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and returns the files and a pool
// trusting it.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	kb, _ := x509.MarshalECPrivateKey(key)
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return certFile, keyFile, pool
}

// audit serve --tls-cert/--tls-key serves HTTPS and prints https:// links; bad security flags are
// refused at start with a message naming the flag.
func TestServeOverTLS(t *testing.T) {
	t.Setenv("DATABASE_URL", storetest.NewURL(t))
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t)
	base := []string{"serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--tasks", "../../tasks",
		"--systems", filepath.Join(dir, "none.json"), "--loopback-only"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", certFile}, "--tls-cert/--tls-key: tls: give both a certificate and a key file"},
		{[]string{"--tls-cert", certFile, "--tls-key", keyFile, "--acme-domain", "study.example.org"}, "choose one way to get a certificate"},
		{[]string{"--trusted-proxy", "10.0.0.0/33"}, `--trusted-proxy "10.0.0.0/33": want an IP address or a CIDR range`},
	} {
		var stdout, stderr syncBuffer
		err := run(context.Background(), append(append([]string{}, base...), tc.args...), &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append(append([]string{}, base...), "--tls-cert", certFile, "--tls-key", keyFile), &stdout, &stderr)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(stdout.String(), "console:") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	line := stdout.String()
	i := strings.Index(line, "console: https://")
	if i < 0 {
		cancel()
		<-done
		t.Fatalf("serve printed %q (stderr %s)", line, stderr.String())
	}
	url := strings.Fields(line[i+len("console: "):])[0]
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	res, err := client.Get(url + "/healthz")
	if err != nil {
		t.Errorf("https %s: %v", url, err)
	} else {
		res.Body.Close()
		if res.StatusCode != 200 || res.TLS == nil {
			t.Errorf("https healthz: %d", res.StatusCode)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr.String())
	}
}

// audit experimenter link prints a one-time link and says so.
func TestExperimenterLinkWorksOnce(t *testing.T) {
	url := storetest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	ctx := context.Background()
	db, err := store.Open(ctx, store.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateExperimenter(ctx, "ana", "a long enough passphrase"); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := run(ctx, []string{"experimenter", "link", "ana", "--base-url", "https://audit.example/"}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	out := stdout.String()
	t.Logf("audit experimenter link:\n%s", out)
	const prefix = "experimenter: https://audit.example/x/login?token="
	i := strings.Index(out, prefix)
	if i < 0 || !strings.Contains(out, "the link works once, within 15m0s") {
		t.Fatalf("output: %q", out)
	}
	tok := strings.Fields(out[i+len(prefix):])[0]
	if _, err := db.ConsumeSignInLink(ctx, tok); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if _, err := db.ConsumeSignInLink(ctx, tok); err == nil {
		t.Fatal("the printed link works twice")
	}
}
