package web

import (
	"errors"
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
		return true, s.page(c, http.StatusServiceUnavailable, pageData{Title: "Temporarily unavailable", Text: MsgUnavailable, Refresh: 10})
	case errors.Is(err, console.ErrLiveElsewhere):
		if strings.HasPrefix(c.Path(), "/api/") {
			return true, c.Status(http.StatusConflict).JSON(fiber.Map{"error": msgLiveElsewhere})
		}
		return true, s.page(c, http.StatusConflict, pageData{Title: "Your call is running elsewhere", Text: msgLiveElsewhere})
	}
	return false, nil
}
