package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/voicebench/humanaudit/internal/study"
)

// planRequest is the experimenter's planning form.
type planRequest struct {
	Tasks   string `json:"tasks"`   // subset name or comma-separated ids
	Anchor  string `json:"anchor"`  // subset name, ids, or empty
	Systems string `json:"systems"` // comma-separated labels
	K       int    `json:"k"`       // sessions per participant
	Seed    int64  `json:"seed"`
}

// planStudy builds a counterbalanced plan from the dashboard: the same planner as audit study
// plan, returning plan.csv and the balance report (or the refusal naming the constraint).
func (s *Server) planStudy(c *fiber.Ctx) error {
	var req planRequest
	if err := json.Unmarshal(c.Body(), &req); err != nil {
		return badRequest("plan: %v", err)
	}
	all := s.cfg.Console.Tasks()
	picked, err := study.SelectTasks(all, req.Tasks, "tasks")
	if err != nil {
		return badRequest("%v", err)
	}
	var anchors []string
	if strings.TrimSpace(req.Anchor) != "" {
		at, err := study.SelectTasks(all, req.Anchor, "anchor")
		if err != nil {
			return badRequest("%v", err)
		}
		for _, t := range at {
			anchors = append(anchors, t.ID)
		}
	}
	var systems []string
	for _, l := range strings.Split(req.Systems, ",") {
		if l = strings.TrimSpace(l); l != "" {
			systems = append(systems, l)
		}
	}
	sr := study.Request{Systems: systems, SessionsPerParticipant: req.K, Seed: req.Seed, Anchors: anchors}
	for _, t := range picked {
		sr.Tasks = append(sr.Tasks, study.Describe(t))
	}
	plan, err := study.Build(sr)
	if err != nil {
		if errors.Is(err, study.ErrInfeasible) || errors.Is(err, study.ErrInvalidRequest) {
			return badRequest("%v", err)
		}
		return err
	}
	var csv, report bytes.Buffer
	if err := study.WriteCSV(&csv, plan.Sessions); err != nil {
		return err
	}
	if err := plan.WriteReport(&report); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"sessions": len(plan.Sessions), "participants": len(plan.Participants), "csv": csv.String(), "report": report.String()})
}
