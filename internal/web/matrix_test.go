package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/audit"
)

// TestRouteCredentialMatrix sends every route the app registers (enumerated from the router, so a
// new route is covered without editing this test) with every kind of wrong credential: none, a
// garbage token, another participant's token, an annotator's token on participant and experimenter
// routes, a participant's token on annotator and experimenter routes, an expired and a lapsed
// participant token, a logged-out experimenter cookie, a spent sign-in link, and an experimenter
// cookie on participant routes. No response may succeed on a protected route, none may carry a
// hidden value or someone else's token, and the database must show no action taken.
func TestRouteCredentialMatrix(t *testing.T) { onEachStore(t, testRouteCredentialMatrix) }

func testRouteCredentialMatrix(t *testing.T, bk backend) {
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{})
	k := startKitOn(t, bk, `{"systems":[{"label":"sys-owl","family":"reference","endpoint":"`+fake.URL()+`"}]}`, nil)
	ctx := context.Background()

	// The victim: participant A with a live call; B and C are other participants of the study.
	a := k.participant(t, "matrix", "sys-owl", "it-vpn-incident")
	if _, err := k.db.AddPlan(ctx, "matrix", []audit.PlanRow{{Slot: "p2", Position: 1, Task: "it-vpn-incident", System: "sys-owl", Repeat: 1}}); err != nil {
		t.Fatal(err)
	}
	consentAndMic(t, k.base, a.Token)
	st, body := get(t, "POST", k.base+"/api/p/"+a.Token+"/call", "{}")
	if st != 200 {
		t.Fatalf("victim's call: %d %s", st, body)
	}
	var started struct{ Session string }
	json.Unmarshal([]byte(body), &started)
	defer get(t, "POST", k.base+"/api/p/"+a.Token+"/call/"+started.Session+"/hangup", "{}")
	b, err := k.db.CreateParticipant(ctx, audit.NewParticipant{StudyID: "matrix"})
	if err != nil {
		t.Fatal(err)
	}
	expired, _ := k.db.CreateParticipant(ctx, audit.NewParticipant{StudyID: "matrix", ExpiresAt: time.Now().Add(-time.Hour)})
	if _, err := k.db.CreateStudy(ctx, audit.Study{ID: "matrix-open", Name: "Open", Seed: 2, Config: json.RawMessage(`{"enrollment":"open"}`)}); err != nil {
		t.Fatal(err)
	}
	k.db.AddPlan(ctx, "matrix-open", []audit.PlanRow{{Slot: "o1", Position: 1, Task: "it-vpn-incident", System: "sys-owl", Repeat: 1}})
	lapsed, _ := k.db.CreateParticipant(ctx, audit.NewParticipant{StudyID: "matrix-open", ConsentDeadline: time.Now().Add(-time.Minute)})
	ann, err := k.db.CreateAnnotator(ctx, "matrix")
	if err != nil {
		t.Fatal(err)
	}
	loggedOut := signInWithPassword(t, k, "x-matrix")
	request(t, "POST", k.base+"/x/logout", "", map[string]string{"Origin": k.base}, loggedOut)
	x, _ := k.db.ExperimenterByName(ctx, "x-matrix")
	spent, _ := k.db.IssueSignInLink(ctx, x.ID, "matrix", 0)
	if _, err := k.db.ConsumeSignInLink(ctx, spent); err != nil {
		t.Fatal(err)
	}
	live := signInWithPassword(t, k, "x-live") // a valid experimenter, used only on other people's routes

	type credential struct {
		name   string
		token  string // put in the path's :token
		header map[string]string
		cookie *http.Cookie
	}
	creds := []credential{
		{name: "none", token: ""},
		{name: "garbage token", token: "abcdefghijklmnopqrstuvwxyzABCDEFGH"},
		{name: "another participant's token", token: b.Token, header: map[string]string{"Authorization": "Bearer " + b.Token}},
		{name: "annotator token", token: ann.Token, header: map[string]string{"Authorization": "Bearer " + ann.Token}},
		{name: "expired participant token", token: expired.Token, header: map[string]string{"Authorization": "Bearer " + expired.Token}},
		{name: "lapsed enrollment token", token: lapsed.Token},
		{name: "logged-out experimenter cookie", token: "abcdefghijklmnopqrstuvwxyzABCDEFGH", cookie: loggedOut},
		{name: "spent sign-in link", token: spent, header: map[string]string{"Authorization": "Bearer " + spent},
			cookie: &http.Cookie{Name: "audit_x", Value: spent}},
		{name: "experimenter cookie on participant routes", token: "abcdefghijklmnopqrstuvwxyzABCDEFGH", cookie: live},
	}
	// Routes anyone may call: pages that show nothing private, and the sign-in forms.
	public := map[string]bool{"GET /": true, "GET /healthz": true, "GET /favicon.ico": true, "GET /ui/:file": true, "GET /x/login": true,
		"POST /x/login": true, "POST /x/login/link": true, "GET /x/logout": true, "POST /x/logout": true, "GET /join/:study": true}
	// Routes an experimenter's own cookie may call (only the "experimenter cookie" credential has it).
	experimenterOwn := func(path string) bool { return strings.HasPrefix(path, "/x/") || strings.HasPrefix(path, "/api/x/") }

	snapshot := func() string {
		sessions, _ := k.db.ListSessions(ctx, audit.SessionFilter{})
		var parts []string
		for _, s := range sessions {
			full, _ := k.db.Session(ctx, s.ID)
			parts = append(parts, fmt.Sprintf("%s:%v:%v", s.ID, full.Exclusion != nil, full.Status))
		}
		for _, st := range []string{"matrix", "matrix-open"} {
			ps, _ := k.db.Participants(ctx, st)
			for _, p := range ps {
				parts = append(parts, fmt.Sprintf("p%d:%v:%v:%s", p.ID, p.Consent != nil, p.MicCheck != nil, p.External.ProlificPID))
			}
		}
		rs, _ := k.db.AnnotatorRatings(ctx, ann.ID)
		parts = append(parts, fmt.Sprintf("ratings:%d", len(rs)))
		sort.Strings(parts)
		return strings.Join(parts, " ")
	}
	before := snapshot()

	secrets := []string{"sys-owl", `"gold"`, `"grader"`, "target_state", a.Token, ann.Token, b.Token}
	var routes []string
	seen := map[string]bool{}
	for _, r := range k.srv.App().GetRoutes(true) {
		key := r.Method + " " + r.Path
		if r.Method == http.MethodHead || seen[key] {
			continue
		}
		seen[key] = true
		routes = append(routes, key)
	}
	sort.Strings(routes)
	for _, want := range []string{"POST /x/login/link", "POST /x/logout", "GET /api/x/me", "GET /join/:study", "PUT /api/a/:token/ratings/:item"} {
		if !slices.Contains(routes, want) {
			t.Errorf("route %s is not registered", want)
		}
	}
	requests, leaks, granted := 0, 0, 0
	for _, route := range routes {
		method, path, _ := strings.Cut(route, " ")
		for _, c := range creds {
			if c.cookie == live && (experimenterOwn(path) || public[route]) {
				continue // the experimenter's own routes are theirs
			}
			participantRoute := strings.HasPrefix(path, "/p/:token") || strings.HasPrefix(path, "/api/p/:token")
			annotatorRoute := strings.HasPrefix(path, "/a/:token") || strings.HasPrefix(path, "/api/a/:token")
			if c.token == b.Token && participantRoute && !strings.Contains(path, ":sid") || c.token == ann.Token && annotatorRoute {
				continue // B's and the annotator's own routes, with nobody else's resource in them
			}
			rel := strings.NewReplacer(":token", c.token, ":sid", started.Session, ":item", "it-000000000000",
				":study", "matrix", ":file", "participant.js").Replace(path)
			url := k.base + strings.ReplaceAll(rel, "//", "/")
			hdr := map[string]string{"Origin": k.base, "Content-Type": "application/json"}
			for k, v := range c.header {
				hdr[k] = v
			}
			payload := "{}"
			if path == "/x/login" {
				payload, hdr["Content-Type"] = "name=x-live&password=wrong-password", "application/x-www-form-urlencoded"
			}
			if path == "/x/login/link" {
				payload, hdr["Content-Type"] = "token="+c.token, "application/x-www-form-urlencoded"
			}
			var cookies []*http.Cookie
			if c.cookie != nil {
				cookies = append(cookies, c.cookie)
			}
			res, got := request(t, method, url, payload, hdr, cookies...)
			requests++
			for _, s := range secrets {
				if strings.Contains(got, s) {
					leaks++
					t.Errorf("%s with %s: response carries %q", route, c.name, s)
				}
			}
			ok := res.StatusCode >= 200 && res.StatusCode < 300
			if res.StatusCode == http.StatusSeeOther && res.Header.Get("Location") != "/x/login" {
				ok = true // a redirect anywhere but the sign-in form let the request through
			}
			if ok && !public[route] {
				granted++
				t.Errorf("%s with %s: %d %.200s", route, c.name, res.StatusCode, got)
			}
			if strings.HasPrefix(path, "/x/login") && method == "POST" && res.StatusCode == http.StatusSeeOther {
				granted++
				t.Errorf("%s with %s signed in", route, c.name)
			}
		}
	}
	after := snapshot()
	t.Logf("%d routes × %d credential kinds: %d requests, %d leaks, %d granted", len(routes), len(creds), requests, leaks, granted)
	if before != after {
		t.Errorf("the matrix changed the database:\nbefore %s\nafter  %s", before, after)
	}
}
