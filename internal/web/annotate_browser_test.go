package web_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/voicebench/humanaudit/internal/annotate"
	"github.com/voicebench/humanaudit/internal/audit"
)

// annotChromium is Debian's Chromium (scripts/deps.sh installs it).
const annotChromium = "/usr/bin/chromium"

// annotTab is one annotator's browser tab; it keeps every response body the tab receives (CDP
// Network domain) for the leakage scan.
type annotTab struct {
	t     *testing.T
	ctx   context.Context
	who   audit.Annotator
	order []string

	mu     sync.Mutex
	bodies []string
	ids    chan network.RequestID
	done   chan struct{}
}

// annotBrowser starts headless Chromium (a fresh user-data-dir) and returns its allocator context.
func annotBrowser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(annotChromium); err != nil {
		t.Skip("chromium not installed (scripts/deps.sh installs it)")
	}
	profile := t.TempDir()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(annotChromium), chromedp.UserDataDir(profile), chromedp.Env("TMPDIR=" + profile), // see browsertest.Start
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("autoplay-policy", "no-user-gesture-required"), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil { // start the browser
		t.Fatal(err)
	}
	t.Cleanup(func() { cancelB(); cancelA() })
	return bctx
}

// openTab opens a new tab of the browser for annotator a and starts recording what it receives.
func (k *annotKit) openTab(t *testing.T, browser context.Context, a audit.Annotator) *annotTab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	tab := &annotTab{t: t, ctx: ctx, who: a, order: annotate.Order(k.study.Seed, a.SeedPosition, k.items),
		ids: make(chan network.RequestID, 4096), done: make(chan struct{})}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventLoadingFinished); ok {
			tab.ids <- e.RequestID
		}
	}); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(tab.done)
		for id := range tab.ids {
			res, err := chromedp.Call(ctx, network.GetResponseBody, network.GetResponseBodyParams{RequestID: id})
			if err != nil {
				continue
			}
			tab.mu.Lock()
			tab.bodies = append(tab.bodies, string(res.Body))
			tab.mu.Unlock()
		}
	}()
	t.Cleanup(cancel)
	go func() {
		for msg, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			t.Logf("annotator %d console: %v", a.SeedPosition, msg)
		}
	}()
	return tab
}

// payloads stops recording and returns every body the tab received.
func (tab *annotTab) payloads() []string {
	time.Sleep(300 * time.Millisecond) // let the last LoadingFinished events arrive
	close(tab.ids)
	<-tab.done
	tab.mu.Lock()
	defer tab.mu.Unlock()
	return append([]string(nil), tab.bodies...)
}

func (tab *annotTab) do(actions ...chromedp.Action[chromedp.Void]) {
	tab.t.Helper()
	ctx, cancel := context.WithTimeout(tab.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		msg, _ := chromedp.Run(tab.ctx, chromedp.Evaluate[string](`(document.getElementById("error")||{}).textContent || ""`))
		annotShot(tab, "failure")
		tab.t.Fatalf("annotator %d: %v (page error: %q)", tab.who.SeedPosition, err, msg)
	}
}

func (tab *annotTab) eval(expr string) string {
	tab.t.Helper()
	v, err := chromedp.Run(tab.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		tab.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func annotShot(tab *annotTab, name string) {
	if png, err := chromedp.Run(tab.ctx, chromedp.FullScreenshot(90)); err == nil {
		dir := filepath.Join("..", "..", "audit_data", "artifacts", "TestAnnotatorsRateWithTheKeyboard")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("annotator%d-%s.png", tab.who.SeedPosition, name)), png, 0o644)
	}
}

func pollJS(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))
}

// open loads the annotator's link and waits for the first item.
func (tab *annotTab) open(base string) {
	tab.do(chromedp.Navigate(base+"/a/"+tab.who.Token), pollJS(`document.body.dataset.ready === "1"`))
}

// showing is the item on screen.
func (tab *annotTab) showing() string { return tab.eval(`document.body.dataset.item || ""`) }

// annotRating is what an annotator enters for one item.
type annotRating struct {
	fidelity, naturalness int
	leakage               bool
	note                  string
}

// rate enters a rating with the keyboard only and saves it with Enter; it waits for the next
// item (or the end) to appear.
func (tab *annotTab) rate(r annotRating) {
	tab.t.Helper()
	before := tab.showing()
	leak := "n"
	if r.leakage {
		leak = "y"
	}
	steps := []chromedp.Action[chromedp.Void]{
		chromedp.KeyEvent(strconv.Itoa(r.fidelity)),
		chromedp.KeyEvent(string("qwert"[r.naturalness-1])),
		chromedp.KeyEvent(leak),
	}
	if r.note != "" {
		steps = append(steps, chromedp.KeyEvent("m"), chromedp.KeyEvent(r.note), chromedp.KeyEvent(kb.Escape))
	}
	steps = append(steps, chromedp.KeyEvent(kb.Enter),
		pollJS(fmt.Sprintf(`document.body.dataset.item !== %q || !document.getElementById("done").hidden`, before)))
	tab.do(steps...)
}

