package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/voicebench/humanaudit/internal/browsertest"
)

// At 1280×900 the annotator sees the caller's plan and state beside the rating panel, never under
// it, at the top of the page and after scrolling; the header names the annotation task, not the
// participants' study; the intro is open on a first visit and stays folded once folded; focus moves
// to each new item's heading; the page passes axe-core (no serious or critical violation) and every
// control is reachable by keyboard.
func TestAnnotatorLayoutAndAccessibility(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test")
	}
	k := startAnnotKit(t, 2)
	tab := k.openTab(t, annotBrowser(t), k.annotators[0])
	defer tab.payloads() // stops the tab's body recorder
	tab.do(chromedp.EmulateViewport(1280, 900))
	tab.open(k.base)
	page := browsertest.Attach(t, tab.ctx)
	shots := browsertest.ArtifactsDir(t)

	if h := tab.eval(`document.getElementById("study-title").textContent`); h != annotTaskTitle {
		t.Errorf("header %q, want the annotation task's title %q", h, annotTaskTitle)
	}
	if tab.eval(`String(document.getElementById("intro").open)`) != "true" {
		t.Error("the intro is folded on a first visit")
	}
	if got := page.Focused(); !strings.HasPrefix(got, `h2#item-heading "Item 1 of`) {
		t.Errorf("focus on the first item: %s, want its heading", got)
	}
	page.Shot(shots, "1-first-visit-1280x900")

	// The plan and state beside the rating panel: no overlap, in the viewport, before and after a scroll.
	const overlap = `(() => { const r = (id) => document.getElementById(id).getBoundingClientRect();
	  const rate = r("rate"), out = [];
	  for (const id of ["plan", "state"]) { const b = r(id);
	    if (b.left < rate.right && rate.left < b.right && b.top < rate.bottom && rate.top < b.bottom) out.push(id + " under the rating panel");
	    if (b.top >= innerHeight || b.bottom <= 0) out.push(id + " out of view"); }
	  if (rate.top < 0 || rate.bottom > innerHeight) out.push("rating panel not fully in view");
	  if (document.documentElement.scrollWidth > innerWidth) out.push("horizontal overflow");
	  return out.join("; "); })()`
	if got := tab.eval(overlap); got != "" {
		t.Errorf("at 1280×900: %s", got)
	}
	tab.do(chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 200)`))
	if got := tab.eval(overlap); got != "" {
		t.Errorf("at 1280×900 scrolled by 200 px: %s", got)
	}
	tab.do(chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))

	page.AssertAccessible("annotator")
	if missed := page.KeyboardUnreachable(60); len(missed) > 0 {
		t.Errorf("annotator: not reachable by keyboard: %q", missed)
	}

	// Folding the intro sticks; rating moves focus to the next item's heading.
	tab.do(chromedp.Click("#intro summary"))
	tab.rate(annotRating{4, 3, false, ""})
	if got := page.Focused(); !strings.HasPrefix(got, `h2#item-heading "Item 2 of`) {
		t.Errorf("focus after saving: %s, want the next item's heading", got)
	}
	tab.do(chromedp.Reload(), pollJS(`document.body.dataset.ready === "1"`))
	if tab.eval(`String(document.getElementById("intro").open)`) != "false" {
		t.Error("the folded intro opened again after a reload")
	}
	if got := tab.eval(overlap); got != "" {
		t.Errorf("with the intro folded: %s", got)
	}
	page.Shot(shots, "2-intro-folded-1280x900")
	page.AssertAccessible("annotator-folded")
}
