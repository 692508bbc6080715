package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/web"
)

// request sends one request without following redirects and returns the response (body read) and
// the body.
func request(t *testing.T, method, url, body string, header map[string]string, cookies ...*http.Cookie) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 60 * time.Second}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

var formHeader = map[string]string{"Content-Type": "application/x-www-form-urlencoded"}

// sessionCookie is the experimenter cookie a response set.
func sessionCookie(t *testing.T, res *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range res.Cookies() {
		if c.Name == "audit_x" && c.Value != "" {
			return c
		}
	}
	t.Fatalf("no session cookie in %d response (Set-Cookie %q)", res.StatusCode, res.Header.Values("Set-Cookie"))
	return nil
}

// signInWithPassword creates an experimenter and signs in; it returns the session cookie.
func signInWithPassword(t *testing.T, k *consoleKit, name string) *http.Cookie {
	t.Helper()
	if _, err := k.db.CreateExperimenter(context.Background(), name, "a long enough passphrase"); err != nil {
		t.Fatal(err)
	}
	res, body := request(t, "POST", k.base+"/x/login", "name="+name+"&password=a+long+enough+passphrase", formHeader)
	if res.StatusCode != 303 || res.Header.Get("Location") != "/x/" {
		t.Fatalf("sign in: %d %s", res.StatusCode, body)
	}
	return sessionCookie(t, res)
}

func csrfOf(t *testing.T, k *consoleKit, c *http.Cookie) string {
	t.Helper()
	res, body := request(t, "GET", k.base+"/api/x/me", "", nil, c)
	var me struct {
		Name string `json:"name"`
		CSRF string `json:"csrf_token"`
	}
	if res.StatusCode != 200 || json.Unmarshal([]byte(body), &me) != nil || me.CSRF == "" {
		t.Fatalf("/api/x/me: %d %s", res.StatusCode, body)
	}
	return me.CSRF
}

// The session cookie is separate from any link, HttpOnly, SameSite=Strict, Path=/ (Secure only
// under TLS: see the TLS test), and logout revokes it on the server: the same cookie is refused
// afterwards even if a browser (or a thief) kept it.
func TestLogoutRevokesTheSession(t *testing.T) { onEachStore(t, testLogoutRevokesTheSession) }

func testLogoutRevokesTheSession(t *testing.T, bk backend) {
	k := startKitOn(t, bk, `{"systems":[{"label":"sys-owl","family":"reference"}]}`, nil)
	c := signInWithPassword(t, k, "ana")
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure {
		t.Errorf("cookie attributes: %+v", c)
	}
	if res, body := request(t, "GET", k.base+"/api/x/overview", "", nil, c); res.StatusCode != 200 {
		t.Fatalf("dashboard API before logout: %d %s", res.StatusCode, body)
	}
	res, _ := request(t, "POST", k.base+"/x/logout", "", map[string]string{"Origin": k.base}, c)
	if res.StatusCode != 303 {
		t.Fatalf("logout: %d", res.StatusCode)
	}
	cleared := false
	for _, sc := range res.Header.Values("Set-Cookie") {
		if strings.HasPrefix(sc, "audit_x=;") && strings.Contains(sc, "path=/") && (strings.Contains(sc, "max-age=0") || strings.Contains(sc, "expires=Thu, 01 Jan 1970")) {
			cleared = true
		}
	}
	if !cleared {
		t.Errorf("logout does not clear the cookie on Path=/: %q", res.Header.Values("Set-Cookie"))
	}
	res, body := request(t, "GET", k.base+"/api/x/overview", "", nil, c)
	t.Logf("dashboard API after logout with the old cookie: %d %s", res.StatusCode, body)
	if res.StatusCode != 401 {
		t.Errorf("dashboard API after logout: %d, want 401", res.StatusCode)
	}
	if res, _ := request(t, "GET", k.base+"/x/", "", nil, c); res.StatusCode != 303 {
		t.Errorf("dashboard page after logout: %d, want a redirect to sign-in", res.StatusCode)
	}
}

// A sign-in link opens a page that spends it by POST; the first use signs in, the second is refused.
func TestSignInLinkWorksOnce(t *testing.T) { onEachStore(t, testSignInLinkWorksOnce) }

