package web_test

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voicebench/humanaudit/internal/annotate"
	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/audit"
	bankpkg "github.com/voicebench/humanaudit/internal/bank"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/web"
)

// annotKit is a running console with a study whose rating set holds frozen utterances of the
// real task suite (blinded by annotate.Prepare, audio under DATA/bank) and three annotators.
type annotKit struct {
	db         kitStore
	srv        *web.Server
	base       string
	data       string
	study      audit.Study
	tasks      map[string]*task.Task
	items      []string // the study's item ids
	outside    string   // an item stored but not in the study's set
	annotators []audit.Annotator
}

// annotTone writes a 24 kHz WAV of a 440 Hz tone.
func annotTone(t *testing.T, path string, d time.Duration) {
	t.Helper()
	pcm := make([]int16, int(d.Seconds()*24000))
	for i := range pcm {
		pcm[i] = int16(6000 * math.Sin(2*math.Pi*440*float64(i)/24000))
	}
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := audio.WriteWAV(path, 24000, 1, pcm); err != nil {
		t.Fatal(err)
	}
}

func startAnnotKit(t *testing.T, taskCount int) *annotKit {
	t.Helper()
	return startAnnotKitOn(t, postgres, taskCount)
}

// startAnnotKitOn is startAnnotKit on a store of the given backend.
func startAnnotKitOn(t *testing.T, backend backend, taskCount int) *annotKit {
	t.Helper()
	db := backend.open(t)
	all, probs := task.LoadAll(filepath.Join("..", "..", "tasks"))
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	k := &annotKit{db: db, data: t.TempDir(), tasks: map[string]*task.Task{}}
	bank := filepath.Join(k.data, "bank")
	// The bank's own rating set (what `audit bank rating-set --json` prints), for the first
	// taskCount+1 audit24 tasks; each item's audio is a short tone where the bank would render it.
	set, err := bankpkg.RatingSet(all)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(set)
	var bankItems []annotate.BankItem
	if err := json.Unmarshal(raw, &bankItems); err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Task    string `json:"task"`
		Plan    string `json:"plan"`
		Variant int    `json:"variant"`
		File    string `json:"file"`
	}
	var entries []entry
	var picked []annotate.BankItem
	for _, it := range bankItems {
		if len(k.tasks) == taskCount+1 && k.tasks[it.Task] == nil {
			break
		}
		for _, tk := range all {
			if tk.ID == it.Task {
				k.tasks[tk.ID] = tk
			}
		}
		annotTone(t, filepath.Join(bank, it.Audio), 600*time.Millisecond)
		entries = append(entries, entry{it.Task, it.Plan, int(it.Variant), it.Audio})
		it.Audio = ""
		picked = append(picked, it)
	}
	m, _ := json.Marshal(map[string]any{"sample_rate": 24000, "entries": entries})
	os.WriteFile(filepath.Join(bank, annotate.ManifestFile), m, 0o644)
	ix, err := annotate.LoadAudioIndex(bank)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := annotate.Prepare(picked, slices.Collect(mapValues(k.tasks)), ix)
	if err != nil {
		t.Fatal(err)
	}
	last := picked[len(picked)-1].Task
	ctx := context.Background()
	if err := db.PutRatingItems(ctx, stored); err != nil {
		t.Fatal(err)
	}
	// The last task's items are stored but belong to no study's set.
	for _, it := range stored {
		if it.TaskID == last {
			k.outside = it.ID
		} else {
			k.items = append(k.items, it.ID)
		}
	}
	cfg, _ := annotate.WithSet(json.RawMessage(`{"title":"Utterance rating (test)"}`), annotate.SetConfig{Items: k.items})
	if k.study, err = db.CreateStudy(ctx, audit.Study{ID: "rate", Name: "Rating study", Seed: 11, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		a, err := db.CreateAnnotator(ctx, "rate")
		if err != nil {
			t.Fatal(err)
		}
		k.annotators = append(k.annotators, a)
	}
	k.srv, err = web.New(web.Config{Store: db, DataDir: k.data})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.srv.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	go k.srv.Serve()
	t.Cleanup(func() { k.srv.Close() })
	k.base = k.srv.URL()
	return k
}

