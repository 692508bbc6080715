package web

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/voicebench/humanaudit/internal/console"
	"github.com/voicebench/humanaudit/internal/media"
	"github.com/voicebench/humanaudit/internal/rtc"
)

// taps holds each live session's rtc.Tap: the participant's peer feeds it, experimenters listen to
// it. It outlives a reload (the new peer feeds the same tap) and closes when the call ends.
type taps struct {
	mu  sync.Mutex
	cur map[string]*rtc.Tap
}

// tapFor returns the live session's tap, creating it on first use.
func (s *Server) tapFor(l *console.Live) *rtc.Tap {
	s.taps.mu.Lock()
	defer s.taps.mu.Unlock()
	if t, ok := s.taps.cur[l.ID]; ok {
		return t
	}
	t := rtc.NewTap()
	s.taps.cur[l.ID] = t
	go func() {
		<-l.Ended()
		t.Close()
		s.taps.mu.Lock()
		delete(s.taps.cur, l.ID)
		s.taps.mu.Unlock()
	}()
	return t
}

// offerOf reads the SDP offer of a signalling request and bounds the answer's work (ICE gathering)
// to 15 s; the caller runs cancel.
func (s *Server) offerOf(c *fiber.Ctx) (string, context.Context, context.CancelFunc, error) {
	if s.cfg.RTC == nil {
		return "", nil, nil, errors.New("no WebRTC endpoint configured")
	}
	offer, err := sdpBody(c)
	if err != nil {
		return "", nil, nil, err
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), 15*time.Second)
	return offer, ctx, cancel, nil
}

// sdpBody reads an SDP offer sent as application/sdp or as JSON {"sdp": …}.
func sdpBody(c *fiber.Ctx) (string, error) {
	offer := string(c.Body())
	if !strings.Contains(c.Get(fiber.HeaderContentType), "sdp") && strings.HasPrefix(strings.TrimSpace(offer), "{") {
		var body struct {
			SDP string `json:"sdp"`
		}
		if err := json.Unmarshal(c.Body(), &body); err != nil {
			return "", badRequest("offer: send the SDP as application/sdp or {\"sdp\": …}")
		}
		offer = body.SDP
	}
	return offer, nil
}

// listen subscribes an experimenter to a live call: a receive-only WebRTC connection carrying the
// caller's channel and the agent's (rtc.Endpoint.Listen). The page keeps both muted until clicked.
func (s *Server) listen(c *fiber.Ctx) error {
	l, ok := s.cfg.Console.Live(c.Params("sid"))
	if !ok {
		return &apiError{status: fiber.StatusConflict, msg: "session " + c.Params("sid") + " is not live: listen to its recording instead"}
	}
	offer, ctx, cancel, err := s.offerOf(c)
	if err != nil {
		return err
	}
	defer cancel()
	_, answer, err := s.cfg.RTC.Listen(ctx, offer, s.tapFor(l), experimenterOf(c).Name+"@"+l.ID)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "application/sdp")
	return c.Status(fiber.StatusCreated).SendString(answer)
}

// mediaHealth is the live media line of a session's review page, with what its figures mean.
type mediaHealth struct {
	Ticks       int64   `json:"ticks"`
	LateTicks   int64   `json:"late_ticks"`
	MaxLateMS   float64 `json:"max_late_ms"`
	ThresholdMS float64 `json:"threshold_ms"`
	Lost        int64   `json:"packets_lost"`
	Received    int64   `json:"packets_received"`
	JitterMS    float64 `json:"jitter_ms"`
	Connected   bool    `json:"participant_connected"`
	Listeners   int     `json:"listeners"`
	Explanation string  `json:"explanation"`
}

// lateTickConcern is the share of late ticks above which the line warns: a few late ticks are a
// busy machine's scheduling, a steady share means the console cannot keep real time.
const lateTickConcern = 0.01

func (s *Server) mediaHealthOf(l *console.Live) mediaHealth {
	st := l.Session.Stats()
	h := mediaHealth{Ticks: st.Ticks, LateTicks: st.LateTicks, MaxLateMS: float64(st.MaxTickLateness.Microseconds()) / 1000,
		ThresholdMS: float64(media.LateTickThreshold.Microseconds()) / 1000, Lost: st.CallerPacketsLost, Received: st.CallerPacketsReceived,
		JitterMS: float64(st.CallerJitter.Microseconds()) / 1000, Connected: s.participantConnected(l.ID), Listeners: s.tapFor(l).Listeners()}
	h.Explanation = "A tick is the engine's 40 ms step: it sends the agent's next 40 ms to the participant and records both channels. " +
		"A tick is late when it starts more than the threshold after it was due (the console's machine was busy); the audio is not lost, " +
		"but both sides hear it that much later."
	if h.Ticks > 0 && float64(h.LateTicks)/float64(h.Ticks) > lateTickConcern {
		h.Explanation += " More than 1% of ticks are late: the machine is overloaded and response latencies measured in this session are inflated."
	}
	return h
}
