package web

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/voicebench/humanaudit/internal/audio"
	"github.com/voicebench/humanaudit/internal/audit"
	"github.com/voicebench/humanaudit/internal/session"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// liveView is one running session on the dashboard.
type liveView struct {
	Session     string  `json:"session"`
	Task        string  `json:"task"`
	System      string  `json:"system"`
	Alias       string  `json:"alias"`
	Participant int64   `json:"participant"`
	ElapsedMS   int64   `json:"elapsed_ms"`
	CallerDBFS  float64 `json:"caller_dbfs"`
	AgentDBFS   float64 `json:"agent_dbfs"`
	Lost        int64   `json:"packets_lost"`
	Received    int64   `json:"packets_received"`
	JitterMS    float64 `json:"jitter_ms"`
	RTTMS       float64 `json:"rtt_ms"`
	LateTicks   int64   `json:"late_ticks"`
	Cues        int     `json:"cues"`
	Connected   bool    `json:"participant_connected"`
}

func (s *Server) liveViews() []liveView {
	var out []liveView
	for _, l := range s.cfg.Console.LiveSessions() {
		st := l.Session.Stats()
		out = append(out, liveView{Session: l.ID, Task: l.Task.ID, System: l.Assignment.System, Alias: l.Alias, Participant: l.ParticipantID,
			ElapsedMS: st.MediaTime.Milliseconds(), CallerDBFS: st.CallerLevel, AgentDBFS: st.AgentLevel, Lost: st.CallerPacketsLost,
			Received: st.CallerPacketsReceived, JitterMS: float64(st.CallerJitter.Microseconds()) / 1000,
			RTTMS: float64(st.Link.RTT.Microseconds()) / 1000, LateTicks: st.LateTicks, Cues: len(l.Session.Card().Cues),
			Connected: s.participantConnected(l.ID)})
	}
	return out
}

func (s *Server) participantConnected(sessionID string) bool {
	p := s.peers.current(sessionID)
	return p != nil && peerUp(p)
}

func (s *Server) overview(c *fiber.Ctx) error {
	ctx := c.UserContext()
	studies, err := s.cfg.Store.Studies(ctx)
	if err != nil {
		return err
	}
	type studyView struct {
		ID       string              `json:"id"`
		Name     string              `json:"name"`
		Progress audit.StudyProgress `json:"progress"`
	}
	var sv []studyView
	for _, st := range studies {
		p, err := s.cfg.Store.Progress(ctx, st.ID)
		if err != nil {
			return err
		}
		sv = append(sv, studyView{ID: st.ID, Name: st.Name, Progress: p})
	}
	return c.JSON(fiber.Map{"studies": sv, "live": s.liveViews()})
}

func (s *Server) sessions(c *fiber.Ctx) error {
	list, err := s.cfg.Store.ListSessions(c.UserContext(), audit.SessionFilter{StudyID: c.Query("study"), Mode: audit.Mode(c.Query("mode"))})
	if err != nil {
		return err
	}
	return c.JSON(list)
}

func (s *Server) sessionDetail(c *fiber.Ctx) error {
	ctx := c.UserContext()
	sid := c.Params("sid")
	sess, err := s.cfg.Store.Session(ctx, sid)
	if err != nil {
		return err
	}
	events, err := s.cfg.Store.Events(ctx, sid)
	if err != nil {
		return err
	}
	// Provider events are many and large; the review page shows them on demand (trace.jsonl).
	shown := make([]trace.Event, 0, len(events))
	raw := 0
	for _, e := range events {
		if e.Type == trace.AgentRaw {
			raw++
			continue
		}
		shown = append(shown, e)
	}
	scores, err := s.cfg.Store.Scores(ctx, sid)
	if err != nil {
		return err
	}
	var gradeDoc json.RawMessage
	if len(scores) > 0 {
		gradeDoc = scores[len(scores)-1].Grade
	}
	var t *task.Task
	if tk, ok := s.cfg.Console.Task(sess.TaskID); ok {
		t = tk
	}
	out := fiber.Map{"session": sess, "events": shown, "raw_events": raw, "grade": gradeDoc}
	if t != nil {
		out["task"] = fiber.Map{"id": t.ID, "title": t.Title, "archetype": t.Archetype, "authorization": t.Authorization,
			"target_state": t.Grader.TargetState, "fields": t.Agent.Artifact.Fields}
	}
	if sys, err := s.cfg.Store.System(ctx, sess.System); err == nil {
		out["alias"] = sys.Alias
	}
	return c.JSON(out)
}

func (s *Server) sessionTrace(c *fiber.Ctx) error {
	if _, err := s.cfg.Store.Session(c.UserContext(), c.Params("sid")); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "application/x-ndjson")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+c.Params("sid")+`.trace.jsonl"`)
	return s.cfg.Store.WriteTrace(c.UserContext(), c.Params("sid"), c.Response().BodyWriter())
}