func mapValues[K comparable, V any](m map[K]V) func(func(V) bool) {
	return func(yield func(V) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// annotCall does one HTTP request and decodes a JSON answer into out (when non-nil).
func annotCall(t *testing.T, method, url, body string, out any) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil && res.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, url, err, b)
		}
	}
	return res.StatusCode, string(b)
}

type annotState struct {
	Study   string                     `json:"study"`
	Total   int                        `json:"total"`
	Order   []string                   `json:"order"`
	Ratings map[string]json.RawMessage `json:"ratings"`
	Resume  int                        `json:"resume"`
}

func TestAnnotatorAPIStaysInsideTheAnnotatorsSet(t *testing.T) {
	onEachStore(t, testAnnotatorAPIStaysInsideTheAnnotatorsSet)
}

func testAnnotatorAPIStaysInsideTheAnnotatorsSet(t *testing.T, bk backend) {
	if testing.Short() && bk.name == postgres.name {
		t.Skip("needs PostgreSQL")
	}
	k := startAnnotKitOn(t, bk, 2)
	a, b := k.annotators[0], k.annotators[1]
	api := func(a audit.Annotator, path string) string { return k.base + "/api/a/" + a.Token + path }

	var st annotState
	if code, body := annotCall(t, "GET", api(a, "/state"), "", &st); code != 200 {
		t.Fatalf("state: %d %s", code, body)
	}
	if want := annotate.Order(k.study.Seed, a.SeedPosition, k.items); !slices.Equal(st.Order, want) || st.Total != len(k.items) || st.Resume != 0 {
		t.Fatalf("state %+v, want order %v", st, want)
	}
	var stB annotState
	annotCall(t, "GET", api(b, "/state"), "", &stB)
	if slices.Equal(st.Order, stB.Order) {
		t.Fatal("two annotators share one order")
	}

	for _, tc := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"GET", "/api/a/not-a-real-token-at-all-xxxxxx/state", "", 404, `{"error":"not found"}`},
		{"GET", "/a/not-a-real-token-at-all-xxxxxx", "", 404, "This link is not valid"},
		{"GET", "/api/a/" + a.Token + "/items/" + k.outside, "", 404, `{"error":"not found"}`},
		{"GET", "/api/a/" + a.Token + "/items/" + k.outside + "/audio", "", 404, `{"error":"not found"}`},
		{"PUT", "/api/a/" + a.Token + "/ratings/" + k.outside, `{"fidelity":3,"naturalness":3,"leakage":false}`, 404, `{"error":"not found"}`},
		{"PUT", "/api/a/" + a.Token + "/ratings/" + k.items[0], `{"fidelity":6,"naturalness":3,"leakage":false}`, 400, "fidelity 6: want 1 to 5"},
		{"PUT", "/api/a/" + a.Token + "/ratings/" + k.items[0], `{"fidelity":2,"naturalness":0,"leakage":false}`, 400, "naturalness 0: want 1 to 5"},
		{"PUT", "/api/a/" + a.Token + "/ratings/" + k.items[0], `{"fidelity":2,"naturalness":2}`, 400, "leakage: want yes (true) or no (false)"},
		{"PUT", "/api/a/" + a.Token + "/ratings/" + k.items[0], `{"fidelity":2,"naturalness":2,"leakage":true,"note":"` + strings.Repeat("x", 2001) + `"}`, 400, "note: at most 2000 characters"},
		{"PUT", "/api/a/" + a.Token + "/ratings/" + k.items[0], `not json`, 400, "rating: want JSON"},
	} {
		code, body := annotCall(t, tc.method, k.base+tc.path, tc.body, nil)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s: %d %.120s, want %d %q", tc.method, tc.path, code, body, tc.code, tc.want)
		}
	}

	// a rates an item and edits the rating; b never sees it.
	item := k.items[0]
	if code, body := annotCall(t, "PUT", api(a, "/ratings/"+item), `{"fidelity":2,"naturalness":4,"leakage":true,"note":"secret note of a"}`, nil); code != 200 {
		t.Fatalf("rate: %d %s", code, body)
	}
	if code, body := annotCall(t, "PUT", api(a, "/ratings/"+item), `{"fidelity":5,"naturalness":4,"leakage":false,"note":"edited by a"}`, nil); code != 200 {
		t.Fatalf("edit: %d %s", code, body)
	}
	var view struct {
		ID     string          `json:"id"`
		Audio  string          `json:"audio"`
		Rating json.RawMessage `json:"rating"`
	}
	annotCall(t, "GET", api(a, "/items/"+item), "", &view)
	if string(view.Rating) != `{"fidelity":5,"naturalness":4,"leakage":false,"note":"edited by a"}` {
		t.Fatalf("a's view of the edited rating: %s", view.Rating)
	}
	_, bodyB := annotCall(t, "GET", api(b, "/items/"+item), "", &view)
	var sb annotState
	_, stateB := annotCall(t, "GET", api(b, "/state"), "", &sb)
	if string(view.Rating) != "null" || len(sb.Ratings) != 0 || strings.Contains(bodyB+stateB, "edited by a") {
		t.Fatalf("b sees a's rating: %s / %s", bodyB, stateB)
	}
	rows, _ := k.db.RatingsLong(context.Background(), "rate")
	if len(rows) != 1 || rows[0].Fidelity != 5 || rows[0].Note != "edited by a" || rows[0].AnnotatorID != a.ID {
		t.Fatalf("stored ratings %+v", rows)
	}
	// The audio is served for an item of the set, as a WAV.
	res, err := http.Get(k.base + view.Audio)
	if err != nil {
		t.Fatal(err)
	}
	wav, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "audio/wav" || !strings.HasPrefix(string(wav), "RIFF") || !strings.HasPrefix(view.Audio, "/api/a/"+b.Token+"/items/") {
		t.Fatalf("audio: %d %s %.4s (%s)", res.StatusCode, res.Header.Get("Content-Type"), wav, view.Audio)
	}
	// A study without a rating set says so.
	ctx := context.Background()
	k.db.CreateStudy(ctx, audit.Study{ID: "empty", Name: "No set", Seed: 1})
	lone, _ := k.db.CreateAnnotator(ctx, "empty")
	if code, body := annotCall(t, "GET", k.base+"/api/a/"+lone.Token+"/state", "", nil); code != 409 || !strings.Contains(body, "no rating set") {
		t.Fatalf("no set: %d %s", code, body)
	}
}

