package report

import (
	"sort"
	"strconv"

	"github.com/voicebench/humanaudit/internal/grade"
	"github.com/voicebench/humanaudit/internal/task"
	"github.com/voicebench/humanaudit/internal/trace"
)

// Mode says who made a call.
type Mode string

// Modes.
const (
	Human     Mode = "human"
	Synthetic Mode = "synthetic"
)

// Input is everything a report is computed from, held in memory: Load fills it from the store, a
// benchmark or a test builds it directly.
type Input struct {
	Study    StudyInfo
	Systems  []SystemInfo
	Tasks    []TaskInfo
	Sessions []Session
	Ratings  []Rating
	// SessionsPerParticipant is the study plan's number of sessions per participant (0: no plan);
	// planning mode uses it when its option is unset.
	SessionsPerParticipant int
	// AnchorRepeats counts the plan's anchor repeats (cells run a second time by another
	// participant); without any, the report computes no agreement between participants.
	AnchorRepeats int
}

// StudyInfo names the study.
type StudyInfo struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Seed int64  `json:"seed"`
}

// SystemInfo is an evaluated system: its label, the blind alias participants saw, its family.
type SystemInfo struct {
	Label  string `json:"label"`
	Alias  string `json:"alias"`
	Family string `json:"family"`
}

// TaskInfo is what the report needs of a task: its strata for slices, its anchor flag and its
// graded fields.
type TaskInfo struct {
	ID             string   `json:"id"`
	Version        int      `json:"version"`
	Title          string   `json:"title"`
	Archetype      string   `json:"archetype"`
	Industry       string   `json:"industry"`
	Authorization  string   `json:"authorization"`
	ToolBurden     string   `json:"tool_burden"`
	Behavior       string   `json:"behavior_profile"`
	RiskTier       string   `json:"risk_tier"`
	RequiredFields int      `json:"required_fields"`
	Anchor         bool     `json:"anchor"`
	Fields         []string `json:"fields"` // graded fields in the answer key's order
	// SoundAlike says a verify tool of the task matches a column by sound; TransferRule is the
	// task's transfer rule when it has a transfer tool.
	SoundAlike   bool   `json:"sound_alike_verification,omitempty"`
	TransferRule string `json:"transfer_rule,omitempty"`
}

// TaskInfoOf extracts a task's report information.
func TaskInfoOf(t *task.Task) TaskInfo {
	ti := TaskInfo{ID: t.ID, Version: t.Version, Title: t.Title, Archetype: t.Archetype, Industry: t.Industry,
		Authorization: string(t.Authorization), ToolBurden: t.ToolBurden, Behavior: t.Behavior, RiskTier: t.RiskTier,
		RequiredFields: len(t.RequiredFields()), Anchor: t.InSubset(task.SubsetAnchor)}
	for _, f := range t.Grader.Fields {
		ti.Fields = append(ti.Fields, f.Field)
	}
	for _, tl := range t.Agent.Tools {
		for _, c := range tl.Match {
			ti.SoundAlike = ti.SoundAlike || c.Compare == task.ComparePhonetic
		}
		if tl.Kind == task.ToolTransfer {
			ti.TransferRule = string(t.TransferRuleOf())
		}
	}
	return ti
}

// Session is one call as the report sees it.
type Session struct {
	ID          string
	Task        string
	System      string // label
	Mode        Mode
	Seed        int64
	Repeat      int    // 1 or 2 for a planned human session (2: the anchor repeat); 0 otherwise
	Participant string // who called (human sessions); "" for synthetic ones
	Ended       bool   // false for a session still running or never finished
	EndReason   string
	Grade       *grade.Result // nil when not graded
	Exclusion   *Exclusion    // nil unless excluded
	Measures    Measures
}

// Exclusion says why a session does not count.
type Exclusion struct {
	Reason string `json:"reason"`
	Note   string `json:"note"`
	By     string `json:"by"`
}

// Rating is one annotator's rating of one frozen caller utterance.
type Rating struct {
	Item        string
	Task        string
	Plan        string
	Annotator   string
	Fidelity    int // 1–5
	Naturalness int // 1–5
	Leakage     bool
}

// Measures are read from a session's trace: the agent's response latencies on the media clock and
// the usage its provider reported.
type Measures struct {
	// LatenciesMS are, for each end of caller speech answered by agent speech, the media time from
	// caller.speech_end to the next agent.speech_start (with no caller speech in between).
	LatenciesMS []int64
	// Usage sums the agent.usage events; nil when the provider reported none.
	Usage *Usage
	// Cues counts the call's cues and what became of them.
	Cues CueCounts
	// Condition is the listening condition session.start records ("" for a call without one,
	// which the report counts as quiet).
	Condition string
	// Delivery is the call's turn-taking (talk times, overlaps, barge-ins).
	Delivery SessionDelivery
}

