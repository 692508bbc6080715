package web

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/session"
	"github.com/voicebench/humanaudit/internal/study"
)

// nextAssignment is the participant's current assignment (study.NextAssignment). When it points
// at a session no console is running any more (a crash, or a closing still waiting for the
// database), that session is closed first through the console's reconciliation, so the
// participant gets the same assignment back as a new attempt instead of a conflict.
func (s *Server) nextAssignment(ctx context.Context, p audit.Participant) (audit.Assignment, error) {
	a, err := study.NextAssignment(ctx, s.cfg.Store, p.ID)
	if err != nil || a.SessionID == "" {
		return a, err
	}
	if _, ok := s.cfg.Console.Live(a.SessionID); ok {
		return a, nil
	}
	sess, err := s.cfg.Store.Session(ctx, a.SessionID)
	if err != nil {
		return a, err
	}
	if sess.Status == audit.SessionEnded {
		return a, nil
	}
	if err := s.cfg.Console.Settle(ctx, a.SessionID); err != nil {
		return a, err
	}
	return study.NextAssignment(ctx, s.cfg.Store, p.ID)
}

// restartNotice tells a participant, in plain words, why the call they are about to start again
// was cut short ("" when the earlier attempt ended otherwise).
func restartNotice(reason string) string {
	switch {
	case reason == session.EndConsoleShutdown:
		return "Your call was ended on the study's side when its server was stopped. Your progress is saved. You can start it again."
	case session.Interrupted(reason):
		return "Your call was interrupted by a technical problem. You can start it again."
	}
	return ""
}

// excludeLive ends and excludes a call that is running on this console, answering as
// excludeSession does; it reports false when the call is not live here.
func (s *Server) excludeLive(c *fiber.Ctx, ex audit.Exclusion) (bool, error) {
	ctx, cancel := context.WithTimeout(c.UserContext(), 60*time.Second)
	defer cancel()
	live, err := s.cfg.Console.ExcludeLive(ctx, ex)
	if !live || err != nil {
		return live, err
	}
	sess, err := s.cfg.Store.Session(ctx, ex.SessionID)
	if err != nil {
		return true, err
	}
	var cell int64
	if sess.AssignmentID != 0 {
		if as, err := s.cfg.Store.Assignments(ctx, sess.StudyID); err == nil {
			for _, a := range as {
				if a.Replaces == sess.AssignmentID {
					cell = a.ID
				}
			}
		}
	}
	return true, c.JSON(fiber.Map{"excluded": true, "ended": sess.EndReason, "returned_cell": cell})
}
