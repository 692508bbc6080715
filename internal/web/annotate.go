package web

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/voicebench/humanaudit/internal/annotate"
	"github.com/voicebench/humanaudit/internal/audit"
)

// The annotator's rating app: a token link (/a/<token>) opens a page that rates the study's
// frozen caller utterances one by one, in the annotator's own order. Every response is built from
// the blinded rating items and this annotator's own ratings only.

// maxNote bounds an annotator's note (characters).
const maxNote = 2000

func (s *Server) annotatorAuth(c *fiber.Ctx) error {
	return tokenAuth(c, "annotator", s.cfg.Store.AnnotatorByToken)
}

func annotatorOf(c *fiber.Ctx) audit.Annotator { return c.Locals("annotator").(audit.Annotator) }

func (s *Server) annotatorPage(c *fiber.Ctx) error {
	if _, err := s.cfg.Store.AnnotatorByToken(c.UserContext(), c.Params("token")); err != nil {
		return err
	}
	return s.sendPage(c, "annotate.html")
}

// annotatorSet is one annotator's rating set: the study's items in the annotator's order.
type annotatorSet struct {
	title string
	order []string
}

func (s *Server) ratingSet(c *fiber.Ctx, a audit.Annotator) (annotatorSet, error) {
	ctx := c.UserContext()
	st, err := s.cfg.Store.Study(ctx, a.StudyID)
	if err != nil {
		return annotatorSet{}, err
	}
	set := annotate.StudySet(st.Config)
	if len(set.Items) == 0 {
		return annotatorSet{}, &apiError{status: fiber.StatusConflict, msg: "this study has no rating set yet"}
	}
	title := set.Title
	if title == "" {
		title = annotate.DefaultTitle
	}
	return annotatorSet{title: title, order: annotate.Order(st.Seed, a.SeedPosition, set.Items)}, nil
}

// ratingView is a rating as the annotator's page sees it (their own only).
type ratingView struct {
	Fidelity    int    `json:"fidelity"`
	Naturalness int    `json:"naturalness"`
	Leakage     bool   `json:"leakage"`
	Note        string `json:"note"`
}

func viewOf(r audit.Rating) ratingView {
	return ratingView{Fidelity: r.Fidelity, Naturalness: r.Naturalness, Leakage: r.Leakage, Note: r.Note}
}

// annotatorStateView is where the annotator stands: their order, their ratings and the first
// item they have not rated (where a reload resumes).
type annotatorStateView struct {
	Title   string                `json:"title"` // the annotation task's title, not the participants' study title
	Total   int                   `json:"total"`
	Order   []string              `json:"order"`
	Ratings map[string]ratingView `json:"ratings"`
	Resume  int                   `json:"resume"` // 0-based index into Order; Total when all are rated
}

func (s *Server) annotatorState(c *fiber.Ctx) error {
	a := annotatorOf(c)
	set, err := s.ratingSet(c, a)
	if err != nil {
		return err
	}
	mine, err := s.cfg.Store.AnnotatorRatings(c.UserContext(), a.ID)
	if err != nil {
		return err
	}
	out := annotatorStateView{Title: set.title, Total: len(set.order), Order: set.order, Ratings: map[string]ratingView{}}
	for _, r := range mine {
		if slices.Contains(set.order, r.ItemID) {
			out.Ratings[r.ItemID] = viewOf(r)
		}
	}
	out.Resume = len(set.order)
	for i, id := range set.order {
		if _, done := out.Ratings[id]; !done {
			out.Resume = i
			break
		}
	}
	return c.JSON(out)
}

// itemView is one item's page: the blinded payload without the audio's location, the URL that
// serves the audio, and the annotator's own rating of it.
type itemView struct {
	ID         string             `json:"id"`
	Index      int                `json:"index"`
	Total      int                `json:"total"`
	UserState  annotate.UserState `json:"user_state"`
	UserPlan   annotate.UserPlan  `json:"user_plan"`
	Transcript string             `json:"transcript"`
	Audio      string             `json:"audio"`
	Rating     *ratingView        `json:"rating"`
}

// setItem returns the item if it is in the annotator's set, else ErrNotFound: an annotator can
// reach nothing outside their set.
func (s *Server) setItem(c *fiber.Ctx, a audit.Annotator) (audit.RatingItem, annotatorSet, int, error) {
	set, err := s.ratingSet(c, a)
	if err != nil {
		return audit.RatingItem{}, set, 0, err
	}
	id := c.Params("item")
	idx := slices.Index(set.order, id)
	if idx < 0 {
		return audit.RatingItem{}, set, 0, audit.ErrNotFound
	}
	it, err := s.cfg.Store.RatingItem(c.UserContext(), id)
	return it, set, idx, err
}

func (s *Server) annotatorItem(c *fiber.Ctx) error {
	a := annotatorOf(c)
	it, set, idx, err := s.setItem(c, a)
	if err != nil {
		return err
	}
	p, err := annotate.ParsePayload(it.Payload)
	if err != nil {
		return err
	}
	out := itemView{ID: it.ID, Index: idx, Total: len(set.order), UserState: p.UserState, UserPlan: p.UserPlan, Transcript: p.Transcript,
		Audio: "/api/a/" + c.Params("token") + "/items/" + it.ID + "/audio"}
	mine, err := s.cfg.Store.AnnotatorRatings(c.UserContext(), a.ID)
	if err != nil {
		return err
	}
	for _, r := range mine {
		if r.ItemID == it.ID {
			v := viewOf(r)
			out.Rating = &v
		}
	}
	return c.JSON(out)
}

func (s *Server) annotatorAudio(c *fiber.Ctx) error {
	it, _, _, err := s.setItem(c, annotatorOf(c))
	if err != nil {
		return err
	}
	p, err := annotate.ParsePayload(it.Payload)
	if err != nil {
		return err
	}
	path, err := annotate.AudioPath(filepath.Join(s.cfg.DataDir, "bank"), p.Audio)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return audit.ErrNotFound
	}
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "audio/wav")
	return c.Send(b)
}

// ratingInput is a rating as the page sends it; every scale must be given.
type ratingInput struct {
	Fidelity    int    `json:"fidelity"`
	Naturalness int    `json:"naturalness"`
	Leakage     *bool  `json:"leakage"`
	Note        string `json:"note"`
}

func (s *Server) annotatorRate(c *fiber.Ctx) error {
	a := annotatorOf(c)
	it, _, _, err := s.setItem(c, a)
	if err != nil {
		return err
	}
	var in ratingInput
	if err := json.Unmarshal(c.Body(), &in); err != nil {
		return badRequest("rating: want JSON {fidelity, naturalness, leakage, note}")
	}
	switch {
	case in.Fidelity < 1 || in.Fidelity > 5:
		return badRequest("fidelity %d: want 1 to 5", in.Fidelity)
	case in.Naturalness < 1 || in.Naturalness > 5:
		return badRequest("naturalness %d: want 1 to 5", in.Naturalness)
	case in.Leakage == nil:
		return badRequest("leakage: want yes (true) or no (false)")
	case utf8.RuneCountInString(in.Note) > maxNote:
		return badRequest("note: at most %d characters", maxNote)
	}
	r, err := s.cfg.Store.SaveRating(c.UserContext(), audit.Rating{AnnotatorID: a.ID, ItemID: it.ID, Fidelity: in.Fidelity,
		Naturalness: in.Naturalness, Leakage: *in.Leakage, Note: strings.TrimSpace(in.Note)})
	if err != nil {
		return err
	}
	return c.JSON(viewOf(r))
}
