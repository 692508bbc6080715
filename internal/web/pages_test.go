package web

import (
	"bytes"
	"strings"
	"testing"
)

// Outside input on a server-rendered page (a sign-in token from the URL, a message) is escaped by
// html/template in whatever context it lands: text, attribute value, title.
func TestPagesEscapeOutsideInput(t *testing.T) {
	hostile := `"><script>alert(1)</script>`
	for _, p := range []pageData{
		{Title: hostile, Text: hostile},
		{Title: "Experimenter sign-in", Form: "link", Token: hostile},
		{Title: "Experimenter sign-in", Error: hostile, Form: "login"},
	} {
		var b bytes.Buffer
		if err := pageTemplates.Execute(&b, p); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if strings.Contains(out, "<script>alert") || strings.Contains(out, `value=""`) {
			t.Errorf("page %+v carries the input unescaped:\n%s", p, out)
		}
		if !strings.Contains(out, "&lt;script&gt;alert(1)&lt;/script&gt;") && !strings.Contains(out, "&#34;&gt;&lt;script&gt;") {
			t.Errorf("page %+v does not show the input escaped:\n%s", p, out)
		}
	}
}
