package web

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/voicebench/humanaudit/internal/audit"
)

// EnrollmentLimits bound a study's open link, /join/<study>?PROLIFIC_PID=…, so that made-up
// recruiting ids cannot drain the plan: each client address may enroll PerAddress times per
// Window; each enrollment takes a plan slot that returns to the pool if consent does not follow
// within ConsentTimeout; at most MaxPending enrollments of a study wait for consent at once.
type EnrollmentLimits struct {
	PerAddress     int           // default 5
	Window         time.Duration // default 10 min
	ConsentTimeout time.Duration // default 30 min
	MaxPending     int           // default 20
}

func (l EnrollmentLimits) withDefaults() EnrollmentLimits {
	if l.PerAddress <= 0 {
		l.PerAddress = 5
	}
	if l.Window <= 0 {
		l.Window = 10 * time.Minute
	}
	if l.ConsentTimeout <= 0 {
		l.ConsentTimeout = 30 * time.Minute
	}
	if l.MaxPending <= 0 {
		l.MaxPending = 20
	}
	return l
}

func newJoinLimiter(l EnrollmentLimits) *attemptLimiter {
	l = l.withDefaults()
	return newAttemptLimiter(l.PerAddress, l.Window, 0)
}

// recruitingID is what a recruiting platform's id may look like (Prolific's are 24 hex digits).
var recruitingID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// recruitingIDs reads and checks the recruiting platform's ids of a link's query.
func recruitingIDs(c *fiber.Ctx) (audit.ExternalIDs, error) {
	ext := audit.ExternalIDs{ProlificPID: c.Query("PROLIFIC_PID"), StudyID: c.Query("STUDY_ID"), SessionID: c.Query("SESSION_ID")}
	for name, v := range map[string]string{"PROLIFIC_PID": ext.ProlificPID, "STUDY_ID": ext.StudyID, "SESSION_ID": ext.SessionID} {
		if v != "" && !recruitingID.MatchString(v) {
			return ext, &apiError{status: fiber.StatusBadRequest,
				msg: fmt.Sprintf("%s in the link is not a recruiting platform id (letters, digits, - and _, at most 64): open the study from your recruiting platform", name)}
		}
	}
	return ext, nil
}

// join is a study's single recruiting link: it enrolls a recruiting platform's participant (by
// PROLIFIC_PID) and sends them on to their own token link. Only studies with open enrollment have
// one; for any other id it is indistinguishable from an unknown study.
func (s *Server) join(c *fiber.Ctx) error {
	ctx := c.UserContext()
	st, err := s.cfg.Store.Study(ctx, c.Params("study"))
	if err != nil || studyConfig(st).Enrollment != "open" {
		return audit.ErrNotFound
	}
	ext, err := recruitingIDs(c)
	if err != nil {
		return err
	}
	if ext.ProlificPID == "" {
		return s.page(c, fiber.StatusBadRequest, pageData{Title: "This link is missing your participant id", Text: "Open the study from your recruiting platform: the link must carry your PROLIFIC_PID."})
	}
	if _, ok, retry := s.joins.reserve(s.cfg.Now(), "join:"+s.clientIP(c)); !ok {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(max(int(retry/time.Second), 1)))
		s.log.Warn("enrollment refused: too many from one address", slog.String("study", st.ID), slog.String("client", s.clientIP(c)))
		return s.page(c, fiber.StatusTooManyRequests, pageData{Title: "Too many sign-ups from this network", Text: "Too many people joined this study from your network in the last minutes. Please try again later."})
	}
	lim := s.cfg.Security.Enrollment.withDefaults()
	en, err := s.cfg.Store.Enroll(ctx, st.ID, ext, audit.EnrollLimits{ConsentTimeout: lim.ConsentTimeout, MaxPending: lim.MaxPending})
	switch {
	case errors.Is(err, audit.ErrEnrollmentFull):
		s.log.Warn("enrollment refused: too many waiting for consent", slog.String("study", st.ID), slog.Int("max_pending", lim.MaxPending))
		c.Set(fiber.HeaderRetryAfter, "300")
		return s.page(c, fiber.StatusServiceUnavailable, pageData{Title: "Please try again in a few minutes", Text: "Many people are joining this study right now. Please try again in a few minutes."})
	case errors.Is(err, audit.ErrNoAssignment):
		return s.page(c, fiber.StatusConflict, pageData{Title: "This study is full", Text: "Every place in this study is taken. Please return the study on your recruiting platform."})
	case err != nil:
		return err
	}
	q := url.Values{"PROLIFIC_PID": {ext.ProlificPID}}
	for k, v := range map[string]string{"STUDY_ID": ext.StudyID, "SESSION_ID": ext.SessionID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return c.Redirect("/p/"+en.Participant.Token+"?"+q.Encode(), fiber.StatusSeeOther)
}
