package browsertest

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// axeSource is axe-core from the npm registry, vendored (axe/README.md) so the checks run offline.
//
//go:embed axe/axe.min.js
var axeSource string

// Violation is one axe-core rule the page breaks, with the nodes that break it.
type Violation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"` // minor, moderate, serious or critical
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"` // CSS selectors of the offending elements, with their HTML
}

func (v Violation) String() string {
	return fmt.Sprintf("%s (%s): %s\n    %s", v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "\n    "))
}

// Axe runs axe-core's WCAG 2.x A/AA rules over the page as it is now and returns every violation.
func (b *Browser) Axe() []Violation {
	b.t.Helper()
	b.Do(20*time.Second, chromedp.Evaluate[chromedp.Void](`window.axe ? undefined : (0, eval)(`+jsString(axeSource)+`)`))
	const run = `axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]}, resultTypes: ["violations"]})
	  .then(r => JSON.stringify(r.violations.map(v => ({id: v.id, impact: v.impact || "", help: v.help,
	    nodes: v.nodes.map(n => n.target.join(" ") + "  " + n.html.slice(0, 160))}))))`
	out := Eval[string](b, 60*time.Second, run, chromedp.EvalAwaitPromise)
	var vs []Violation
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		b.t.Fatalf("axe results: %v", err)
	}
	return vs
}

// AssertAccessible fails the test for every serious or critical axe-core violation on the page
// (named page in the message) and logs the minor and moderate ones.
func (b *Browser) AssertAccessible(page string) {
	b.t.Helper()
	var bad []string
	for _, v := range b.Axe() {
		if v.Impact == "serious" || v.Impact == "critical" {
			bad = append(bad, v.String())
		} else {
			b.t.Logf("%s: axe %s", page, v)
		}
	}
	if len(bad) > 0 {
		b.Shot(ArtifactsDir(b.t), "axe-"+page)
		b.t.Errorf("%s: %d serious or critical accessibility violations:\n  %s", page, len(bad), strings.Join(bad, "\n  "))
	}
}

// Focused describes the element that has keyboard focus: tag, id and its text (trimmed to 80
// characters), for example `h2#step-call "Call 1 of 5"`.
func (b *Browser) Focused() string {
	b.t.Helper()
	return Eval[string](b, 5*time.Second, focusedJS)
}

const focusedJS = `(() => { const e = document.activeElement; if (!e || e === document.body) return "body";
  return e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + " " + JSON.stringify((e.innerText || e.value || e.getAttribute("aria-label") || "").trim().slice(0, 80)); })()`

// KeyboardUnreachable tabs through the page (at most max presses, stopping when focus comes back
// round) and returns the visible, enabled controls that Tab never reached, described as Focused
// does. Controls are buttons, links, form fields, summaries and elements with a click role
// (role=button, link, tab, checkbox, radio, slider); an empty result means every one of them can be
// reached from the keyboard.
func (b *Browser) KeyboardUnreachable(max int) []string {
	b.t.Helper()
	b.Do(5*time.Second, chromedp.Evaluate[chromedp.Void](`(() => { window.__tabSeen = new Set();
	  document.addEventListener("focusin", (e) => window.__tabSeen.add(e.target), true);
	  if (document.activeElement && document.activeElement !== document.body) document.activeElement.blur(); })()`))
	// Stop when focus comes back to the first element after leaving it (an element with inner
	// controls, such as an audio player, keeps focus for several presses).
	first, left := "", false
	for i := 0; i < max; i++ {
		b.Do(5*time.Second, chromedp.KeyEvent(kb.Tab))
		cur := b.Focused()
		switch {
		case i == 0:
			first = cur
		case cur != first:
			left = true
		case left:
			i = max
		}
	}
	return Eval[[]string](b, 5*time.Second, `(() => {
	  const sel = 'button, a[href], input:not([type=hidden]), select, textarea, summary, audio[controls], video[controls], ' +
	    '[role=button], [role=link], [role=tab], [role=checkbox], [role=radio], [role=slider], [tabindex]:not([tabindex="-1"])';
	  const out = [];
	  for (const e of document.querySelectorAll(sel)) {
	    if (e.disabled || e.closest("[inert]") || e.closest("details:not([open]) > :not(summary)")) continue;
	    const r = e.getBoundingClientRect(), st = getComputedStyle(e);
	    if (r.width === 0 || r.height === 0 || st.visibility === "hidden" || st.display === "none") continue;
	    if (e.type === "radio" && e.name && [...window.__tabSeen].some(s => s.type === "radio" && s.name === e.name)) continue;
	    if (!window.__tabSeen.has(e) && ![...window.__tabSeen].some(s => e.contains(s))) {
	      out.push(e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + " " + JSON.stringify((e.innerText || e.value || e.getAttribute("aria-label") || "").trim().slice(0, 80)));
	    }
	  }
	  return out; })()`)
}

// Eval evaluates a JavaScript expression in the page within timeout and returns its value; on
// failure it fails the test as Do does.
func Eval[T any](b *Browser, timeout time.Duration, expr string, opts ...chromedp.EvaluateOption) T {
	b.t.Helper()
	var v T
	b.Do(timeout, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		var err error
		v, err = chromedp.Evaluate[T](expr, opts...)(ctx, t)
		return chromedp.Void{}, err
	})
	return v
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}