// Every item an annotator can fetch speaks the caller's language: no tool or action identifier of
// the agent side, and approval or revocation plans say what they are about by the caller's cue.
func TestAnnotatorItemsCarryNoAgentIdentifiers(t *testing.T) {
	onEachStore(t, testAnnotatorItemsCarryNoAgentIdentifiers)
}

func testAnnotatorItemsCarryNoAgentIdentifiers(t *testing.T, bk backend) {
	k := startAnnotKitOn(t, bk, 6)
	a := k.annotators[0]
	var ids []string
	for _, tk := range k.tasks {
		ids = append(ids, annotate.AgentIdentifiers(tk)...)
	}
	if len(ids) == 0 {
		t.Fatal("the tasks have no agent identifiers to look for")
	}
	intents := 0
	for _, item := range k.items {
		var view struct {
			UserPlan struct {
				Kind   string `json:"kind"`
				Intent string `json:"intent"`
			} `json:"user_plan"`
		}
		code, body := annotCall(t, "GET", k.base+"/api/a/"+a.Token+"/items/"+item, "", &view)
		if code != 200 {
			t.Fatalf("item %s: %d %s", item, code, body)
		}
		for _, leak := range annotate.ScanIdentifiers(body, ids) {
			t.Errorf("item %s carries %s: %s", item, leak, body)
		}
		if strings.Contains(body, `"action"`) || strings.Contains(body, `"id":"approve:`) {
			t.Errorf("item %s carries the plan's action or id: %s", item, body)
		}
		if view.UserPlan.Kind == "approve" || view.UserPlan.Kind == "revoke" {
			if view.UserPlan.Intent == "" {
				t.Errorf("item %s: an %s plan without the caller's cue: %s", item, view.UserPlan.Kind, body)
			}
			intents++
		}
	}
	t.Logf("%d items, %d approval or revocation plans, %d agent identifiers looked for", len(k.items), intents, len(ids))
	if intents == 0 {
		t.Error("no approval or revocation item in the set: the test proves nothing about them")
	}
}
