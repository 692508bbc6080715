package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/agent/agenttest"
	"github.com/voicebench/humanaudit/internal/audit"
)

// get fetches a path (no redirects followed) and returns status and body. A POST or PUT to the API
// is sent as JSON unless header names another Content-Type, as the console's pages do.
func get(t *testing.T, method, url, body string, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if (method == "POST" || method == "PUT") && strings.Contains(url, "/api/") {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 30 * time.Second}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func consentAndMic(t *testing.T, base, token string) {
	t.Helper()
	for _, c := range []struct{ path, body string }{{"/consent", `{"agree":true}`},
		{"/miccheck", `{"echoCancellation":true,"noiseSuppression":true,"autoGainControl":true,"device":"test","level":0.3,"playbackOk":true}`}} {
		if st, b := get(t, "POST", base+"/api/p/"+token+c.path, c.body, "Content-Type", "application/json"); st != 200 {
			t.Fatalf("%s: %d %s", c.path, st, b)
		}
	}
}

// TestAuthorization: every participant and experimenter route needs its own token, and a
// participant can reach nothing of anyone else's, nor any grade.
func TestAuthorization(t *testing.T) { onEachStore(t, testAuthorization) }

func testAuthorization(t *testing.T, bk backend) {
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{})
	k := startKitOn(t, bk, `{"systems":[{"label":"sys-owl","family":"reference","endpoint":"`+fake.URL()+`"}]}`, nil)
	a := k.participant(t, "auth", "sys-owl", "it-vpn-incident")
	ctx := context.Background()
	if _, err := k.db.AddPlan(ctx, "auth", []audit.PlanRow{{Slot: "p2", Position: 1, Task: "it-vpn-incident", System: "sys-owl", Repeat: 1}}); err != nil {
		t.Fatal(err)
	}
	b, err := k.db.CreateParticipant(ctx, audit.NewParticipant{StudyID: "auth"})
	if err != nil {
		t.Fatal(err)
	}
	consentAndMic(t, k.base, b.Token)
	st, body := get(t, "POST", k.base+"/api/p/"+b.Token+"/call", "")
	if st != 200 {
		t.Fatalf("b starts a call: %d %s", st, body)
	}
	var started struct{ Session string }
	json.Unmarshal([]byte(body), &started)
	bSession := started.Session

	for _, tc := range []struct {
		name, method, path string
		want               int
	}{
		{"no token", "GET", "/api/p//state", 404},
		{"guessed token", "GET", "/api/p/abcdefghijklmnopqrstuvwxyzABCDEFGH/state", 404},
		{"another participant's live call", "GET", "/api/p/" + a.Token + "/call/" + bSession, 404},
		{"another participant's offer", "POST", "/api/p/" + a.Token + "/call/" + bSession + "/offer", 404},
		{"another participant's hang-up", "POST", "/api/p/" + a.Token + "/call/" + bSession + "/hangup", 404},
		{"experimenter API without a token", "GET", "/api/x/overview", 401},
		{"experimenter API with a participant token", "GET", "/api/x/sessions/" + bSession, 401},
		{"grade through the experimenter API with a participant token", "GET", "/api/x/sessions/" + bSession + "/trace.jsonl", 401},
		{"recording with a participant token", "GET", "/api/x/sessions/" + bSession + "/recording.wav", 401},
		{"experimenter page without a token", "GET", "/x/", 303},
		{"annotator route without a token", "GET", "/api/a//items", 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, body := get(t, tc.method, k.base+tc.path, "", "Authorization", "Bearer "+a.Token)
			if st != tc.want {
				t.Errorf("%s %s = %d %s, want %d", tc.method, tc.path, st, body, tc.want)
			}
			if strings.Contains(body, "sys-owl") || strings.Contains(body, `"gold"`) {
				t.Errorf("response leaks: %s", body)
			}
		})
	}
	// A participant's own state never carries grader data or the system's label.
	_, own := get(t, "GET", k.base+"/api/p/"+b.Token+"/state", "")
	for _, bad := range []string{"sys-owl", `"gold"`, `"grader"`, `"ws"`, "target_state"} {
		if strings.Contains(own, bad) {
			t.Errorf("participant state contains %s: %s", bad, own)
		}
	}
}