func (s *Server) recordingPath(c *fiber.Ctx) (string, error) {
	recs, err := s.cfg.Store.Recordings(c.UserContext(), c.Params("sid"))
	if err != nil {
		return "", err
	}
	for _, r := range recs {
		if r.Kind == audit.RecordingStereo {
			return r.Path, nil
		}
	}
	return "", audit.ErrNotFound
}

func (s *Server) sessionRecording(c *fiber.Ctx) error {
	p, err := s.recordingPath(c)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "audio/wav")
	return c.SendFile(p)
}

// sessionPeaks returns min/max per bucket for each channel of the stereo recording, so the review
// page draws the waveform without downloading the audio.
func (s *Server) sessionPeaks(c *fiber.Ctx) error {
	p, err := s.recordingPath(c)
	if err != nil {
		return err
	}
	buckets, _ := strconv.Atoi(c.Query("n", "1600"))
	if buckets < 10 || buckets > 20000 {
		return badRequest("n must be between 10 and 20000")
	}
	pk, err := wavPeaks(p, buckets)
	if err != nil {
		return err
	}
	return c.JSON(pk)
}

// Peaks is a downsampled stereo waveform: per bucket the min and max of each channel, in [-1, 1].
type Peaks struct {
	SampleRate int       `json:"sample_rate"`
	Samples    int64     `json:"samples"`
	Caller     []float32 `json:"caller"` // min, max pairs
	Agent      []float32 `json:"agent"`
}

// wavPeaks streams a stereo recording through the one WAV reader (which finds the data chunk
// past any other chunks) and keeps per bucket the min and max of each channel.
func wavPeaks(path string, buckets int) (Peaks, error) {
	r, err := audio.OpenWAV(path)
	if err != nil {
		return Peaks{}, err
	}
	defer r.Close()
	if r.Channels() != 2 {
		return Peaks{}, fmt.Errorf("recording %s has %d channels, want 2 (left caller, right agent)", path, r.Channels())
	}
	frames := r.Frames()
	pk := Peaks{SampleRate: r.Rate(), Samples: frames, Caller: make([]float32, 2*buckets), Agent: make([]float32, 2*buckets)}
	per := max(frames/int64(buckets), 1)
	buf := make([]int16, 2*4096)
	var cmin, cmax, amin, amax int16
	b, i := 0, int64(0) // bucket, and frames read into it (frames past buckets·per are left out)
	for b < buckets {
		n, err := r.Read(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			return Peaks{}, err
		}
		for k := 0; k+1 < n && b < buckets; k += 2 {
			l, a := buf[k], buf[k+1]
			cmin, cmax = min(cmin, l), max(cmax, l)
			amin, amax = min(amin, a), max(amax, a)
			if i++; i == per {
				pk.Caller[2*b], pk.Caller[2*b+1] = float32(cmin)/32768, float32(cmax)/32768
				pk.Agent[2*b], pk.Agent[2*b+1] = float32(amin)/32768, float32(amax)/32768
				cmin, cmax, amin, amax, i = 0, 0, 0, 0, 0
				b++
			}
		}
	}
	return pk, nil
}

// exclusionReasons are the reasons an experimenter may give.
var exclusionReasons = map[string]bool{session.ExclusionCallerBrokeScript: true, session.ExclusionPlatformLost: true,
	session.ExclusionGraderError: true, session.ExclusionOther: true}

func (s *Server) excludeSession(c *fiber.Ctx) error {
	var body struct {
		Reason string `json:"reason"`
		Note   string `json:"note"`
	}
	if err := json.Unmarshal(c.Body(), &body); err != nil {
		return badRequest("exclude: %v", err)
	}
	if !exclusionReasons[body.Reason] {
		return badRequest("exclude: reason %q is not one of caller_broke_script, platform_lost, grader_error, other", body.Reason)
	}
	x := experimenterOf(c)
	ex := audit.Exclusion{SessionID: c.Params("sid"), Reason: audit.ExclusionReason(body.Reason), Note: body.Note, By: x.Name}
	// A running call is ended first, so its cell never goes to someone else while it runs.
	if live, err := s.excludeLive(c, ex); live || err != nil {
		return err
	}
	cell, err := s.cfg.Store.ExcludeSession(c.UserContext(), ex)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"excluded": true, "returned_cell": cell.ID})
}

// liveStream sends the dashboard's live view every second as server-sent events.
func (s *Server) liveStream(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set(fiber.HeaderConnection, "keep-alive")
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for i := 0; i < 3600; i++ {
			b, _ := json.Marshal(s.liveViews())
			if _, err := fmt.Fprintf(w, "event: live\ndata: %s\n\n", b); err != nil {
				return
			}
			if err := w.Flush(); err != nil {
				return
			}
			<-tick.C
		}
	})
	return nil
}