func testSignInLinkWorksOnce(t *testing.T, bk backend) {
	k := startKitOn(t, bk, `{"systems":[{"label":"sys-owl","family":"reference"}]}`, nil)
	ctx := context.Background()
	x, err := k.db.CreateExperimenter(ctx, "ben", "a long enough passphrase")
	if err != nil {
		t.Fatal(err)
	}
	link, err := k.db.IssueSignInLink(ctx, x.ID, "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	// Opening the link (or a chat's link preview fetching it) does not spend it.
	for range 2 {
		res, body := request(t, "GET", k.base+"/x/login?token="+link, "", nil)
		if res.StatusCode != 200 || !strings.Contains(body, `action="/x/login/link"`) || !strings.Contains(body, "works once") {
			t.Fatalf("link page: %d %s", res.StatusCode, body)
		}
	}
	res, body := request(t, "POST", k.base+"/x/login/link", "token="+link, formHeader)
	if res.StatusCode != 303 {
		t.Fatalf("first use: %d %s", res.StatusCode, body)
	}
	c := sessionCookie(t, res)
	if c.Value == link {
		t.Error("the session cookie is the link token")
	}
	if res, _ := request(t, "GET", k.base+"/api/x/overview", "", nil, c); res.StatusCode != 200 {
		t.Errorf("session from the link: %d", res.StatusCode)
	}
	res, body = request(t, "POST", k.base+"/x/login/link", "token="+link, formHeader)
	t.Logf("second use of the link: %d", res.StatusCode)
	if res.StatusCode != 401 || !strings.Contains(body, "used before") {
		t.Errorf("second use: %d %s", res.StatusCode, body)
	}
	for _, sc := range res.Header.Values("Set-Cookie") {
		if strings.HasPrefix(sc, "audit_x=") && !strings.HasPrefix(sc, "audit_x=;") {
			t.Errorf("a refused link set a cookie: %s", sc)
		}
	}
	// The link is not a credential by itself.
	if res, _ := request(t, "GET", k.base+"/api/x/overview", "", map[string]string{"Authorization": "Bearer " + link}); res.StatusCode != 401 {
		t.Errorf("link token as a bearer: %d, want 401", res.StatusCode)
	}
}

// A state-changing request from another origin is refused even with the experimenter's valid
// cookie; JSON routes take JSON only; the experimenter API wants the session's CSRF token.
func TestCrossOriginRequestsAreRefused(t *testing.T) {
	onEachStore(t, testCrossOriginRequestsAreRefused)
}

func testCrossOriginRequestsAreRefused(t *testing.T, bk backend) {
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{})
	k := startKitOn(t, bk, `{"systems":[{"label":"sys-owl","family":"reference","endpoint":"`+fake.URL()+`"}]}`, nil)
	ctx := context.Background()
	sess, err := k.db.CreateSession(ctx, audit.NewSession{TaskID: "it-vpn-incident", TaskVersion: k.tasks["it-vpn-incident"].Version, System: "sys-owl", Mode: audit.ModeSynthetic})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.db.EndSession(ctx, sess.ID, "hangup"); err != nil {
		t.Fatal(err)
	}
	c := signInWithPassword(t, k, "cara")
	token := csrfOf(t, k, c)
	exclude := k.base + "/api/x/sessions/" + sess.ID + "/exclude"
	body := `{"reason":"other","note":"csrf test"}`
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"foreign Origin, text/plain (the reported attack)", map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"}, 403},
		{"foreign Origin, JSON and the token", map[string]string{"Origin": "http://evil.example", "Content-Type": "application/json", "X-CSRF-Token": token}, 403},
		{"another port of the same host", map[string]string{"Origin": "http://127.0.0.1:1", "Content-Type": "application/json", "X-CSRF-Token": token}, 403},
		{"Sec-Fetch-Site same-site (a sibling subdomain)", map[string]string{"Sec-Fetch-Site": "same-site", "Content-Type": "application/json", "X-CSRF-Token": token}, 403},
		{"Sec-Fetch-Site cross-site", map[string]string{"Sec-Fetch-Site": "cross-site", "Content-Type": "application/json", "X-CSRF-Token": token}, 403},
		{"Origin null", map[string]string{"Origin": "null", "Content-Type": "application/json", "X-CSRF-Token": token}, 403},
		{"same origin, text/plain", map[string]string{"Origin": k.base, "Content-Type": "text/plain", "X-CSRF-Token": token}, 415},
		{"same origin, form", map[string]string{"Origin": k.base, "Content-Type": "application/x-www-form-urlencoded", "X-CSRF-Token": token}, 415},
		{"same origin without the CSRF token", map[string]string{"Origin": k.base, "Content-Type": "application/json"}, 403},
		{"same origin, wrong CSRF token", map[string]string{"Origin": k.base, "Content-Type": "application/json", "X-CSRF-Token": "x" + token}, 403},
	} {
		res, got := request(t, "POST", exclude, body, tc.header, c)
		if res.StatusCode != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, res.StatusCode, got, tc.want)
		}
	}
	if s, _ := k.db.Session(ctx, sess.ID); s.Exclusion != nil {
		t.Fatalf("a refused request excluded the session: %+v", s.Exclusion)
	}
	res, got := request(t, "POST", exclude, body, map[string]string{"Origin": k.base, "Sec-Fetch-Site": "same-origin", "Content-Type": "application/json", "X-CSRF-Token": token}, c)
	if res.StatusCode != 200 {
		t.Fatalf("the console's own request: %d %s", res.StatusCode, got)
	}

	// Participant routes (token in the path): the origin and content-type checks hold there too.
	p := k.participant(t, "csrf-p", "sys-owl", "it-vpn-incident")
	consent := k.base + "/api/p/" + p.Token + "/consent"
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"foreign Origin", map[string]string{"Origin": "http://evil.example", "Content-Type": "application/json"}, 403},
		{"text/plain", map[string]string{"Content-Type": "text/plain"}, 415},
	} {
		if res, got := request(t, "POST", consent, `{"agree":true}`, tc.header); res.StatusCode != tc.want {
			t.Errorf("participant consent, %s: %d %s, want %d", tc.name, res.StatusCode, got, tc.want)
		}
	}
	if got, _ := k.db.ParticipantByToken(ctx, p.Token); got.Consent != nil {
		t.Error("a refused request recorded consent")
	}
	// Signing in and out from another origin is refused too (login CSRF).
	if res, _ := request(t, "POST", k.base+"/x/login", "name=cara&password=a+long+enough+passphrase",
		map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://evil.example"}); res.StatusCode != 403 {
		t.Errorf("cross-origin sign-in: %d, want 403", res.StatusCode)
	}
}