func TestClearErrors(t *testing.T) { onEachStore(t, testClearErrors) }

func testClearErrors(t *testing.T, bk backend) {
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{})
	k := startKitOn(t, bk, `{"systems":[{"label":"sys-owl","family":"reference","endpoint":"`+fake.URL()+`"}]}`, nil)
	ctx := context.Background()
	p := k.participant(t, "errs", "sys-owl", "it-vpn-incident")
	consentAndMic(t, k.base, p.Token)

	t.Run("bad SDP is a 400 naming the problem", func(t *testing.T) {
		st, body := get(t, "POST", k.base+"/api/p/"+p.Token+"/call", "")
		if st != 200 {
			t.Fatalf("start: %d %s", st, body)
		}
		var started struct{ Session string }
		json.Unmarshal([]byte(body), &started)
		for _, offer := range []string{"hello", "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n"} {
			st, body = get(t, "POST", k.base+"/api/p/"+p.Token+"/call/"+started.Session+"/offer", offer, "Content-Type", "application/sdp")
			if st != 400 || !strings.Contains(body, "error") || strings.Contains(body, "internal") {
				t.Errorf("offer %q: %d %s", offer, st, body)
			}
		}
		get(t, "POST", k.base+"/api/p/"+p.Token+"/call/"+started.Session+"/hangup", "")
	})

	t.Run("expired token", func(t *testing.T) {
		old, err := k.db.CreateParticipant(ctx, audit.NewParticipant{StudyID: "errs", ExpiresAt: time.Now().Add(-time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		st, body := get(t, "GET", k.base+"/p/"+old.Token, "")
		if st != 410 || !strings.Contains(body, "expired") || !strings.Contains(body, "<html") {
			t.Errorf("page: %d %s", st, body)
		}
		st, body = get(t, "GET", k.base+"/api/p/"+old.Token+"/state", "")
		if st != 410 || !strings.Contains(body, `"error"`) {
			t.Errorf("api: %d %s", st, body)
		}
	})

	t.Run("unknown link is a clear page", func(t *testing.T) {
		st, body := get(t, "GET", k.base+"/p/not-a-real-token-at-all-0000000000", "")
		if st != 404 || !strings.Contains(body, "This link is not valid") {
			t.Errorf("%d %s", st, body)
		}
	})

	t.Run("unknown task", func(t *testing.T) {
		// A task stored in the database but not loaded on this console.
		spec, _ := os.ReadFile(filepath.Join("..", "grade", "testdata", "tasks", "it-vpn-incident.json"))
		spec = []byte(strings.Replace(string(spec), `"id": "it-vpn-incident"`, `"id": "retired-task"`, 1))
		if _, err := k.db.PutTask(ctx, "retired-task", 1, spec); err != nil {
			t.Fatal(err)
		}
		q, _ := k.db.CreateStudy(ctx, audit.Study{ID: "errs2", Name: "x", Seed: 1})
		k.db.AddPlan(ctx, q.ID, []audit.PlanRow{{Slot: "s", Position: 1, Task: "retired-task", System: "sys-owl", Repeat: 1}})
		r, _ := k.db.CreateParticipant(ctx, audit.NewParticipant{StudyID: q.ID})
		consentAndMic(t, k.base, r.Token)
		st, body := get(t, "GET", k.base+"/api/p/"+r.Token+"/state", "")
		if st != 503 || !strings.Contains(body, "task is not available") {
			t.Errorf("state: %d %s", st, body)
		}
		st, body = get(t, "POST", k.base+"/api/p/"+r.Token+"/call", "")
		if st != 503 || !strings.Contains(body, "task is not available") {
			t.Errorf("call: %d %s", st, body)
		}
	})
}

// One study link for a recruiting platform: each PROLIFIC_PID is enrolled once and sent to its own
// token link; studies without open enrollment have no such link.
func TestJoinLink(t *testing.T) { onEachStore(t, testJoinLink) }

func testJoinLink(t *testing.T, bk backend) {
	fake := agenttest.NewOpenAIFake(t, agenttest.OpenAIGA, agenttest.Script{})
	k := startKitOn(t, bk, `{"systems":[{"label":"sys-owl","family":"reference","endpoint":"`+fake.URL()+`"}]}`, nil)
	ctx := context.Background()
	k.participant(t, "closed", "sys-owl", "it-vpn-incident")
	if _, err := k.db.CreateStudy(ctx, audit.Study{ID: "open1", Name: "Open", Seed: 1, Config: json.RawMessage(`{"enrollment":"open"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.db.AddPlan(ctx, "open1", []audit.PlanRow{{Slot: "o1", Position: 1, Task: "it-vpn-incident", System: "sys-owl", Repeat: 1},
		{Slot: "o2", Position: 1, Task: "it-vpn-incident", System: "sys-owl", Repeat: 1}}); err != nil {
		t.Fatal(err)
	}
	st, body := get(t, "GET", k.base+"/join/closed?PROLIFIC_PID=abc", "")
	if st != 404 {
		t.Errorf("join a closed study: %d %s", st, body)
	}
	st, body = get(t, "GET", k.base+"/join/open1", "")
	if st != 400 || !strings.Contains(body, "PROLIFIC_PID") {
		t.Errorf("join without a participant id: %d %s", st, body)
	}
	redirect := func(pid string) string {
		req, _ := http.NewRequest("GET", k.base+"/join/open1?PROLIFIC_PID="+pid+"&STUDY_ID=st9&SESSION_ID=se9", nil)
		res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 303 || !strings.HasPrefix(res.Header.Get("Location"), "/p/") {
			t.Fatalf("join %s: %d %s", pid, res.StatusCode, res.Header.Get("Location"))
		}
		return strings.SplitN(strings.TrimPrefix(res.Header.Get("Location"), "/p/"), "?", 2)[0]
	}
	// A returning id is the same participant with a fresh link (tokens are stored as digests, so
	// the old one cannot be handed out again; it stops working).
	a1, a2, b1 := redirect("pid-a"), redirect("pid-a"), redirect("pid-b")
	if a1 == a2 || a1 == b1 {
		t.Errorf("tokens: pid-a %s then %s, pid-b %s", a1, a2, b1)
	}
	p, err := k.db.ParticipantByToken(ctx, a2)
	if err != nil || p.External.ProlificPID != "pid-a" || p.External.StudyID != "st9" {
		t.Errorf("enrolled participant: %+v %v", p, err)
	}
	if _, err := k.db.ParticipantByToken(ctx, a1); err == nil {
		t.Error("the superseded link still works")
	}
}

func TestPasswordGuessingIsSlowed(t *testing.T) { onEachStore(t, testPasswordGuessingIsSlowed) }

func testPasswordGuessingIsSlowed(t *testing.T, bk backend) {
	k := startKitOn(t, bk, `{"systems":[{"label":"sys-owl","family":"reference"}]}`, nil)
	if _, err := k.db.CreateExperimenter(context.Background(), "mallory-target", "a long enough passphrase"); err != nil {
		t.Fatal(err)
	}
	try := func(pw string) int {
		st, _ := get(t, "POST", k.base+"/x/login", "name=mallory-target&password="+pw, "Content-Type", "application/x-www-form-urlencoded")
		return st
	}
	for i := 0; i < 5; i++ {
		if st := try("wrong"); st != 401 {
			t.Fatalf("attempt %d: %d", i, st)
		}
	}
	if st := try("a long enough passphrase"); st != 429 {
		t.Errorf("after five wrong passwords even the right one is refused for a while: got %d, want 429", st)
	}
}
