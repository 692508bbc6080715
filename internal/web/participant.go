package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/console"
	"github.com/voicebench/humanaudit/internal/flow"
	"github.com/voicebench/humanaudit/internal/rtc"
	"github.com/voicebench/humanaudit/internal/session"
	"github.com/voicebench/humanaudit/internal/study"
)

// StudyConfig is what a study's config document may set for participants.
type StudyConfig struct {
	Title          string `json:"title,omitempty"`
	Consent        string `json:"consent,omitempty"`
	CompletionCode string `json:"completion_code,omitempty"`
	CompletionURL  string `json:"completion_url,omitempty"` // e.g. Prolific's return link
	// Enrollment "open" accepts participants through one study link, /join/<study>?PROLIFIC_PID=…,
	// as recruiting platforms hand out one URL to everyone.
	Enrollment string `json:"enrollment,omitempty"`
	// Contact is how a participant reaches the research team (shown with the decline button).
	Contact string `json:"contact,omitempty"`
	// MinCallSeconds is the shortest call a participant may hang up and have counted: a shorter
	// one is excluded too_short and offered again (nil: DefaultMinCall; 0: no minimum).
	MinCallSeconds *float64 `json:"min_call_seconds,omitempty"`
	// Practice, when set, is a call every participant makes before the counted ones: never part
	// of the study's records (no assignment, no study), graded only for its feedback screen.
	Practice *PracticeConfig `json:"practice,omitempty"`
}

// PracticeConfig names the practice call's task and system ("" : the system of the
// participant's first counted call).
type PracticeConfig struct {
	Task   string `json:"task"`
	System string `json:"system,omitempty"`
}

// DefaultMinCall is the shortest call that counts when a study sets no min_call_seconds.
const DefaultMinCall = 45 * time.Second

// MinCall is the study's minimum call length.
func (c StudyConfig) MinCall() time.Duration {
	if c.MinCallSeconds == nil {
		return DefaultMinCall
	}
	return time.Duration(*c.MinCallSeconds * float64(time.Second))
}

