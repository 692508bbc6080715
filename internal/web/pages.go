package web

import (
	"bytes"
	"html/template"

	"github.com/gofiber/fiber/v2"
)

// pageData is what a server-rendered page shows (errors, notices, sign-in). html/template escapes
// every field by its context, so outside input (a message, a sign-in token) is safe anywhere.
type pageData struct {
	Title string
	// Text and Error are paragraphs of plain text; Error is shown as an error.
	Text, Error string
	// Form names a fragment of pageTemplates shown after the text: "login", "link", "logout",
	// "home" ("" none).
	Form string
	// Token is the sign-in link's token, for the "link" form.
	Token string
	// Refresh reloads the page after so many seconds (0: never).
	Refresh int
}

var pageTemplates = template.Must(template.New("page").Parse(`<!doctype html><html lang="en"><head><meta charset="utf-8">` +
	`<meta name="viewport" content="width=device-width,initial-scale=1">{{if .Refresh}}<meta http-equiv="refresh" content="{{.Refresh}}">{{end}}` +
	`<title>{{.Title}}</title><link rel="stylesheet" href="/ui/common.css"></head><body><main><div class="card"><h1>{{.Title}}</h1>` +
	`{{with .Error}}<p class="error">{{.}}</p>{{end}}{{with .Text}}<p id="page-text">{{.}}</p>{{end}}` +
	`{{if eq .Form "login"}}{{template "login"}}{{else if eq .Form "link"}}{{template "link" .}}{{else if eq .Form "logout"}}{{template "logout"}}{{else if eq .Form "home"}}{{template "home"}}{{end}}` +
	`</div></main></body></html>` +
	`{{define "login"}}<form method="post" action="/x/login"><p><label>Name<br><input name="name" autocomplete="username" required maxlength="200"></label></p>` +
	`<p><label>Password<br><input name="password" type="password" autocomplete="current-password" required maxlength="1000"></label></p><button>Sign in</button></form>{{end}}` +
	`{{define "link"}}<form method="post" action="/x/login/link" id="link-sign-in"><input type="hidden" name="token" value="{{.Token}}">` +
	`<p>This sign-in link works once.</p><button>Continue to the dashboard</button></form><script src="/ui/signin.js"></script>{{end}}` +
	`{{define "logout"}}<form method="post" action="/x/logout"><button>Sign out</button></form>{{end}}` +
	`{{define "home"}}<p>Open the link you were given: participants <code>/p/…</code>, annotators <code>/a/…</code>, experimenters <a href="/x/">/x/</a>.</p>{{end}}`))

// page renders a small self-contained HTML page.
func (s *Server) page(c *fiber.Ctx, status int, p pageData) error {
	var b bytes.Buffer
	if err := pageTemplates.Execute(&b, p); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Status(status).Send(b.Bytes())
}