// shownRating reads the rating controls of the item on screen.
func (tab *annotTab) shownRating() annotRating {
	tab.t.Helper()
	js := `(() => { const v = (n) => { for (let i = 1; i <= 5; i++) if (document.getElementById(n + "-" + i).checked) return i; return 0; };
		return JSON.stringify({f: v("fidelity"), n: v("naturalness"), y: document.getElementById("leak-yes").checked, note: document.getElementById("note").value}); })()`
	var got struct {
		F, N int
		Y    bool
		Note string
	}
	json.Unmarshal([]byte(tab.eval(js)), &got)
	return annotRating{got.F, got.N, got.Y, got.Note}
}

func TestAnnotatorsRateWithTheKeyboard(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test")
	}
	k := startAnnotKit(t, 2)
	browser := annotBrowser(t)
	tabs := make([]*annotTab, 3)
	for i, a := range k.annotators {
		tabs[i] = k.openTab(t, browser, a)
	}
	// want[annotator id][item] is the last rating each annotator entered.
	want := map[int64]map[string]annotRating{}
	enter := func(tab *annotTab, r annotRating) {
		item := tab.showing()
		tab.rate(r)
		if want[tab.who.ID] == nil {
			want[tab.who.ID] = map[string]annotRating{}
		}
		want[tab.who.ID][item] = r
	}
	note := func(tab *annotTab, i int) string { return fmt.Sprintf("leak-note-a%d-%d", tab.who.SeedPosition, i) }

	// Annotator 0 rates three items, reloads, and resumes at the fourth.
	a0 := tabs[0]
	a0.open(k.base)
	if got := a0.showing(); got != a0.order[0] {
		t.Fatalf("annotator 0 starts at %s, want the first of their order %s", got, a0.order[0])
	}
	if a0.eval(`String(document.body.innerText.includes("Keyboard shortcuts") && document.body.innerText.includes("naturalness 1–5"))`) != "true" {
		t.Fatal("the page does not document its keyboard shortcuts")
	}
	a0.do(pollJS(`document.getElementById("audio").readyState >= 2 && document.getElementById("audio").duration > 0.5`))
	enter(a0, annotRating{4, 2, false, ""})
	enter(a0, annotRating{2, 5, true, note(a0, 1)})
	enter(a0, annotRating{5, 3, false, ""})
	a0.do(chromedp.Reload(), pollJS(`document.body.dataset.ready === "1"`))
	if got := a0.showing(); got != a0.order[3] {
		t.Fatalf("after a reload annotator 0 is at %s, want the first unrated item %s", got, a0.order[3])
	}
	if got := a0.eval(`document.getElementById("progress").textContent`); got != fmt.Sprintf("3 of %d rated", len(k.items)) {
		t.Fatalf("progress after reload: %q", got)
	}
	annotShot(a0, "resumed")
	enter(a0, annotRating{1, 1, true, note(a0, 4)})
	// Back to the second item with ←: it shows the stored rating; edit it.
	a0.do(chromedp.KeyEvent(kb.ArrowLeft), pollJS(fmt.Sprintf(`document.body.dataset.item === %q`, a0.order[3])),
		chromedp.KeyEvent(kb.ArrowLeft), pollJS(fmt.Sprintf(`document.body.dataset.item === %q`, a0.order[2])),
		chromedp.KeyEvent(kb.ArrowLeft), pollJS(fmt.Sprintf(`document.body.dataset.item === %q`, a0.order[1])))
	if got := a0.shownRating(); got != want[a0.who.ID][a0.order[1]] {
		t.Fatalf("earlier rating shown as %+v, want %+v", got, want[a0.who.ID][a0.order[1]])
	}
	// Append to the stored note, change fidelity, naturalness and leakage, save with Enter.
	a0.do(chromedp.KeyEvent("m"), chromedp.KeyEvent(" (edited)"), chromedp.KeyEvent(kb.Escape))
	edited := a0.order[1]
	a0.rate(annotRating{3, 4, false, ""})
	want[a0.who.ID][edited] = annotRating{3, 4, false, note(a0, 1) + " (edited)"}
	if got := a0.showing(); got != a0.order[2] {
		t.Fatalf("after the edit annotator 0 is at %s, want %s", got, a0.order[2])
	}

	// Annotators 1 and 2 rate two items each; annotator 2 turns auto-play on with A.
	a1, a2 := tabs[1], tabs[2]
	a1.open(k.base)
	enter(a1, annotRating{3, 3, false, note(a1, 1)})
	enter(a1, annotRating{4, 5, true, ""})
	a2.open(k.base)
	if a1.order[0] == a2.order[0] && a1.order[1] == a2.order[1] {
		t.Log("annotators 1 and 2 happen to start with the same items")
	}
	a2.do(chromedp.KeyEvent("a"))
	enter(a2, annotRating{5, 5, false, ""})
	a2.do(pollJS(`!document.getElementById("audio").paused && document.getElementById("audio").currentTime > 0`))
	enter(a2, annotRating{2, 1, true, note(a2, 2)})
	annotShot(a2, "autoplay")

	// The export matches what was entered.
	rows, err := k.db.RatingsLong(context.Background(), "rate")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := annotate.WriteRatingsCSV(&buf, rows); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(recs[0][:7], ",") != "item,task,plan,annotator,fidelity,naturalness,leakage" {
		t.Fatalf("ratings.csv header %v", recs[0])
	}
	n := 0
	for _, m := range want {
		n += len(m)
	}
	if len(recs)-1 != n {
		t.Fatalf("ratings.csv has %d rows, %d ratings were entered", len(recs)-1, n)
	}
	for _, rec := range recs[1:] {
		id, _ := strconv.ParseInt(rec[3], 10, 64)
		w, ok := want[id][rec[0]]
		if !ok {
			t.Fatalf("ratings.csv row nobody entered: %v", rec)
		}
		leak := map[bool]string{true: "yes", false: "no"}[w.leakage]
		if rec[4] != strconv.Itoa(w.fidelity) || rec[5] != strconv.Itoa(w.naturalness) || rec[6] != leak || rec[7] != w.note {
			t.Errorf("ratings.csv row %v, annotator entered %+v", rec, w)
		}
		it, _ := k.db.RatingItem(context.Background(), rec[0])
		if rec[1] != it.TaskID || rec[2] != it.PlanID {
			t.Errorf("ratings.csv row %v: item is %s/%s", rec, it.TaskID, it.PlanID)
		}
	}

	// Leakage: no payload any annotator received holds a hidden value of the tasks, a grader key,
	// or another annotator's notes or ratings.
	var hidden []annotate.Hidden
	for _, tk := range k.tasks {
		hidden = append(hidden, annotate.HiddenValues(tk)...)
	}
	if len(hidden) < 3 || len(annotate.Scan(`{"x":"`+hidden[0].Text+`"}`, hidden)) == 0 {
		t.Fatalf("the leakage scan has nothing to find (%d hidden values)", len(hidden))
	}
	var agentIDs []string
	for _, tk := range k.tasks {
		agentIDs = append(agentIDs, annotate.AgentIdentifiers(tk)...)
	}
	for i, tab := range tabs {
		bodies := tab.payloads()
		var sawState, sawItem bool
		for _, body := range bodies {
			for _, leak := range append(annotate.Scan(body, hidden), annotate.ScanIdentifiers(body, agentIDs)...) {
				t.Errorf("annotator %d received %s in %.160s", i, leak, body)
			}
			for j, other := range tabs {
				if j != i && strings.Contains(body, fmt.Sprintf("leak-note-a%d-", other.who.SeedPosition)) {
					t.Errorf("annotator %d received annotator %d's note: %.160s", i, j, body)
				}
			}
			var doc struct {
				Ratings map[string]json.RawMessage `json:"ratings"`
				ID      string                     `json:"id"`
				Rating  *json.RawMessage           `json:"rating"`
				Order   []string                   `json:"order"`
			}
			if json.Unmarshal([]byte(body), &doc) != nil {
				continue
			}
			if doc.Order != nil {
				sawState = true
				for item := range doc.Ratings {
					if _, mine := want[tab.who.ID][item]; !mine {
						t.Errorf("annotator %d's state lists a rating of %s they never entered", i, item)
					}
				}
			}
			if doc.ID != "" {
				sawItem = true
				if _, mine := want[tab.who.ID][doc.ID]; doc.Rating != nil && string(*doc.Rating) != "null" && !mine {
					t.Errorf("annotator %d received a rating of %s they never entered: %s", i, doc.ID, *doc.Rating)
				}
			}
		}
		if !sawState || !sawItem {
			t.Fatalf("annotator %d: the capture missed the state or item payloads (%d bodies)", i, len(bodies))
		}
		t.Logf("annotator %d: %d payloads scanned against %d hidden values", i, len(bodies), len(hidden))
	}
}
