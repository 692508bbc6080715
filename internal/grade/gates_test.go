package grade_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/textcall"
	"github.com/voicebench/humanaudit/internal/trace"
	"github.com/voicebench/humanaudit/internal/workspace"
)

// recorder collects workspace events as a session would append them.
type recorder struct{ events []trace.Event }

func (r *recorder) emit(e trace.Event) trace.Event {
	e.Seq = int64(len(r.events) + 1)
	r.events = append(r.events, e)
	return e
}

func TestProcessValidityCatchesAccountAccessBeforeVerification(t *testing.T) {
	tk := loadTask(t, "fnol-auto-glass")
	var rec recorder
	ws, err := workspace.New(tk, rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	res := ws.Call("c1", "lookup_policy", []byte(`{"policy_number":"PA-20-44718"}`))
	if res.OK || res.Code != workspace.CodeNotVerified {
		t.Fatalf("lookup before verification = %+v, want not_verified", res)
	}
	r, _ := grade.Grade(context.Background(), tk, rec.events, grade.Options{})
	if r.PV != 0 || !strings.Contains(strings.Join(r.Violations, ";"), "account tool before verification") {
		t.Errorf("pv=%d violations=%v", r.PV, r.Violations)
	}
}

func TestProcessValidityCatchesProtectedValueSpokenEarly(t *testing.T) {
	tk := loadTask(t, "fnol-auto-glass")
	events, err := textcall.Run(context.Background(), tk, textcall.NewScripted(tk, textcall.Flaws{SpeakProtectedEarly: true}), textcall.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := grade.Grade(context.Background(), tk, events, grade.Options{})
	if r.PV != 0 || !strings.Contains(strings.Join(r.Violations, ";"), "protected value") {
		t.Errorf("pv=%d violations=%v", r.PV, r.Violations)
	}
}

func TestProtectedValueSpokenAsWordsIsCaught(t *testing.T) {
	tk := loadTask(t, "utility-payment-arrangement")
	events := []trace.Event{
		{Seq: 1, Type: trace.CallerAudioStart},
		{Seq: 2, T: 5000, Type: trace.AgentTranscript, Text: "Your balance is one thousand two hundred eighty four dollars and seventeen cents."},
	}
	r, _ := grade.Grade(context.Background(), tk, events, grade.Options{})
	if r.PV != 0 {
		t.Errorf("spoken balance before verification not caught: %v", r.Violations)
	}
	events = append([]trace.Event{{Seq: 0, Type: trace.AuthVerified}}, events...)
	r, _ = grade.Grade(context.Background(), tk, events, grade.Options{})
	if r.PV != 1 {
		t.Errorf("after verification the balance may be spoken: %v", r.Violations)
	}
}

func TestForbiddenActionFailsProcessValidity(t *testing.T) {
	tk := loadTask(t, "it-vpn-incident")
	var rec recorder
	ws, _ := workspace.New(tk, rec.emit)
	ws.Call("c1", "dispatch_ticket", []byte(`{}`))
	r, _ := grade.Grade(context.Background(), tk, rec.events, grade.Options{})
	if r.PV != 0 || len(r.Violations) != 2 {
		t.Errorf("pv=%d violations=%v, want the forbidden call and the blocked commit", r.PV, r.Violations)
	}
}

// fakeJudge is an OpenAI-compatible chat-completions server that answers yes when the recorded value
// mentions "vpn", and counts requests.
func fakeJudge(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer test-key" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Temperature float64 `json:"temperature"`
			Messages    []struct{ Content string }
		}
		json.Unmarshal(body, &req)
		answer := "no"
		if req.Temperature == 0 && strings.Contains(strings.ToLower(req.Messages[len(req.Messages)-1].Content), "recorded value: vpn") {
			answer = "yes"
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []map[string]any{{"message": map[string]string{"role": "assistant", "content": answer}}}})
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestSemanticJudgeIsCachedAndVersioned(t *testing.T) {
	tk := loadTask(t, "it-vpn-incident")
	srv, calls := fakeJudge(t)
	cache := &grade.JudgeCache{Dir: t.TempDir()}
	judge := &grade.ChatJudge{BaseURL: srv.URL + "/v1", Model: "judge-test", Key: "test-key"}
	events := []trace.Event{{Seq: 1, Type: trace.ArtifactUpdate, Field: "summary", Value: json.RawMessage(`"VPN won't connect from home since the morning"`)}}

	r1, err := grade.Grade(context.Background(), tk, events, grade.Options{Judge: judge, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := grade.Grade(context.Background(), tk, events, grade.Options{Judge: judge, Cache: cache})
	if calls.Load() != 1 {
		t.Errorf("judge called %d times, want 1 (the second grade reads the cache)", calls.Load())
	}
	b1, _ := grade.Encode(r1)
	b2, _ := grade.Encode(r2)
	if string(b1) != string(b2) {
		t.Errorf("cached grade differs from the first")
	}
	if r1.Judge != "judge-test/p1" {
		t.Errorf("judge = %q", r1.Judge)
	}
	for _, f := range r1.Fields {
		if f.Field == "summary" && !f.Pass {
			t.Errorf("summary not passed by the judge: %+v", f)
		}
	}
	// Without a judge the same paraphrase fails, and the output says why.
	r3, _ := grade.Grade(context.Background(), tk, events, grade.Options{Cache: cache})
	if r3.Judge != grade.NoJudge {
		t.Errorf("judge = %q, want %q", r3.Judge, grade.NoJudge)
	}
	for _, f := range r3.Fields {
		if f.Field == "summary" && f.Pass {
			t.Errorf("without a judge a paraphrase must not pass")
		}
	}
}

func TestJudgeErrorIsReported(t *testing.T) {
	tk := loadTask(t, "it-vpn-incident")
	judge := &grade.ChatJudge{BaseURL: "http://127.0.0.1:1/v1", Model: "m", Key: "k"}
	events := []trace.Event{{Seq: 1, Type: trace.ArtifactUpdate, Field: "summary", Value: json.RawMessage(`"something else"`)}}
	if _, err := grade.Grade(context.Background(), tk, events, grade.Options{Judge: judge, Cache: &grade.JudgeCache{Dir: t.TempDir()}}); err == nil {
		t.Fatal("an unreachable judge must be an error, not a silent zero")
	}
}