// CueCounts are a call's cues: issued, followed by caller speech, spoken with the cued content,
// and applied in the workspace. Traces recorded before cue.spoken/cue.applied carry one
// cue.acted: its onset counts as spoken (content unknown) and its ok as applied.
type CueCounts struct {
	Issued, Spoken, Said, Applied int
	// SaidKnown counts the cues whose spoken content was judged (Said's denominator).
	SaidKnown int
}

// Usage is what a call cost, summed over its responses, as the provider reported it.
type Usage struct {
	Responses          int     `json:"responses"`
	InputTokens        int64   `json:"input_tokens"`
	OutputTokens       int64   `json:"output_tokens"`
	InputAudioTokens   int64   `json:"input_audio_tokens"`
	OutputAudioTokens  int64   `json:"output_audio_tokens"`
	InputAudioSeconds  float64 `json:"input_audio_seconds"`
	OutputAudioSeconds float64 `json:"output_audio_seconds"`
}

// Reported says whether the provider reported any tokens (an adapter emits usage events with
// audio seconds only for providers that report none).
func (u *Usage) Reported() bool {
	return u != nil && (u.InputTokens > 0 || u.OutputTokens > 0)
}

// MeasuredTypes are the event types Measure reads; a loader may fetch only these.
var MeasuredTypes = []trace.Type{trace.SessionStart, trace.CallerSpeechStart, trace.CallerSpeechEnd, trace.AgentSpeechStart, trace.AgentSpeechEnd, trace.MediaBargeIn, trace.AgentUsage,
	trace.CueIssued, trace.CueSpoken, trace.CueApplied, trace.CueActed}

// Measure reads the response latencies and the usage from a trace (all of it, or only its events
// of MeasuredTypes).
func Measure(events []trace.Event) Measures {
	m := Measures{Delivery: MeasureDelivery(events)}
	type mark struct {
		t    int64
		kind trace.Type
	}
	var marks []mark
	for _, e := range events {
		switch e.Type {
		case trace.SessionStart:
			m.Condition = e.Meta["condition"]
		case trace.CallerSpeechStart, trace.CallerSpeechEnd, trace.AgentSpeechStart:
			marks = append(marks, mark{e.T, e.Type})
		case trace.CueIssued:
			m.Cues.Issued++
		case trace.CueSpoken:
			if e.RefMS > 0 {
				m.Cues.Spoken++
			}
			if e.OK != nil {
				m.Cues.SaidKnown++
				if *e.OK {
					m.Cues.Said++
				}
			}
		case trace.CueApplied:
			if e.OK != nil && *e.OK {
				m.Cues.Applied++
			}
		case trace.CueActed:
			if e.RefMS > 0 {
				m.Cues.Spoken++
			}
			if e.OK != nil && *e.OK {
				m.Cues.Applied++
			}
		case trace.AgentUsage:
			if m.Usage == nil {
				m.Usage = &Usage{}
			}
			u := m.Usage
			u.Responses++
			u.InputTokens += metaInt(e.Meta, "input_tokens")
			u.OutputTokens += metaInt(e.Meta, "output_tokens")
			u.InputAudioTokens += metaInt(e.Meta, "input_audio_tokens")
			u.OutputAudioTokens += metaInt(e.Meta, "output_audio_tokens")
			u.InputAudioSeconds += metaFloat(e.Meta, "input_audio_seconds")
			u.OutputAudioSeconds += metaFloat(e.Meta, "output_audio_seconds")
		}
	}
	// Speech events carry their onset times, which may precede events recorded before them.
	sort.SliceStable(marks, func(i, j int) bool { return marks[i].t < marks[j].t })
	pending := int64(-1) // the caller's last speech end not yet answered
	for _, k := range marks {
		switch k.kind {
		case trace.CallerSpeechEnd:
			pending = k.t
		case trace.CallerSpeechStart:
			pending = -1 // the caller went on: that end was not a turn the agent answered
		case trace.AgentSpeechStart:
			if pending >= 0 {
				m.LatenciesMS = append(m.LatenciesMS, k.t-pending)
				pending = -1
			}
		}
	}
	return m
}

func metaInt(m map[string]string, k string) int64 {
	v, _ := strconv.ParseInt(m[k], 10, 64)
	return v
}

func metaFloat(m map[string]string, k string) float64 {
	v, _ := strconv.ParseFloat(m[k], 64)
	return v
}