// completionURL is the study's completion URL carrying the completion code as cc (the convention
// of Prolific's return links) unless it already has one.
func completionURL(raw, code string) string {
	u, err := url.Parse(raw)
	if raw == "" || err != nil || code == "" {
		return raw
	}
	q := u.Query()
	if q.Get("cc") == "" {
		q.Set("cc", code)
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// DefaultConsent is shown when a study sets no consent text.
const DefaultConsent = "You are invited to take part in a research study on voice assistants. You will make a few short phone-style calls to an automated agent and play a caller described on a role card. Your voice and the agent's voice are recorded, together with what happens during each call, and are used only for research; recordings are stored securely and reported only in aggregate. Taking part is voluntary and you may stop at any time by closing this page. By continuing you confirm that you are at least 18 years old and agree to take part."

func studyConfig(st audit.Study) StudyConfig {
	var c StudyConfig
	json.Unmarshal(st.Config, &c)
	if c.Consent == "" {
		c.Consent = DefaultConsent
	}
	if c.Title == "" && st.Name != st.ID {
		c.Title = st.Name
	}
	if c.Title == "" {
		c.Title = "Voice assistant study"
	}
	return c
}

// peers tracks the participant's current peer per live session: a reload replaces it.
type peers struct {
	mu  sync.Mutex
	cur map[string]*rtc.Peer
}

// current returns the session's current peer, or nil.
func (ps *peers) current(sessionID string) *rtc.Peer {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.cur[sessionID]
}

func (s *Server) participantAuth(c *fiber.Ctx) error {
	return tokenAuth(c, "participant", s.cfg.Store.ParticipantByToken)
}

// tokenAuth admits a request to the pages behind a link token (the :token parameter) when lookup
// finds the token's holder, whom it keeps in the request's locals under key.
func tokenAuth[T any](c *fiber.Ctx, key string, lookup func(context.Context, string) (T, error)) error {
	holder, err := lookup(c.UserContext(), c.Params("token"))
	if err != nil {
		return err
	}
	c.Locals(key, holder)
	return c.Next()
}

func participantOf(c *fiber.Ctx) audit.Participant {
	return c.Locals("participant").(audit.Participant)
}

// participantPage serves the participant app after checking the token, and keeps the recruiting
// platform's ids from the link.
func (s *Server) participantPage(c *fiber.Ctx) error {
	ctx := c.UserContext()
	p, err := s.cfg.Store.ParticipantByToken(ctx, c.Params("token"))
	if err != nil {
		return err
	}
	ext, err := recruitingIDs(c)
	if err != nil {
		return err
	}
	if ext != (audit.ExternalIDs{}) && ext != p.External {
		if err := s.cfg.Store.SetExternalIDs(ctx, p.ID, ext); err != nil {
			s.log.Warn("external ids not stored", slog.Int64("participant", p.ID), slog.Any("err", err))
		}
	}
	return s.sendPage(c, "participant.html")
}

// participantStep is where the participant is in the flow.
type participantStep struct {
	Study      string     `json:"study"`
	Consent    string     `json:"consent"`
	Consented  bool       `json:"consented"`
	MicChecked bool       `json:"mic_checked"`
	Call       *callBrief `json:"call,omitempty"`
	Done       bool       `json:"done"`
	Completion string     `json:"completion_code,omitempty"`
	ReturnURL  string     `json:"completion_url,omitempty"`
	Completed  int        `json:"completed"`
	Total      int        `json:"total"`
	Contact    string     `json:"contact,omitempty"`
	// Practice is true while Call is the practice call; HasPractice when the study has one.
	Practice    bool `json:"practice,omitempty"`
	HasPractice bool `json:"has_practice,omitempty"`
}

// callBrief is the next call as the participant sees it: blind agent name and the role card.
type callBrief struct {
	Position int           `json:"position"`
	Agent    string        `json:"agent"`
	Card     flow.RoleCard `json:"card"`
	Live     string        `json:"live_session,omitempty"` // a call already running (reload)
	// Notice explains, after an earlier attempt of this call was cut short by the platform, that
	// it can be started again; Attempt is then the number of the attempt Start begins.
	Notice  string `json:"notice,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	// Practice marks the practice call (Position 0), which never counts.
	Practice bool `json:"practice,omitempty"`
	// MinCallMS is the call length below which hanging up means calling again (0: none).
	MinCallMS int64 `json:"min_call_ms,omitempty"`
}

func (s *Server) participantState(c *fiber.Ctx) error {
	ctx := c.UserContext()
	p := participantOf(c)
	st, err := s.cfg.Store.Study(ctx, p.StudyID)
	if err != nil {
		return err
	}
	sc := studyConfig(st)
	out := participantStep{Study: sc.Title, Consent: sc.Consent, Consented: p.Consent != nil, MicChecked: p.MicCheck != nil, Contact: sc.Contact,
		HasPractice: sc.Practice != nil && sc.Practice.Task != ""}
	var a audit.Assignment
	var claimErr error
	if out.Consented && out.MicChecked {
		// Claiming binds the participant's whole plan slot, so count the calls after it.
		a, claimErr = s.nextAssignment(ctx, p)
		if claimErr != nil && !errors.Is(claimErr, audit.ErrNoAssignment) {
			return claimErr
		}
	}
	as, err := s.cfg.Store.ParticipantAssignments(ctx, p.ID)
	if err != nil {
		return err
	}
	for _, x := range as {
		if x.Status == audit.StatusDone || x.Status == audit.StatusExcluded {
			out.Completed++
		}
	}
	out.Total = max(len(as), study.StudyPlanConfig(st.Config).SessionsPerParticipant)
	if !out.Consented || !out.MicChecked {
		return c.JSON(out)
	}
	if errors.Is(claimErr, audit.ErrNoAssignment) {
		// Done only after at least one call; a participant the plan has no room for is told so.
		out.Done = out.Completed > 0
		if out.Done {
			out.Completion, out.ReturnURL = sc.CompletionCode, completionURL(sc.CompletionURL, sc.CompletionCode)
		}
		return c.JSON(out)
	}
	if out.Total < a.Position {
		out.Total = a.Position
	}
	if pr, ok, err := s.practiceDue(ctx, p, sc, a); err != nil {
		return err
	} else if ok {
		out.Call, out.Practice = s.practiceBrief(ctx, p, pr), true
		return c.JSON(out)
	}
	brief, err := s.brief(ctx, p, a)
	if err != nil {
		return err
	}
	brief.MinCallMS = sc.MinCall().Milliseconds()
	out.Call = brief
	return c.JSON(out)
}

// practiceDue reports whether the participant's practice call comes next (the study has one and
// none of theirs has ended), with its task and system resolved.
func (s *Server) practiceDue(ctx context.Context, p audit.Participant, sc StudyConfig, next audit.Assignment) (PracticeConfig, bool, error) {
	if sc.Practice == nil || sc.Practice.Task == "" {
		return PracticeConfig{}, false, nil
	}
	pr := *sc.Practice
	if pr.System == "" {
		pr.System = next.System
	}
	if l := s.livePractice(p); l != nil {
		return pr, true, nil
	}
	if next.SessionID != "" {
		return pr, false, nil // a counted call is under way: its practice is behind it
	}
	done, err := s.cfg.Store.PracticeSessions(ctx, p.ID)
	if err != nil {
		return pr, false, err
	}
	for _, x := range done {
		if x.Status == audit.SessionEnded {
			return pr, false, nil
		}
	}
	return pr, true, nil
}

// livePractice is the participant's practice call running on this console, or nil.
func (s *Server) livePractice(p audit.Participant) *console.Live {
	for _, l := range s.cfg.Console.LiveSessions() {
		if l.ParticipantID == p.ID && l.Assignment.ID == 0 {
			return l
		}
	}
	return nil
}

// practiceBrief is the practice call as the participant sees it.
func (s *Server) practiceBrief(ctx context.Context, p audit.Participant, pr PracticeConfig) *callBrief {
	b := &callBrief{Practice: true, Agent: "the practice agent"}
	if sys, err := s.cfg.Store.System(ctx, pr.System); err == nil {
		b.Agent = sys.Alias
	}
	if t, ok := s.cfg.Console.Task(pr.Task); ok {
		b.Card = flow.InitialRoleCard(t)
	}
	if l := s.livePractice(p); l != nil {
		b.Live, b.Card = l.ID, l.Session.Card()
	}
	return b
}

func (s *Server) brief(ctx context.Context, p audit.Participant, a audit.Assignment) (*callBrief, error) {
	t, ok := s.cfg.Console.Task(a.Task)
	if !ok {
		return nil, fmt.Errorf("assignment %d names task %q: %w", a.ID, a.Task, console.ErrUnknownTask)
	}
	alias := "the agent"
	if sys, err := s.cfg.Store.System(ctx, a.System); err == nil {
		alias = sys.Alias
	}
	b := &callBrief{Position: a.Position, Agent: alias, Card: flow.InitialRoleCard(t)}
	if a.SessionID != "" {
		if l, ok := s.cfg.Console.Live(a.SessionID); ok && l.ParticipantID == p.ID {
			b.Live = l.ID
			b.Card = l.Session.Card()
		}
		return b, nil
	}
	prev, err := s.cfg.Store.AssignmentSessions(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	if n := len(prev); n > 0 {
		b.Attempt = n + 1
		b.Notice = restartNotice(prev[n-1])
	}
	return b, nil
}

func (s *Server) participantConsent(c *fiber.Ctx) error {
	var body struct {
		Agree bool `json:"agree"`
	}
	if err := c.BodyParser(&body); err != nil || !body.Agree {
		return badRequest(`send {"agree": true} to give consent`)
	}
	p := participantOf(c)
	st, err := s.cfg.Store.Study(c.UserContext(), p.StudyID)
	if err != nil {
		return err
	}
	con, err := s.cfg.Store.RecordConsent(c.UserContext(), p.ID, studyConfig(st).Consent)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"consented_at": con.At})
}

func (s *Server) participantMicCheck(c *fiber.Ctx) error {
	var mc audit.MicCheck
	if err := json.Unmarshal(c.Body(), &mc); err != nil {
		return badRequest("mic check: %v", err)
	}
	if mc.Level < 0 || mc.Level > 1 {
		return badRequest("mic check: level must be between 0 and 1")
	}
	mc.At = s.cfg.Now()
	if err := s.cfg.Store.RecordMicCheck(c.UserContext(), participantOf(c).ID, mc); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"ok": true})
}

// participantStartCall starts (or, after a reload, rejoins) the participant's current call.
func (s *Server) participantStartCall(c *fiber.Ctx) error {
	ctx := c.UserContext()
	p := participantOf(c)
	if p.Consent == nil || p.MicCheck == nil {
		return badRequest("consent and the microphone check come first")
	}
	a, err := s.nextAssignment(ctx, p)
	if err != nil {
		return err
	}
	st, err := s.cfg.Store.Study(ctx, p.StudyID)
	if err != nil {
		return err
	}
	sc := studyConfig(st)
	pr, practice, err := s.practiceDue(ctx, p, sc, a)
	if err != nil {
		return err
	}
	if practice {
		if l := s.livePractice(p); l != nil {
			return c.JSON(fiber.Map{"session": l.ID, "agent": l.Alias, "card": l.Session.Card(), "rejoined": true, "practice": true})
		}
		a = audit.Assignment{Task: pr.Task, System: pr.System} // outside the plan: no assignment, no study
	} else if a.SessionID != "" {
		if l, ok := s.cfg.Console.Live(a.SessionID); ok && l.ParticipantID == p.ID {
			return c.JSON(fiber.Map{"session": l.ID, "agent": l.Alias, "card": l.Session.Card(), "rejoined": true})
		}
	}
	meta := map[string]string{"participant": p.External.ProlificPID, "assignment_position": strconv.Itoa(a.Position),
		"user_agent": truncate(c.Get(fiber.HeaderUserAgent), 200)}
	if practice {
		meta["practice"] = "true"
	}
	l, err := s.cfg.Console.StartHuman(ctx, p, a, meta)
	if err != nil {
		return err
	}
	if !practice {
		l.SetMinimumCall(sc.MinCall())
	}
	go s.watchParticipant(l)
	return c.JSON(fiber.Map{"session": l.ID, "agent": l.Alias, "card": l.Session.Card(), "practice": practice})
}

// participantPractice is the feedback of an ended practice call: how many of the task's items the
// agent recorded correctly, counts only (no values).
func (s *Server) participantPractice(c *fiber.Ctx) error {
	ctx := c.UserContext()
	p := participantOf(c)
	sess, err := s.cfg.Store.ParticipantSession(ctx, p.ID, c.Params("sid"))
	if err != nil {
		return err
	}
	if sess.AssignmentID != 0 || sess.StudyID != "" {
		return audit.ErrNotFound // only practice calls get feedback
	}
	if sess.Status != audit.SessionEnded {
		return &apiError{status: fiber.StatusConflict, msg: "the practice call is still running"}
	}
	scores, err := s.cfg.Store.Scores(ctx, sess.ID)
	if err != nil {
		return err
	}
	out := fiber.Map{"graded": false}
	if len(scores) > 0 {
		var g struct {
			AFA struct {
				Correct int `json:"correct"`
				Total   int `json:"total"`
			} `json:"afa"`
		}
		if json.Unmarshal(scores[0].Grade, &g) == nil {
			out = fiber.Map{"graded": true, "recorded": g.AFA.Correct, "items": g.AFA.Total}
		}
	}
	return c.JSON(out)
}

// liveFor returns the participant's own live session, or 404 for anyone else's.
func (s *Server) liveFor(c *fiber.Ctx) (*console.Live, error) {
	l, ok := s.cfg.Console.Live(c.Params("sid"))
	if !ok || l.ParticipantID != participantOf(c).ID {
		if _, err := s.cfg.Store.ParticipantSession(c.UserContext(), participantOf(c).ID, c.Params("sid")); err == nil {
			return nil, &apiError{status: fiber.StatusGone, msg: "this call has ended"}
		}
		return nil, audit.ErrNotFound
	}
	return l, nil
}

func (s *Server) participantCall(c *fiber.Ctx) error {
	l, err := s.liveFor(c)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"session": l.ID, "agent": l.Alias, "card": l.Session.Card()})
}

// participantOffer is the WHIP-style signalling: one SDP offer in, the complete answer out. A
// reload sends a new offer for the same session: the new peer replaces the old one on the same
// media clock.
func (s *Server) participantOffer(c *fiber.Ctx) error {
	l, err := s.liveFor(c)
	if err != nil {
		return err
	}
	offer, ctx, cancel, err := s.offerOf(c)
	if err != nil {
		return err
	}
	defer cancel()
	peer, answer, err := s.cfg.RTC.Answer(ctx, offer, rtc.PeerOptions{Name: l.ID, Tap: s.tapFor(l), OnMessage: func(m rtc.Message) { s.onParticipantMessage(l, m) }})
	if err != nil {
		return err
	}
	if err := peer.Attach(l.Session); err != nil {
		peer.Close()
		return err
	}
	s.peers.mu.Lock()
	old := s.peers.cur[l.ID]
	s.peers.cur[l.ID] = peer
	s.peers.mu.Unlock()
	if old != nil {
		old.Close()
	}
	l.SetSender(peer.Send)
	go func() {
		select {
		case <-peer.Done():
		case <-l.Ended():
			peer.Send(console.Message{Type: "ended", Ended: true, Notice: console.EndNotice(l.Outcome().Reason)})
			time.Sleep(500 * time.Millisecond)
			peer.Close()
		}
		s.peers.mu.Lock()
		if s.peers.cur[l.ID] == peer {
			delete(s.peers.cur, l.ID)
			l.SetSender(nil)
		}
		s.peers.mu.Unlock()
	}()
	c.Set(fiber.HeaderContentType, "application/sdp")
	c.Set("Location", c.Path())
	return c.Status(fiber.StatusCreated).SendString(answer)
}

// ParticipantGrace is how long a live call waits for its participant's browser to connect (or
// reconnect after a reload or a network drop) before it ends: an abandoned tab must not keep a
// billed agent session open.
var ParticipantGrace = 60 * time.Second

// watchParticipant ends a live call whose participant has had no connected peer for longer than
// ParticipantGrace; the call is excluded and its cell returns to the pool.
func (s *Server) watchParticipant(l *console.Live) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastSeen := time.Now()
	for {
		select {
		case <-l.Ended():
			return
		case <-tick.C:
		}
		peer := s.peers.current(l.ID)
		if peer != nil && peerUp(peer) {
			lastSeen = time.Now()
			continue
		}
		if time.Since(lastSeen) > ParticipantGrace {
			s.log.Warn("participant gone: ending the call", slog.String("session", l.ID), slog.Duration("grace", ParticipantGrace))
			l.Session.Stop(session.EndCallerDisconnected, session.ExclusionOther)
			return
		}
	}
}

// peerUp reports whether a peer's connection is established and not finished.
func peerUp(p *rtc.Peer) bool {
	select {
	case <-p.Done():
		return false
	default:
	}
	select {
	case <-p.Connected():
		return true
	default:
		return false
	}
}

// onParticipantMessage handles the browser's DataChannel messages.
func (s *Server) onParticipantMessage(l *console.Live, m rtc.Message) {
	switch m.Type {
	case "cue.shown":
		var body struct {
			CueID string `json:"cue_id"`
		}
		if json.Unmarshal(m.Raw, &body) == nil && body.CueID != "" {
			l.Session.CueShown(body.CueID)
		}
	case "hangup":
		l.HangUp()
	}
}

func (s *Server) participantHangUp(c *fiber.Ctx) error {
	l, err := s.liveFor(c)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.status == fiber.StatusGone {
			return c.JSON(fiber.Map{"ended": true})
		}
		return err
	}
	l.HangUp()
	// Answer once the call is closed in the store (the console's closing is bounded), so the
	// page's next state already has the assignment moved on.
	<-l.Ended()
	o := l.Outcome()
	return c.JSON(fiber.Map{"ended": true, "exclusion": o.Exclusion})
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