// Open enrollment: recruiting ids are checked, each address may enroll a few times per window, and
// the pending cap and the plan's size are enforced with clear pages.
func TestOpenEnrollmentLimits(t *testing.T) { onEachStore(t, testOpenEnrollmentLimits) }

func testOpenEnrollmentLimits(t *testing.T, bk backend) {
	k := startKitOn(t, bk, `{"systems":[{"label":"sys-owl","family":"reference"}]}`, func(c *web.Config) {
		c.Security.Enrollment = web.EnrollmentLimits{PerAddress: 3, Window: time.Hour, MaxPending: 2, ConsentTimeout: 30 * time.Minute}
	})
	ctx := context.Background()
	if _, err := k.db.CreateStudy(ctx, audit.Study{ID: "open2", Name: "Open", Seed: 1, Config: json.RawMessage(`{"enrollment":"open"}`)}); err != nil {
		t.Fatal(err)
	}
	var rows []audit.PlanRow
	for i := range 15 {
		rows = append(rows, audit.PlanRow{Slot: fmt.Sprintf("s%02d", i), Position: 1, Task: "it-vpn-incident", System: "sys-owl", Repeat: 1})
	}
	if _, err := k.db.AddPlan(ctx, "open2", rows); err != nil {
		t.Fatal(err)
	}
	join := func(pid string) (int, string) {
		res, body := request(t, "GET", k.base+"/join/open2?PROLIFIC_PID="+url.QueryEscape(pid), "", nil)
		return res.StatusCode, body
	}
	if st, body := join(strings.Repeat("x", 3000)); st != 400 || !strings.Contains(body, "at most 64") {
		t.Errorf("3000-character id: %d %s", st, body)
	}
	if st, _ := join("<script>"); st != 400 {
		t.Errorf("id with markup: %d", st)
	}
	codes := []int{}
	for i := range 15 {
		st, _ := join(fmt.Sprintf("made-up-%02d", i))
		codes = append(codes, st)
	}
	t.Logf("15 made-up ids from one address: %v", codes)
	// The first two enroll (the pending cap is 2), the third finds the cap, then the address limit
	// (3 per hour; the two refused ids with bad patterns were never counted) refuses the rest.
	want := []int{303, 303, 503}
	for i := 3; i < 15; i++ {
		want = append(want, 429)
	}
	if fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Errorf("codes %v, want %v", codes, want)
	}
	if ps, _ := k.db.Participants(ctx, "open2"); len(ps) != 2 {
		t.Errorf("%d of 15 made-up ids enrolled, want 2", len(ps))
	}
}

// Log lines carry no link token: request paths are logged with the token replaced.
func TestLogsCarryNoToken(t *testing.T) { onEachStore(t, testLogsCarryNoToken) }

