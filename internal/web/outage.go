package web

import (
	"errors"
	"html"
	"log/slog"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/console"
)

// MsgUnavailable is what a participant (or anyone) is told while the database cannot be reached.
const MsgUnavailable = "The study is temporarily unavailable. Your progress is saved: nothing you have done is lost. Please try again in a minute (this page retries by itself)."

// msgLiveElsewhere is the answer for a call another console is running.
const msgLiveElsewhere = "your call is still running in another window or on another server of the study; close this window and continue there, or wait a minute and reload"

// outageError answers the errors of a console that is partly down: the database is unreachable
// (503, a page that reloads itself, or JSON), or the participant's call is live on another
// console (409). It reports false for any other error.
func (s *Server) outageError(c *fiber.Ctx, err error) (bool, error) {
	switch {
	case errors.Is(err, audit.ErrUnavailable):
		s.log.Warn("database unavailable", slog.String("path", c.Path()), slog.Any("err", err))
		c.Set(fiber.HeaderRetryAfter, "10")
		if strings.HasPrefix(c.Path(), "/api/") {
			return true, c.Status(http.StatusServiceUnavailable).JSON(fiber.Map{"error": MsgUnavailable, "unavailable": true})
		}
		c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
		return true, c.Status(http.StatusServiceUnavailable).SendString(`<!doctype html><html lang="en"><head><meta charset="utf-8">` +
			`<meta name="viewport" content="width=device-width,initial-scale=1"><meta http-equiv="refresh" content="10">` +
			`<title>Temporarily unavailable</title><link rel="stylesheet" href="/ui/common.css"></head><body><main><div class="card">` +
			`<h1>Temporarily unavailable</h1><p id="unavailable">` + html.EscapeString(MsgUnavailable) + `</p></div></main></body></html>`)
	case errors.Is(err, console.ErrLiveElsewhere):
		if strings.HasPrefix(c.Path(), "/api/") {
			return true, c.Status(http.StatusConflict).JSON(fiber.Map{"error": msgLiveElsewhere})
		}
		return true, s.page(c, http.StatusConflict, "Your call is running elsewhere", "<p>"+html.EscapeString(msgLiveElsewhere)+"</p>")
	}
	return false, nil
}
