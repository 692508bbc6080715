package browsertest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The harness must see what it claims to check: a page with an unnamed button, an image without alt
// text and a click-only div fails; the same page made accessible passes.
func TestAxeAndKeyboardFindTheirDefects(t *testing.T) {
	pages := map[string]string{
		"/bad": `<!doctype html><html lang="en"><head><title>bad</title></head><body><main><h1>Bad</h1>
<button></button><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw="><div role="button" id="clicky" onclick="1">Press</div>
</main></body></html>`,
		"/good": `<!doctype html><html lang="en"><head><title>good</title></head><body><main><h1 id="h" tabindex="-1">Good</h1>
<button>Save</button><img alt="logo" src="data:image/gif;base64,R0lGODlhAQABAAAAACw="><div role="button" tabindex="0" id="clicky">Press</div>
</main><script>document.getElementById("h").focus()</script></body></html>`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(pages[r.URL.Path]))
	}))
	defer srv.Close()
	b := Start(t, "")

	b.Do(20*time.Second, chromedp.Navigate(srv.URL+"/bad"), chromedp.WaitVisible("h1"))
	ids := map[string]string{}
	for _, v := range b.Axe() {
		ids[v.ID] = v.Impact
	}
	if ids["button-name"] != "critical" || ids["image-alt"] != "critical" {
		t.Errorf("axe on the bad page found %v, want button-name and image-alt as critical", ids)
	}
	if missed := b.KeyboardUnreachable(20); len(missed) != 1 || !strings.Contains(missed[0], "#clicky") {
		t.Errorf("unreachable on the bad page: %q, want only div#clicky", missed)
	}

	b.Do(20*time.Second, chromedp.Navigate(srv.URL+"/good"), chromedp.WaitVisible("h1"))
	if got := b.Focused(); got != `h1#h "Good"` {
		t.Errorf("focused %s, want the heading", got)
	}
	b.AssertAccessible("good")
	if missed := b.KeyboardUnreachable(20); len(missed) != 0 {
		t.Errorf("unreachable on the good page: %q", missed)
	}
}