func testLogsCarryNoToken(t *testing.T, bk backend) {
	var logs bytes.Buffer
	var mu sync.Mutex
	k := startKitOn(t, bk, `{"systems":[{"label":"sys-owl","family":"reference"}]}`, func(c *web.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	p := k.participant(t, "logs", "sys-owl", "it-vpn-incident")
	request(t, "POST", k.base+"/api/p/"+p.Token+"/consent", `{"agree":true}`, map[string]string{"Origin": "http://evil.example", "Content-Type": "application/json"})
	request(t, "GET", k.base+"/join/nope?PROLIFIC_PID=x", "", nil)
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "/api/p/[token]/consent") {
		t.Errorf("the refused request is not logged with its path: %s", logs.String())
	}
	if strings.Contains(logs.String(), p.Token) {
		t.Errorf("a log line carries the token: %s", logs.String())
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Forwarded headers are believed only from a configured proxy: without one, X-Forwarded-For cannot
// spread a guesser over many addresses and X-Forwarded-Proto cannot fake https; behind a trusted
// proxy the client's address and scheme come from the proxy's headers.
func TestForwardedHeadersTrustedOnlyFromAProxy(t *testing.T) {
	onEachStore(t, testForwardedHeadersTrustedOnlyFromAProxy)
}

func testForwardedHeadersTrustedOnlyFromAProxy(t *testing.T, bk backend) {
	guess := func(k *consoleKit, i int, hdr map[string]string) int {
		h := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
		for a, b := range hdr {
			h[a] = b
		}
		res, _ := request(t, "POST", k.base+"/x/login", fmt.Sprintf("name=nobody-%d&password=wrong", i), h)
		return res.StatusCode
	}
	direct := startKitOn(t, bk, `{"systems":[{"label":"sys-owl","family":"reference"}]}`, nil)
	c := signInWithPassword(t, direct, "dora")
	if c.Secure {
		t.Error("Secure cookie over plain HTTP")
	}
	res, _ := request(t, "POST", direct.base+"/x/login", "name=dora&password=a+long+enough+passphrase",
		map[string]string{"Content-Type": "application/x-www-form-urlencoded", "X-Forwarded-Proto": "https"})
	if sessionCookie(t, res).Secure {
		t.Error("an untrusted X-Forwarded-Proto made the cookie Secure")
	}
	var codes []int
	for i := range 6 {
		codes = append(codes, guess(direct, i, map[string]string{"X-Forwarded-For": fmt.Sprintf("203.0.113.%d", i)}))
	}
	if fmt.Sprint(codes) != "[401 401 401 401 401 429]" {
		t.Errorf("no proxy trusted, spoofed X-Forwarded-For: %v, want the peer's limit after 5", codes)
	}

	proxied := startKitOn(t, bk, `{"systems":[{"label":"sys-owl","family":"reference"}]}`, func(c *web.Config) {
		c.Security.TrustedProxies = []string{"127.0.0.1/32"}
	})
	codes = nil
	for i := range 6 {
		// The proxy appends the client's address after whatever the client claimed.
		codes = append(codes, guess(proxied, i, map[string]string{"X-Forwarded-For": fmt.Sprintf("198.51.100.9, 203.0.113.%d", i)}))
	}
	if fmt.Sprint(codes) != "[401 401 401 401 401 401]" {
		t.Errorf("trusted proxy, six clients: %v", codes)
	}
	codes = nil
	for i := range 6 {
		codes = append(codes, guess(proxied, 10+i, map[string]string{"X-Forwarded-For": fmt.Sprintf("203.0.113.%d, 192.0.2.1", i)}))
	}
	if fmt.Sprint(codes) != "[401 401 401 401 401 429]" {
		t.Errorf("trusted proxy, one client claiming six addresses: %v", codes)
	}
	if _, err := proxied.db.CreateExperimenter(context.Background(), "eli", "a long enough passphrase"); err != nil {
		t.Fatal(err)
	}
	hdr := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "X-Forwarded-Proto": "https",
		"X-Forwarded-Host": "study.example.org", "Origin": "https://study.example.org", "X-Forwarded-For": "192.0.2.77"}
	res, body := request(t, "POST", proxied.base+"/x/login", "name=eli&password=a+long+enough+passphrase", hdr)
	if res.StatusCode != 303 {
		t.Fatalf("sign-in through the proxy: %d %s", res.StatusCode, body)
	}
	if !sessionCookie(t, res).Secure {
		t.Error("behind a TLS proxy the cookie is not Secure")
	}
}
